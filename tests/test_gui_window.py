"""The main window, offscreen, with real spectra: search, table, mirror plot, export."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from PyQt6.QtCore import QMimeData, QPointF, Qt, QUrl
from PyQt6.QtGui import QDropEvent
from PyQt6.QtWidgets import QFileDialog

import engine
from engine.export import hit_columns, read_hits
from engine.matching import entropy_matches, greedy_matches
from simms_gui._qt.plots import segment_count
from simms_gui._qt.results_model import COLUMNS
from simms_gui.resources import demo_library_path, demo_queries_path

COL = {c.key: k for k, c in enumerate(COLUMNS)}
DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def demo(window):
    assert window.files.load_demo(background=False)
    return window


def run_search(qtbot, window, timeout=120_000, **params):
    p = engine.SearchParameters(**params)
    with qtbot.waitSignal(window.searchFinished, timeout=timeout):
        controller = window.searches.start(p, "cpu")
        assert controller is not None
    return p


@pytest.fixture
def searched(qtbot, demo):
    params = run_search(qtbot, demo, top_n=10)
    return demo, params


def test_demo_loaded_and_panels_filled(demo):
    s = demo.session
    assert len(s.library) == 3000 and len(s.queries.spectra) == 40
    assert demo.query_list.proxy.rowCount() == 40
    item = demo.library_panel.libraries_item.child(0)
    assert item.text(1) == "3,000"
    assert demo_library_path().name in item.text(0)


def test_hits_stream_in_while_search_runs(qtbot, demo):
    model = demo.results.model
    seen: list[tuple[int, bool]] = []
    ended = []
    demo.searchFinished.connect(lambda _cancelled: ended.append(True))
    model.rowsInserted.connect(lambda *_: seen.append((model.rowCount(), not ended)))
    params = run_search(qtbot, demo, top_n=5, batch_size=16)
    # several chunks arrived, each before the search's end was shown, growing the table
    assert len(seen) >= 3
    assert all(running for _, running in seen)
    counts = [n for n, _ in seen]
    assert counts == sorted(counts) and counts[0] < counts[-1]
    s = demo.session
    expected = engine.search(s.queries.spectra, s.library, params, backend="cpu")
    assert model.rowCount() == len(expected) == len(s.hits)
    np.testing.assert_array_equal(s.hits.query_index, expected.query_index)
    np.testing.assert_array_equal(s.hits.library_index, expected.library_index)
    np.testing.assert_allclose(s.hits.score, expected.score, atol=1e-12)
    assert "done" in demo.search_panel.progress_bar.format()


def test_sort_and_filter(qtbot, searched):
    window, params = searched
    s = window.session
    cols = hit_columns(s.hits, s.hits_queries, s.hits_library)
    model, panel = window.results.model, window.results
    panel.table.sortByColumn(COL["score"], Qt.SortOrder.DescendingOrder)
    shown = np.array(
        [
            float(model.index(r, COL["score"]).data(Qt.ItemDataRole.UserRole))
            for r in range(model.rowCount())
        ]
    )
    np.testing.assert_array_equal(shown, np.sort(cols["score"])[::-1])
    panel.table.sortByColumn(COL["score"], Qt.SortOrder.AscendingOrder)
    np.testing.assert_array_equal(model.column("score"), np.sort(cols["score"]))
    panel.table.sortByColumn(COL["precursor_mz_delta"], Qt.SortOrder.AscendingOrder)
    delta = model.column("precursor_mz_delta")
    assert np.all(np.diff(delta[~np.isnan(delta)]) >= 0)

    # text filter over names/ids/InChIKeys, typed like a user
    needle = str(cols["library_name"][0])[:6]
    qtbot.keyClicks(panel.filter_edit, needle)
    lower = needle.lower()
    expected = np.zeros(len(s.hits), dtype=bool)
    for key in ("query_id", "query_name", "library_name", "library_id", "library_inchikey"):
        expected |= np.array([lower in str(v).lower() for v in cols[key]])
    assert model.rowCount() == expected.sum() > 0
    assert panel.count_label.text() == f"{expected.sum():,} of {len(s.hits):,} hits"

    # score range on top of the text filter
    panel.score_min.setValue(0.5)
    panel.score_max.setValue(0.9)
    in_range = (cols["score"] >= 0.5) & (cols["score"] <= 0.9)
    assert model.rowCount() == (expected & in_range).sum()
    panel.filter_edit.clear()
    assert model.rowCount() == in_range.sum()
    panel.score_min.setValue(0.0)
    panel.score_max.setValue(1.0)
    assert model.rowCount() == len(s.hits)

    # best hit per query: one row per query with hits, its best score
    panel.best_check.setChecked(True)
    best = s.hits.best_per_query()
    assert model.rowCount() == len(best)
    assert set(model.column("query_index").tolist()) == set(best.query_index.tolist())
    assert np.isclose(model.column("score").sum(), best.score.sum())


def _check_mirror(window, view_row, params):
    s = window.session
    row = window.results.model.row_of(view_row)
    mirror = window.pair_view.mirror
    q, lib = int(row["query_index"]), int(row["library_index"])
    assert mirror.matches is not None
    n_links = segment_count(mirror.link_item) + segment_count(mirror.shifted_link_item)
    assert n_links == mirror.matches.matches == int(row["matches"])
    qmz, qint = s.hits_queries.peaks(q)
    lmz, lint = s.hits_library.peaks(lib)
    if params.entropy:
        *_, direct = entropy_matches(
            qmz, qint, lmz, lint, tolerance=params.tolerance,
            precursor_mz1=s.hits_queries.precursor_mz[q],
            precursor_mz2=s.hits_library.precursor_mz[lib],
        )  # fmt: skip
        assert direct.matches == n_links
        assert direct.score == pytest.approx(float(row["score"]), abs=1e-6)
        return
    direct = greedy_matches(
        qmz,
        qint,
        lmz,
        lint,
        tolerance=params.tolerance,
        precursor_mz1=s.hits_queries.precursor_mz[q] if params.modified else None,
        precursor_mz2=s.hits_library.precursor_mz[lib] if params.modified else None,
    )
    assert direct.matches == n_links
    assert direct.score == pytest.approx(float(row["score"]), abs=1e-6)
    np.testing.assert_array_equal(mirror.matches.query_peak, direct.query_peak)
    assert window.pair_view.peaks.model().rowCount() == n_links


def test_selecting_a_hit_shows_its_mirror_plot_and_keys_move(qtbot, searched):
    window, params = searched
    table = window.results.table
    window.results.select_row(3)
    assert window.results.current_row() == 3
    _check_mirror(window, 3, params)
    title = window.pair_view.mirror.title_text
    table.setFocus()
    qtbot.keyClick(table, Qt.Key.Key_Down)
    assert window.results.current_row() == 4
    _check_mirror(window, 4, params)
    qtbot.keyClick(table, Qt.Key.Key_Down)
    qtbot.keyClick(table, Qt.Key.Key_Up)
    assert window.results.current_row() == 4
    assert window.pair_view.mirror.title_text != "" and (
        title != window.pair_view.mirror.title_text
        or window.results.model.row_of(3)["score"] == window.results.model.row_of(4)["score"]
    )


def test_modified_cosine_mirror_plot(qtbot, demo):
    params = run_search(qtbot, demo, top_n=3, score="modified_cosine")
    assert len(demo.session.hits) > 0
    for row in range(min(5, demo.results.model.rowCount())):
        demo.results.select_row(row)
        _check_mirror(demo, row, params)


def test_export_hits_reads_back(qtbot, searched, tmp_path, monkeypatch):
    window, _ = searched
    s = window.session
    out = window.hits.export_hits(tmp_path / "all.tsv", "all")
    cols, provenance = read_hits(out)
    np.testing.assert_array_equal(cols["query_index"], s.hits.query_index)
    np.testing.assert_array_equal(cols["library_index"], s.hits.library_index)
    np.testing.assert_array_equal(cols["matches"], s.hits.matches)
    np.testing.assert_allclose(cols["score"], s.hits.score, rtol=1e-12)
    assert any(line.startswith("parameters:") for line in provenance)
    assert any("demo_library.mgf" in line for line in provenance)

    # filtered, as shown (sorted by score), through the File menu's dialog
    window.results.score_min.setValue(0.7)
    window.results.table.sortByColumn(COL["score"], Qt.SortOrder.DescendingOrder)
    target = tmp_path / "filtered.csv"
    monkeypatch.setattr(
        QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(target), ""))
    )
    window.export_filtered_action.trigger()
    cols, _ = read_hits(target)
    assert len(cols["score"]) == window.results.model.rowCount() > 0
    np.testing.assert_allclose(cols["score"], window.results.model.column("score"))

    target = tmp_path / "best.tsv"
    window.export_best_action.trigger()
    cols, _ = read_hits(target)
    assert len(cols["score"]) == len(np.unique(s.hits.query_index))

    # plots
    window.results.select_row(0)
    for suffix in (".png", ".svg"):
        target = tmp_path / f"mirror{suffix}"
        window.export_mirror_action.trigger()
        assert target.stat().st_size > 1000


def test_stop_keeps_partial_hits(qtbot, window, massbank_library, massbank_queries):
    window.files.open_file(DATA / "massbank_ms2.mgf.gz", "library", background=False)
    window.files.open_file(DATA / "massbank_ms2_queries.mgf.gz", "queries", background=False)
    s = window.session
    assert len(s.library) == len(massbank_library) and len(s.queries.spectra) == 1000
    params = engine.SearchParameters(mode="custom", top_n=10, batch_size=256)
    with qtbot.waitSignal(window.results.model.rowsInserted, timeout=120_000):
        window.searches.start(params, "cpu")
    assert window.searches.searching
    with qtbot.waitSignal(window.searchFinished, timeout=30_000) as finished:
        start = time.perf_counter()
        qtbot.mouseClick(window.search_panel.stop_button, Qt.MouseButton.LeftButton)
    latency = time.perf_counter() - start
    print(f"\nstop latency {latency:.2f} s, {len(s.hits)} partial hits")
    assert finished.args == [True]
    assert latency < 5.0
    hits = s.hits
    assert 0 < len(hits) == window.results.model.rowCount()
    assert "stopped" in window.search_panel.progress_bar.format()
    # the first query block (64 queries) had streamed completely before Stop: its hits are
    # final and equal the engine's; later queries have at most the hits of the batches done
    assert 999 not in hits.query_index  # query 999 matches itself in a full search
    first = hits.take(hits.query_index < 64)
    full_first = engine.search(
        massbank_queries.subset(range(64)), massbank_library, params, backend="cpu"
    )
    np.testing.assert_array_equal(first.query_index, full_first.query_index)
    np.testing.assert_array_equal(first.library_index, full_first.library_index)
    np.testing.assert_allclose(first.score, full_first.score, atol=1e-12)
    assert len(hits) < 10 * len(massbank_queries)


def test_broken_file_shows_an_error_not_a_crash(qtbot, window, boxes, tmp_path):
    garbage = tmp_path / "broken.mgf"
    garbage.write_bytes(b"\x00\x01 this is not a spectrum file \xff\xfe\n" * 20)
    assert window.files.open_file(garbage, "library", background=False) is None
    assert boxes and "broken.mgf" in boxes[-1][2]
    assert window.session.libraries == []

    # same in the background reader
    boxes.clear()
    with qtbot.waitSignal(window.loadFailed, timeout=30_000):
        window.files.open_file(garbage, "library", background=True)
    assert boxes and "broken.mgf" in boxes[-1][2]

    missing = tmp_path / "missing.mgf"
    boxes.clear()
    window.files.open_file(missing, "queries", background=False)
    assert boxes and boxes[-1][0] == "critical" and "missing.mgf" in boxes[-1][2]


def test_partly_broken_file_shows_its_import_report(window, boxes, tmp_path, data_dir):
    text = (data_dir / "pesticides.mgf").read_text()
    blocks = text.split("END IONS")
    bad = "BEGIN IONS\nTITLE=broken record\nPEPMASS=300.1\n12.0 abc\nxyz\nEND IONS\n"
    path = tmp_path / "partly.mgf"
    path.write_text("END IONS".join(blocks[:3]) + "END IONS\n" + bad)
    spectra = window.files.open_file(path, "library", background=False)
    assert spectra is not None and len(spectra) == 3
    item = window.library_panel.libraries_item.child(0)
    skipped, repaired = int(item.text(2)), int(item.text(3))
    assert skipped + repaired >= 1
    window.library_panel.tree.setCurrentItem(item)
    assert "broken record" in window.library_panel.report_view.toPlainText()
    dialog = window.library_panel.show_report_dialog()
    assert "broken record" in dialog.text.toPlainText()
    dialog.close()
    assert not [b for b in boxes if b[0] == "critical"]


def test_every_query_is_accounted_for_after_a_search(searched):
    window, _ = searched
    text = window.search_panel.progress_view.label.text()
    assert "40 queries: " in text and "with hits" in text
    assert "40 queries: " in window.log_view.toPlainText()


def test_profile_spectra_are_named_in_the_spectra_panel(window, tmp_path):
    from tests.test_profile_spectra import profile_mgf

    path = profile_mgf(tmp_path / "profile.mgf", 300)
    assert window.files.open_file(path, "library", background=False) is not None
    item = window.library_panel.libraries_item.child(0)
    assert "profile-mode data (not centroided)" in item.toolTip(1)
    window.library_panel.tree.setCurrentItem(item)
    assert "not centroided" in window.library_panel.report_view.toPlainText()


def test_query_list_filters(qtbot, demo):
    ql = demo.query_list
    q = demo.session.queries.spectra
    name = str(q.metadata["name"][5])
    qtbot.keyClicks(ql.filter_edit, name[:5])
    expected = sum(
        name[:5].lower() in f"{i}\t{n}".lower()
        for i, n in zip(q.metadata["id"], q.metadata["name"], strict=True)
    )
    assert ql.proxy.rowCount() == expected >= 1
    ql.filter_edit.clear()
    ql.mz_min.setValue(200.0)
    ql.mz_max.setValue(400.0)
    prec = q.precursor_mz
    assert ql.proxy.rowCount() == int(((prec >= 200) & (prec <= 400)).sum())
    ql.mz_min.setValue(0.0)
    ql.mz_max.setValue(0.0)
    assert ql.proxy.rowCount() == 40


def test_heatmaps_and_cell_click(qtbot, searched):
    window, params = searched
    window.query_list.select_rows([0, 1, 2, 3, 4])
    with qtbot.waitSignal(window.heatmapReady, timeout=60_000):
        window.analyses.heatmap_selection()
    panel = window.heatmap_panel
    assert panel.scores.shape == (5, 5)
    np.testing.assert_allclose(np.diag(panel.scores), 1.0, atol=1e-9)
    panel.heatmap.cellClicked.emit(1, 3)
    pair = window.heatmap_pair_view.pair
    assert pair is not None
    assert pair.matches.score == pytest.approx(panel.scores[1, 3], abs=1e-6)

    with qtbot.waitSignal(window.heatmapReady, timeout=60_000):
        window.analyses.heatmap_top_hits([0, 1, 2])
    hits = window.session.hits
    sub = hits.take(np.isin(hits.query_index, [0, 1, 2])).top_per_query(10)
    assert panel.scores.shape == (3, len(np.unique(sub.library_index)))
    # the scores of the table's hits reappear in the heatmap
    r = panel.request
    for qi, li, score in zip(sub.query_index, sub.library_index, sub.score, strict=True):
        i = int(np.flatnonzero(r.row_index == qi)[0])
        j = int(np.flatnonzero(r.column_index == li)[0])
        assert panel.scores[i, j] == pytest.approx(score, abs=1e-9)


def test_settings_and_recent_files_persist(qtbot, demo):
    from simms_gui._qt.search_panel import SearchPanel
    from simms_gui._qt.settings import recent_files

    panel = demo.search_panel
    panel.tolerance.setValue(0.02)
    panel.top_n.setValue(7)
    panel.precursor_unit.setCurrentIndex(panel.precursor_unit.findData("ppm"))
    panel.precursor_tolerance.setValue(15)
    panel.save_settings()
    again = SearchPanel()
    qtbot.addWidget(again)
    p = again.parameters()
    assert (p.tolerance, p.top_n, p.precursor_tolerance, p.precursor_unit) == (0.02, 7, 15.0, "ppm")
    names = [Path(path).name for _, path in recent_files()]
    assert names[:2] == [demo_queries_path().name, demo_library_path().name]
    backends = [panel.backend.itemData(i) for i in range(panel.backend.count())]
    assert backends == ["auto", "cpu", "cuda", "dask"]


def test_drop_files_opens_them(qtbot, window, monkeypatch):
    monkeypatch.setattr(
        window.files, "ask_kind", lambda path: "queries" if "quer" in Path(path).name else "library"
    )
    mime = QMimeData()
    mime.setUrls(
        [QUrl.fromLocalFile(str(demo_library_path())), QUrl.fromLocalFile(str(demo_queries_path()))]
    )
    event = QDropEvent(
        QPointF(10, 10),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    window.dropEvent(event)
    s = window.session
    # both read in the background, side by side in the session's runner
    qtbot.waitUntil(lambda: s.library is not None and s.queries is not None, timeout=30_000)
    assert s.library is not None and len(s.library) == 3000
    assert s.queries is not None and len(s.queries.spectra) == 40


def test_keeping_every_hit_asks_before_a_huge_table(qtbot, demo, boxes, monkeypatch):
    from PyQt6.QtWidgets import QMessageBox

    import simms_gui._qt.search_controller as search_control

    monkeypatch.setattr(search_control, "LARGE_RESULT_ROWS", 100_000)  # demo: 40 x 3,000
    demo.search_panel.top_n.setValue(0)  # "all"
    assert demo.searches.start() is None  # the question was not answered "Yes"
    assert [(kind, title) for kind, title, _ in boxes] == [("question", "Keep every hit?")]
    assert "120,000 rows" in boxes[0][2]
    monkeypatch.setattr(
        QMessageBox, "question", staticmethod(lambda *a, **k: QMessageBox.StandardButton.Yes)
    )
    with qtbot.waitSignal(demo.searchFinished, timeout=120_000):
        assert demo.searches.start() is not None
    assert demo.results.model.rowCount() == len(demo.session.hits) > 0
    # a top N never asks, nor does a scripted search with its own parameters
    boxes.clear()
    demo.search_panel.top_n.setValue(10)
    with qtbot.waitSignal(demo.searchFinished, timeout=120_000):
        assert demo.searches.start() is not None
    assert boxes == []


def test_a_search_waiting_for_the_kernels_says_they_compile(qtbot, demo, monkeypatch):
    import simms_gui._qt.main_window as main_window
    import simms_gui._qt.search_progress as search_panel

    monkeypatch.setattr(search_panel, "warming_up", lambda: True)
    monkeypatch.setattr(main_window, "warming_up", lambda: True)
    demo._warm_up_started -= 30  # noqa: SLF001 - as if the warm-up had run for 30 s
    demo._check_warm_up()  # noqa: SLF001
    assert "Preparing the search kernels (first run only)" in demo.slow_steps.text()
    demo.search_panel.set_running(True)
    assert demo.search_panel.progress_bar.format() == (
        "preparing the search kernels (first run only)…"
    )
    assert "numba compiles them once" in demo.search_panel.progress_label.text()
    demo.search_panel.set_running(False)
    monkeypatch.setattr(main_window, "warming_up", lambda: False)
    demo._check_warm_up()  # noqa: SLF001
    assert demo.slow_steps.text() == "Search kernels ready"


@pytest.mark.slow
def test_opening_a_large_library_shows_progress_and_cancels(
    qtbot, window, data_dir, monkeypatch, tmp_path
):
    """A cold read of MassBank (54,390 spectra) reports its progress; Cancel stops it."""
    from PyQt6.QtWidgets import QPushButton

    from simms_gui.session import LoadProgress

    monkeypatch.setenv("SIMMS_CACHE_DIR", str(tmp_path / "cache"))  # a cold read
    reports = []
    update = LoadProgress.update
    monkeypatch.setattr(
        LoadProgress, "update", lambda self, d, t: reports.append((d, t)) or update(self, d, t)
    )
    path = data_dir / "massbank_ms2.mgf.gz"
    with qtbot.waitSignal(window.fileLoaded, timeout=300_000):
        window.files.open_file(path, "library")
        dialog = window.files.load_dialogs[-1]
        assert dialog.labelText() == "Reading massbank_ms2.mgf.gz…"
        qtbot.waitUntil(dialog.isVisible, timeout=20_000)  # shown after half a second
        assert window.slow_steps.text().startswith("Reading massbank_ms2.mgf.gz…")
    assert len(window.session.library) == 54_390
    assert window.files.load_dialogs == []  # closed when the read ended
    assert len(reports) > 10  # the reader reports as it goes, not only at start and end
    done = [d for d, _ in reports]
    assert done == sorted(done) and reports[-1][0] == reports[-1][1] > 0
    # again, cancelled at once (another cold read): nothing is added, no error box
    monkeypatch.setenv("SIMMS_CACHE_DIR", str(tmp_path / "cache2"))
    libraries = len(window.session.libraries)
    with qtbot.waitSignal(window.loadFailed, timeout=300_000) as failed:
        window.files.open_file(path, "library")
        dialog = window.files.load_dialogs[-1]
        next(b for b in dialog.findChildren(QPushButton) if b.text() == "Cancel").click()
    assert failed.args == [f"{path}: cancelled"]
    assert len(window.session.libraries) == libraries
    assert window.files.load_dialogs == []
