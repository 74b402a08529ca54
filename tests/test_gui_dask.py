"""The "Dask cluster" backend of the window: a real local cluster on the loopback."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from PyQt6.QtCore import Qt, QTimer

import engine

pytest.importorskip("distributed")


@pytest.fixture
def local(cluster):
    """The module's local Dask cluster (conftest's ``cluster``), on the loopback."""
    return cluster[0]


@pytest.fixture
def data(pesticides):
    """The 76 pesticides as library, every 3rd of them as queries."""
    return pesticides.subset(range(0, len(pesticides), 3)), pesticides


@pytest.fixture
def window(qtbot, boxes, data):
    from simms_gui._qt.main_window import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    queries, library = data
    assert w.session.add_library(Path("pesticides.mgf"), library)
    assert w.session.set_queries(Path("pesticide-queries.mgf"), queries)
    yield w
    w.shutdown()
    assert w.session.dask.address is None


def assert_identical(got, expected):
    assert len(got) == len(expected) > 0
    for column in got.columns():
        np.testing.assert_array_equal(getattr(got, column), getattr(expected, column))


def click_search(qtbot, window, timeout=60_000):
    with qtbot.waitSignal(window.searchFinished, timeout=timeout) as blocker:
        qtbot.mouseClick(window.search_panel.search_button, Qt.MouseButton.LeftButton)
    return blocker.args[0]


def test_address_field_follows_the_backend(window):
    panel = window.search_panel
    assert "dask" in [panel.backend.itemData(i) for i in range(panel.backend.count())]
    assert panel.dask_address.placeholderText() == "tcp://HOST:8786"
    assert "local:N" in panel.dask_address.toolTip()
    assert panel.dask_address.isHidden() and not panel.dask_address.isEnabled()
    panel.set_backend("dask")
    assert panel.dask_address.isVisible() and panel.dask_address.isEnabled()
    panel.set_backend("cpu")
    assert panel.dask_address.isHidden()


def test_search_on_the_cluster_typed_in_the_panel(qtbot, window, boxes, local, data):
    queries, library = data
    panel = window.search_panel
    panel.set_backend("dask")
    qtbot.keyClicks(panel.dask_address, local.scheduler_address)
    params = engine.SearchParameters(mode="custom", top_n=5, tolerance=0.02)
    panel.set_parameters(params)

    assert click_search(qtbot, window) is False
    assert not boxes, boxes
    expected = engine.search(queries, library, params, backend="cpu")
    assert_identical(window.session.hits, expected)
    assert_identical(window.results.model.hit_table(visible=False).sorted(), expected)
    s = window.session
    assert s.backend == "dask" and local.scheduler_address in s.device
    log = window.log_view.toPlainText()
    assert f"Dask cluster at {local.scheduler_address}" in log
    client = window.session.dask._client
    assert window.session.dask.address == local.scheduler_address

    # the client stays open and is reused; a precursor window gives the same rows too
    params = engine.SearchParameters(
        mode="custom", top_n=3, precursor_tolerance=0.05, tolerance=0.05
    )
    panel.set_parameters(params)
    assert click_search(qtbot, window) is False
    assert window.session.dask._client is client
    assert_identical(window.session.hits, engine.search(queries, library, params, backend="cpu"))

    # Stop cancels the job; the window stays usable
    controller = window.searches.start(engine.SearchParameters(mode="custom", top_n=0), "dask")
    with qtbot.waitSignal(window.searchFinished, timeout=60_000) as blocker:
        window.searches.stop()
    assert blocker.args[0] is True and controller.cancelled
    assert window.session.dask._client is client

    # the settings remember the backend and the address
    panel.save_settings()
    from simms_gui._qt.search_panel import SearchPanel

    again = SearchPanel()
    qtbot.addWidget(again)
    assert again.backend_name() == "dask"
    assert again.dask_address_text() == local.scheduler_address

    # another address closes the kept client (in the background)
    panel.dask_address.setText("tcp://127.0.0.1:1")
    panel.dask_address.editingFinished.emit()
    qtbot.waitUntil(lambda: window.session.dask.address is None, timeout=20_000)
    assert client.status in ("closing", "closed")


def test_unreachable_cluster_is_a_message_not_a_crash(qtbot, window, boxes, monkeypatch, data):
    from simms_gui import dask_connection

    monkeypatch.setattr(dask_connection, "DASK_CONNECT_TIMEOUT", 1.0)
    panel = window.search_panel
    panel.set_backend("dask")
    panel.dask_address.setText("tcp://127.0.0.1:1")
    ticks = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start(20)
    start = time.monotonic()
    click_search(qtbot, window, timeout=30_000)
    timer.stop()
    assert time.monotonic() - start < 20
    assert len(ticks) >= 10, "the GUI thread must keep running while it connects"
    assert len(boxes) == 1
    kind, title, text = boxes[0]
    assert (kind, title) == ("critical", "Dask cluster")
    assert text.startswith("cannot reach the Dask scheduler at tcp://127.0.0.1:1")
    assert "\n" not in text
    assert "cannot reach the Dask scheduler" in window.statusBar().currentMessage()
    assert window.search_panel.search_button.isEnabled() and not window.searches.searching

    # no address: a message, nothing starts
    panel.dask_address.clear()
    assert window.searches.start() is None
    assert boxes[-1][0] == "information" and "address" in boxes[-1][2]

    # still usable: a search on the CPU works
    queries, library = data
    params = engine.SearchParameters(mode="custom", top_n=2)
    with qtbot.waitSignal(window.searchFinished, timeout=60_000):
        window.searches.start(params, "cpu")
    assert_identical(window.session.hits, engine.search(queries, library, params, backend="cpu"))


def test_viewer_search_on_dask(qtbot, local, data_dir):
    import simms_gui

    viewer = simms_gui.Viewer(show=False)
    qtbot.addWidget(viewer.window)
    try:
        lib = viewer.open_library(data_dir / "pesticides.mgf")
        queries = viewer.open_queries(data_dir / "pesticides.mgf")
        handle = viewer.search(backend="dask", dask_address=local.scheduler_address, top_n=3)
        hits = handle.wait(timeout=60)
        assert handle.backend == "dask" and "Dask cluster" in handle.device
        assert_identical(hits, engine.search(queries, lib, handle.params, backend="cpu"))
        with pytest.raises(ValueError, match="address"):
            viewer.search(backend="dask", dask_address="  ")
    finally:
        viewer.close()
    assert viewer.window.session.dask.address is None


@pytest.mark.slow
def test_local_cluster_address_starts_and_stops_workers(qtbot, window, data):
    queries, library = data
    params = engine.SearchParameters(mode="custom", top_n=2)
    with qtbot.waitSignal(window.searchFinished, timeout=60_000):
        window.searches.start(params, "dask", "local:1")
    assert window.session.error is None
    assert_identical(window.session.hits, engine.search(queries, library, params, backend="cpu"))
    cluster = window.session.dask._client.cluster
    assert window.session.dask.address == "local:1" and len(cluster.workers) == 1
    window.shutdown()
    assert cluster.status.name == "closed"
