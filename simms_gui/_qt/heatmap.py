"""Similarity heatmap: a score matrix as an image with a colour bar.

One :class:`pyqtgraph.ImageItem` draws the whole matrix (cell ``(r, c)``
covers ``[c, c + 1] × [r, r + 1]`` in image coordinates, row 0 at the top),
so matrices of several thousand rows and columns display at once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PyQt6 import QtCore, QtGui, QtWidgets

from simms_gui._qt.figure_parts import hint_or_plot, plain_axes
from simms_gui._qt.plots import export_plot

__all__ = ["HeatmapWidget"]

_MAX_LABEL_CHARS = 24


def _short(label: str) -> str:
    return label if len(label) <= _MAX_LABEL_CHARS else label[: _MAX_LABEL_CHARS - 1] + "…"


def _fit_names(
    labels: Sequence[str], metrics: QtGui.QFontMetrics, width: float, *, full: bool
) -> list[str] | None:
    """Names shortened (…) to ``width`` pixels; None when not even 4 characters fit."""
    if full:
        return [_short(t) for t in labels]
    if width < metrics.horizontalAdvance("Abc…"):
        return None
    mode = QtCore.Qt.TextElideMode.ElideRight
    return [metrics.elidedText(_short(t), mode, int(width)) for t in labels]


def _nice_step(minimum: float) -> int:
    """Smallest of 1, 2, 5, 10, 20, 50, ... that is >= ``minimum``."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= minimum:
                return step * factor
        step *= 10


class HeatmapWidget(QtWidgets.QWidget):
    """Score matrix (rows × columns) with a colour bar, hover tooltips and cell clicks.

    Parameters
    ----------
    parent : QWidget, optional
    colormap : str, default "viridis"
        Name of a :func:`pyqtgraph.colormap.get` colour map.
    levels : tuple of float, default (0, 1)
        Scores mapped to the ends of the colour bar.
    max_tick_labels : int, default 40
        Rows/columns are labelled by name up to this many; beyond, by index.

    Attributes
    ----------
    graphics : pyqtgraph.GraphicsLayoutWidget
        The embedded graphics widget.
    plot_item : pyqtgraph.PlotItem
        Plot holding the image (x: columns, y: rows, row 0 at the top).
    image_item : pyqtgraph.ImageItem
        The matrix image.
    color_bar : pyqtgraph.ColorBarItem
        The colour bar.
    scores : ndarray or None
        The matrix shown.
    row_labels, column_labels : list of str
        Labels used in tooltips and ticks (indexes as text when none given).
    hovered_cell : tuple of int or None
        Cell under the mouse, ``(row, column)``.
    hover_text : str
        Tooltip text of the hovered cell.

    Signals
    -------
    cellClicked(int, int)
        ``(row, column)`` of a cell clicked with the left button.
    cellHovered(int, int)
        ``(row, column)`` of the cell under the mouse (-1, -1 when outside).
    """

    cellClicked = QtCore.pyqtSignal(int, int)  # noqa: N815  (Qt naming)
    cellHovered = QtCore.pyqtSignal(int, int)  # noqa: N815  (Qt naming)

    def __init__(
        self,
        parent: QtWidgets.QWidget | None = None,
        *,
        colormap: str = "viridis",
        levels: tuple[float, float] = (0.0, 1.0),
        max_tick_labels: int = 40,
    ) -> None:
        super().__init__(parent)
        self.max_tick_labels = int(max_tick_labels)
        self.levels = (float(levels[0]), float(levels[1]))
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setBackground("w")
        #: Shown instead of empty axes while there is no matrix.
        self.hint, self.stack = hint_or_plot(
            self,
            "No heatmap yet: select queries, then choose “Top hits of selected queries” "
            "or “All vs all of selected queries”",
            self.graphics,
        )

        self.plot_item: pg.PlotItem = self.graphics.addPlot(row=0, col=0)
        plot = self.plot_item
        plain_axes(plot)
        vb = plot.getViewBox()
        vb.invertY(True)
        vb.setDefaultPadding(0)
        self.image_item = pg.ImageItem(axisOrder="row-major", autoDownsample=True)
        plot.addItem(self.image_item)
        self.color_bar = pg.ColorBarItem(
            values=self.levels,
            colorMap=pg.colormap.get(colormap),
            label=None,
            interactive=False,
            width=18,
        )
        self.color_bar.setImageItem(self.image_item, insert_in=plot)

        self.color_bar.axis.setTextPen(pg.mkPen("#222222"))
        self.color_bar.axis.setLabel("score", color="#222222")
        vb.sigRangeChanged.connect(self._update_ticks)
        vb.sigResized.connect(self._update_ticks)
        self._named = False
        self.scores: np.ndarray | None = None
        self.row_labels: list[str] = []
        self.column_labels: list[str] = []
        self.hovered_cell: tuple[int, int] | None = None
        self.hover_text = ""
        scene = self.graphics.scene()
        scene.sigMouseMoved.connect(self._on_mouse_moved)
        scene.sigMouseClicked.connect(self._on_mouse_clicked)

    # ------------------------------------------------------------------ API
    def set_matrix(
        self,
        scores: np.ndarray,
        *,
        row_labels: Sequence[str] | None = None,
        column_labels: Sequence[str] | None = None,
        title: str = "",
        row_title: str = "query",
        column_title: str = "library hit",
    ) -> None:
        """Show a score matrix.

        Parameters
        ----------
        scores : array_like, shape (n_rows, n_columns)
            Scores (NaN shows as blank).
        row_labels, column_labels : sequence of str, optional
            Names of rows and columns (tooltips; ticks when few enough).
        title : str, optional
            Plot title.
        row_title, column_title : str, optional
            Axis captions.

        Raises
        ------
        ValueError
            When ``scores`` is not 2-D or labels do not match its shape.
        """
        scores = np.asarray(scores)
        if scores.ndim != 2:
            raise ValueError(f"scores must be a 2-D matrix, got shape {scores.shape}")
        n_rows, n_cols = scores.shape
        rows = [str(i) for i in range(n_rows)] if row_labels is None else list(map(str, row_labels))
        cols = (
            [str(j) for j in range(n_cols)]
            if column_labels is None
            else list(map(str, column_labels))
        )
        if len(rows) != n_rows or len(cols) != n_cols:
            raise ValueError(
                f"{len(rows)} row and {len(cols)} column labels for a {n_rows}×{n_cols} matrix"
            )
        self.scores = scores
        self.stack.setCurrentWidget(self.graphics)
        self.row_labels, self.column_labels = rows, cols
        self.image_item.setImage(
            np.ascontiguousarray(scores, dtype=np.float32), autoLevels=False, levels=self.levels
        )
        self.image_item.setRect(QtCore.QRectF(0, 0, n_cols, n_rows))
        plot = self.plot_item
        plot.setTitle(title or None, color="#222222", size="11pt")
        plot.setLabel("left", row_title)
        plot.setLabel("bottom", column_title)
        self._named = row_labels is not None or column_labels is not None
        vb = plot.getViewBox()
        vb.setLimits(xMin=0, xMax=max(n_cols, 1), yMin=0, yMax=max(n_rows, 1))
        vb.setRange(xRange=(0, max(n_cols, 1)), yRange=(0, max(n_rows, 1)), padding=0)
        self._update_ticks()

    def clear(self) -> None:
        """Remove the matrix."""
        self.scores = None
        self.row_labels, self.column_labels = [], []
        self.image_item.clear()
        self.plot_item.setTitle(None)
        self.hovered_cell, self.hover_text = None, ""
        self.stack.setCurrentWidget(self.hint)

    def cell_at(self, scene_pos: QtCore.QPointF) -> tuple[int, int] | None:
        """The ``(row, column)`` under a scene position, or None outside the matrix."""
        if self.scores is None:
            return None
        if not self.plot_item.getViewBox().sceneBoundingRect().contains(scene_pos):
            return None
        p = self.image_item.mapFromScene(scene_pos)
        row, col = int(np.floor(p.y())), int(np.floor(p.x()))
        n_rows, n_cols = self.scores.shape
        if 0 <= row < n_rows and 0 <= col < n_cols:
            return row, col
        return None

    def cell_center(self, row: int, column: int) -> QtCore.QPointF:
        """Scene position of the centre of cell ``(row, column)``."""
        return self.image_item.mapToScene(QtCore.QPointF(column + 0.5, row + 0.5))

    def tooltip_text(self, row: int, column: int) -> str:
        """Tooltip of one cell: row label, column label and score."""
        value = float(self.scores[row, column])
        score = "—" if np.isnan(value) else f"{value:.4f}"
        return f"{self.row_labels[row]}\n{self.column_labels[column]}\nscore {score}"

    def export_image(self, path: str | os.PathLike, *, width: int | None = None) -> Path:
        """Write the heatmap and colour bar to PNG or SVG (by suffix), atomically.

        Parameters
        ----------
        path : str or PathLike
            Destination ``.png`` or ``.svg`` file.
        width : int, optional
            Pixel width of a PNG (default: twice the on-screen width, at least 800).

        Returns
        -------
        pathlib.Path
        """
        return export_plot(self.graphics.ci, path, width=width)

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802  (Qt naming)
        return QtCore.QSize(700, 600)

    # ------------------------------------------------------------ helpers
    def _update_ticks(self, *_args: object) -> None:
        """Label cells by name where the names fit, otherwise by index (centred)."""
        if self.scores is None:
            return
        vb = self.plot_item.getViewBox()
        (x0, x1), (y0, y1) = vb.viewRange()
        metrics = QtGui.QFontMetrics(
            self.plot_item.getAxis("bottom").style.get("tickFont") or QtGui.QFont()
        )
        for name, labels, lo, hi, length, need in (
            (
                "bottom",
                self.column_labels,
                x0,
                x1,
                vb.width(),
                max((metrics.horizontalAdvance(_short(t)) for t in self.column_labels), default=0),
            ),
            ("left", self.row_labels, y0, y1, vb.height(), metrics.height()),
        ):
            n = len(labels)
            first, last = max(0, int(np.floor(lo))), min(n, int(np.ceil(hi)))
            pixels = length / max(hi - lo, 1e-9)  # pixels per cell
            axis = self.plot_item.getAxis(name)
            if n == 0 or last <= first:
                axis.setTicks([[]])
                continue
            fitted = None
            if self._named and n <= self.max_tick_labels:
                fits = need + 6 <= pixels
                if name == "bottom":  # names side by side: shortened to the cell's width
                    fitted = _fit_names(labels[first:last], metrics, pixels - 6, full=fits)
                elif fits:
                    fitted = [_short(t) for t in labels[first:last]]
            if fitted is not None:
                ticks = [(first + k + 0.5, text) for k, text in enumerate(fitted)]
            else:
                digits = (
                    metrics.horizontalAdvance(str(n)) + 12
                    if name == "bottom"
                    else (metrics.height() + 4)
                )
                step = _nice_step(digits / max(pixels, 1e-9))
                start = (first // step) * step
                ticks = [(i + 0.5, str(i)) for i in range(start, last, step) if i >= first]
            axis.setTicks([ticks])

    def _on_mouse_moved(self, scene_pos: QtCore.QPointF) -> None:
        cell = self.cell_at(scene_pos)
        if cell == self.hovered_cell:
            return
        self.hovered_cell = cell
        if cell is None:
            self.hover_text = ""
            QtWidgets.QToolTip.hideText()
            self.cellHovered.emit(-1, -1)
            return
        self.hover_text = self.tooltip_text(*cell)
        QtWidgets.QToolTip.showText(QtGui.QCursor.pos(), self.hover_text, self.graphics)
        self.cellHovered.emit(*cell)

    def _on_mouse_clicked(self, event) -> None:
        if event.button() != QtCore.Qt.MouseButton.LeftButton:
            return
        cell = self.cell_at(event.scenePos())
        if cell is not None:
            self.cellClicked.emit(*cell)
