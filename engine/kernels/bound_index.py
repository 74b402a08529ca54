"""Host-side numba helper of the GPU bound pruning: sorting a device peak index's pieces."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["sort_pieces"]


@njit(cache=True, parallel=True, nogil=True)
def sort_pieces(key, start):  # pragma: no cover - numba
    """Order that sorts ``key`` within each piece ``start[g]:start[g + 1]`` (pieces in place).

    Parameters
    ----------
    key : ndarray of float64
        No NaN.
    start : ndarray of int64
        Piece boundaries, ascending, from 0 to ``len(key)``.

    Returns
    -------
    ndarray of int64
        ``key[order]`` is sorted within each piece; equal keys keep their order.
    """
    order = np.empty(key.shape[0], dtype=np.int64)
    for g in prange(start.shape[0] - 1):
        a = start[g]
        b = start[g + 1]
        local = np.argsort(key[a:b], kind="mergesort")
        for i in range(b - a):
            order[a + i] = a + local[i]
    return order
