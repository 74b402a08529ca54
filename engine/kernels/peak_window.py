"""The GNPS window filter's decision for one spectrum: which peaks stay.

A peak stays when fewer than ``k`` peaks within +-``window`` Da of it are more
intense (or as intense and before it), as :func:`window_scan` decides.
:func:`window_mask` fills a keep mask for one spectrum's peaks; the fused pass
(:mod:`engine.kernels.peak_filters`) moves the kept peaks.

Loops that LLVM should vectorise index views that start at 0 (``seg =
x[a : a + n]; seg[t]``): an index that numba may have to wrap (``x[a + t]``)
turns vector loads into gathers, several times slower.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.kernels.jit import nopython_helper

__all__ = ["BLOCK", "FIRST", "GROUP", "window_mask", "window_scan"]

#: Peaks of one spectrum whose windows the window filter counts together, one lane each.
GROUP = 16
#: Peaks of a group's windows counted for all its lanes at once, from the first window's start.
FIRST = 64
#: Peaks compared in one vectorised block when a peak's window is counted on alone.
BLOCK = 32


@nopython_helper
def window_scan(mz, intensity, a, n, k, window, mask):  # pragma: no cover - numba
    """GNPS window filter on the peaks ``[a, a + n)``, into ``mask[:n]``: each peak's window
    scanned in turn, stopping at ``k`` peaks above (the reference, ``filters.window_filter``)."""
    stop = a + n
    lo = a
    for i in range(a, stop):
        while mz[lo] < mz[i] - window:
            lo += 1
        above = 0
        j = lo
        while above < k and j < stop and mz[j] <= mz[i] + window:
            if intensity[j] > intensity[i] or (intensity[j] == intensity[i] and j < i):
                above += 1
            j += 1
        mask[i - a] = above < k


@njit(cache=True, inline="always")
def _count_on(ms, ys, start, stop, p, lower, upper, level, above, k):  # pragma: no cover - numba
    """``above`` plus the peaks of ``[start, stop)`` above peak ``p``, in blocks, until ``k``.

    ``ms`` and ``ys`` are one spectrum's peaks (m/z sorted); a peak counts when
    its m/z is in ``[lower, upper]`` and it is more intense than ``level``, or
    as intense and before ``p``.  Before ``p`` the m/z is never above ``upper``
    and "before" always holds; after it, the m/z is never under ``lower``: whole
    blocks on one side need two comparisons a peak, not five.
    """
    while start < stop:
        end = start + BLOCK
        count = 0
        if end <= p:  # views from 0 so LLVM loads vectors (an index from ``start`` gathers)
            mb = ms[start:end]
            yb = ys[start:end]
            for t in range(mb.shape[0]):
                count += (mb[t] >= lower) & (yb[t] >= level)
        elif start > p and end <= stop:
            mb = ms[start:end]
            yb = ys[start:end]
            for t in range(mb.shape[0]):
                count += (mb[t] <= upper) & (yb[t] > level)
        else:
            mb = ms[start : min(end, stop)]
            yb = ys[start : min(end, stop)]
            before = p - start
            for t in range(mb.shape[0]):
                m = mb[t]
                y = yb[t]
                count += (m >= lower) & (m <= upper) & ((y > level) | ((y == level) & (t < before)))
        above += count
        if above >= k:
            break
        start = end
    return above


@nopython_helper
def _window_sorted(mz, intensity, a, n, k, window, mask, lanes, counts):  # pragma: no cover - numba
    """The window mask for m/z-sorted peaks and a finite window, ``GROUP`` peaks at a time.

    With m/z sorted, peak ``j`` is in the window of peak ``i`` exactly when
    ``mz[i] - window <= mz[j] <= mz[i] + window`` (the loop of
    :func:`window_scan` visits exactly those), and it counts when it is
    more intense, or as intense and before ``i``.  For each group of ``GROUP``
    consecutive peaks (one lane each), the first ``FIRST`` peaks from the start
    of the group's first window are counted for all lanes at once, branch-free
    and vectorised across lanes; a peak still under ``k`` then goes on alone
    through the rest of the group's windows, stopping at ``k``.  Every count is
    the reference's (or stops at ``k`` like it), so the mask is its mask.
    """
    ms = mz[a : a + n]
    ys = intensity[a : a + n]
    lower = lanes[0]
    upper = lanes[1]
    level = lanes[2]
    group = counts.shape[0]
    lo = 0
    hi = 0
    for g in range(0, n, group):
        size = min(group, n - g)
        mg = ms[g : g + size]
        yg = ys[g : g + size]
        for lane in range(size):
            lower[lane] = mg[lane] - window
            upper[lane] = mg[lane] + window
            level[lane] = yg[lane]
        for lane in range(size, group):  # no peak: NaN never counts, and is never used
            lower[lane] = np.nan
            upper[lane] = np.nan
            level[lane] = np.nan
        counts[:] = 0
        while ms[lo] < lower[0]:  # the start of the group's first window
            lo += 1
        while hi < n and ms[hi] <= upper[size - 1]:  # the end of its last window
            hi += 1
        first = min(lo + FIRST, hi)
        # peaks before the group: m/z <= every lane's, so only `lower` decides; ties count
        before = min(first, g)
        j = lo
        while j + 4 <= before:  # four peaks per pass over the lanes' counts
            m0, m1, m2, m3 = ms[j], ms[j + 1], ms[j + 2], ms[j + 3]
            y0, y1, y2, y3 = ys[j], ys[j + 1], ys[j + 2], ys[j + 3]
            for lane in range(group):
                low = lower[lane]
                x = level[lane]
                counts[lane] += (
                    np.int32((m0 >= low) & (y0 >= x))
                    + np.int32((m1 >= low) & (y1 >= x))
                    + np.int32((m2 >= low) & (y2 >= x))
                    + np.int32((m3 >= low) & (y3 >= x))
                )
            j += 4
        for rest in range(j, before):
            m = ms[rest]
            y = ys[rest]
            for lane in range(group):
                counts[lane] += (m >= lower[lane]) & (y >= level[lane])
        # peaks of the group itself: both window ends, ties by position
        for j in range(max(lo, g), min(first, g + group)):
            m = ms[j]
            y = ys[j]
            rank = j - g  # peak j comes before lane l's peak when rank < l
            for lane in range(group):
                x = level[lane]
                counts[lane] += (
                    (m >= lower[lane]) & (m <= upper[lane]) & ((y > x) | ((y == x) & (rank < lane)))
                )
        # peaks after the group: m/z >= every lane's, so only `upper` decides; ties don't count
        for j in range(max(lo, g + group), first):
            m = ms[j]
            y = ys[j]
            for lane in range(group):
                counts[lane] += (m <= upper[lane]) & (y > level[lane])
        for lane in range(size):
            above = counts[lane]
            if above < k and first < hi:
                above = _count_on(
                    ms, ys, first, hi, g + lane, lower[lane], upper[lane], level[lane], above, k
                )
            mask[g + lane] = above < k


@nopython_helper
def window_mask(mz, intensity, a, n, k, window, mask, lanes, counts):  # pragma: no cover - numba
    """Whether each of the peaks ``[a, a + n)`` stays, in ``mask[:n]``.

    ``lanes`` (float64, shape (3, :data:`GROUP`)) and ``counts`` (int32, shape
    (:data:`GROUP`,)) are scratch space.  Sorted m/z and a finite window (always
    so in a library) take the vectorised count; unsorted or NaN m/z, or an
    infinite window (m/z +- inf may be NaN), the reference's loop.
    """
    seg = mz[a : a + n]
    ordered = True
    for t in range(1, n):
        ordered &= seg[t - 1] <= seg[t]
    if ordered and window < np.inf:
        _window_sorted(mz, intensity, a, n, k, window, mask, lanes, counts)
    else:
        window_scan(mz, intensity, a, n, k, window, mask)
