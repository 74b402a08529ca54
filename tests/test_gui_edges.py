"""GUI at the edges: files read off the GUI thread, scripts independent of saved settings,
windows that close cleanly while work runs, and the missing-library message."""

from __future__ import annotations

import threading

import pytest

import engine
import simms_gui
from simms_gui._qt.main_window import MainWindow
from simms_gui._qt.search_panel import SETTINGS_KEY
from simms_gui._qt.settings import load_json, save_json
from simms_gui.system_check import missing_libraries, missing_packages

SAVED = {
    "params": {
        "mode": "custom",
        "tolerance": 0.5,
        "precursor_tolerance": 2.0,
        "min_matches": 6,
        "top_n": 50,
    },
    "backend": "cpu",
    "dask_address": "",
    "custom_preprocess": None,
}


def test_viewer_search_ignores_saved_gui_settings(qtbot, data_dir):
    """Before: ``Viewer().search(tolerance=0.1, top_n=5)`` used the precursor window and
    min-matches left in the GUI's saved settings."""
    save_json(SETTINGS_KEY, SAVED)
    viewer = simms_gui.Viewer(show=False)
    qtbot.addWidget(viewer.window)
    try:
        lib = viewer.open_library(data_dir / "pesticides.mgf")
        queries = viewer.open_queries(data_dir / "pesticides.mgf")
        handle = viewer.search(tolerance=0.1, top_n=5, backend="cpu")
        hits = handle.wait(timeout=120)
        expected = engine.SearchParameters(tolerance=0.1, top_n=5)
        assert handle.params == expected
        assert len(hits) == len(engine.search(queries, lib, expected, backend="cpu"))
        assert viewer.window.search_panel.parameters() == expected  # the panel shows what ran
    finally:
        viewer.close()


def test_viewer_and_smoke_test_never_write_user_settings(qtbot, data_dir):
    """Before: Viewer overrides and ``simms-gui --smoke-test`` rewrote the saved settings."""
    from simms_gui.app import smoke_test

    save_json(SETTINGS_KEY, SAVED)
    save_json("recent_files", [])
    viewer = simms_gui.Viewer(show=False)
    qtbot.addWidget(viewer.window)
    viewer.open_library(data_dir / "pesticides.mgf")
    viewer.open_queries(data_dir / "pesticides.mgf")
    viewer.search(tolerance=0.02, top_n=1, backend="cpu").wait(timeout=120)
    viewer.close()
    assert smoke_test() == 0
    assert load_json(SETTINGS_KEY) == SAVED
    assert load_json("recent_files") == []


def test_the_interactive_window_still_restores_its_settings(qtbot):
    save_json(SETTINGS_KEY, SAVED)
    window = MainWindow()
    qtbot.addWidget(window)
    assert window.search_panel.parameters().min_matches == 6
    window.close()


def test_settings_saved_before_search_modes_start_in_identity_mode_and_say_so(qtbot):
    """The former defaults (0.1 Da, no precursor window, either ion mode) were saved by
    every earlier version without being a choice; they must not outlive the upgrade."""
    legacy = {"params": {"tolerance": 0.1, "precursor_tolerance": 0.0, "top_n": 25}}
    save_json(SETTINGS_KEY, legacy)
    window = MainWindow()
    qtbot.addWidget(window)
    assert window.search_panel.parameters() == engine.SearchParameters(top_n=25)
    assert "identity mode" in window.statusBar().currentMessage()
    assert "identity mode" in window.log_view.toPlainText()
    window.close()


def test_window_reads_files_off_the_gui_thread(qtbot, data_dir, monkeypatch):
    """Before: files under 2 MB were read on the GUI thread (a FIFO froze it for ever)."""
    window = MainWindow()
    qtbot.addWidget(window)
    release, reader = threading.Event(), []

    def slow_read(path, progress=None):
        reader.append(threading.current_thread())
        release.wait(30)
        return engine.load_library(data_dir / "sample.msp")

    monkeypatch.setattr(window.session, "read", slow_read)
    assert window.files.open_file(data_dir / "sample.msp", "library") is None  # returns at once
    qtbot.waitUntil(lambda: bool(reader), timeout=10_000)
    assert reader[0] is not threading.main_thread()
    ticks = []
    qtbot.waitUntil(lambda: ticks.append(1) or len(ticks) > 3, timeout=5_000)  # events flow
    assert window.session.library is None
    release.set()
    qtbot.waitUntil(lambda: window.session.library is not None, timeout=30_000)
    window.close()


def test_closing_windows_with_finished_and_running_tasks(qtbot, data_dir):
    """Before: ``wrapped C/C++ object of type _FunctionThread has been deleted`` in
    ``MainWindow.shutdown``, a race that could abort the app on quit."""
    for round_ in range(5):
        window = MainWindow(persist_settings=False)
        qtbot.addWidget(window)
        window.files.open_file(data_dir / "sample.msp", "library")
        if round_ % 2:
            qtbot.waitUntil(lambda w=window: w.session.library is not None, timeout=30_000)
        window.close()  # shutdown waits for every task's thread, without error
        assert all(task.done for task in window.session.runner.tasks)
        qtbot.waitUntil(lambda w=window: not w.session.runner.tasks, timeout=10_000)


def test_ldd_output_maps_to_debian_packages():
    ldd = (
        "\tlinux-vdso.so.1 (0x00007ffd)\n"
        "\tlibxcb-icccm.so.4 => not found\n"
        "\tlibxcb-keysyms.so.1 => not found\n"
        "\tlibxcb.so.1 => /lib/x86_64-linux-gnu/libxcb.so.1 (0x00007f)\n"
        "\tlibxcb-icccm.so.4 => not found\n"
        "\tlibweird.so.9 => not found\n"
    )
    libraries = missing_libraries(ldd)
    assert libraries == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libweird.so.9"]
    assert missing_packages(libraries) == ["libxcb-icccm4", "libxcb-keysyms1", "libweird.so.9"]


def test_simms_gui_names_missing_packages(monkeypatch, capsys):
    from simms_gui import app, system_check

    monkeypatch.setattr(
        system_check, "check_display_libraries", lambda: "simms-gui: ... apt-get install x"
    )
    assert app.main([]) == 1
    assert capsys.readouterr().err.strip() == "simms-gui: ... apt-get install x"


@pytest.fixture(autouse=True)
def _no_dialogs(boxes):
    return boxes


def test_runtime_errors_of_background_work_reach_the_user(qtbot, data_dir, monkeypatch):
    """superqt drops a RuntimeError raised in a worker; a lost Dask cluster raises one
    (``ClusterLostError``).  The search must still end with its message, and a file
    read that fails so must still say so."""
    from PyQt6.QtWidgets import QMessageBox

    import simms_gui.model.analyses as worker

    monkeypatch.setattr(QMessageBox, "critical", lambda *a, **k: None)
    viewer = simms_gui.Viewer(show=False)
    qtbot.addWidget(viewer.window)
    viewer.open_library(data_dir / "pesticides.mgf")
    viewer.open_queries(data_dir / "pesticides.mgf")

    def lost(*args, **kwargs):
        raise RuntimeError("all Dask workers were lost")

    monkeypatch.setattr(worker, "search_job", lost)
    handle = viewer.search(backend="cpu")
    with pytest.raises(RuntimeError, match="workers were lost"):
        handle.wait(timeout=30)
    assert viewer.session.state == "idle"

    monkeypatch.setattr(viewer.session, "read", lost)
    with qtbot.waitSignal(viewer.window.loadFailed, timeout=10_000) as failed:
        viewer.window.files.open_file(data_dir / "sample.msp", "library", background=True)
    assert "workers were lost" in failed.args[0]
    viewer.close()
