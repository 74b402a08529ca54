"""The mirror plot reads well on screen and on paper: real MassBank spectra, offscreen Qt.

Collisions are computed from the plot's own items: the scene rectangles of the
m/z labels against each other, the title, the captions, the legend and the data
area, after the widget is shown at a realistic size.
"""

from __future__ import annotations

import itertools
import re
import xml.dom.minidom

import numpy as np
import pytest
from PyQt6 import QtGui

from engine import SearchParameters
from simms_gui._qt.mirror_plot import FIGURE_SIZE_IN, LEGEND_NAMES, MirrorPlotWidget
from simms_gui._qt.peak_labels import scene_rect
from simms_gui._qt.plots import segment_count
from simms_gui.pairs import compute_pair

# Glycoursodeoxycholic acid: a 565-peak query against a 578-peak library spectrum of
# the same compound (MassBank BGC Munich), the most crowded pair of the query set.
CROWDED_QUERY_ID = "MSBNK-BGC_Munich-RP005503"
CROWDED_LIBRARY_INDEX = 8750


@pytest.fixture(scope="module")
def crowded_pair(massbank_queries, massbank_library):
    ids = massbank_queries.metadata["id"]
    q = int(np.flatnonzero(np.asarray(ids) == CROWDED_QUERY_ID)[0])
    params = SearchParameters(mode="custom", tolerance=0.02)
    pair = compute_pair(massbank_queries, q, massbank_library, CROWDED_LIBRARY_INDEX, params)
    assert len(pair.query_mz) > 500 and len(pair.library_mz) > 500
    return pair


@pytest.fixture(scope="module")
def shifted_pair(pesticides):
    # Avermectin B1b vs Doramectin: precursors 26 Da apart, half the matches shifted
    return compute_pair(pesticides, 51, pesticides, 53, SearchParameters(mode="analog"))


def _show(qtbot, width: int, height: int) -> MirrorPlotWidget:
    widget = MirrorPlotWidget()
    qtbot.addWidget(widget)
    widget.resize(width, height)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def _set(widget: MirrorPlotWidget, pair, score_name: str = "cosine") -> None:
    widget.set_pair(
        pair.query_mz, pair.query_intensity, pair.library_mz, pair.library_intensity,
        pair.matches, title="query vs library", query_label=pair.query_label,
        library_label=pair.library_label, score_name=score_name,
        query_precursor_mz=pair.query_precursor, library_precursor_mz=pair.library_precursor,
    )  # fmt: skip


def _assert_no_collisions(widget: MirrorPlotWidget) -> None:
    boxes = [scene_rect(label) for label in widget.labels]
    area = scene_rect(widget.plot_item.getViewBox())
    fixed = widget.fixed_text_rects()
    assert len(fixed) == 4  # title, two captions, legend
    vb = widget.plot_item.getViewBox()
    for label, box in zip(widget.labels, boxes, strict=True):
        assert area.contains(box), "a label leaves the data area"
        tip = vb.mapViewToScene(label.peak_position)
        assert box.adjusted(-2, -2, 2, 2).contains(tip), "a label floats away from its peak"
        assert not any(box.intersects(other) for other in fixed), "a label covers a caption"
    for a, b in itertools.combinations(boxes, 2):
        assert not a.intersects(b), "two labels overlap"
    for a, b in itertools.combinations(fixed, 2):
        assert not a.intersects(b), "title, captions and legend overlap"


@pytest.mark.parametrize("size", [(900, 480), (620, 330)])
def test_labels_never_collide_on_a_crowded_pair(qtbot, crowded_pair, size):
    widget = _show(qtbot, *size)
    _set(widget, crowded_pair)
    qtbot.waitUntil(lambda: len(widget.labels) >= 6)
    _assert_no_collisions(widget)
    # the title keeps score and matched peaks whole (names may be shortened)
    shown = widget.title_item.text
    assert f"cosine {crowded_pair.matches.score:.4f}" in shown
    assert f"{crowded_pair.matches.matches} matched peaks" in shown
    texts = {label.toPlainText() for label in widget.labels}
    # the base peaks of both spectra carry their labels
    for mz, rel in (
        (crowded_pair.query_mz, widget.query_intensity),
        (crowded_pair.library_mz, widget.library_intensity),
    ):
        assert f"{mz[np.argmax(rel)]:.4f}" in texts

    # zoomed in, labels are placed again, still without collisions
    lo = float(crowded_pair.query_mz[np.argmax(widget.query_intensity)]) - 40
    widget.plot_item.getViewBox().setXRange(lo, lo + 80, padding=0)
    qtbot.waitUntil(lambda: all(lo <= float(label.pos().x()) <= lo + 80 for label in widget.labels))
    assert widget.labels
    _assert_no_collisions(widget)


def test_precursor_marked_on_both_spectra(qtbot, shifted_pair):
    widget = _show(qtbot, 900, 480)
    _set(widget, shifted_pair, "modified cosine")
    for item, precursor, sign in zip(
        widget.precursor_items,
        (shifted_pair.query_precursor, shifted_pair.library_precursor),
        (1, -1),
        strict=True,
    ):
        x, y = item.getData()
        np.testing.assert_allclose(x, [precursor, precursor])
        assert sign * y[1] == pytest.approx(100.0)
    lo, hi = widget.plot_item.getViewBox().viewRange()[0]
    assert lo < shifted_pair.query_precursor < hi and lo < shifted_pair.library_precursor < hi
    assert f"precursor m/z {shifted_pair.query_precursor:.4f}" in widget.query_label_item.full_text
    assert f"{shifted_pair.library_precursor:.4f}" in widget.library_label_item.full_text


def test_legend_lists_only_what_is_drawn(qtbot, crowded_pair, shifted_pair):
    widget = _show(qtbot, 900, 480)

    def drawn() -> list[str]:
        counts = {
            "matched": segment_count(widget.matched_items["query"]),
            "shifted": segment_count(widget.matched_items["query_shifted"]),
            "unmatched": sum(segment_count(i) for i in widget.unmatched_items),
            "precursor": sum(segment_count(i) for i in widget.precursor_items),
        }
        return [LEGEND_NAMES[k] for k in LEGEND_NAMES if counts[k]]

    _set(widget, crowded_pair)  # plain cosine: nothing is shifted
    assert widget.legend_names() == drawn()
    assert LEGEND_NAMES["shifted"] not in widget.legend_names()
    assert LEGEND_NAMES["matched"] in widget.legend_names()
    _set(widget, shifted_pair, "modified cosine")
    assert widget.legend_names() == drawn() == list(LEGEND_NAMES.values())
    # legend below the data area, never over it
    assert not scene_rect(widget.legend).intersects(scene_rect(widget.plot_item.getViewBox()))
    widget.clear()
    assert widget.legend_names() == []


def _dark_columns(image: QtGui.QImage, top: int, bottom: int) -> np.ndarray:
    image = image.convertToFormat(QtGui.QImage.Format.Format_Grayscale8)
    ptr = image.constBits()
    ptr.setsize(image.sizeInBytes())
    rows = np.frombuffer(ptr, np.uint8).reshape(image.height(), image.bytesPerLine())
    band = rows[top:bottom, : image.width()]
    return np.flatnonzero((band < 110).any(axis=0))


def test_export_at_publication_size(qtbot, crowded_pair, tmp_path):
    widget = _show(qtbot, 900, 480)
    _set(widget, crowded_pair)
    png = widget.export_image(tmp_path / "mirror.png")
    image = QtGui.QImage(str(png))
    width_in, height_in = FIGURE_SIZE_IN
    assert abs(image.width() - 300 * width_in) <= 3
    assert abs(image.height() - 300 * height_in) <= 3
    assert round(image.dotsPerMeterX() * 0.0254) == 300 == round(image.dotsPerMeterY() * 0.0254)
    # fonts scale with the figure: the legend's text spans a good part of the
    # page's width (a legend drawn at screen size covers a sixth of it)
    legend = _dark_columns(image, int(image.height() * 0.92), image.height())
    assert legend.size and legend.max() - legend.min() > 0.4 * image.width()
    # and the title is there, large
    title = _dark_columns(image, 0, int(image.height() * 0.06))
    assert title.size and title.max() - title.min() > 0.3 * image.width()

    svg = widget.export_image(tmp_path / "mirror.svg")
    document = xml.dom.minidom.parse(str(svg))
    assert document.documentElement.tagName == "svg"
    assert not document.getElementsByTagName("image")  # vector, no embedded bitmap
    shapes = sum(len(document.getElementsByTagName(t)) for t in ("path", "polyline", "line"))
    assert shapes > 50
    text = svg.read_text(encoding="utf-8")
    assert f"{crowded_pair.matches.score:.4f}" in text

    pdf = widget.export_image(tmp_path / "mirror.pdf")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF")
    box = re.search(rb"/MediaBox \[0 0 ([\d.]+) ([\d.]+)\]", data)
    assert box is not None  # a page of the figure's size: 7 × 4.2 inches in points
    assert float(box[1]) == pytest.approx(72 * width_in, abs=1)
    assert float(box[2]) == pytest.approx(72 * height_in, abs=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mirror.pdf", "mirror.png", "mirror.svg"]
    with pytest.raises(ValueError):
        widget.export_image(tmp_path / "mirror.xyz")


def test_empty_mirror_shows_a_hint(qtbot, shifted_pair):
    widget = _show(qtbot, 600, 300)
    assert widget.stack.currentWidget() is widget.hint and widget.hint.isVisible()
    assert not widget.plot_widget.isVisible()
    assert "mirror plot" in widget.hint.text()
    with pytest.raises(ValueError):
        widget.export_image("nothing.png")
    _set(widget, shifted_pair)
    assert widget.plot_widget.isVisible() and not widget.hint.isVisible()
    widget.clear()
    assert widget.hint.isVisible()
