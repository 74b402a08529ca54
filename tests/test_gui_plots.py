"""Mirror plot, matched-peaks table, heatmap and plot helpers, on real spectra (offscreen)."""

from __future__ import annotations

import xml.dom.minidom

import numpy as np
import pyqtgraph as pg
import pytest
from PyQt6 import QtCore, QtGui

from engine.matching import greedy_matches
from simms_gui._qt.heatmap import HeatmapWidget
from simms_gui._qt.matched_peaks import COLUMNS, MatchedPeaksModel, MatchedPeaksView
from simms_gui._qt.mirror_plot import COLORS, MirrorPlotWidget
from simms_gui._qt.plots import (
    annotate_peaks,
    export_plot,
    plot_links,
    plot_sticks,
    relative_intensity,
    segment_count,
)

TOLERANCE = 0.1
MATCHED_COLOR = COLORS["matched"]
# Novaluron M-H (query) vs another Novaluron M-H record: ordinary matches only.
QUERY, LIBRARY = 13, 20
# Avermectin B1b vs Doramectin (precursor m/z differ by 26): half the modified-cosine
# matches are shifted.
MOD_QUERY, MOD_LIBRARY = 51, 53


def _pair(library, q: int, r: int, *, modified: bool = False):
    qmz, qint = library.peaks(q)
    lmz, lint = library.peaks(r)
    kwargs = {}
    if modified:
        kwargs = {
            "precursor_mz1": float(library.precursor_mz[q]),
            "precursor_mz2": float(library.precursor_mz[r]),
        }
    matches = greedy_matches(qmz, qint, lmz, lint, tolerance=TOLERANCE, **kwargs)
    return qmz, qint, lmz, lint, matches


def _pixels(image: QtGui.QImage) -> np.ndarray:
    """An image's pixels as an (h, w, 3) int array."""
    image = image.convertToFormat(QtGui.QImage.Format.Format_RGB888)
    ptr = image.constBits()
    ptr.setsize(image.sizeInBytes())
    rows = np.frombuffer(ptr, np.uint8).reshape(image.height(), image.bytesPerLine())
    return rows[:, : 3 * image.width()].reshape(image.height(), image.width(), 3).astype(int)


def _xy(item: pg.PlotDataItem) -> tuple[np.ndarray, np.ndarray]:
    x, y = item.getData()
    if x is None:
        return np.empty(0), np.empty(0)
    return np.asarray(x), np.asarray(y)


@pytest.fixture
def mirror(qtbot) -> MirrorPlotWidget:
    widget = MirrorPlotWidget()
    qtbot.addWidget(widget)
    widget.resize(900, 500)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


# --------------------------------------------------------------- plot helpers
def test_plot_helpers_draw_pairs(qtbot):
    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    mz = np.array([100.0, 150.0, 200.0])
    intensity = np.array([10.0, 50.0, 25.0])
    item = pg.PlotDataItem()
    assert plot_sticks(item, mz, intensity, sign=-1) is item
    x, y = _xy(item)
    np.testing.assert_array_equal(x, [100, 100, 150, 150, 200, 200])
    np.testing.assert_array_equal(y, [0, -10, 0, -50, 0, -25])
    links = plot_links(pg.PlotDataItem(), mz, intensity, mz + 0.01, -intensity)
    assert segment_count(links) == 3
    with pytest.raises(ValueError):
        plot_links(pg.PlotDataItem(), mz, intensity, mz[:2], intensity)
    np.testing.assert_allclose(relative_intensity(intensity), [20, 100, 50])
    labels = annotate_peaks(plot.getPlotItem(), mz, intensity, n=2, min_separation=1.0)
    assert [label.toPlainText() for label in labels] == ["150.0000", "200.0000"]


# ---------------------------------------------------------------- mirror plot
def test_mirror_plot_real_pair(mirror, pesticides):
    qmz, qint, lmz, lint, matches = _pair(pesticides, QUERY, LIBRARY)
    assert matches.matches > 5
    mirror.set_pair(qmz, qint, lmz, lint, matches, title="Novaluron",
                    query_label="query", library_label="library")  # fmt: skip

    assert segment_count(mirror.link_item) + segment_count(mirror.shifted_link_item) == (
        matches.matches
    )
    assert segment_count(mirror.link_item) == matches.matches  # no shifted candidates
    assert f"{matches.score:.4f}" in mirror.title_text
    assert f"{matches.matches} matched peaks" in mirror.title_text

    # matched sticks stand on the matched query / library m/z, query up, library down
    x, y = _xy(mirror.matched_items["query"])
    np.testing.assert_array_equal(x[0::2], qmz[matches.query_peak])
    assert np.all(y[1::2] > 0) and np.all(y[0::2] == 0)
    x, y = _xy(mirror.matched_items["library"])
    np.testing.assert_array_equal(x[0::2], lmz[matches.library_peak])
    assert np.all(y[1::2] < 0)
    assert segment_count(mirror.matched_item) == matches.matches

    # unmatched peaks: everything else, grey, one item per side
    assert segment_count(mirror.unmatched_items[0]) == len(qmz) - matches.matches
    assert segment_count(mirror.unmatched_items[1]) == len(lmz) - matches.matches
    # intensities scaled to 100 %
    assert max(_xy(mirror.unmatched_items[0])[1].max(), _xy(mirror.matched_item)[1].max()) <= 100
    assert np.isclose(mirror.query_intensity.max(), 100.0)

    # labels: m/z texts of the strongest peaks of both sides
    assert 2 <= len(mirror.labels) <= 2 * (8 + 16)
    texts = {label.toPlainText() for label in mirror.labels}
    assert f"{qmz[np.argmax(qint)]:.4f}" in texts
    assert f"{lmz[np.argmax(lint)]:.4f}" in texts

    # zoom and pan act on m/z only
    vb = mirror.plot_item.getViewBox()
    assert vb.state["mouseEnabled"] == [True, False]
    lo, hi = vb.viewRange()[0]
    assert lo <= min(qmz.min(), lmz.min()) and hi >= max(qmz.max(), lmz.max())

    mirror.highlight_match(0)
    assert segment_count(mirror.highlight_item) == 2
    mirror.highlight_match(None)
    assert segment_count(mirror.highlight_item) == 0

    mirror.clear()
    assert segment_count(mirror.link_item) == 0 and mirror.labels == []
    assert mirror.title_text == "" and mirror.matches is None


def test_mirror_plot_modified_cosine(mirror, pesticides):
    qmz, qint, lmz, lint, matches = _pair(pesticides, MOD_QUERY, MOD_LIBRARY, modified=True)
    n_shifted = int(matches.shifted.sum())
    assert 0 < n_shifted < matches.matches
    mirror.set_pair(qmz, qint, lmz, lint, matches, score_name="modified cosine")
    assert segment_count(mirror.shifted_link_item) == n_shifted
    assert segment_count(mirror.link_item) == matches.matches - n_shifted
    x, _ = _xy(mirror.matched_items["library_shifted"])
    np.testing.assert_array_equal(x[0::2], lmz[matches.library_peak[matches.shifted]])
    # shifted links join peaks a precursor difference apart
    lx, _ = _xy(mirror.shifted_link_item)
    shift = pesticides.precursor_mz[MOD_QUERY] - pesticides.precursor_mz[MOD_LIBRARY]
    np.testing.assert_allclose(lx[0::2] - lx[1::2], shift, atol=TOLERANCE + 1e-9)
    assert mirror.title_text.startswith("modified cosine ")
    assert f"({n_shifted} shifted)" in mirror.title_text


def test_mirror_plot_rejects_bad_matches(mirror, pesticides):
    qmz, qint, lmz, lint, matches = _pair(pesticides, QUERY, LIBRARY)
    with pytest.raises(ValueError):
        mirror.set_pair(qmz[:3], qint[:3], lmz, lint, matches)
    with pytest.raises(ValueError):
        mirror.set_pair(qmz, qint[:-1], lmz, lint, matches)


def test_mirror_plot_large_spectra(mirror, massbank_queries):
    counts = massbank_queries.peak_counts
    big = np.argsort(counts)[-2:]
    qmz, qint, lmz, lint, matches = _pair(massbank_queries, int(big[1]), int(big[0]))
    mirror.set_pair(qmz, qint, lmz, lint, matches)
    # one item per group, however many peaks
    drawn = sum(segment_count(i) for i in (*mirror.unmatched_items, mirror.matched_item,
                                           mirror.matched_items["library"]))  # fmt: skip
    assert drawn == len(qmz) + len(lmz)
    assert len(mirror.plot_item.items) < 40


def test_mirror_plot_export(mirror, pesticides, tmp_path):
    qmz, qint, lmz, lint, matches = _pair(pesticides, QUERY, LIBRARY)
    mirror.set_pair(qmz, qint, lmz, lint, matches, title="Novaluron <M-H>")
    png = mirror.export_image(tmp_path / "mirror.png")
    svg = mirror.export_image(tmp_path / "out" / "mirror.svg")
    image = QtGui.QImage(str(png))
    assert not image.isNull() and image.width() >= 800 and image.height() > 100
    # not a blank canvas: the matched sticks' blue is in it
    rgb = _pixels(image)
    matched = np.array(QtGui.QColor(MATCHED_COLOR).getRgb()[:3])
    assert np.sum(np.all(np.abs(rgb - matched) <= 12, axis=-1)) > 200
    document = xml.dom.minidom.parse(str(svg))
    assert document.documentElement.tagName == "svg"
    assert f"{matches.score:.4f}" in svg.read_text(encoding="utf-8")
    # written atomically: no temporary files left behind
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [
        "mirror.png",
        "mirror.svg",
    ]
    with pytest.raises(ValueError):
        mirror.export_image(tmp_path / "mirror.xyz")


# ------------------------------------------------------ matched-peaks table
def test_matched_peaks_model(qtbot, pesticides):
    qmz, qint, lmz, lint, matches = _pair(pesticides, QUERY, LIBRARY)
    view = MatchedPeaksView()
    qtbot.addWidget(view)
    view.set_matches(qmz, qint, lmz, lint, matches)
    model = view.matches_model
    assert model.rowCount() == matches.matches
    assert model.columnCount() == len(COLUMNS) == 8

    def column(key: str) -> np.ndarray:
        c = COLUMNS.index(key)
        return np.array([model.index(r, c).data(QtCore.Qt.ItemDataRole.UserRole)
                         for r in range(model.rowCount())])  # fmt: skip

    order = np.array([model.index(r, 0).data(MatchedPeaksModel.MATCH_INDEX_ROLE)
                      for r in range(model.rowCount())])  # fmt: skip
    q = qmz[matches.query_peak[order]]
    lib = lmz[matches.library_peak[order]]
    np.testing.assert_array_equal(column("query_mz"), q)
    np.testing.assert_array_equal(column("library_mz"), lib)
    np.testing.assert_allclose(column("delta_mda"), (q - lib) * 1e3)
    np.testing.assert_allclose(column("delta_ppm"), (q - lib) / lib * 1e6)
    assert np.all(np.abs(column("delta_mda")) <= TOLERANCE * 1e3 + 1e-6)
    np.testing.assert_allclose(
        column("query_intensity"), qint[matches.query_peak[order]] / qint.max() * 100
    )
    assert abs(column("contribution").sum() - matches.score) < 1e-9
    assert not column("shifted").any()
    c = COLUMNS.index("delta_mda")
    assert model.index(0, c).data() == f"{column('delta_mda')[0]:+.2f}"
    assert model.headerData(c, QtCore.Qt.Orientation.Horizontal) == "Δ (mDa)"

    # sorting is numeric and keeps the rows together
    view.sortByColumn(COLUMNS.index("contribution"), QtCore.Qt.SortOrder.DescendingOrder)
    contribution = column("contribution")
    assert np.all(np.diff(contribution) <= 0)
    np.testing.assert_allclose(contribution[0], matches.contribution.max())
    view.sortByColumn(COLUMNS.index("library_mz"), QtCore.Qt.SortOrder.AscendingOrder)
    assert np.all(np.diff(column("library_mz")) >= 0)

    # selecting a row announces the pair's index in the matches
    with qtbot.waitSignal(view.matchSelected) as blocker:
        view.selectRow(2)
    assert blocker.args == [int(model.index(2, 0).data(MatchedPeaksModel.MATCH_INDEX_ROLE))]

    view.clear()
    assert model.rowCount() == 0


def test_matched_peaks_shifted_delta(qtbot, pesticides):
    qmz, qint, lmz, lint, matches = _pair(pesticides, MOD_QUERY, MOD_LIBRARY, modified=True)
    pq, pl = pesticides.precursor_mz[MOD_QUERY], pesticides.precursor_mz[MOD_LIBRARY]
    model = MatchedPeaksModel()
    model.set_matches(qmz, qint, lmz, lint, matches, query_precursor_mz=pq,
                      library_precursor_mz=pl)  # fmt: skip
    delta = model.columns["delta_mda"]
    assert model.columns["shifted"].sum() == matches.shifted.sum()
    # after the precursor shift every pair lies within the tolerance
    assert np.all(np.abs(delta) <= TOLERANCE * 1e3 + 1e-6)
    assert abs(model.columns["contribution"].sum() - matches.score) < 1e-9


# --------------------------------------------------------------------- heatmap
@pytest.fixture
def heatmap(qtbot) -> HeatmapWidget:
    widget = HeatmapWidget()
    qtbot.addWidget(widget)
    widget.resize(700, 600)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def _viewport_pos(heatmap: HeatmapWidget, row: int, column: int) -> QtCore.QPoint:
    scene_pos = heatmap.cell_center(row, column)
    return heatmap.graphics.mapFromScene(scene_pos)


def test_heatmap_click_and_hover(qtbot, heatmap):
    scores = np.arange(35, dtype=np.float64).reshape(5, 7) / 35
    rows = [f"query {i}" for i in range(5)]
    columns = [f"hit {j}" for j in range(7)]
    heatmap.set_matrix(scores, row_labels=rows, column_labels=columns, title="test")
    QtCore.QCoreApplication.processEvents()

    for row, column in [(0, 0), (3, 5), (4, 6), (1, 2)]:
        pos = _viewport_pos(heatmap, row, column)
        with qtbot.waitSignal(heatmap.cellClicked, timeout=2000) as blocker:
            qtbot.mouseClick(heatmap.graphics.viewport(), QtCore.Qt.MouseButton.LeftButton,
                             pos=pos)  # fmt: skip
        assert blocker.args == [row, column]

    # hover: the tooltip names the row, the column and the score
    heatmap._on_mouse_moved(heatmap.cell_center(3, 5))
    assert heatmap.hovered_cell == (3, 5)
    assert heatmap.hover_text == f"query 3\nhit 5\nscore {scores[3, 5]:.4f}"
    assert heatmap.cell_at(QtCore.QPointF(-1000, -1000)) is None

    # few rows/columns: ticks show the labels
    ticks = heatmap.plot_item.getAxis("left")._tickLevels[0]
    assert [t[1] for t in ticks] == rows


def test_heatmap_large_and_export(qtbot, heatmap, tmp_path):
    rng = np.random.default_rng(7)
    heatmap.set_matrix(rng.random((2000, 2000)))
    QtCore.QCoreApplication.processEvents()
    assert heatmap.image_item.image.shape == (2000, 2000)
    assert heatmap.cell_at(heatmap.cell_center(1999, 0)) == (1999, 0)
    small = rng.random((5, 7))
    small[2, 3] = np.nan
    heatmap.set_matrix(small)
    assert "score —" in heatmap.tooltip_text(2, 3)
    png = heatmap.export_image(tmp_path / "heatmap.png")
    svg = heatmap.export_image(tmp_path / "heatmap.svg")
    assert not QtGui.QImage(str(png)).isNull()
    assert xml.dom.minidom.parse(str(svg)).documentElement.tagName == "svg"
    with pytest.raises(ValueError):
        heatmap.set_matrix(np.zeros(5))
    with pytest.raises(ValueError):
        heatmap.set_matrix(np.zeros((2, 2)), row_labels=["a"])


def test_export_plot_of_scene(qtbot, tmp_path):
    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    plot_sticks(pg.PlotDataItem(), [1.0, 2.0], [1.0, 2.0])
    out = export_plot(plot.scene(), tmp_path / "scene.svg")
    assert xml.dom.minidom.parse(str(out)).documentElement.tagName == "svg"
