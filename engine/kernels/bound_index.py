"""Host-side numba helpers of the GPU bound pruning: a device peak index's pieces and bins."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["PIECE_BINS", "piece_bins", "sort_pieces"]

#: Key bins per piece of a device peak index: a window's first candidate is found from
#: its bin's start and a short coalesced scan instead of a binary search of the piece.
PIECE_BINS = 16384


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


@njit(cache=True, parallel=True, nogil=True)
def _bin_starts(key, start, key_min, width, nbins):  # pragma: no cover - numba
    bins = np.empty((start.shape[0] - 1, nbins), dtype=np.int32)
    for g in prange(start.shape[0] - 1):
        a = start[g]
        b = start[g + 1]
        k = a
        for j in range(nbins):
            edge = key_min + j * width
            while k < b and key[k] < edge:
                k += 1
            bins[g, j] = k - a
    return bins


def piece_bins(
    key: np.ndarray, start: np.ndarray, nbins: int = PIECE_BINS
) -> tuple[np.ndarray, float, float]:
    """Where each key bin starts in each piece of a sorted-by-piece key array.

    Parameters
    ----------
    key : ndarray of float64
        Keys, sorted within each piece (no NaN).
    start : ndarray of int64
        Piece boundaries.
    nbins : int
        Bins per piece, of equal width over ``[key.min(), key.max()]``.

    Returns
    -------
    bins : ndarray of int32, shape (pieces, nbins)
        ``bins[g, j]``: position, relative to ``start[g]``, of piece ``g``'s first key
        ``>= key_min + j * width``.
    key_min, inv_width : float
        So that a key ``x`` lies in bin ``floor((x - key_min) * inv_width)``; callers
        start one bin lower, which keeps the start at or before ``x`` whatever the
        rounding.
    """
    pieces = max(int(start.shape[0]) - 1, 0)
    if key.size == 0:
        return np.zeros((max(pieces, 1), 1), dtype=np.int32), 0.0, 1.0
    key_min, key_max = float(key.min()), float(key.max())
    nbins = max(int(nbins), 2)
    width = (key_max - key_min) / (nbins - 1)
    if not width > 0.0:
        width = 1.0
    bins = _bin_starts(key, start.astype(np.int64), key_min, width, nbins)
    return bins, key_min, 1.0 / width
