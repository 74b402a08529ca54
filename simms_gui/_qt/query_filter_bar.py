"""The bar that says the hits table shows one query only, with a button to show all again."""

from __future__ import annotations

from PyQt6.QtCore import pyqtSignal
from PyQt6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

__all__ = ["QueryFilterBar"]


class QueryFilterBar(QFrame):
    """Shown while the hits are filtered to one query (hidden otherwise).

    Signals
    -------
    clearRequested()
        The user asked to see every query's hits again.
    """

    clearRequested = pyqtSignal()  # noqa: N815

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet(
            "QueryFilterBar { background: #fff4d6; border: 1px solid #e0b84f; border-radius: 3px; }"
        )
        self.label = QLabel("")
        self.label.setWordWrap(False)
        self.clear_button = QPushButton("Show all queries")
        self.clear_button.setToolTip("Show the hits of every query again")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 2, 6, 2)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.clear_button)
        self.clear_button.clicked.connect(self.clearRequested)
        self.hide()

    def show_query(self, name: str) -> None:
        """Say that only the hits of query ``name`` are listed."""
        self.label.setText(f"Showing only the hits of query <b>{_escape(name)}</b>")
        self.show()


def _escape(text: str) -> str:
    import html

    return html.escape(text, quote=False)
