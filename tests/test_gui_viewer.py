"""The napari-style Python API and the simms-gui entry point."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import simms_gui
from engine.export import read_hits


@pytest.fixture
def viewer(qtbot):
    v = simms_gui.Viewer(show=True)
    qtbot.addWidget(v.window)
    yield v
    v.close()


def test_viewer_search_end_to_end(viewer, data_dir, tmp_path):
    lib = viewer.open_library(data_dir / "pesticides.mgf")
    queries = viewer.open_queries(data_dir / "pesticides.mgf")
    assert len(lib) == len(queries) == 76
    handle = viewer.search(top_n=3, backend="cpu")
    assert handle.params.top_n == 3
    hits = handle.wait(timeout=120)
    assert handle.done and not handle.cancelled
    expected = engine.search(queries, lib, handle.params, backend="cpu")
    assert len(hits) == len(expected) > 0
    np.testing.assert_array_equal(hits.query_index, expected.query_index)
    np.testing.assert_array_equal(hits.library_index, expected.library_index)
    np.testing.assert_array_equal(hits.matches, expected.matches)
    np.testing.assert_allclose(hits.score, expected.score, atol=1e-12)
    # each spectrum finds itself first
    best = hits.best_per_query()
    assert np.all(best.score > 0.999)

    table = viewer.hits
    assert len(table) == len(hits)
    assert set(engine.export.HIT_COLUMNS) <= set(table.columns)
    frame = table.to_pandas()
    assert frame.shape[0] == len(hits)

    q, h = int(hits.query_index[4]), int(hits.library_index[4])
    viewer.show_mirror(q, h)
    mirror = viewer.window.pair_view.mirror
    assert mirror.matches.matches == int(hits.matches[4])
    assert viewer.window.results.current_row() == 4

    out = viewer.export_hits(tmp_path / "best.tsv", which="best")
    cols, _ = read_hits(out)
    assert len(cols["query_index"]) == 76
    shot = viewer.screenshot(tmp_path / "shot.png")
    assert shot.stat().st_size > 10_000
    assert "76" in repr(viewer)


def test_viewer_cancel(viewer, data_dir):
    viewer.open_library(data_dir / "pesticides.mgf")
    viewer.open_queries(data_dir / "pesticides.mgf")
    handle = viewer.search(top_n=0, batch_size=2, backend="cpu")
    handle.cancel()
    hits = handle.wait(timeout=60)
    assert handle.done and handle.cancelled
    assert len(hits) < 76 * 76


def test_viewer_needs_data(viewer):
    with pytest.raises(RuntimeError, match="open a library"):
        viewer.search()


def test_viewer_rejects_unusable_file(viewer, tmp_path):
    bad = tmp_path / "bad.mgf"
    bad.write_text("nothing to see here\n")
    with pytest.raises(engine.SpectrumFileError):
        viewer.open_library(bad)


def test_smoke_test_entry_point(qtbot, capsys):
    from simms_gui.app import main

    assert main(["--smoke-test"]) == 0
    out = capsys.readouterr().out
    assert "smoke test: OK" in out


def test_version(capsys):
    from simms_gui.app import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert simms_gui.__version__ in capsys.readouterr().out


def test_first_start_only_once(qtbot):
    from simms_gui._qt.main_window import first_start

    assert first_start() is True
    assert first_start() is False


def test_window_follows_the_session(viewer, qtbot, data_dir):
    """Files and a search asked of the headless session show up in the window."""
    session = viewer.session
    assert viewer.window.session is session
    session.open(data_dir / "pesticides.mgf", "library")
    session.open(data_dir / "pesticides.mgf", "queries")
    assert viewer.window.query_list.model.rowCount() == 76
    started, finished = [], []
    session.events.search_started.connect(started.append)
    session.events.search_finished.connect(finished.append)
    with qtbot.waitSignal(viewer.window.searchFinished, timeout=120_000):
        session.search(engine.SearchParameters(mode="custom", top_n=2), "cpu")
        assert session.state == "running" and started
        qtbot.waitUntil(lambda: viewer.window.search_panel.parameters().top_n == 2)
    assert finished and not session.cancelled and session.error is None
    model = viewer.window.results.model
    assert model.rowCount() == len(session.hits) > 0
    expected = engine.search(
        session.queries.spectra, session.library, session.params, backend="cpu"
    )
    np.testing.assert_array_equal(session.hits.library_index, expected.library_index)


def test_stop_through_the_session_keeps_hits(viewer, qtbot, data_dir):
    viewer.open_library(data_dir / "pesticides.mgf")
    viewer.open_queries(data_dir / "pesticides.mgf")
    handle = viewer.search(top_n=0, backend="cpu")
    viewer.session.cancel()
    handle.wait(timeout=120)
    assert handle.done
    assert len(viewer.hits) == len(viewer.window.results.model.hit_table(visible=False))
