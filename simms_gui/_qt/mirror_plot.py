"""Mirror plot of a query spectrum against a library hit.

The query is drawn upwards and the library spectrum downwards, both scaled to
a strongest peak of 100 %.  Matched peak pairs (from
:func:`engine.matching.greedy_matches`) are coloured and linked; pairs matched
across the precursor shift (modified cosine) get a second colour; unmatched
peaks are grey.  Every group is a single pyqtgraph item, so 2,000-peak spectra
redraw instantly.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PyQt6 import QtCore, QtWidgets

from engine.matching import PeakMatches
from simms_gui._qt.plots import (
    annotate_peaks,
    export_plot,
    plot_links,
    plot_sticks,
    relative_intensity,
)

__all__ = ["MirrorPlotWidget"]

#: Colours of the mirror plot (colour-blind safe: blue / orange / grey).
COLORS = {
    "matched": "#1f6fb4",
    "shifted": "#e8710a",
    "unmatched": "#9a9a9a",
    "label": "#333333",
    "zero": "#555555",
    "highlight": "#d62728",
}

_Y_LIMIT = 100.0  # strongest peak, percent
_Y_HEADROOM = 1.22  # room above/below the sticks for labels


class _AbsoluteAxis(pg.AxisItem):
    """Axis showing absolute values (library intensities below zero read positive)."""

    def tickStrings(self, values, scale, spacing):  # noqa: N802  (Qt naming)
        return super().tickStrings([abs(v) for v in values], scale, spacing)


class MirrorPlotWidget(QtWidgets.QWidget):
    """Query spectrum up, library spectrum down, matched peaks coloured and linked.

    Zoom and pan act on m/z only; the intensity axis stays fixed at
    ±100 % (with room for labels).

    Parameters
    ----------
    parent : QWidget, optional

    Attributes
    ----------
    plot_widget : pyqtgraph.PlotWidget
        The embedded plot widget.
    plot_item : pyqtgraph.PlotItem
        Its plot item (what :meth:`export_image` writes).
    matched_items : dict of str to pyqtgraph.PlotDataItem
        Sticks of matched peaks: ``"query"``, ``"library"`` (ordinary matches),
        ``"query_shifted"``, ``"library_shifted"`` (modified-cosine matches).
    matched_item : pyqtgraph.PlotDataItem
        ``matched_items["query"]``: query sticks of ordinary matches.
    unmatched_items : tuple of pyqtgraph.PlotDataItem
        Grey sticks of unmatched peaks, ``(query, library)``.
    link_item, shifted_link_item : pyqtgraph.PlotDataItem
        Lines joining the tips of matched query and library sticks
        (ordinary and shifted matches).
    highlight_item : pyqtgraph.PlotDataItem
        Thick sticks of the pair chosen with :meth:`highlight_match`.
    labels : list of pyqtgraph.TextItem
        m/z labels currently shown.
    matches : engine.matching.PeakMatches or None
        The matches shown.
    title_text : str
        Plain-text title currently shown.
    query_intensity, library_intensity : ndarray
        Relative intensities (percent) as drawn.
    """

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot_widget = pg.PlotWidget(background="w", axisItems={"left": _AbsoluteAxis("left")})
        self.plot_item: pg.PlotItem = self.plot_widget.getPlotItem()
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot_widget)

        plot = self.plot_item
        plot.setLabel("bottom", "m/z")
        plot.setLabel("left", "relative intensity (%)")
        plot.hideButtons()
        plot.setMenuEnabled(False)
        for name in ("left", "bottom"):
            axis = plot.getAxis(name)
            axis.setPen(pg.mkPen("#444444"))
            axis.setTextPen(pg.mkPen("#222222"))
        plot.showGrid(x=False, y=True, alpha=0.15)
        vb = plot.getViewBox()
        vb.setMouseEnabled(x=True, y=False)
        vb.disableAutoRange(axis=pg.ViewBox.YAxis)
        y = _Y_LIMIT * _Y_HEADROOM
        vb.setYRange(-y, y, padding=0)
        vb.setLimits(yMin=-y, yMax=y)

        self.zero_line = pg.InfiniteLine(pos=0, angle=0, pen=pg.mkPen(COLORS["zero"], width=1))
        plot.addItem(self.zero_line)

        def item(color: str, *, width: float = 1.5, z: float = 0, style=None, alpha=255):
            qcolor = pg.mkColor(color)
            qcolor.setAlpha(alpha)
            pen = pg.mkPen(qcolor, width=width)
            if style is not None:
                pen.setStyle(style)
            pen.setCapStyle(QtCore.Qt.PenCapStyle.FlatCap)
            data_item = pg.PlotDataItem(pen=pen, connect="pairs")
            data_item.setZValue(z)
            plot.addItem(data_item)
            return data_item

        dash = QtCore.Qt.PenStyle.DashLine
        self.unmatched_items = (item(COLORS["unmatched"], z=1), item(COLORS["unmatched"], z=1))
        # ordinary pairs sit at (almost) the same m/z: a translucent band behind
        # both sticks shows the pairing; shifted pairs get a thin dashed diagonal
        self.link_item = item(COLORS["matched"], width=6, z=2, alpha=70)
        self.shifted_link_item = item(COLORS["shifted"], width=1.2, z=2, style=dash, alpha=220)
        self.matched_items = {
            "query": item(COLORS["matched"], width=2, z=3),
            "library": item(COLORS["matched"], width=2, z=3),
            "query_shifted": item(COLORS["shifted"], width=2, z=3),
            "library_shifted": item(COLORS["shifted"], width=2, z=3),
        }
        self.matched_item = self.matched_items["query"]
        self.highlight_item = item(COLORS["highlight"], width=4, z=4)

        self.legend = pg.LegendItem(
            offset=(-8, 6),
            colCount=3,
            brush=pg.mkBrush(255, 255, 255, 210),
            pen=pg.mkPen("#cccccc"),
            labelTextColor="#222222",
            labelTextSize="9pt",
        )
        self.legend.setParentItem(vb)
        for name, key in (("matched", "query"), ("shifted (modified cosine)", "query_shifted")):
            self.legend.addItem(self.matched_items[key], name)
        self.legend.addItem(self.unmatched_items[0], "unmatched")

        self.query_label_item = pg.LabelItem("", color="#222222", size="9pt", justify="left")
        self.query_label_item.setParentItem(vb)
        self.query_label_item.anchor(itemPos=(0, 0), parentPos=(0, 0), offset=(6, 2))
        self.library_label_item = pg.LabelItem("", color="#222222", size="9pt", justify="left")
        self.library_label_item.setParentItem(vb)
        self.library_label_item.anchor(itemPos=(0, 1), parentPos=(0, 1), offset=(6, -2))

        self.labels: list[pg.TextItem] = []
        self.n_labels = 8
        self._relabel_timer = QtCore.QTimer(self, singleShot=True, interval=60)
        self._relabel_timer.timeout.connect(self.update_labels)
        vb.sigXRangeChanged.connect(self._relabel_timer.start)
        self.matches: PeakMatches | None = None
        self.title_text = ""
        self.query_mz = self.library_mz = np.empty(0)
        self.query_intensity = self.library_intensity = np.empty(0)
        self.clear()

    # ------------------------------------------------------------------ API
    def set_pair(
        self,
        query_mz: np.ndarray,
        query_intensity: np.ndarray,
        library_mz: np.ndarray,
        library_intensity: np.ndarray,
        matches: PeakMatches,
        *,
        title: str = "",
        query_label: str = "",
        library_label: str = "",
        score_name: str = "cosine",
        n_labels: int = 8,
    ) -> None:
        """Show a query/library pair and the peaks the greedy cosine matched.

        Parameters
        ----------
        query_mz, query_intensity : array_like
            Query peaks (sorted by m/z), drawn upwards.
        library_mz, library_intensity : array_like
            Library peaks (sorted by m/z), drawn downwards.
        matches : engine.matching.PeakMatches
            Result of :func:`engine.matching.greedy_matches` on these peaks.
        title : str, optional
            Text put before the score in the title (e.g. the hit's name).
        query_label, library_label : str, optional
            Captions shown in the top-left and bottom-left corners.
        score_name : str, default "cosine"
            Name of the score in the title (e.g. "modified cosine").
        n_labels : int, default 8
            m/z labels on the strongest peaks of each side.

        Raises
        ------
        ValueError
            When peak arrays differ in length or matches point outside them.
        """
        qmz = np.asarray(query_mz, dtype=np.float64)
        qint = np.asarray(query_intensity, dtype=np.float64)
        lmz = np.asarray(library_mz, dtype=np.float64)
        lint = np.asarray(library_intensity, dtype=np.float64)
        if qmz.shape != qint.shape or lmz.shape != lint.shape:
            raise ValueError("m/z and intensity arrays must have the same length")
        qi = np.asarray(matches.query_peak, dtype=np.int64)
        li = np.asarray(matches.library_peak, dtype=np.int64)
        if qi.size and (
            qi.min() < 0 or qi.max() >= qmz.size or li.min() < 0 or li.max() >= lmz.size
        ):
            raise ValueError("matches refer to peaks outside the given spectra")
        self.clear()
        self.matches = matches
        self.query_mz, self.library_mz = qmz, lmz
        qrel, lrel = relative_intensity(qint), relative_intensity(lint)
        self.query_intensity, self.library_intensity = qrel, lrel

        shifted = np.asarray(matches.shifted, dtype=bool)
        plain = ~shifted
        q_matched = np.zeros(qmz.size, dtype=bool)
        l_matched = np.zeros(lmz.size, dtype=bool)
        q_matched[qi] = True
        l_matched[li] = True

        plot_sticks(self.unmatched_items[0], qmz[~q_matched], qrel[~q_matched], sign=1)
        plot_sticks(self.unmatched_items[1], lmz[~l_matched], lrel[~l_matched], sign=-1)
        for suffix, mask in (("", plain), ("_shifted", shifted)):
            plot_sticks(self.matched_items["query" + suffix], qmz[qi[mask]], qrel[qi[mask]], sign=1)
            plot_sticks(
                self.matched_items["library" + suffix], lmz[li[mask]], lrel[li[mask]], sign=-1
            )
        for link, mask in ((self.link_item, plain), (self.shifted_link_item, shifted)):
            plot_links(link, qmz[qi[mask]], qrel[qi[mask]], lmz[li[mask]], -lrel[li[mask]])

        self.n_labels = n_labels

        n_shifted = int(shifted.sum())
        text = f"{score_name} {matches.score:.4f} · {matches.matches} matched peaks"
        if n_shifted:
            text += f" ({n_shifted} shifted)"
        self.title_text = f"{title} — {text}" if title else text
        self.plot_item.setTitle(_escape(self.title_text), color="#222222", size="11pt")
        self.query_label_item.setText(_escape(f"▲ query: {query_label}" if query_label else ""))
        self.library_label_item.setText(
            _escape(f"▼ library: {library_label}" if library_label else "")
        )
        self.reset_zoom()
        self.update_labels()

    def clear(self) -> None:
        """Remove the spectra, links, labels and title."""
        items = [
            *self.unmatched_items,
            *self.matched_items.values(),
            self.link_item,
            self.shifted_link_item,
            self.highlight_item,
        ]
        for data_item in items:
            data_item.setData([], [])
        for label in self.labels:
            self.plot_item.removeItem(label)
        self.labels = []
        self.matches = None
        self.title_text = ""
        self.plot_item.setTitle(None)
        self.query_label_item.setText("")
        self.library_label_item.setText("")
        self.query_mz = self.library_mz = np.empty(0)
        self.query_intensity = self.library_intensity = np.empty(0)

    def highlight_match(self, index: int | None) -> None:
        """Emphasise matched pair ``index`` (row of the matches), or none with None."""
        if index is None or self.matches is None or not 0 <= index < self.matches.matches:
            self.highlight_item.setData([], [])
            return
        q = int(self.matches.query_peak[index])
        lib = int(self.matches.library_peak[index])
        plot_links(
            self.highlight_item,
            [self.query_mz[q], self.library_mz[lib]],
            [0.0, 0.0],
            [self.query_mz[q], self.library_mz[lib]],
            [self.query_intensity[q], -self.library_intensity[lib]],
        )

    def update_labels(self) -> None:
        """Label the strongest peaks in the visible m/z range (called after zooming)."""
        for label in self.labels:
            self.plot_item.removeItem(label)
        self.labels = []
        if self.matches is None:
            return
        lo, hi = self.plot_item.getViewBox().viewRange()[0]
        shifted = np.asarray(self.matches.shifted, dtype=bool)
        for mz, rel, idx, sign in (
            (self.query_mz, self.query_intensity, self.matches.query_peak, 1),
            (self.library_mz, self.library_intensity, self.matches.library_peak, -1),
        ):
            colors = np.full(mz.size, COLORS["label"], dtype=object)
            colors[idx[~shifted]] = COLORS["matched"]
            colors[idx[shifted]] = COLORS["shifted"]
            visible = np.flatnonzero((mz >= lo) & (mz <= hi))
            if visible.size == 0:
                continue
            vis_rel = rel[visible]
            strong = visible[np.argsort(-vis_rel, kind="stable")[: 2 * self.n_labels]]
            include = np.searchsorted(visible, np.intersect1d(strong, idx))
            self.labels += annotate_peaks(
                self.plot_item,
                mz[visible],
                vis_rel,
                n=self.n_labels,
                sign=sign,
                include=include,
                colors=colors[visible],
                min_separation=0.055 * (hi - lo),
                min_height_separation=10.0,
            )

    def reset_zoom(self) -> None:
        """Show the whole m/z range of both spectra."""
        mz = np.r_[self.query_mz, self.library_mz]
        vb = self.plot_item.getViewBox()
        if mz.size == 0:
            vb.setLimits(xMin=None, xMax=None)
            vb.setXRange(0, 1000, padding=0)
            return
        lo, hi = float(mz.min()), float(mz.max())
        margin = max(5.0, 0.05 * (hi - lo))
        lo, hi = max(0.0, lo - margin), hi + margin
        vb.setLimits(xMin=lo, xMax=hi, minXRange=0.05)
        vb.setXRange(lo, hi, padding=0)

    def export_image(self, path: str | os.PathLike, *, width: int | None = None) -> Path:
        """Write the plot to PNG or SVG (by suffix), atomically.

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
        return export_plot(self.plot_item, path, width=width)

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802  (Qt naming)
        return QtCore.QSize(800, 450)


def _escape(text: str) -> str:
    """Escape text for pyqtgraph's HTML labels."""
    return html.escape(text, quote=False)
