"""One query/library pair as the search scored it: preprocessed peaks and matched peaks.

Headless (no Qt): the mirror plot and matched-peaks table draw what this computes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine import SearchParameters, SpectrumLibrary
from engine.matching import PeakMatches, entropy_matches, greedy_matches
from engine.preprocess import pipeline_from_spec

__all__ = ["SpectrumPair", "compute_pair", "spectrum_label"]


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


def spectrum_label(spectra: SpectrumLibrary, index: int) -> str:
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
    """Preprocess both spectra as the search did and match their peaks as it did.

    Modified cosine passes both precursor m/z to ``engine.matching.greedy_matches``;
    entropy similarity shows the cleaned peaks and ``engine.matching.entropy_matches``.
    """
    pipeline = pipeline_from_spec(params.preprocess)
    q = pipeline(queries.subset([query_index]))
    lib = pipeline(library.subset([library_index]))
    qmz, qint = q.peaks(0)
    lmz, lint = lib.peaks(0)
    q_prec, l_prec = float(q.precursor_mz[0]), float(lib.precursor_mz[0])
    if params.entropy:  # the cleaned peaks the entropy search scored
        (qmz, qint), (lmz, lint), matches = entropy_matches(
            qmz, qint, lmz, lint, tolerance=params.tolerance,
            weighted=params.score == "entropy",
            precursor_mz1=q_prec if np.isfinite(q_prec) else None,
            precursor_mz2=l_prec if np.isfinite(l_prec) else None,
        )  # fmt: skip
        return SpectrumPair(
            qmz, qint, lmz, lint, q_prec, l_prec, matches,
            spectrum_label(queries, query_index), spectrum_label(library, library_index),
        )  # fmt: skip
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
        spectrum_label(queries, query_index), spectrum_label(library, library_index),
    )  # fmt: skip
