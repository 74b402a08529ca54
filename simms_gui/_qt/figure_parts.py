"""Pieces of figures: colours, an axis reading absolute values, a caption that fits its width."""

from __future__ import annotations

import html

import pyqtgraph as pg
from PyQt6 import QtCore, QtGui, QtWidgets

__all__ = ["COLORS", "LEGEND_NAMES", "AbsoluteAxis", "FitLabel", "hint_or_plot", "plain_axes"]

#: Colours of the mirror plot (colour-blind safe: blue / orange / grey / purple).
COLORS = {
    "matched": "#1f6fb4",
    "shifted": "#e8710a",
    "unmatched": "#9a9a9a",
    "precursor": "#7b3294",
    "label": "#333333",
    "zero": "#555555",
    "highlight": "#d62728",
}

#: Legend text of each kind of item, in legend order.
LEGEND_NAMES = {
    "matched": "matched peaks",
    "shifted": "shifted matches",
    "unmatched": "unmatched peaks",
    "precursor": "precursor m/z",
}


class AbsoluteAxis(pg.AxisItem):
    """Axis showing absolute values (library intensities below zero read positive)."""

    def tickStrings(self, values, scale, spacing):  # noqa: N802  (Qt naming)
        return super().tickStrings([abs(v) for v in values], scale, spacing)


class FitLabel(pg.LabelItem):
    """Text that wraps (up to ``lines`` lines) and shortens itself (…) to the width it is given.

    pyqtgraph's LabelItem asks for its text's full width, so a long spectrum
    name would widen the whole figure past the window; this one asks for no
    width, breaks its text after a " — " (else a space) when ``lines`` allows
    a second line, and elides what still does not fit.
    """

    def __init__(
        self, size_pt: float, *, bold: bool = False, justify: str = "left", lines: int = 1
    ) -> None:
        self._lines = lines
        super().__init__("", color="#222222", size=f"{size_pt}pt", justify=justify, bold=bold)
        self.full_text = ""
        self.item.document().setDocumentMargin(2.0)
        self._font = QtGui.QFont()
        self._font.setPointSizeF(size_pt)
        self._font.setBold(bold)

    def set_full_text(self, text: str) -> None:
        """Show ``text`` (plain), elided to the label's width."""
        self.full_text = text
        self._fit()

    def _fit(self) -> None:
        text = getattr(self, "full_text", "")  # resized while pyqtgraph builds it
        width = self.width()
        shown = [text]
        if text and width > 20:
            metrics = QtGui.QFontMetricsF(self._font)
            room = width - 10
            if self._lines > 1 and metrics.horizontalAdvance(text) > room:
                shown = _wrap(text, metrics, room)
            elide = QtCore.Qt.TextElideMode.ElideRight
            shown = [metrics.elidedText(line, elide, room) for line in shown]
        markup = "<br>".join(_escape(line) for line in shown)
        if markup != self.text:
            self.setText(markup)

    def resizeEvent(self, ev) -> None:  # noqa: N802  (Qt naming)
        super().resizeEvent(ev)
        if ev is not None:
            self._fit()

    def updateMin(self) -> None:  # noqa: N802  (pyqtgraph naming)
        height = self.itemRect().height()
        self.setMinimumWidth(0)
        self.setMinimumHeight(height)
        hint = QtCore.Qt.SizeHint
        self._sizeHint = {
            hint.MinimumSize: (0, height),
            hint.PreferredSize: (0, height),
            hint.MaximumSize: (-1, -1),
            hint.MinimumDescent: (0, 0),
        }
        self.updateGeometry()


def _wrap(text: str, metrics: QtGui.QFontMetricsF, room: float) -> list[str]:
    """Two lines: broken after " — " when the first part fits, else at the last space that fits."""
    head, dash, tail = text.partition(" — ")
    if dash and metrics.horizontalAdvance(head) <= room:
        return [head, tail]
    cut = len(text)
    while cut > 0 and (text[cut - 1] != " " or metrics.horizontalAdvance(text[:cut]) > room):
        cut -= 1
    return [text[:cut].rstrip(), text[cut:]] if cut else [text]


def _escape(text: str) -> str:
    """Escape text for pyqtgraph's HTML labels."""
    return html.escape(text, quote=False)


def hint_or_plot(
    owner: QtWidgets.QWidget, text: str, plot: QtWidgets.QWidget
) -> tuple[QtWidgets.QLabel, QtWidgets.QStackedLayout]:
    """A centred grey hint and ``plot`` stacked in ``owner``: empty plots show the hint, not axes.

    Returns the hint label and the stack (``stack.setCurrentWidget(plot)`` once
    there is something to draw).
    """
    hint = QtWidgets.QLabel(text)
    hint.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
    hint.setWordWrap(True)
    hint.setStyleSheet("color: palette(mid); font-size: 11pt;")
    stack = QtWidgets.QStackedLayout(owner)
    stack.setContentsMargins(0, 0, 0, 0)
    stack.addWidget(hint)
    stack.addWidget(plot)
    return hint, stack


def plain_axes(plot: pg.PlotItem) -> pg.PlotItem:
    """A figure's plot: no auto-range button nor context menu, dark grey axes."""
    plot.hideButtons()
    plot.setMenuEnabled(False)
    for name in ("left", "bottom"):
        axis = plot.getAxis(name)
        axis.setPen(pg.mkPen("#444444"))
        axis.setTextPen(pg.mkPen("#222222"))
    return plot
