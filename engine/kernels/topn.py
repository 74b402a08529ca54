"""Ordering of hit rows: group by query, best first, keep the top N (numba)."""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["top_n_order"]


@numba.njit(cache=True, parallel=True, nogil=True)
def _top_n_order(query, library, score, top_n, q_lo, n_groups):  # pragma: no cover - numba
    n = len(query)
    starts = np.zeros(n_groups + 1, dtype=np.int64)
    for k in range(n):
        starts[query[k] - q_lo + 1] += 1
    for g in range(n_groups):
        starts[g + 1] += starts[g]
    grouped = np.empty(n, dtype=np.int64)
    fill = starts[:-1].copy()
    for k in range(n):  # counting sort by query, stable
        g = query[k] - q_lo
        grouped[fill[g]] = k
        fill[g] += 1
    kept = np.empty(n_groups, dtype=np.int64)
    for g in numba.prange(n_groups):
        a, b = starts[g], starts[g + 1]
        if b - a > 1:
            rows = grouped[a:b]
            by_library = rows[np.argsort(library[rows], kind="mergesort")]
            grouped[a:b] = by_library[np.argsort(-score[by_library], kind="mergesort")]
        kept[g] = min(b - a, top_n) if top_n > 0 else b - a
    out_start = np.zeros(n_groups + 1, dtype=np.int64)
    for g in range(n_groups):
        out_start[g + 1] = out_start[g] + kept[g]
    out = np.empty(out_start[n_groups], dtype=np.int64)
    for g in numba.prange(n_groups):
        out[out_start[g] : out_start[g + 1]] = grouped[starts[g] : starts[g] + kept[g]]
    return out


def top_n_order(
    query: np.ndarray, library: np.ndarray, score: np.ndarray, top_n: int = 0
) -> np.ndarray:
    """Row order: query ascending, score descending, library index ascending.

    Parameters
    ----------
    query, library : ndarray of int64
        Query and library index of each row.
    score : ndarray of float64
    top_n : int
        Keep only each query's first ``top_n`` rows (all when 0).

    Returns
    -------
    ndarray of int64
        Indexes of the rows to take, in order.  Linear in the rows plus a small
        sort per query, instead of one large three-key sort.
    """
    if len(query) == 0:
        return np.empty(0, dtype=np.int64)
    q_lo, q_hi = int(query.min()), int(query.max())
    return _top_n_order(
        np.ascontiguousarray(query, dtype=np.int64),
        np.ascontiguousarray(library, dtype=np.int64),
        np.ascontiguousarray(score, dtype=np.float64),
        int(top_n),
        q_lo,
        q_hi - q_lo + 1,
    )
