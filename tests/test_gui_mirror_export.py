"""Mirror plots exported without a window: PNG, SVG and PDF agree, and the PDF reads right.

The PDF is checked as a reader sees it: ``pdftotext -bbox`` gives where the
axis numbers are printed and how large, ``pdftoppm`` draws the page; the base
peak's stick must stand over its m/z on the printed axis, at the same place as
in the PNG and the SVG.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from PyQt6 import QtCore, QtGui, QtSvg

from engine import SearchParameters
from simms_gui._qt.mirror_plot import FIGURE_SIZE_IN

ANALOG = SearchParameters(mode="analog")
POPPLER = shutil.which("pdftoppm") and shutil.which("pdftotext")
needs_poppler = pytest.mark.skipif(
    not POPPLER, reason="pdftoppm/pdftotext (poppler-utils) not installed"
)


@pytest.fixture(scope="module")
def figure(pesticides):
    """Avermectin B1b (query, a very long name) against Doramectin: 26 Da apart, 9 shifted."""
    import simms_gui

    fig = simms_gui.mirror_figure(pesticides[51], pesticides[53], params=ANALOG)
    yield fig
    fig.close()


def _image_array(image: QtGui.QImage) -> np.ndarray:
    image = image.convertToFormat(QtGui.QImage.Format.Format_RGB888)
    ptr = image.constBits()
    ptr.setsize(image.sizeInBytes())
    rows = np.frombuffer(ptr, np.uint8).reshape(image.height(), image.bytesPerLine())
    return rows[:, : 3 * image.width()].reshape(image.height(), image.width(), 3).astype(int)


def _blue_column(rgb: np.ndarray) -> float:
    """Relative x (0..1) of the column with most matched-peak blue: the base peaks' stick."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    blue = (b > r + 60) & (b > g + 20)
    counts = blue.sum(axis=0)
    return (int(np.argmax(counts)) + 0.5) / rgb.shape[1]


def _pdf_words(pdf) -> list[tuple[str, float, float, float, float]]:
    html = subprocess.run(
        ["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout
    pattern = (
        r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>'
    )
    return [
        (w, float(a), float(b), float(c), float(d)) for a, b, c, d, w in re.findall(pattern, html)
    ]


@needs_poppler
def test_pdf_axis_reads_the_peaks_mz_like_png_and_svg(figure, tmp_path):
    qmz, qint = figure.query_mz, figure.query_intensity
    base_mz = float(qmz[np.argmax(qint)])  # 229.108: the base peak of both spectra
    paths = {s: figure.save(tmp_path / f"mirror.{s}") for s in ("png", "svg", "pdf")}

    words = _pdf_words(paths["pdf"])
    caption = [h for w, _, y0, _, y1 in words if w == "query" for h in [y1 - y0]]
    assert caption, "the query caption is missing from the PDF"
    rows: dict[int, list] = {}
    for w, x0, y0, x1, y1 in words:
        if re.fullmatch(r"\d+", w):
            rows.setdefault(round(y0), []).append((float(w), (x0 + x1) / 2, y1 - y0))
    axis = max(rows.values(), key=len)  # the m/z axis: the row of most numbers
    assert len(axis) >= 4
    values, centres, heights = (np.array(v) for v in zip(*axis, strict=True))
    # tick labels printed at the size of the other texts (a broken PDF prints them ~5x)
    assert heights.max() < 1.5 * max(caption)
    slope, offset = np.polyfit(values, centres, 1)
    assert np.abs(slope * values + offset - centres).max() < 1.5  # evenly spaced: an axis

    page = subprocess.run(
        ["pdftoppm", "-r", "72", "-png", "-singlefile", str(paths["pdf"]), str(tmp_path / "p")],
        capture_output=True,
        check=True,
    )
    assert page.returncode == 0
    raster = QtGui.QImage(str(tmp_path / "p.png"))
    assert abs(raster.width() - 72 * FIGURE_SIZE_IN[0]) <= 2
    pdf_x = _blue_column(_image_array(raster))
    # the stick stands over its m/z as the printed axis reads it (1 pt = 1 px here)
    read_mz = (pdf_x * raster.width() - offset) / slope
    assert read_mz == pytest.approx(base_mz, abs=4.0)

    png = QtGui.QImage(str(paths["png"]))
    svg = QtGui.QImage(png.width(), png.height(), QtGui.QImage.Format.Format_RGB888)
    svg.fill(QtGui.QColor("white"))
    painter = QtGui.QPainter(svg)
    QtSvg.QSvgRenderer(str(paths["svg"])).render(
        painter, QtCore.QRectF(0, 0, svg.width(), svg.height())
    )
    painter.end()
    for image in (png, svg):
        assert _blue_column(_image_array(image)) == pytest.approx(pdf_x, abs=0.01)


@needs_poppler
def test_title_names_the_library_compound_whole(figure, tmp_path):
    shown = figure.title_item.text
    assert "Doramectin" in shown and "…" not in shown
    assert f"{figure.matches.score:.4f}" in shown
    words = {w for w, *_ in _pdf_words(figure.save(tmp_path / "m.pdf"))}
    assert "Pesticide4_Doramectin_C50H74O14_Dectomax" in words


def test_mirror_figure_takes_indices_and_checks_them(pesticides, tmp_path):
    import simms_gui

    fig = simms_gui.mirror_figure(
        51, 53, queries=pesticides, library=pesticides, params=ANALOG, path=tmp_path / "m.svg"
    )
    try:
        assert (tmp_path / "m.svg").stat().st_size > 1000
        assert fig.matches.matches == 19 and int(np.sum(fig.matches.shifted)) == 9
    finally:
        fig.close()
    with pytest.raises(ValueError, match="queries="):
        simms_gui.mirror_figure(51, 53, library=pesticides)
    with pytest.raises(ValueError, match="one spectrum"):
        simms_gui.mirror_figure(pesticides[0:2], pesticides[53])
    with pytest.raises(ValueError, match="format"):
        simms_gui.mirror_figure(pesticides[51], pesticides[53], path=tmp_path / "m.jpg")


def test_viewer_exports_a_mirror_without_showing_it(pesticides, data_dir, tmp_path):
    import simms_gui

    viewer = simms_gui.Viewer(show=False)
    try:
        viewer.open_library(data_dir / "pesticides.mgf")
        viewer.open_queries(data_dir / "pesticides.mgf")
        with pytest.raises(ValueError, match="select a hit"):
            viewer.export_mirror(tmp_path / "none.png")
        out = viewer.export_mirror(tmp_path / "m.pdf", 51, 53)
        data = out.read_bytes()
        assert data.startswith(b"%PDF")
        box = re.search(rb"/MediaBox \[0 0 ([\d.]+) ([\d.]+)\]", data)
        assert float(box[1]) == pytest.approx(72 * FIGURE_SIZE_IN[0], abs=1)
        assert not viewer.window.isVisible()
        viewer.show_mirror(51, 53)  # the pair shown in the (hidden) window
        shown = viewer.export_mirror(tmp_path / "shown.png")
        assert QtGui.QImage(str(shown)).width() == pytest.approx(300 * FIGURE_SIZE_IN[0], abs=3)
    finally:
        viewer.close()
