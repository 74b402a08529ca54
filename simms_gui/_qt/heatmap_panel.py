"""Similarity heatmap tab: queries × their top hits, or all-vs-all of a selection."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PyQt6.QtCore import pyqtSignal
from PyQt6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from engine import HitTable, SearchParameters, SpectrumLibrary, score_matrix

__all__ = ["HeatmapRequest", "HeatmapPanel", "top_hits_request", "selection_request"]

#: Largest side of an all-vs-all heatmap.
MAX_SIDE = 3000


@dataclass(frozen=True)
class HeatmapRequest:
    """Rows and columns of a heatmap: spectra of two libraries, by index."""

    rows: SpectrumLibrary
    row_index: np.ndarray
    columns: SpectrumLibrary
    column_index: np.ndarray
    title: str

    def compute(self, params: SearchParameters, backend: str = "auto") -> np.ndarray:
        """The dense score matrix (runs ``engine.score_matrix``; call off the GUI thread)."""
        scores, _ = score_matrix(
            self.rows.subset(self.row_index),
            self.columns.subset(self.column_index),
            params,
            backend=backend,
        )
        return np.asarray(scores, dtype=np.float64)


def _labels(spectra: SpectrumLibrary, index: np.ndarray) -> list[str]:
    names, ids = spectra.metadata["name"], spectra.metadata["id"]
    out = []
    for i in index:
        name = str(names[i]) or str(ids[i]) or f"#{i}"
        out.append(name if len(name) <= 40 else name[:39] + "…")
    return out


def top_hits_request(
    hits: HitTable,
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    query_rows: list[int],
    top_n: int = 10,
) -> HeatmapRequest | None:
    """Queries ``query_rows`` × the union of their ``top_n`` best hits."""
    if not len(hits) or not query_rows:
        return None
    q = np.asarray(sorted(set(query_rows)), dtype=np.int64)
    table = hits.take(np.isin(hits.query_index, q)).top_per_query(top_n)
    if not len(table):
        return None
    # columns ordered by the best score any selected query gives them
    best: dict[int, float] = {}
    for li, s in zip(table.library_index.tolist(), table.score.tolist(), strict=True):
        best[li] = max(best.get(li, -1.0), s)
    cols = np.array(sorted(best, key=lambda k: -best[k]), dtype=np.int64)
    title = f"{len(q)} quer{'y' if len(q) == 1 else 'ies'} × top {top_n} hits"
    return HeatmapRequest(queries, q, library, cols, title)


def selection_request(spectra: SpectrumLibrary, rows: list[int]) -> HeatmapRequest | None:
    """All-vs-all of the spectra at ``rows`` (at most :data:`MAX_SIDE`)."""
    if len(rows) < 2:
        return None
    index = np.asarray(sorted(set(rows))[:MAX_SIDE], dtype=np.int64)
    return HeatmapRequest(spectra, index, spectra, index, f"All vs all: {len(index)} spectra")


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
            row_labels=_labels(request.rows, request.row_index),
            column_labels=_labels(request.columns, request.column_index),
            title=request.title,
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
