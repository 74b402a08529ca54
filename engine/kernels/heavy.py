"""Host-side numba helpers of the CUDA backend: heavy peaks for pruning, parallel row copies."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["HEAVY_MAX", "copy_rows", "heavy_peaks"]


@njit(cache=True, parallel=True, nogil=True)
def copy_rows(dst, rows, src, n):  # pragma: no cover
    """``dst[rows[r]] = src[r]`` for ``r < n``, row-parallel (first touch of fresh pages
    on every core)."""
    for r in prange(n):
        dst[rows[r], :] = src[r, :]


@njit(cache=True, parallel=True, nogil=True)
def touch_pages(flat, page):  # pragma: no cover
    """Write one byte of every ``page`` bytes of ``flat`` (uint8): the pages of a fresh
    array are faulted in on every core, ahead of the copies that fill it."""
    for p in prange((flat.shape[0] + page - 1) // page):
        flat[p * page] = 0


#: Heaviest peaks per library spectrum kept for the pruning test.
HEAVY_MAX = 4


@njit(cache=True)
def heavy_peaks(mz, weight, offsets, norm, threshold, hmax):  # pragma: no cover
    """m/z of each spectrum's heaviest peaks that carry all but ``threshold**2`` of its norm².

    Returns ``(heavy float64[n, hmax], count int32[n])``; ``count`` is -1 when
    more than ``hmax`` peaks are needed (no pruning for that spectrum).  A
    spectrum scores at least ``threshold`` with another only if one of these
    peaks is matched (Cauchy-Schwarz over the matched peaks), with a 1e-6
    relative safety margin.
    """
    n = offsets.shape[0] - 1
    heavy = np.full((n, hmax), np.nan)
    count = np.full(n, -1, dtype=np.int32)
    chosen = np.empty(hmax, dtype=np.int64)
    for s in range(n):
        a = offsets[s]
        b = offsets[s + 1]
        n2 = norm[s] * norm[s]
        target = threshold * threshold * n2 * (1.0 - 1e-6)
        rem = 0.0
        for p in range(a, b):
            rem += weight[p] * weight[p]
        k = 0
        while rem >= target and k < hmax and k < b - a:
            best = -1
            bw = -1.0
            for p in range(a, b):
                taken = False
                for t in range(k):
                    if chosen[t] == p:
                        taken = True
                if not taken and weight[p] > bw:
                    bw = weight[p]
                    best = p
            chosen[k] = best
            heavy[s, k] = mz[best]
            rem -= bw * bw
            k += 1
        if rem < target:
            count[s] = k
    return heavy, count
