"""Dense score and match matrices of a query block × a library block (heatmaps)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from engine.kernels.greedy import score_pair
from engine.kernels.pair import check_score_parameters
from engine.kernels.pair_bound import pair_can_reach
from engine.kernels.spectrum_set import (
    COSINE,
    SpectrumSet,
    checked_block,
    longest_in_block,
    new_scratch,
)
from engine.kernels.threads import parallel_region

__all__ = ["dense_block", "score_listed_pairs"]


@njit(cache=True, parallel=True, nogil=True)  # nogil: the GUI thread runs meanwhile
def _dense_kernel(
    queries, library, q_start, q_stop, l_start, l_stop, tolerance, kind
):  # pragma: no cover
    nq = q_stop - q_start
    nl = l_stop - l_start
    scores = np.zeros((nq, nl), dtype=np.float64)
    matches = np.zeros((nq, nl), dtype=np.int32)
    longest = longest_in_block(queries, library, q_start, q_stop, l_start, l_stop)
    for r in prange(nq):
        scratch = new_scratch(longest)
        for c in range(nl):
            s, m = score_pair(q_start + r, l_start + c, queries, library, tolerance, kind, scratch)
            scores[r, c] = s
            matches[r, c] = m
    return scores, matches


def dense_block(
    queries: SpectrumSet,
    library: SpectrumSet,
    q_start: int,
    q_stop: int,
    l_start: int,
    l_stop: int,
    tolerance: float = 0.1,
    modified: bool = False,
    *,
    kind: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Dense score and match matrices of a (small) query block × library block.

    Same inputs and scoring convention as :func:`~engine.kernels.search_block`,
    without filters.  ``kind`` (a score kind, e.g. ``ENTROPY``) overrides ``modified``.

    Returns
    -------
    scores : ndarray of float64, shape (q_stop - q_start, l_stop - l_start)
    matches : ndarray of int32, same shape
    """
    check_score_parameters(tolerance, 0.0, 1.0)
    queries, q_start, q_stop = checked_block(queries, q_start, q_stop, "query")
    library, l_start, l_stop = checked_block(library, l_start, l_stop, "library")
    kind = int(bool(modified)) if kind is None else int(kind)
    with parallel_region():
        return _dense_kernel(
            queries, library, q_start, q_stop, l_start, l_stop, float(tolerance), kind
        )


@njit(cache=True, nogil=True)
def score_listed_pairs(
    q_index, l_index, queries, library, tolerance, kind, thresholds
):  # pragma: no cover - numba
    """Exact scores of pairs ``(q_index[k], l_index[k])`` of score ``kind``, serially.

    With a threshold ``thresholds[k] > 0`` (cosine only), a pair whose best-partner
    bound (:func:`~engine.kernels.pair_bound.best_partner_bound`) stays below it is
    not scored: it gets score 0 and no matches, as it can be no hit (or, with a
    query's running top-N floor as its threshold, no hit of its top-N).  Releases
    the GIL, so worker threads run several lists at once (the GPU's overflow pairs
    are rescored this way while it goes on).
    """
    n = q_index.shape[0]
    scores = np.zeros(n, dtype=np.float64)
    matches = np.zeros(n, dtype=np.int32)
    longest = 0  # of the listed spectra only: a scan of a 1.5 M library per list cost ~1 ms
    for k in range(n):
        q, l = q_index[k], l_index[k]
        longest = max(longest, queries.offsets[q + 1] - queries.offsets[q])
        longest = max(longest, library.offsets[l + 1] - library.offsets[l])
    scratch = new_scratch(longest)
    colmax = np.empty(longest if kind == COSINE else 0, dtype=np.float64)
    for k in range(n):
        q, l = q_index[k], l_index[k]
        t = thresholds[k]
        if kind == COSINE and t > 0.0:
            if not pair_can_reach(q, l, queries, library, tolerance, t, colmax):
                continue
        scores[k], matches[k] = score_pair(q, l, queries, library, tolerance, kind, scratch)
    return scores, matches
