"""Small traps of the desk: units that convert, best-first sorting, query clicks that show
something, Parquet only where it can be written, labelled heatmap axes, hints for empty plots."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from PyQt6.QtCore import QPoint, Qt
from PyQt6.QtWidgets import QFileDialog

import engine
from simms_gui._qt.results_model import COLUMNS

COL = {c.key: k for k, c in enumerate(COLUMNS)}


@pytest.fixture
def window(qtbot, boxes):
    from simms_gui._qt.main_window import MainWindow

    w = MainWindow(persist_settings=False)
    qtbot.addWidget(w)
    w.resize(1366, 768)
    w.show()
    yield w
    w.shutdown()


@pytest.fixture
def searched(qtbot, window):
    assert window.files.load_demo(background=False)
    with qtbot.waitSignal(window.searchFinished, timeout=120_000):
        assert window.searches.start(engine.SearchParameters(top_n=10), "cpu") is not None
    assert len(window.session.hits) > 40
    return window


def test_precursor_unit_switch_shows_that_units_number(qtbot):
    from simms_gui._qt.search_panel import SearchPanel

    panel = SearchPanel(persist_settings=False)
    qtbot.addWidget(panel)
    panel.set_parameters(engine.SearchParameters(precursor_tolerance=0.02))
    assert panel.precursor_tolerance.suffix() == " Da"
    panel.precursor_unit.setCurrentIndex(panel.precursor_unit.findData("ppm"))
    assert panel.precursor_tolerance.suffix() == " ppm"
    assert panel.precursor_tolerance.value() == 10.0  # not "0.0200 ppm"
    params = panel.parameters()
    assert (params.precursor_tolerance, params.precursor_unit) == (10.0, "ppm")
    panel.precursor_tolerance.setValue(5.0)
    panel.precursor_unit.setCurrentIndex(panel.precursor_unit.findData("Da"))
    assert panel.precursor_tolerance.value() == pytest.approx(0.02)  # the Da number comes back
    panel.precursor_unit.setCurrentIndex(panel.precursor_unit.findData("off"))
    panel.precursor_unit.setCurrentIndex(panel.precursor_unit.findData("ppm"))
    assert panel.precursor_tolerance.value() == 5.0
    # parameters set from outside are shown as given
    panel.set_parameters(engine.SearchParameters(precursor_tolerance=20.0, precursor_unit="ppm"))
    assert (panel.precursor_tolerance.value(), panel.precursor_tolerance.suffix()) == (20.0, " ppm")


def _click_header(qtbot, table, column: int) -> None:
    header = table.horizontalHeader()
    x = header.sectionViewportPosition(column) + header.sectionSize(column) // 2
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, 5))


def test_first_click_sorts_scores_best_first_and_names_a_to_z(qtbot, searched):
    table, model = searched.results.table, searched.results.model
    _click_header(qtbot, table, COL["score"])
    scores = model.column("score")
    assert scores[0] == scores.max() and np.all(np.diff(scores) <= 0)
    _click_header(qtbot, table, COL["matches"])
    assert np.all(np.diff(model.column("matches")) <= 0)
    _click_header(qtbot, table, COL["library_name"])
    assert table.horizontalHeader().sortIndicatorOrder() == Qt.SortOrder.AscendingOrder
    names = [str(v).lower() for v in model.column("library_name")]
    assert names == sorted(names)
    _click_header(qtbot, table, COL["score"])  # a new column: best first again
    assert np.all(np.diff(model.column("score")) <= 0)


def test_query_click_shows_its_best_hit_and_double_click_filters_visibly(qtbot, searched):
    hits, queries = searched.session.hits, searched.query_list
    row = int(hits.query_index[np.argsort(hits.query_index)[len(hits) // 2]])
    mine = np.flatnonzero(hits.query_index == row)
    best_library = int(hits.library_index[mine[np.argmax(hits.score[mine])]])
    index = queries.proxy.mapFromSource(queries.model.index(row, 0))
    rect = queries.table.visualRect(index)
    queries.table.scrollTo(index)
    rect = queries.table.visualRect(index)
    qtbot.mouseClick(queries.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    current = searched.results.model.row_of(searched.results.current_row())
    assert (int(current["query_index"]), int(current["library_index"])) == (row, best_library)
    mirror = searched.pair_view.mirror
    assert mirror.matches is not None and mirror.stack.currentWidget() is mirror.plot_widget

    total = searched.results.model.rowCount()
    qtbot.mouseDClick(queries.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    model, bar = searched.results.model, searched.results.query_bar
    assert model.rowCount() == len(mine) < total
    assert set(model.column("query_index").tolist()) == {row}
    assert bar.isVisible()
    name = str(searched.session.queries.spectra.metadata["name"][row])
    assert name in bar.label.text()
    qtbot.mouseClick(bar.clear_button, Qt.MouseButton.LeftButton)
    assert model.rowCount() == total and not bar.isVisible()


def test_query_without_hits_says_so(qtbot, window):
    assert window.files.load_demo(background=False)
    window.hits.show_query(0)
    mirror = window.pair_view.mirror
    assert mirror.hint.isVisible() and "No hits" in mirror.hint.text()


def test_parquet_offered_only_when_it_can_be_written(qtbot, searched, monkeypatch):
    from simms_gui._qt import hits_controller as hit_views

    offered: list[str] = []

    def fake_dialog(parent, caption, start, filters):
        offered.append(filters)
        return "", ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", fake_dialog)
    assert importlib.util.find_spec("pyarrow") is not None  # in the test environment
    searched.hits.export_hits(None, "all")
    assert "Parquet (*.parquet)" in offered[-1]

    real = importlib.util.find_spec
    monkeypatch.setattr(
        hit_views.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "pyarrow" else real(name, *a),
    )
    searched.hits.export_hits(None, "all")
    assert "arquet" not in offered[-1] and "Tab-separated (*.tsv)" in offered[-1]
    assert "pyarrow" in searched.log_view.toPlainText()


def _ticks(axis) -> list[str]:
    levels = axis._tickLevels or [[]]
    return [text for _pos, text in levels[0]]


def test_heatmap_axes_name_rows_and_columns(qtbot, searched):
    queries = searched.session.queries.spectra
    with qtbot.waitSignal(searched.heatmapReady, timeout=60_000):
        searched.analyses.heatmap_selection([0, 1, 2, 3, 4])
    heatmap = searched.heatmap_panel.heatmap
    assert heatmap.stack.currentWidget() is heatmap.graphics
    plot = heatmap.plot_item
    assert plot.getAxis("bottom").labelText == "query" == plot.getAxis("left").labelText
    names = [str(queries.metadata["name"][i]) for i in range(5)]
    bottom = _ticks(plot.getAxis("bottom"))
    assert len(bottom) == 5 and not any(t.isdigit() for t in bottom)
    for tick, name in zip(bottom, names, strict=True):
        assert name.startswith(tick.rstrip("…"))

    with qtbot.waitSignal(searched.heatmapReady, timeout=60_000):
        searched.analyses.heatmap_top_hits([0, 1, 2])
    assert plot.getAxis("bottom").labelText == "library hit"
    assert plot.getAxis("left").labelText == "query"


def test_empty_heatmap_shows_a_hint(qtbot):
    from simms_gui._qt.heatmap import HeatmapWidget

    widget = HeatmapWidget()
    qtbot.addWidget(widget)
    widget.show()
    assert widget.hint.isVisible() and not widget.graphics.isVisible()
    widget.set_matrix(np.eye(3), row_labels=list("abc"), column_labels=list("xyz"))
    assert widget.graphics.isVisible() and not widget.hint.isVisible()
    widget.clear()
    assert widget.hint.isVisible()
