"""Mirror plot plus matched-peaks table of one spectrum pair."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PyQt6.QtCore import Qt
from PyQt6.QtWidgets import QSplitter, QVBoxLayout, QWidget

from engine import SearchParameters, SpectrumLibrary
from engine.matching import PeakMatches, greedy_matches
from simms_gui._qt.matched_peaks import MatchedPeaksView
from simms_gui._qt.mirror_plot import MirrorPlotWidget

__all__ = ["PairView", "SpectrumPair", "compute_pair"]


@dataclass(frozen=True)
class SpectrumPair:
    """A query/library pair as scored: preprocessed peaks and their greedy matches."""

    query_mz: np.ndarray
    query_intensity: np.ndarray
    library_mz: np.ndarray
    library_intensity: np.ndarray
    query_precursor: float
    library_precursor: float
    matches: PeakMatches
    query_label: str
    library_label: str


def _label(spectra: SpectrumLibrary, index: int) -> str:
    meta = spectra.metadata
    name = str(meta["name"][index]) or str(meta.get("title", meta["id"])[index])
    sid = str(meta["id"][index])
    return f"{name} ({sid})" if sid and sid != name else name or f"spectrum {index}"


def compute_pair(
    queries: SpectrumLibrary,
    query_index: int,
    library: SpectrumLibrary,
    library_index: int,
    params: SearchParameters,
) -> SpectrumPair:
    """Preprocess both spectra as the search did and match their peaks greedily.

    Modified cosine passes both precursor m/z to ``engine.matching.greedy_matches``.
    """
    from engine.preprocess import pipeline_from_spec

    pipeline = pipeline_from_spec(params.preprocess)
    q = pipeline(queries.subset([query_index]))
    lib = pipeline(library.subset([library_index]))
    qmz, qint = q.peaks(0)
    lmz, lint = lib.peaks(0)
    q_prec, l_prec = float(q.precursor_mz[0]), float(lib.precursor_mz[0])
    matches = greedy_matches(
        qmz, qint, lmz, lint,
        tolerance=params.tolerance,
        mz_power=params.mz_power,
        intensity_power=params.intensity_power,
        precursor_mz1=q_prec if params.modified else None,
        precursor_mz2=l_prec if params.modified else None,
    )  # fmt: skip
    return SpectrumPair(
        qmz, qint, lmz, lint, q_prec, l_prec, matches,
        _label(queries, query_index), _label(library, library_index),
    )  # fmt: skip


class PairView(QWidget):
    """Mirror plot above its matched-peaks table."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.mirror = MirrorPlotWidget()
        self.peaks = MatchedPeaksView()
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.mirror)
        self.splitter.addWidget(self.peaks)
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

    def export_image(self, path: str | Path) -> Path:
        """Write the mirror plot to PNG or SVG."""
        return self.mirror.export_image(path)

    def _highlight(self, index: int) -> None:
        self.mirror.highlight_match(None if index < 0 else index)
