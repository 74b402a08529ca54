"""The chemist's desk: sessions, the quit prompt, stale hits, slow-step notes, the layout.

Each test drives the real window offscreen on the bundled demo (3,000 MassBank
library spectra, 40 queries) and checks against the engine or pandas.
"""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
from PyQt6.QtCore import Qt
from PyQt6.QtGui import QAction
from PyQt6.QtWidgets import QMessageBox

import engine
from engine import SearchProgress
from simms_gui._qt.results_model import COLUMNS
from simms_gui._qt.results_view import MAX_FIT_CHARS
from simms_gui.resources import demo_library_path, demo_queries_path
from simms_gui.session import Session
from simms_gui.session_file import open_session, read_session, save_session

COL = {c.key: k for k, c in enumerate(COLUMNS)}
Button = QMessageBox.StandardButton


def new_window(qtbot):
    from simms_gui._qt.main_window import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    return w


def search(qtbot, window, **params):
    p = engine.SearchParameters(**params)
    with qtbot.waitSignal(window.searchFinished, timeout=180_000):
        assert window.searches.start(p, "cpu") is not None
    return p


@pytest.fixture
def searched(qtbot, window):
    assert window.files.load_demo(background=False)
    params = search(qtbot, window, top_n=5, tolerance=0.03)
    return window, params


def answer(monkeypatch, button):
    """QMessageBox.question answers ``button``; returns the list of questions asked."""
    asked = []

    def question(parent, title, text, *args, **kwargs):
        asked.append(title)
        return button

    monkeypatch.setattr(QMessageBox, "question", staticmethod(question))
    return asked


# ---------------------------------------------------------------- sessions
def test_session_round_trip_restores_hits_parameters_and_selection(qtbot, searched, tmp_path):
    window, params = searched
    s = window.session
    window.results.select_row(7)
    window.query_list.select_rows([1, 4])
    selected = s.selected_hit
    assert selected is not None and s.selected_queries == [1, 4]
    path = window.sessions.save(tmp_path / "demo")
    assert path.name == "demo.simms" and not s.unsaved

    other = new_window(qtbot)
    other.show()
    with qtbot.waitSignal(other.sessionOpened, timeout=60_000):
        other.sessions.open(path)  # in the background, with the load progress
    t = other.session
    np.testing.assert_array_equal(t.hits.query_index, s.hits.query_index)
    np.testing.assert_array_equal(t.hits.library_index, s.hits.library_index)
    np.testing.assert_array_equal(t.hits.score, s.hits.score)  # bit for bit
    np.testing.assert_array_equal(t.hits.matches, s.hits.matches)
    pd.testing.assert_frame_equal(t.hit_list().to_pandas(), s.hit_list().to_pandas())
    assert t.params == params and other.search_panel.parameters() == params
    assert other.results.model.rowCount() == len(s.hits)
    row = other.results.model.row_of(other.results.current_row())
    assert (int(row["query_index"]), int(row["library_index"])) == selected
    assert other.query_list.selected_rows() == [1, 4]
    assert other.session.stale == [] and not other.results.stale
    # the hits equal a fresh search of the reopened files
    expected = engine.search(t.queries.spectra, t.library, params, backend="cpu")
    np.testing.assert_array_equal(t.hits.library_index, expected.library_index)
    other.shutdown()


def test_session_round_trip_restores_the_tables_filter_sort_and_best_hits(
    qtbot, searched, tmp_path
):
    """A reopened session lists the hits as they were looked at: text filter, score
    range, best hit per query and the sort (column and direction)."""
    window, _ = searched
    results = window.results
    results.best_check.setChecked(True)
    results.score_min.setValue(0.3)
    word = str(results.model.row_of(0)["library_name"])[:3].lower()
    results.filter_edit.setText(word)
    results.table.sortByColumn(COL["score"], Qt.SortOrder.DescendingOrder)
    shown = results.model.hit_table(visible=True)
    assert 0 < len(shown) < len(window.session.hits)
    path = window.sessions.save(tmp_path / "view.simms")

    other = new_window(qtbot)
    with qtbot.waitSignal(other.sessionOpened, timeout=60_000):
        other.sessions.open(path)
    again = other.results
    assert again.best_check.isChecked() and again.score_min.value() == pytest.approx(0.3)
    assert again.filter_edit.text() == word
    header = again.table.horizontalHeader()
    assert header.sortIndicatorSection() == COL["score"]
    assert header.sortIndicatorOrder() == Qt.SortOrder.DescendingOrder
    restored = again.model.hit_table(visible=True)
    np.testing.assert_array_equal(restored.query_index, shown.query_index)
    np.testing.assert_array_equal(restored.library_index, shown.library_index)
    # the rows as a chemist reads them: one per query, scores from high to low, all >= 0.3
    assert len(set(restored.query_index.tolist())) == len(restored)
    assert np.all(np.diff(restored.score) <= 0) and restored.score.min() >= 0.3
    names = again.model.column("library_name")
    others = [again.model.column(k) for k in ("query_name", "query_id", "library_id")]
    assert all(
        word in " ".join(str(c[k]) for c in (names, *others)).lower()
        or word in str(again.model.column("library_inchikey")[k]).lower()
        for k in range(len(restored))
    )
    other.shutdown()


def test_a_changed_library_is_reported_and_its_hits_not_restored(tmp_path):
    library, queries = tmp_path / "library.mgf", tmp_path / "queries.mgf"
    shutil.copy(demo_library_path(), library)
    shutil.copy(demo_queries_path(), queries)
    s = Session()
    s.open(library)
    s.open(queries, "queries")
    s.run_search(engine.SearchParameters(top_n=3), backend="cpu")
    path = save_session(s, tmp_path / "before.simms")
    assert open_session(Session(), path) == []  # unchanged: no problems
    text = library.read_text()
    library.write_text(text[: text.rindex("BEGIN IONS")])  # one spectrum less
    fresh = Session()
    problems = open_session(fresh, path)
    assert any("changed since the session was saved" in p and "library.mgf" in p for p in problems)
    assert any("not restored" in p for p in problems)
    assert len(fresh.hits) == 0 and len(fresh.library) == len(s.library) - 1
    # a moved folder is found through the relative paths
    moved = tmp_path / "moved"
    moved.mkdir()
    for name in ("library.mgf", "queries.mgf", "before.simms"):
        shutil.move(tmp_path / name, moved / name)
    opened = read_session(moved / "before.simms")
    assert opened.libraries[0] is not None and opened.libraries[0].path.parent == moved


def test_not_a_session_file_is_one_clear_error(tmp_path):
    from simms_gui.session_file import SessionFileError

    bad = tmp_path / "x.simms"
    bad.write_text("not a zip")
    with pytest.raises(SessionFileError, match="x.simms: not a SimMS session file"):
        read_session(bad)


# ---------------------------------------------------------------- quitting
def test_quit_asks_with_unsaved_hits_only(qtbot, monkeypatch, tmp_path):
    window = new_window(qtbot)
    window.confirm_unsaved = True
    window.show()
    asked = answer(monkeypatch, Button.Cancel)
    assert window.close() and asked == []  # nothing found: no question
    window.show()
    assert window.files.load_demo(background=False)
    search(qtbot, window, top_n=3)
    assert window.session.unsaved
    assert not window.close() and asked == ["Save the session?"]
    assert window.isVisible()  # Cancel keeps the window
    # Save asks where and writes the session, then the window closes
    target = tmp_path / "quit.simms"
    monkeypatch.setattr(
        "PyQt6.QtWidgets.QFileDialog.getSaveFileName", lambda *a, **k: (str(target), "")
    )
    answer(monkeypatch, Button.Save)
    assert window.close() and target.is_file()
    assert len(read_session(target).hits) == len(window.session.hits)
    # saved hits do not ask again
    asked = answer(monkeypatch, Button.Cancel)
    window.show()
    assert window.close() and asked == []
    window.shutdown()


def test_discard_closes_without_saving(qtbot, monkeypatch):
    window = new_window(qtbot)
    window.confirm_unsaved = True
    window.show()
    window.files.load_demo(background=False)
    search(qtbot, window, top_n=2)
    asked = answer(monkeypatch, Button.Discard)
    assert window.close() and asked == ["Save the session?"]
    window.shutdown()


# ---------------------------------------------------------------- stale hits
def test_stale_banner_after_new_queries_and_parameters_until_the_next_search(qtbot, searched):
    window, _ = searched
    banner = window.results.stale_banner
    assert window.session.stale == [] and banner.isHidden()
    window.files.open_file(demo_queries_path(), "queries", background=False)  # read again
    assert window.session.stale == ["queries"]
    assert banner.isVisible() and "the queries changed" in banner.text()
    assert "gray" in window.results.table.styleSheet()
    search(qtbot, window, top_n=5, tolerance=0.03)
    assert banner.isHidden() and window.results.table.styleSheet() == ""
    # a parameter changed in the panel greys them too, and changing it back undoes it
    window.search_panel.tolerance.setValue(0.05)
    qtbot.waitUntil(lambda: banner.isVisible(), timeout=5000)
    assert "search parameters" in banner.text()
    window.search_panel.tolerance.setValue(0.03)
    qtbot.waitUntil(lambda: banner.isHidden(), timeout=5000)
    # a scripted search finer than the panel shows (4 decimals) is not out of date
    search(qtbot, window, top_n=5, tolerance=0.031234)
    window.sessions.show_params_to_session()  # noqa: SLF001 - as the panel's timer does
    assert window.session.stale == [] and banner.isHidden()


# ---------------------------------------------------------------- slow steps
def test_compile_note_never_overwrites_search_done(qtbot, window, monkeypatch):
    import simms_gui._qt.main_window as main_window
    import simms_gui._qt.search_progress as search_panel

    window.files.load_demo(background=False)
    monkeypatch.setattr(main_window, "warming_up", lambda: True)
    monkeypatch.setattr(search_panel, "warming_up", lambda: True)
    window._warm_up_started -= 30  # noqa: SLF001 - as if the warm-up had run for 30 s
    window._check_warm_up()  # noqa: SLF001
    assert window.slow_steps.text().startswith("Preparing the search kernels (first run only)")
    assert window.slow_steps.isVisible()
    window.search_panel.set_running(True)
    assert "first run only" in window.search_panel.progress_bar.format()
    window.search_panel.set_running(False)
    search(qtbot, window, top_n=3)
    done = window.statusBar().currentMessage()
    assert done.startswith("Search done")
    window._check_warm_up()  # noqa: SLF001 - still compiling
    monkeypatch.setattr(main_window, "warming_up", lambda: False)
    window._check_warm_up()  # noqa: SLF001 - now ready
    assert window.statusBar().currentMessage() == done
    assert window.slow_steps.text() == "Search kernels ready"


def test_no_status_tip_hides_the_status_messages(qtbot, window):
    from PyQt6.QtGui import QStatusTipEvent
    from PyQt6.QtWidgets import QApplication

    actions = window.findChildren(QAction)
    assert len(actions) > 10 and [a.text() for a in actions if a.statusTip()] == []
    window.log("Reading massbank_ms2.mgf.gz…")
    for tip in ("Open an MGF, MSP, mzML, mzXML or JSON spectral library", ""):
        QApplication.sendEvent(window, QStatusTipEvent(tip))  # the mouse over, then off
        assert window.statusBar().currentMessage() == "Reading massbank_ms2.mgf.gz…"
    window.open_library_action.showStatusText(window.menuBar())  # a menu entry hovered
    assert window.statusBar().currentMessage() == "Reading massbank_ms2.mgf.gz…"


def test_reading_a_file_shows_in_the_status_line_and_the_spectra_panel(
    qtbot, window, data_dir, monkeypatch, tmp_path
):
    monkeypatch.setenv("SIMMS_CACHE_DIR", str(tmp_path / "cache"))  # a cold read
    with qtbot.waitSignal(window.fileLoaded, timeout=120_000):
        window.files.open_file(data_dir / "pesticides.mgf", "library")
        assert window.slow_steps.text().startswith("Reading pesticides.mgf…")
        (row,) = window.library_panel.loading.values()
        assert row.text(0).startswith("Reading pesticides.mgf…")
        assert window.files.load_dialogs[-1].labelText() == "Reading pesticides.mgf…"
    assert window.slow_steps.text() == "" and window.library_panel.loading == {}


def test_progress_after_stop_stays_stopped_with_the_hits_kept(window):
    panel = window.search_panel
    panel.set_running(True)
    progress = SearchProgress(pairs_done=400, pairs_total=1000, hits=12, elapsed=1.0)
    panel.show_progress(progress)
    panel.show_done("stopped · 12 hits", 12, "stopped")
    panel.show_progress(SearchProgress(pairs_done=500, pairs_total=1000, hits=13, elapsed=2))
    assert panel.progress_bar.format() == "stopped · 12 hits"
    assert panel.progress_label.text() == "Stopped after 400 of 1.0 k pairs (40 %): 12 hits kept."


# ---------------------------------------------------------------- layout
def test_layout_at_1366x768(qtbot, searched):
    window, _ = searched
    window.resize(1366, 768)
    window.arrange_docks(compact=True)
    qtbot.waitExposed(window)
    qtbot.wait(50)
    # the window fits the screen: no tab or panel asks for more than 1366 x 768
    smallest = window.minimumSizeHint().expandedTo(window.minimumSize())
    assert smallest.width() <= 1366 and smallest.height() <= 768, smallest
    assert window.width() <= 1366 and window.height() <= 768
    panel = window.search_panel
    assert panel.search_button.visibleRegion().boundingRect().height() > 10
    assert panel.progress_bar.visibleRegion().boundingRect().height() > 5
    fields = [panel.form.itemAt(k).widget() for k in range(panel.form.count())]
    fields = [f for f in fields if f is not None and not f.isHidden()]
    assert len(fields) >= 10
    for field in fields:  # every field can be scrolled to
        panel.form_scroll.ensureWidgetVisible(field)
        qtbot.wait(1)
        assert field.visibleRegion().boundingRect().height() > 5, field
    # the query list shows many rows
    queries = window.query_list.table
    assert queries.viewport().height() // queries.rowHeight(0) >= 8
    # key columns show their text whole, or are capped with the text on hover
    model, table = window.results.model, window.results.table
    metrics = table.fontMetrics()
    for key in ("query_id", "query_name", "library_name", "library_id", "precursor_mz_delta"):
        k = COL[key]
        for row in range(min(40, model.rowCount())):
            text = model.data(model.index(row, k))
            if metrics.horizontalAdvance(text) > table.columnWidth(k):
                assert model.data(model.index(row, k), Qt.ItemDataRole.ToolTipRole) == text
                cap = MAX_FIT_CHARS * window.results.fontMetrics().horizontalAdvance("0")
                assert table.columnWidth(k) == cap
    header = table.horizontalHeader()
    title = model.headerData(COL["precursor_mz_delta"], header.orientation())
    assert header.fontMetrics().horizontalAdvance(title) < table.columnWidth(
        COL["precursor_mz_delta"]
    )
    # the query list's columns: whole text, or capped with the text on hover
    proxy, char = window.query_list.proxy, window.query_list.fontMetrics().horizontalAdvance("0")
    for col, max_chars in enumerate(window.query_list.MAX_CHARS[:-1]):  # the last one stretches
        title = proxy.headerData(col, Qt.Orientation.Horizontal)
        assert queries.fontMetrics().horizontalAdvance(title) < queries.columnWidth(col), title
        for row in range(proxy.rowCount()):
            text = proxy.index(row, col).data()
            if queries.fontMetrics().horizontalAdvance(text) > queries.columnWidth(col):
                assert queries.columnWidth(col) == max_chars * char
                assert proxy.index(row, col).data(Qt.ItemDataRole.ToolTipRole) == text


def test_hit_details_show_the_hits_fields(searched):
    window, _ = searched
    window.results.select_row(0)
    row = window.results.model.row_of(0)
    text = window.pair_view.details.toPlainText()
    for key in ("library_name", "query_name", "library_id", "query_id", "library_inchikey"):
        assert str(row[key]) in text, key
    for key in ("query_precursor_mz", "library_precursor_mz"):
        assert f"{float(row[key]):.4f}" in text
    ppm = float(row["precursor_mz_delta"]) / float(row["query_precursor_mz"]) * 1e6
    assert f"Δ m/z (ppm){ppm:+.1f}" in text.replace("\n", "")
    assert f"Score{float(row['score']):.4f}" in text.replace("\n", "")
    assert "Reverse score" in text and "Matched peaks" in text and "Explained" in text


# ---------------------------------------------------------------- the start
def test_second_start_is_not_empty(qtbot, monkeypatch, tmp_path):
    from simms_gui._qt.main_window import first_start

    assert first_start() and not first_start()  # this is a second start
    window = new_window(qtbot)
    asked = answer(monkeypatch, Button.Open)
    assert window.sessions.restore_on_start() == "demo" and asked == []  # no session saved yet
    assert window.session.library is not None and window.session.queries is not None
    search(qtbot, window, top_n=2)
    saved = window.sessions.save(tmp_path / "last.simms")
    window.shutdown()
    again = new_window(qtbot)
    assert again.sessions.restore_on_start() == "session" and asked == ["Reopen the last session?"]
    assert len(again.session.hits) == len(window.session.hits) > 0
    assert saved.is_file()
    again.shutdown()


def test_viewer_saves_and_opens_sessions(qtbot, tmp_path):
    from simms_gui.viewer import Viewer

    viewer = Viewer(show=False, demo=True)
    qtbot.addWidget(viewer.window)
    hits = viewer.search(backend="cpu", top_n=4).wait(timeout=180)
    viewer.show_mirror(int(hits.query_index[2]), int(hits.library_index[2]))
    path = viewer.save_session(tmp_path / "v.simms")
    other = Viewer(show=False)
    qtbot.addWidget(other.window)
    assert other.open_session(path) == []
    pd.testing.assert_frame_equal(other.hits.to_pandas(), viewer.hits.to_pandas())
    assert other.session.selected_hit == (int(hits.query_index[2]), int(hits.library_index[2]))
    row = other.window.results.model.row_of(other.window.results.current_row())
    assert (row["query_index"], row["library_index"]) == other.session.selected_hit
    assert other.window.pair_view.pair is not None  # its mirror plot is drawn
    viewer.close()
    other.close()


def test_a_search_without_progress_for_seconds_says_kernels_compile(qtbot, window, monkeypatch):
    import simms_gui._qt.search_progress as search_panel

    monkeypatch.setattr(search_panel, "warming_up", lambda: False)
    panel = window.search_panel
    panel.set_backend("cpu")
    panel.progress_view._slow_start.setInterval(10)  # noqa: SLF001 - not three seconds in a test
    panel.set_running(True)
    assert panel.progress_bar.format() == "starting…"
    qtbot.waitUntil(lambda: panel.progress_bar.format() == "preparing the search…", timeout=5000)
    assert "first run only" in panel.progress_label.text()
    panel.show_progress(SearchProgress(pairs_done=5, pairs_total=10, hits=1, elapsed=1.0))
    assert panel.progress_bar.format() == "50 %"
    panel.set_running(False)


def test_dropping_a_session_file_opens_it(qtbot, searched, tmp_path):
    from PyQt6.QtCore import QMimeData, QPointF, QUrl
    from PyQt6.QtGui import QDropEvent

    window, _ = searched
    path = window.sessions.save(tmp_path / "dropped.simms")
    other = new_window(qtbot)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    event = QDropEvent(
        QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )  # fmt: skip
    with qtbot.waitSignal(other.sessionOpened, timeout=60_000):
        other.dropEvent(event)
    assert len(other.session.hits) == len(window.session.hits) > 0
    other.shutdown()


def test_a_session_fills_its_table_from_its_task(qtbot, searched, tmp_path):
    """The table's columns are made in the open task's thread; the window only shows them."""
    window, _ = searched
    window.results.select_row(5)
    selected = window.session.selected_hit
    path = window.sessions.save(tmp_path / "large.simms")
    other = new_window(qtbot)
    seen = []
    other.session.events.hits.connect(lambda e: seen.append(e.columns is not None))
    with qtbot.waitSignal(other.sessionOpened, timeout=60_000):
        assert other.sessions.open(path) is None  # returns at once
    assert seen == [True]  # one event with every hit, its columns made in the task
    assert other.results.model.rowCount() == len(window.session.hits)
    row = other.results.model.row_of(other.results.current_row())
    assert (int(row["query_index"]), int(row["library_index"])) == selected
    assert other.slow_steps.text() == ""
    other.shutdown()


def test_first_start_window_fits_the_screen(qtbot):
    """With no saved geometry the window never starts larger than the screen's free area."""
    from simms_gui._qt.main_window import MainWindow

    w = MainWindow(persist_settings=False)
    qtbot.addWidget(w)
    free = w.screen().availableGeometry()
    w.fit_to_screen(free.width() + 600, free.height() + 400)
    assert w.width() <= max(free.width(), w.minimumSizeHint().width())
    assert w.height() <= max(free.height(), w.minimumSizeHint().height())
    assert (w.x(), w.y()) == (free.x(), free.y())
    w.fit_to_screen(400, 300)  # smaller than the screen: the size asked for (or the minimum)
    assert w.width() <= max(400, w.minimumSizeHint().width())
    w.shutdown()
