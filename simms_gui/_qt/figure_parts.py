"""Pieces of figures: an axis reading absolute values, a caption that fits its width."""

from __future__ import annotations

import html

import pyqtgraph as pg
from PyQt6 import QtCore, QtGui, QtWidgets

__all__ = ["AbsoluteAxis", "FitLabel", "hint_or_plot"]


class AbsoluteAxis(pg.AxisItem):
    """Axis showing absolute values (library intensities below zero read positive)."""

    def tickStrings(self, values, scale, spacing):  # noqa: N802  (Qt naming)
        return super().tickStrings([abs(v) for v in values], scale, spacing)


class FitLabel(pg.LabelItem):
    """One line of text that shortens itself (…) to the width it is given.

    pyqtgraph's LabelItem asks for its text's full width, so a long spectrum
    name would widen the whole figure past the window; this one asks for no
    width and elides its text to whatever the layout grants.
    """

    def __init__(self, size_pt: float, *, bold: bool = False, justify: str = "left") -> None:
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
        if text and width > 20:
            metrics = QtGui.QFontMetricsF(self._font)
            text = metrics.elidedText(text, QtCore.Qt.TextElideMode.ElideRight, width - 10)
        if _escape(text) != self.text:
            self.setText(_escape(text))

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
