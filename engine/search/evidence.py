"""Reverse score and explained library intensity of hits, from the spectra they refer to."""

from __future__ import annotations

import numpy as np

from engine.backends import PreparedSpectra
from engine.backends.base import score_kind, score_tolerance
from engine.hits import HitTable
from engine.kernels.evidence import hit_evidence
from engine.library import SpectrumLibrary
from engine.params import SearchParameters

__all__ = ["EVIDENCE_CHUNK", "evidence"]

#: Hits whose spectra are prepared at a time.
EVIDENCE_CHUNK = 2048


def evidence(
    hits: HitTable,
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters,
) -> tuple[np.ndarray, np.ndarray]:
    """Reverse score and explained library intensity of each hit.

    Definitions: :mod:`engine.kernels.evidence`.

    Only the spectra the hits name are prepared (as the search prepared them),
    so the cost follows the number of hits, not the library's size.

    Returns
    -------
    reverse, explained : ndarray of float64, one value per hit
    """
    if len(hits) > EVIDENCE_CHUNK:  # memory follows the chunk, not the hit list
        parts = [
            evidence(hits.take(np.arange(k, min(k + EVIDENCE_CHUNK, len(hits)))), queries,
                     library, params)
            for k in range(0, len(hits), EVIDENCE_CHUNK)
        ]  # fmt: skip
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    if len(hits) == 0:
        return np.empty(0), np.empty(0)
    q_ids, q_pos = np.unique(hits.query_index, return_inverse=True)
    l_ids, l_pos = np.unique(hits.library_index, return_inverse=True)
    q = PreparedSpectra.for_search(queries.subset(q_ids), params)
    l = PreparedSpectra.for_search(library.subset(l_ids), params)
    return hit_evidence(
        q_pos, l_pos, hits.score, q.spectrum_set, l.spectrum_set,
        score_tolerance(params), score_kind(params),
    )  # fmt: skip
