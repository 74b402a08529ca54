"""The window's mirror plot: a :class:`~simms_gui._qt.mirror_figure.MirrorFigure` or a hint.

The figure itself (spectra, matches, captions, legend, m/z labels) is built by
:mod:`simms_gui._qt.mirror_figure`, the same builder that exports and
:func:`simms_gui.mirror_figure` use; this widget adds the one-line hint shown
while there is nothing to plot, and exports at publication size.
"""

from __future__ import annotations

import os
from pathlib import Path

from PyQt6 import QtCore, QtWidgets

from simms_gui._qt.figure_parts import COLORS, LEGEND_NAMES, hint_or_plot
from simms_gui._qt.mirror_export import export_mirror
from simms_gui._qt.mirror_figure import FIGURE_SIZE_IN, MirrorFigure

__all__ = ["COLORS", "FIGURE_SIZE_IN", "LEGEND_NAMES", "MirrorFigure", "MirrorPlotWidget"]

_HINT = "Select a hit in the table (or a heatmap cell) to see its mirror plot"


class MirrorPlotWidget(QtWidgets.QWidget):
    """Query spectrum up, library spectrum down, matched peaks coloured and linked.

    With nothing to show, a one-line hint replaces the empty axes.  Everything
    the figure holds (``plot_item``, ``labels``, ``matches``, ``title_text``, ...,
    see :class:`~simms_gui._qt.mirror_figure.MirrorFigure`) is read through this
    widget as well.

    Parameters
    ----------
    parent : QWidget, optional

    Attributes
    ----------
    plot_widget : MirrorFigure
        The figure: title, captions, plot and legend.
    hint : QLabel
        Shown instead of the figure while there is nothing to plot.
    """

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot_widget = MirrorFigure()
        self.hint, self.stack = hint_or_plot(self, _HINT, self.plot_widget)
        self.clear()

    def __getattr__(self, name: str):
        # the figure's items and state (plot_item, labels, matches, ...) read as the widget's
        if name in ("plot_widget", "hint", "stack") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.plot_widget, name)

    def set_pair(self, *args, **kwargs) -> None:
        """Show a query/library pair; arguments as :meth:`MirrorFigure.set_pair`."""
        self.stack.setCurrentWidget(self.plot_widget)  # shown first: labels need its size
        self.plot_widget.set_pair(*args, **kwargs)

    def clear(self) -> None:
        """Remove the spectra, links, labels and title; show the hint instead."""
        self.plot_widget.clear()
        self.hint.setText(_HINT)
        self.stack.setCurrentWidget(self.hint)

    def highlight_match(self, index: int | None) -> None:
        """Emphasise matched pair ``index`` (row of the matches), or none with None."""
        self.plot_widget.highlight_match(index)

    def update_labels(self) -> None:
        """Label the strongest peaks in view where labels fit."""
        self.plot_widget.update_labels()

    def export_image(self, path: str | os.PathLike, *, dpi: float = 300.0) -> Path:
        """Write the figure at publication size to PNG, SVG or PDF (by suffix), atomically.

        The figure is laid out at :data:`FIGURE_SIZE_IN` inches (fonts at their
        point sizes) with the m/z range now in view and the highlighted match,
        then written as a PNG at ``dpi`` (resolution stored in the file), a
        vector SVG or a vector PDF (:func:`~simms_gui._qt.mirror_export.export_mirror`);
        ValueError for another suffix, or when no pair is shown.
        """
        args, kwargs, x_range, highlighted = self.plot_widget.state()
        return export_mirror(path, args, kwargs, x_range=x_range, highlighted=highlighted, dpi=dpi)

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802  (Qt naming)
        return QtCore.QSize(800, 450)

    def minimumSizeHint(self) -> QtCore.QSize:  # noqa: N802  (Qt naming)
        # title, captions, axis and legend take about 12 lines; the data keeps about 11
        # more, so the y title ("relative intensity (%)") fits beside it, never over a caption
        line = self.fontMetrics().height()
        return QtCore.QSize(20 * line, 23 * line)
