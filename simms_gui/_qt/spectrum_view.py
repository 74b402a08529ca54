"""Mirror plot plus matched-peaks table of one spectrum pair."""

from __future__ import annotations

from pathlib import Path

from PyQt6.QtCore import Qt
from PyQt6.QtWidgets import QSplitter, QTabWidget, QVBoxLayout, QWidget

from engine import SearchParameters
from simms_gui._qt.hit_details import HitDetails
from simms_gui._qt.matched_peaks import MatchedPeaksView
from simms_gui._qt.mirror_plot import MirrorPlotWidget
from simms_gui.pairs import SpectrumPair, mirror_arguments

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

    def show_pair(
        self,
        pair: SpectrumPair,
        params: SearchParameters,
        *,
        title: str | None = None,
        sides: tuple[str, str] = ("query", "library"),
        row: dict[str, object] | None = None,
    ) -> None:
        """Draw ``pair`` (scored with ``params``) in the mirror plot and list its matched peaks.

        ``title`` follows the score (default: the library compound); ``sides``
        name the upper and lower spectrum in the captions; ``row`` (its hit
        columns, :func:`simms_gui.pairs.pair_row`) fills the hit pane.
        """
        self.pair = pair
        if row is not None:
            self.details.show_row(row, sides=sides)
        args, kwargs = mirror_arguments(pair, params, title=title, sides=sides)
        self.mirror.set_pair(*args, **kwargs)
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

    def export_image(self, path: str | Path, *, dpi: float = 300.0) -> Path:
        """Write the mirror plot at publication size to PNG (``dpi``), SVG or PDF."""
        return self.mirror.export_image(path, dpi=dpi)

    def _highlight(self, index: int) -> None:
        self.mirror.highlight_match(None if index < 0 else index)
