"""Mirror plot plus matched-peaks table of one spectrum pair."""

from __future__ import annotations

from pathlib import Path

from PyQt6.QtCore import Qt
from PyQt6.QtWidgets import QSplitter, QTabWidget, QVBoxLayout, QWidget

from simms_gui._qt.hit_details import HitDetails
from simms_gui._qt.matched_peaks import MatchedPeaksView
from simms_gui._qt.mirror_plot import MirrorPlotWidget
from simms_gui.pairs import SpectrumPair

__all__ = ["PairView"]


class PairView(QWidget):
    """Mirror plot beside its matched-peaks table and the hit's details (tabs)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.mirror = MirrorPlotWidget()
        self.peaks = MatchedPeaksView()
        self.details = HitDetails()
        self.side_tabs = QTabWidget()
        self.side_tabs.setDocumentMode(True)
        self.side_tabs.addTab(self.details, "Hit")
        self.side_tabs.addTab(self.peaks, "Matched peaks")
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.mirror)
        self.splitter.addWidget(self.side_tabs)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([900, 380])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.splitter)
        self.pair: SpectrumPair | None = None
        self.peaks.matchSelected.connect(self._highlight)

    def show_pair(self, pair: SpectrumPair, *, title: str = "", score_name: str = "cosine") -> None:
        """Draw ``pair`` in the mirror plot and list its matched peaks."""
        self.pair = pair
        self.mirror.set_pair(
            pair.query_mz, pair.query_intensity, pair.library_mz, pair.library_intensity,
            pair.matches, title=title, query_label=pair.query_label,
            library_label=pair.library_label, score_name=score_name,
            query_precursor_mz=pair.query_precursor, library_precursor_mz=pair.library_precursor,
        )  # fmt: skip
        self.peaks.set_matches(
            pair.query_mz, pair.query_intensity, pair.library_mz, pair.library_intensity,
            pair.matches, query_precursor_mz=pair.query_precursor,
            library_precursor_mz=pair.library_precursor,
        )  # fmt: skip

    def clear(self) -> None:
        """Show nothing."""
        self.pair = None
        self.mirror.clear()
        self.peaks.clear()
        self.details.clear_row()

    def export_image(self, path: str | Path) -> Path:
        """Write the mirror plot at publication size to PNG (300 dpi), SVG or PDF."""
        return self.mirror.export_image(path)

    def _highlight(self, index: int) -> None:
        self.mirror.highlight_match(None if index < 0 else index)
