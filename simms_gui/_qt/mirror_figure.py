"""The mirror figure: one builder for the window, its exports and scripts.

The query is drawn upwards and the library spectrum downwards, both scaled to
a strongest peak of 100 %.  Matched peak pairs (from
:func:`engine.matching.greedy_matches`) are coloured and linked; pairs matched
across the precursor shift (modified cosine) get a second colour; unmatched
peaks are grey; each spectrum's precursor m/z is a dashed line.  Every group is
a single pyqtgraph item, so 2,000-peak spectra redraw instantly.

The figure is a column: title (score, matched peaks, the library compound), the
query's caption, the plot, the library's caption, the legend.  Only the plot
holds data, and m/z labels are placed inside it where they touch nothing else
(:mod:`simms_gui._qt.peak_labels`), so nothing is ever drawn over a label.

:class:`MirrorFigure` is that figure; the window's
:class:`~simms_gui._qt.mirror_plot.MirrorPlotWidget` shows one, and
:mod:`simms_gui._qt.mirror_export` lays out another off screen at publication
size and writes it (PNG, SVG, PDF), which needs no window.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PyQt6 import QtCore, QtWidgets

from engine.matching import PeakMatches
from simms_gui._qt.figure_export import FIGURE_SIZE_IN, write_figure
from simms_gui._qt.figure_parts import COLORS, LEGEND_NAMES, AbsoluteAxis, FitLabel, plain_axes
from simms_gui._qt.peak_labels import (
    label_candidates,
    place_peak_labels,
    scene_rect,
    sticks_blocker,
)
from simms_gui._qt.plots import plot_links, plot_precursor, plot_sticks, relative_intensity

__all__ = [
    "COLORS",
    "FIGURE_SIZE_IN",
    "LEGEND_NAMES",
    "MirrorFigure",
]


_Y_LIMIT = 100.0  # strongest peak, percent
_Y_HEADROOM = 1.25  # room above/below the sticks for labels


class MirrorFigure(pg.GraphicsView):
    """Query spectrum up, library spectrum down, matched peaks coloured and linked.

    Zoom and pan act on m/z only; the intensity axis stays fixed at
    ±100 % (with room for labels).

    Parameters
    ----------
    parent : QWidget, optional

    Attributes
    ----------
    ci : pyqtgraph.GraphicsLayout
        The figure's column: title, query caption, plot, library caption, legend.
    plot_item : pyqtgraph.PlotItem
        The plot (the only part holding data).
    matched_items : dict of str to pyqtgraph.PlotDataItem
        Sticks of matched peaks: ``"query"``, ``"library"`` (ordinary matches),
        ``"query_shifted"``, ``"library_shifted"`` (modified-cosine matches);
        ``matched_item`` is ``matched_items["query"]``.
    unmatched_items, precursor_items : tuple of pyqtgraph.PlotDataItem
        Grey sticks of unmatched peaks and dashed precursor marks, ``(query, library)``.
    link_item, shifted_link_item, highlight_item : pyqtgraph.PlotDataItem
        Lines joining matched sticks (ordinary, shifted); the pair chosen with
        :meth:`highlight_match`.
    legend : pyqtgraph.LegendItem
        Below the plot; lists only what is drawn.
    labels : list of pyqtgraph.TextItem
        m/z labels currently shown.
    matches : engine.matching.PeakMatches or None
    title_text : str
        Plain-text title currently shown.
    query_intensity, library_intensity : ndarray
        Relative intensities (percent) as drawn.
    """

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setBackground("w")
        # a GraphicsLayoutWidget would shadow clear() with its layout's
        self.ci = figure = pg.GraphicsLayout()
        self.setCentralItem(figure)
        figure.setContentsMargins(4, 2, 12, 2)
        figure.setSpacing(3)
        self.title_item = FitLabel(10, bold=True, justify="center", lines=2)
        self.query_label_item = FitLabel(9)
        self.plot_item = pg.PlotItem(axisItems={"left": AbsoluteAxis("left")})
        self.library_label_item = FitLabel(9)
        self.legend_box = pg.GraphicsWidget()
        for row, item in enumerate(
            (
                self.title_item,
                self.query_label_item,
                self.plot_item,
                self.library_label_item,
                self.legend_box,
            )
        ):
            figure.addItem(item, row=row, col=0)

        plot = self.plot_item
        plot.setLabel("bottom", "m/z")
        plot.setLabel("left", "relative intensity (%)")
        plain_axes(plot)
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
        self.precursor_items = (
            item(COLORS["precursor"], width=1.5, z=0, style=dash),
            item(COLORS["precursor"], width=1.5, z=0, style=dash),
        )
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
        self._legend_samples = {
            "matched": self.matched_items["query"],
            "shifted": self.matched_items["query_shifted"],
            "unmatched": self.unmatched_items[0],
            "precursor": self.precursor_items[0],
        }

        self.legend = pg.LegendItem(
            colCount=4,
            brush=None,
            pen=None,
            labelTextColor="#222222",
            labelTextSize="8pt",
            horSpacing=12,
        )
        # pyqtgraph keeps legends at screen size; this one is part of the figure and
        # must scale with it when exported at 300 dpi
        self.legend.setFlag(self.legend.GraphicsItemFlag.ItemIgnoresTransformations, False)
        self.legend.setParentItem(self.legend_box)
        self.legend.anchor(itemPos=(0.5, 0.0), parentPos=(0.5, 0.0))

        self.labels: list[pg.TextItem] = []
        self.n_labels = 8
        self.label_font_size = 8.0
        self._relabel_timer = QtCore.QTimer(self, singleShot=True, interval=60)
        self._relabel_timer.timeout.connect(self.update_labels)
        vb.sigXRangeChanged.connect(self._relabel_timer.start)
        vb.sigResized.connect(self._relabel_timer.start)
        self.matches: PeakMatches | None = None
        self.title_text = ""
        self.query_mz = self.library_mz = np.empty(0)
        self.query_intensity = self.library_intensity = np.empty(0)
        self.precursor_mz: tuple[float | None, float | None] = (None, None)
        self._pair_args: tuple[tuple, dict] | None = None
        self._highlighted: int | None = None
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
        query_precursor_mz: float | None = None,
        library_precursor_mz: float | None = None,
        sides: tuple[str, str] = ("query", "library"),
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
            Text put after the score in the title (e.g. both spectra's names).
        query_label, library_label : str, optional
            Captions above and below the plot.
        score_name : str, default "cosine"
            Name of the score in the title (e.g. "modified cosine").
        n_labels : int, default 8
            Most m/z labels on each side (strongest peaks first; fewer when they
            would collide).
        query_precursor_mz, library_precursor_mz : float, optional
            Precursor m/z, marked by a dashed line and given in the captions.
        sides : (str, str), default ("query", "library")
            What the captions call the upper and the lower spectrum (a network
            edge between two queries: ``("query", "query")``).

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
        options = dict(title=title, query_label=query_label, library_label=library_label)
        options.update(score_name=score_name, n_labels=n_labels)
        options.update(query_precursor_mz=query_precursor_mz)
        options.update(library_precursor_mz=library_precursor_mz, sides=tuple(sides))
        self._pair_args = ((qmz, qint, lmz, lint, matches), options)
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
        precursors = (_finite(query_precursor_mz), _finite(library_precursor_mz))
        self.precursor_mz = precursors
        for precursor_item, mz, sign in zip(self.precursor_items, precursors, (1, -1), strict=True):
            plot_precursor(precursor_item, mz, sign=sign, height=_Y_LIMIT)

        self.n_labels = n_labels
        n_shifted = int(shifted.sum())
        text = f"{score_name} {matches.score:.4f} · {matches.matches} matched peaks"
        if n_shifted:
            text += f" ({n_shifted} shifted)"
        # score first: a title too long for the figure loses the names' ends, which the
        # captions repeat, never the score
        self.title_text = f"{text} — {title}" if title else text
        self.title_item.set_full_text(self.title_text)
        for caption, arrow, side, label, mz in (
            (self.query_label_item, "▲", sides[0], query_label, precursors[0]),
            (self.library_label_item, "▼", sides[1], library_label, precursors[1]),
        ):
            head = f"{arrow} {side}" + (f" (precursor m/z {mz:.4f})" if mz is not None else "")
            caption.set_full_text(f"{head}: {label}" if label else head)
        self._update_legend(
            matched=bool(plain.any()),
            shifted=bool(n_shifted),
            unmatched=bool((~q_matched).any() or (~l_matched).any()),
            precursor=any(mz is not None for mz in precursors),
        )
        self.reset_zoom()
        self.update_labels()

    def clear(self) -> None:
        """Remove the spectra, links, labels and title."""
        items = [
            *self.unmatched_items,
            *self.matched_items.values(),
            *self.precursor_items,
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
        self._pair_args = None
        self._highlighted = None
        self.title_text = ""
        for caption in (self.title_item, self.query_label_item, self.library_label_item):
            caption.set_full_text("")
        self._update_legend()
        self.query_mz = self.library_mz = np.empty(0)
        self.query_intensity = self.library_intensity = np.empty(0)
        self.precursor_mz = (None, None)

    def legend_names(self) -> list[str]:
        """The legend's entries, in order."""
        return [label.text for _sample, label in self.legend.items]

    def highlight_match(self, index: int | None) -> None:
        """Emphasise matched pair ``index`` (row of the matches), or none with None."""
        if index is None or self.matches is None or not 0 <= index < self.matches.matches:
            self._highlighted = None
            self.highlight_item.setData([], [])
            return
        self._highlighted = index
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
        """Label the strongest peaks in view where labels fit (called after zooming)."""
        for label in self.labels:
            self.plot_item.removeItem(label)
        self.labels = []
        if self.matches is None:
            return
        window = self.plot_item.getViewBox().viewRange()[0]
        shifted = np.asarray(self.matches.shifted, dtype=bool)
        obstacles = self.fixed_text_rects()
        placed: list[QtCore.QRectF] = []
        marks = [
            (mz, sign * _Y_LIMIT)
            for mz, sign in zip(self.precursor_mz, (1, -1), strict=True)
            if mz is not None
        ]
        blocked = sticks_blocker(
            np.r_[self.query_mz, self.library_mz, [m for m, _ in marks]],
            np.r_[self.query_intensity, -self.library_intensity, [h for _, h in marks]],
        )
        for mz, rel, idx, sign in (
            (self.query_mz, self.query_intensity, self.matches.query_peak, 1),
            (self.library_mz, self.library_intensity, self.matches.library_peak, -1),
        ):
            colors = np.full(mz.size, COLORS["label"], dtype=object)
            colors[idx[~shifted]] = COLORS["matched"]
            colors[idx[shifted]] = COLORS["shifted"]
            candidates = label_candidates(mz, rel, colors, sign=sign, window=window)
            self.labels += place_peak_labels(
                self.plot_item,
                candidates[: 4 * self.n_labels],
                limit=self.n_labels,
                obstacles=obstacles,
                placed=placed,
                font_size=self.label_font_size,
                blocked=blocked,
            )

    def fixed_text_rects(self) -> list[QtCore.QRectF]:
        """Scene boxes of the title, captions and legend (what labels must not touch)."""
        items = [self.title_item, self.query_label_item, self.library_label_item]
        rects = [scene_rect(item.item) for item in items if item.text]
        if self.legend.items:
            rects.append(scene_rect(self.legend))
        return rects

    def reset_zoom(self) -> None:
        """Show the whole m/z range of both spectra and their precursors."""
        marks = [mz for mz in self.precursor_mz if mz is not None]
        mz = np.r_[self.query_mz, self.library_mz, marks]
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

    def state(self) -> tuple[tuple, dict, tuple[float, float], int | None]:
        """What :func:`publication_figure` needs to draw this figure again.

        Returns ``(args, kwargs, x_range, highlighted)``: the :meth:`set_pair`
        arguments, the m/z range in view and the highlighted match.

        Raises
        ------
        ValueError
            When no pair is shown.
        """
        if self._pair_args is None:
            raise ValueError("no mirror plot to export: select a hit first")
        args, kwargs = self._pair_args
        lo, hi = self.plot_item.getViewBox().viewRange()[0]
        return args, kwargs, (float(lo), float(hi)), self._highlighted

    def save(self, path: str | os.PathLike, *, dpi: float = 300.0) -> Path:
        """Write the figure as it is laid out now, atomically: a ``.png`` at ``dpi``
        (resolution stored), a vector ``.svg`` or ``.pdf``; the file written.

        ValueError for another suffix, or when no pair is shown.
        """
        if self._pair_args is None:
            raise ValueError("no mirror plot to export: select a hit first")
        QtWidgets.QApplication.processEvents()
        return write_figure(
            self.scene(),
            scene_rect(self.ci),
            path,
            dpi=dpi,
            title=self.title_text or "SimMS mirror plot",
        )

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802  (Qt naming)
        return QtCore.QSize(800, 450)

    # ------------------------------------------------------------------ helpers
    def _update_legend(self, **drawn: bool) -> None:
        """List exactly the kinds of items drawn."""
        self.legend.clear()
        for key, name in LEGEND_NAMES.items():
            if drawn.get(key):
                self.legend.addItem(self._legend_samples[key], name)
        for sample, _label in self.legend.items:  # a click would hide what it names
            sample.setAcceptedMouseButtons(QtCore.Qt.MouseButton.NoButton)
        self.legend.updateSize()
        self.legend_box.setFixedHeight(self.legend.height() + 2 if self.legend.items else 0)
        self.legend.anchor(itemPos=(0.5, 0.0), parentPos=(0.5, 0.0))  # centred at its new size


def _finite(value: float | None) -> float | None:
    """A usable precursor m/z, else None."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) and value > 0 else None
