"""Host-side numba helpers of the GPU bound pruning: a device peak index's pieces and bins."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from engine.kernels.sorting import radix_order

__all__ = ["PIECE_BINS", "index_pieces", "piece_bins"]

#: Key bins per piece of a device peak index: a window's first candidate is found from
#: its bin's start and a short coalesced scan instead of a binary search of the piece.
PIECE_BINS = 16384


@njit(cache=True, parallel=True, nogil=True)
def index_pieces(mz, weight, offsets, precursor_mz, l0, l1, shifted, chunk):  # pragma: no cover
    """Peaks of spectra ``[l0, l1)`` as float64 keys, sorted within pieces of ``chunk`` columns.

    Parameters
    ----------
    mz, weight, offsets, precursor_mz : ndarray
        The library in CSR form (any float dtype; keys and weights become float64).
    l0, l1 : int
        The column range.
    shifted : bool
        Key ``mz - precursor_mz``, peaks whose key is NaN left out; else ``mz``.
    chunk : int
        Columns per piece.

    Returns
    -------
    key : ndarray of float64
    column : ndarray of int32
        ``l - l0`` of each peak; nondecreasing across pieces.
    weight : ndarray of float64
    start : ndarray of int64
        Piece ``g`` is ``start[g]:start[g + 1]``; within it the keys are sorted and
        equal keys keep column order, then peak order (a stable sort).
    """
    pieces = (l1 - l0 + chunk - 1) // chunk
    sizes = np.zeros(pieces, dtype=np.int64)
    for g in prange(pieces):
        c0 = l0 + g * chunk
        c1 = min(c0 + chunk, l1)
        if not shifted:
            sizes[g] = offsets[c1] - offsets[c0]
            continue
        n = 0
        for col in range(c0, c1):
            p = np.float64(precursor_mz[col])
            for j in range(offsets[col], offsets[col + 1]):
                k = np.float64(mz[j]) - p
                if k == k:
                    n += 1
        sizes[g] = n
    start = np.zeros(pieces + 1, dtype=np.int64)
    for g in range(pieces):
        start[g + 1] = start[g] + sizes[g]
    total = start[pieces]
    key = np.empty(total, dtype=np.float64)
    column = np.empty(total, dtype=np.int32)
    w = np.empty(total, dtype=np.float64)
    for g in prange(pieces):
        c0 = l0 + g * chunk
        c1 = min(c0 + chunk, l1)
        a = start[g]
        m = start[g + 1] - a
        k = np.empty(m, dtype=np.float64)
        c = np.empty(m, dtype=np.int32)
        v = np.empty(m, dtype=np.float64)
        i = 0
        for col in range(c0, c1):
            p = np.float64(precursor_mz[col]) if shifted else 0.0
            for j in range(offsets[col], offsets[col + 1]):
                x = np.float64(mz[j]) - p if shifted else np.float64(mz[j])
                if x != x and shifted:
                    continue
                k[i] = x
                c[i] = col - l0
                v[i] = np.float64(weight[j])
                i += 1
        order = radix_order(k)
        for i in range(m):
            o = order[i]
            key[a + i] = k[o]
            column[a + i] = c[o]
            w[a + i] = v[o]
    return key, column, w, start


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
