"""Similarity heatmap tab: queries × their top hits, or all-vs-all of a selection."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PyQt6.QtCore import pyqtSignal
from PyQt6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from simms_gui.model.requests import (
    MAX_SIDE,
    HeatmapRequest,
    spectrum_labels,
)

__all__ = ["HeatmapPanel"]


class HeatmapPanel(QWidget):
    """A :class:`~simms_gui._qt.heatmap.HeatmapWidget` with its controls.

    Signals
    -------
    pairClicked(object, int, object, int)
        ``(row library, row spectrum, column library, column spectrum)`` of a
        clicked cell.
    topHitsRequested()
    selectionRequested()
    """

    pairClicked = pyqtSignal(object, int, object, int)  # noqa: N815
    topHitsRequested = pyqtSignal()  # noqa: N815
    selectionRequested = pyqtSignal()  # noqa: N815

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        from simms_gui._qt.heatmap import HeatmapWidget

        self.heatmap = HeatmapWidget()
        self.top_button = QPushButton("Top hits of selected queries")
        self.top_button.setToolTip(
            "Selected queries (or the current hit's query) × their top-N hits"
        )
        self.selection_button = QPushButton("All vs all of selected queries")
        self.selection_button.setToolTip(
            f"Similarity of every pair of the selected queries (up to {MAX_SIDE})"
        )
        self.export_button = QPushButton("Export image…")
        self.status = QLabel(
            "Select queries, then choose a heatmap. Click a cell for its mirror plot."
        )
        self.status.setStyleSheet("color: palette(mid);")
        self.status.setWordWrap(True)  # on two lines rather than widening the window
        bar = QHBoxLayout()
        bar.addWidget(self.top_button)
        bar.addWidget(self.selection_button)
        bar.addWidget(self.status, 1)
        bar.addWidget(self.export_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(bar)
        layout.addWidget(self.heatmap, 1)
        self.request: HeatmapRequest | None = None
        self.scores: np.ndarray | None = None
        self.heatmap.cellClicked.connect(self._clicked)
        self.top_button.clicked.connect(self.topHitsRequested)
        self.selection_button.clicked.connect(self.selectionRequested)

    def set_busy(self, text: str) -> None:
        """Say what is being computed."""
        self.status.setText(text)
        self.top_button.setEnabled(False)
        self.selection_button.setEnabled(False)

    def show_matrix(self, request: HeatmapRequest, scores: np.ndarray) -> None:
        """Draw ``scores`` for ``request``."""
        self.request, self.scores = request, scores
        self.heatmap.set_matrix(
            scores,
            row_labels=spectrum_labels(request.rows, request.row_index),
            column_labels=spectrum_labels(request.columns, request.column_index),
            title=request.title,
            row_title=request.row_title,
            column_title=request.column_title,
        )
        self.status.setText(f"{request.title} — click a cell for its mirror plot")
        self.top_button.setEnabled(True)
        self.selection_button.setEnabled(True)

    def show_error(self, text: str) -> None:
        """Show a failure and re-enable the buttons."""
        self.status.setText(text)
        self.top_button.setEnabled(True)
        self.selection_button.setEnabled(True)

    def export_image(self, path: str | Path) -> Path:
        """Write the heatmap to PNG or SVG."""
        return self.heatmap.export_image(path)

    def _clicked(self, row: int, column: int) -> None:
        r = self.request
        if r is None or not (0 <= row < len(r.row_index) and 0 <= column < len(r.column_index)):
            return
        self.pairClicked.emit(r.rows, int(r.row_index[row]), r.columns, int(r.column_index[column]))
