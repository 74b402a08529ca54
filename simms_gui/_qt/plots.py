"""Small plot helpers for spectra (spectrum_utils style).

Every helper takes the pyqtgraph item it draws into and returns it, so views
compose them freely; options are keyword-only.  Stick spectra and link lines
are drawn as *one* :class:`pyqtgraph.PlotDataItem` per group with
``connect="pairs"`` (two points per segment), which stays fast for spectra with
thousands of peaks.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters  # noqa: F401  (registers pg.exporters)
from PyQt6 import QtCore, QtGui, QtSvg, QtWidgets

__all__ = [
    "annotate_peaks",
    "export_plot",
    "plot_links",
    "plot_precursor",
    "plot_sticks",
    "relative_intensity",
    "segment_count",
]


def relative_intensity(intensity: np.ndarray, *, scale: float = 100.0) -> np.ndarray:
    """Intensities scaled so that the largest is ``scale`` (percent by default).

    Parameters
    ----------
    intensity : array_like
        Peak intensities (>= 0).
    scale : float, default 100
        Value of the strongest peak after scaling.

    Returns
    -------
    ndarray of float64
        Scaled intensities; all zeros when the spectrum is empty or all zero.
    """
    intensity = np.asarray(intensity, dtype=np.float64)
    top = float(intensity.max()) if intensity.size else 0.0
    if top <= 0 or not np.isfinite(top):
        return np.zeros_like(intensity)
    return intensity * (scale / top)


def _pairs(x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray):
    """Interleave segment end points: ``[x0[0], x1[0], x0[1], x1[1], ...]``."""
    n = len(x0)
    x = np.empty(2 * n, dtype=np.float64)
    y = np.empty(2 * n, dtype=np.float64)
    x[0::2], x[1::2] = x0, x1
    y[0::2], y[1::2] = y0, y1
    return x, y


def plot_sticks(
    item: pg.PlotDataItem,
    mz: np.ndarray,
    intensity: np.ndarray,
    *,
    sign: float = 1.0,
    pen: object | None = None,
) -> pg.PlotDataItem:
    """Draw a stick spectrum (one vertical segment per peak) into ``item``.

    Parameters
    ----------
    item : pyqtgraph.PlotDataItem
        Target item; its data are replaced.
    mz, intensity : array_like
        Peak positions and heights (already scaled as wanted).
    sign : float, default +1
        ``+1`` draws sticks upwards, ``-1`` downwards (mirror plots).
    pen : optional
        Anything :func:`pyqtgraph.mkPen` accepts; the item's pen is kept when None.

    Returns
    -------
    pyqtgraph.PlotDataItem
        ``item``.
    """
    mz = np.asarray(mz, dtype=np.float64)
    heights = np.sign(sign) * np.asarray(intensity, dtype=np.float64)
    return _draw(item, *_pairs(mz, np.zeros_like(mz), mz, heights), pen)


def plot_links(
    item: pg.PlotDataItem,
    x_top: np.ndarray,
    y_top: np.ndarray,
    x_bottom: np.ndarray,
    y_bottom: np.ndarray,
    *,
    pen: object | None = None,
) -> pg.PlotDataItem:
    """Draw one straight segment per pair ``(x_top, y_top) -> (x_bottom, y_bottom)``.

    ``x_top, y_top, x_bottom, y_bottom`` are the end points, one per link (all the
    same length); ``item``'s data are replaced and ``pen`` (as for :func:`plot_sticks`)
    set.  Returns ``item``.
    """
    arrays = [np.asarray(a, dtype=np.float64) for a in (x_top, y_top, x_bottom, y_bottom)]
    if len({len(a) for a in arrays}) != 1:
        raise ValueError("plot_links: all coordinate arrays must have the same length")
    return _draw(item, *_pairs(*arrays), pen)


def plot_precursor(
    item: pg.PlotDataItem,
    precursor_mz: float | None,
    *,
    sign: float = 1.0,
    height: float = 100.0,
    pen: object | None = None,
) -> pg.PlotDataItem:
    """Mark a precursor m/z with one vertical segment from 0 to ``sign * height``.

    ``sign`` +1 draws upwards (the query side of a mirror plot), -1 downwards;
    ``height`` is the strongest peak's.  An unknown precursor (None) empties
    ``item``; ``pen`` as for :func:`plot_sticks`.  Returns ``item``.
    """
    if precursor_mz is None:
        return _draw(item, np.empty(0), np.empty(0), pen)
    mz = float(precursor_mz)
    return _draw(item, np.array([mz, mz]), np.array([0.0, float(np.sign(sign)) * height]), pen)


def _draw(item: pg.PlotDataItem, x: np.ndarray, y: np.ndarray, pen) -> pg.PlotDataItem:
    """``item`` showing the segments ``(x[2k], y[2k]) - (x[2k+1], y[2k+1])``, in ``pen``."""
    item.setData(x, y, connect="pairs")
    if pen is not None:
        item.setPen(pg.mkPen(pen))
    return item


def segment_count(item: pg.PlotDataItem) -> int:
    """Number of segments an item drawn by :func:`plot_sticks`/:func:`plot_links` holds."""
    x, _ = item.getData()
    return 0 if x is None else len(x) // 2


def _pick_labelled(
    mz: np.ndarray,
    intensity: np.ndarray,
    n: int,
    min_separation: float,
    min_height_separation: float,
    include: np.ndarray,
) -> np.ndarray:
    """Peaks to label: strongest first, skipping those whose label would collide.

    Two labels collide when they are closer than ``min_separation`` in m/z *and*
    closer than ``min_height_separation`` in intensity.
    """
    order = np.argsort(-intensity, kind="stable")
    chosen: list[int] = []
    for k in np.r_[order[:n], np.asarray(include, dtype=np.int64)]:
        k = int(k)
        if k in chosen:
            continue
        if chosen:
            near_x = np.abs(mz[chosen] - mz[k]) < min_separation
            near_y = np.abs(intensity[chosen] - intensity[k]) < min_height_separation
            if np.any(near_x & near_y):
                continue
        chosen.append(k)
    return np.asarray(chosen, dtype=np.int64)


def annotate_peaks(
    plot: pg.PlotItem,
    mz: np.ndarray,
    intensity: np.ndarray,
    *,
    n: int = 8,
    sign: float = 1.0,
    include: np.ndarray | None = None,
    min_separation: float | None = None,
    min_height_separation: float | None = None,
    color: object = "#222222",
    colors: Sequence[object] | None = None,
    decimals: int = 4,
    font_size: int = 8,
) -> list[pg.TextItem]:
    """Put m/z labels on the strongest peaks of a stick spectrum.

    Parameters
    ----------
    plot : pyqtgraph.PlotItem
        Plot the labels are added to.
    mz, intensity : array_like
        Peaks as drawn (``intensity`` positive; ``sign`` gives the direction).
    n : int, default 8
        How many of the strongest peaks to label.
    sign : float, default +1
        ``+1``: labels above upward sticks; ``-1``: below downward sticks.
    include : array_like of int, optional
        Further peak indexes to label (e.g. matched peaks among the strongest),
        subject to the same collision rule.
    min_separation : float, optional
        A label closer than this in m/z to one already placed is skipped when
        it is also closer than ``min_height_separation`` in height; default
        5 % of the spectrum's m/z span (about one label width).
    min_height_separation : float, optional
        Default 8 % of the largest intensity (about one label height).
    color : optional
        Text colour (anything :func:`pyqtgraph.mkColor` accepts).
    colors : sequence, optional
        One colour per peak (same length as ``mz``), overriding ``color``.
    decimals : int, default 4
        Decimals of the m/z shown.
    font_size : int, default 8
        Point size of the label font.

    Returns
    -------
    list of pyqtgraph.TextItem
        The labels, already added to ``plot``.
    """
    mz = np.asarray(mz, dtype=np.float64)
    intensity = np.asarray(intensity, dtype=np.float64)
    if mz.size == 0:
        return []
    if min_separation is None:
        span = float(mz.max() - mz.min())
        min_separation = 0.05 * span if span > 0 else 0.0
    if min_height_separation is None:
        min_height_separation = 0.08 * float(np.max(np.abs(intensity)))
    include = np.empty(0, dtype=np.int64) if include is None else np.asarray(include)
    up = np.sign(sign) >= 0
    font = QtGui.QFont()
    font.setPointSize(font_size)
    labels = []
    for k in _pick_labelled(mz, intensity, n, min_separation, min_height_separation, include):
        text = pg.TextItem(
            f"{mz[k]:.{decimals}f}",
            color=color if colors is None else colors[k],
            anchor=(0.5, 1.0 if up else 0.0),
        )
        text.setFont(font)
        text.setPos(float(mz[k]), float(np.sign(sign) * intensity[k]))
        text.setZValue(20)
        plot.addItem(text)
        labels.append(text)
    return labels


def export_plot(
    item: pg.GraphicsItem | QtWidgets.QGraphicsScene,
    path: str | os.PathLike,
    *,
    width: int | None = None,
) -> Path:
    """Write a plot to PNG or SVG (chosen by the suffix), atomically.

    The image is first written to a temporary file in the target folder and then
    moved over ``path`` with :func:`os.replace`, so a reader never sees a partial file.

    Parameters
    ----------
    item : pyqtgraph.PlotItem, GraphicsLayout, or QGraphicsScene
        What to export (a scene exports everything in it).
    path : str or PathLike
        Destination; the suffix (``.png``, ``.svg``, or another Qt image
        format such as ``.jpg``) selects the format.
    width : int, optional
        Pixel width of raster images (height keeps the aspect ratio); default
        twice the on-screen width for sharper output.

    Returns
    -------
    pathlib.Path
        The written file.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".svg":

        def write(target: str) -> None:
            _export_svg(item, target)

    else:
        formats = {bytes(f).decode().lower() for f in QtGui.QImageWriter.supportedImageFormats()}
        if suffix.lstrip(".") not in formats:
            raise ValueError(f"unsupported image format {suffix!r}; use .png or .svg")
        exporter = pg.exporters.ImageExporter(item)
        rect = exporter.getSourceRect()
        target_width = int(width) if width else max(int(2 * rect.width()), 800)
        exporter.parameters()["width"] = target_width  # height follows the aspect ratio

        def write(target: str) -> None:
            exporter.export(target)

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = str(path.with_name(f".{path.stem}.{uuid.uuid4().hex[:8]}.tmp{path.suffix}"))
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _export_svg(item: pg.GraphicsItem | QtWidgets.QGraphicsScene, path: str) -> None:
    """Render an item (or a whole scene) to SVG with :class:`QtSvg.QSvgGenerator`.

    pyqtgraph's own ``SVGExporter`` cannot parse the closed paths (``Z``) that
    recent Qt versions emit, so the scene is painted into an SVG generator
    instead; lines and text stay vector graphics.
    """
    if isinstance(item, QtWidgets.QGraphicsScene):
        scene, source = item, item.sceneRect()
    else:
        scene = item.scene()
        if scene is None:
            raise ValueError("cannot export an item that is not in a scene")
        source = item.mapRectToScene(item.boundingRect())
    background = QtGui.QColor("white")
    views = scene.views()
    if views and views[0].backgroundBrush().style() != QtCore.Qt.BrushStyle.NoBrush:
        background = views[0].backgroundBrush().color()
    w, h = max(1, round(source.width())), max(1, round(source.height()))
    generator = QtSvg.QSvgGenerator()
    generator.setFileName(path)
    generator.setSize(QtCore.QSize(w, h))
    generator.setViewBox(QtCore.QRectF(0, 0, w, h))
    generator.setTitle("SimMS plot")
    painter = QtGui.QPainter(generator)
    try:
        target = QtCore.QRectF(0, 0, w, h)
        painter.fillRect(target, background)
        scene.render(painter, target, source)
    finally:
        painter.end()
