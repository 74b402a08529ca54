"""Figures at publication size: a scene region to a 300 dpi PNG, a vector SVG or a PDF.

The region is drawn with :meth:`QGraphicsScene.render`, so text and lines keep
their proportions: a figure laid out at ``width_in`` × ``height_in`` inches on a
96 dpi canvas prints with its fonts at their point sizes.  Files are written to
a temporary name in the target folder and renamed (atomic).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from PyQt6 import QtCore, QtGui, QtSvg, QtWidgets

__all__ = ["CANVAS_DPI", "FIGURE_FORMATS", "FIGURE_SIZE_IN", "write_figure"]

#: Logical pixels per inch of the canvas the figure is laid out on.
CANVAS_DPI = 96.0
#: Size of exported mirror plots (inches): a two-column journal figure.
FIGURE_SIZE_IN = (7.0, 4.2)
#: Suffixes :func:`write_figure` writes.
FIGURE_FORMATS = (".png", ".svg", ".pdf")


def write_figure(
    scene: QtWidgets.QGraphicsScene,
    source: QtCore.QRectF,
    path: str | os.PathLike,
    *,
    dpi: float = 300.0,
    title: str = "SimMS figure",
) -> Path:
    """Write the ``source`` rectangle of ``scene`` to PNG, SVG or PDF (by suffix).

    Parameters
    ----------
    scene : QGraphicsScene
        The scene drawn.
    source : QRectF
        Scene rectangle of the figure, laid out at :data:`CANVAS_DPI`.
    path : str or PathLike
        ``.png`` (raster at ``dpi``, with the resolution stored in the file),
        ``.svg`` (vector, text as text) or ``.pdf`` (vector, page of the figure's size).
    dpi : float, default 300
        Resolution of a PNG (SVG and PDF are vector graphics).
    title : str
        Document title of SVG and PDF files.

    Returns
    -------
    pathlib.Path
        The written file.

    Raises
    ------
    ValueError
        For another suffix.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    writers = {".png": _write_png, ".svg": _write_svg, ".pdf": _write_pdf}
    if suffix not in writers:
        raise ValueError(f"{path}: unsupported figure format {suffix!r}; use .png, .svg or .pdf")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{uuid.uuid4().hex[:8]}.tmp{path.suffix}")
    try:
        writers[suffix](scene, source, str(tmp), dpi=dpi, title=title)
        os.replace(tmp, path)
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise
    return path


def _render(painter: QtGui.QPainter, scene, source: QtCore.QRectF, target: QtCore.QRectF) -> None:
    painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QtGui.QPainter.RenderHint.TextAntialiasing)
    painter.fillRect(target, QtGui.QColor("white"))
    scene.render(painter, target, source, QtCore.Qt.AspectRatioMode.IgnoreAspectRatio)


def _write_png(scene, source: QtCore.QRectF, path: str, *, dpi: float, title: str) -> None:
    scale = dpi / CANVAS_DPI
    width, height = round(source.width() * scale), round(source.height() * scale)
    image = QtGui.QImage(width, height, QtGui.QImage.Format.Format_ARGB32)
    image.fill(QtGui.QColor("white"))
    painter = QtGui.QPainter(image)
    try:
        _render(painter, scene, source, QtCore.QRectF(0, 0, width, height))
    finally:
        painter.end()
    # the resolution is stored only now: painted at it, fonts given in points
    # would grow by dpi / CANVAS_DPI a second time
    dots_per_meter = round(dpi / 0.0254)
    image.setDotsPerMeterX(dots_per_meter)
    image.setDotsPerMeterY(dots_per_meter)
    image.setText("Title", title)
    if not image.save(path, "PNG"):
        raise OSError(f"{path}: could not write the PNG")


def _write_svg(scene, source: QtCore.QRectF, path: str, *, dpi: float, title: str) -> None:
    width, height = source.width(), source.height()
    generator = QtSvg.QSvgGenerator()
    generator.setFileName(path)
    generator.setResolution(round(CANVAS_DPI))
    generator.setSize(QtCore.QSize(round(width), round(height)))
    generator.setViewBox(QtCore.QRectF(0, 0, width, height))
    generator.setTitle(title)
    painter = QtGui.QPainter(generator)
    try:
        _render(painter, scene, source, QtCore.QRectF(0, 0, width, height))
    finally:
        painter.end()


def _write_pdf(scene, source: QtCore.QRectF, path: str, *, dpi: float, title: str) -> None:
    writer = QtGui.QPdfWriter(path)
    writer.setTitle(title)
    writer.setCreator("SimMS desktop")
    size = QtCore.QSizeF(source.width() / CANVAS_DPI * 72.0, source.height() / CANVAS_DPI * 72.0)
    writer.setPageSize(QtGui.QPageSize(size, QtGui.QPageSize.Unit.Point))
    writer.setPageMargins(QtCore.QMarginsF(0, 0, 0, 0))
    # the page in canvas units: pyqtgraph's axes replay a QPicture recorded at screen
    # resolution, which a 300 dpi page would scale again (axis text ~5x, ticks off
    # their peaks); vector output keeps every coordinate as a float anyway
    writer.setResolution(round(CANVAS_DPI))
    painter = QtGui.QPainter(writer)
    try:
        viewport = painter.viewport()
        _render(painter, scene, source, QtCore.QRectF(viewport))
    finally:
        painter.end()
