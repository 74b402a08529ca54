"""Peak filters fused into one parallel pass over CSR spectra.

A *plan* is a sequence of steps, each a code (:data:`MZ_RANGE` ...) and two
float parameters.  :func:`filter_peaks` applies the whole plan to every
spectrum, in parallel over spectra: each spectrum's peaks are copied once into
its slice of an output buffer, every step then works in place on that slice
(while it is in cache), and the kept peaks are finally packed into arrays of
their exact size.  Each step reproduces the arithmetic of the matching filter of
:mod:`engine.preprocess.filters` exactly (same comparisons, same operations in
float64), so the results are equal bit for bit.

Loops that LLVM should vectorise index views that start at 0 (``seg =
x[a : a + n]; seg[t]``): an index that numba may have to wrap (``x[a + t]``)
turns vector loads into gathers, several times slower.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from engine.kernels.threads import parallel_region

__all__ = [
    "KEEP_TOP_K",
    "MZ_RANGE",
    "NORMALIZE",
    "PRECURSOR",
    "RELATIVE",
    "SQRT",
    "WINDOW",
    "filter_peaks",
]

#: Step codes; parameters in brackets (unused ones are 0).
MZ_RANGE = 0  # [min_mz, max_mz]: keep min_mz <= m/z <= max_mz
PRECURSOR = 1  # [tolerance]: drop |m/z - precursor| <= tolerance (NaN precursor: keep all)
RELATIVE = 2  # [min_relative]: keep intensity >= min_relative * max
KEEP_TOP_K = 3  # [k]: the k most intense (ties: lower m/z, then earlier peak)
WINDOW = 4  # [k, window]: fewer than k peaks above within +-window Da
SQRT = 5  # []: square-root intensities
NORMALIZE = 6  # []: divide by the largest intensity

#: Peaks of one spectrum whose windows the window filter counts together, one lane each.
GROUP = 16
#: Peaks of a group's windows counted for all its lanes at once, from the first window's start.
FIRST = 64
#: Peaks compared in one vectorised block when a peak's window is counted on alone.
BLOCK = 32
#: Weight of one spectrum against one peak when spectra are split into chunks.
_SPECTRUM_COST = 1
_CHUNK_COST = 8192


@njit(cache=True, inline="always")
def _max(intensity, a, n):  # pragma: no cover - numba
    """Largest intensity of the peaks ``[a, a + n)`` as ``np.maximum`` finds it (0 if none)."""
    if n == 0:
        return 0.0
    top = intensity[a]
    for i in range(a + 1, a + n):
        x = intensity[i]
        if x > top or x != x:  # a NaN wins, as in np.maximum
            top = x
    return top


@njit(cache=True)
def _keep_masked(mz, intensity, a, n, mask):  # pragma: no cover - numba
    """Move the peaks where ``mask[:n]`` is True to the front of the slice; their number."""
    m = 0
    for i in range(n):  # writes every peak, advances over kept ones: no unpredictable branch
        mz[a + m] = mz[a + i]
        intensity[a + m] = intensity[a + i]
        m += mask[i]
    return m


@njit(cache=True)
def _mz_range(mz, intensity, a, n, lo, hi):  # pragma: no cover - numba
    m = 0
    for i in range(a, a + n):
        keep = (mz[i] >= lo) & (mz[i] <= hi)
        mz[a + m] = mz[i]
        intensity[a + m] = intensity[i]
        m += keep
    return m


@njit(cache=True)
def _precursor(mz, intensity, a, n, precursor, tolerance):  # pragma: no cover - numba
    m = 0
    for i in range(a, a + n):
        keep = not np.abs(mz[i] - precursor) <= tolerance  # NaN precursor: never near
        mz[a + m] = mz[i]
        intensity[a + m] = intensity[i]
        m += keep
    return m


@njit(cache=True)
def _relative(mz, intensity, a, n, min_relative):  # pragma: no cover - numba
    threshold = _max(intensity, a, n) * min_relative
    m = 0
    for i in range(a, a + n):
        keep = intensity[i] >= threshold
        mz[a + m] = mz[i]
        intensity[a + m] = intensity[i]
        m += keep
    return m


@njit(cache=True)
def _kth_smallest(x, n, kth):  # pragma: no cover - numba
    """The value at position ``kth`` of ``sorted(x[:n])``; reorders ``x[:n]`` (Hoare's find)."""
    lo, hi = 0, n - 1
    while lo < hi:
        # median of three as pivot: a value inside [lo, hi], which stops both scans
        p, q, r = x[lo], x[(lo + hi) // 2], x[hi]
        pivot = max(min(p, q), min(max(p, q), r))
        i, j = lo, hi
        while i <= j:
            while x[i] < pivot:
                i += 1
            while pivot < x[j]:
                j -= 1
            if i <= j:
                x[i], x[j] = x[j], x[i]
                i += 1
                j -= 1
        if j < kth:
            lo = i
        if kth < i:
            hi = j
    return x[kth]


@njit(cache=True)
def _top_k(mz, intensity, a, n, k, mask, scratch):  # pragma: no cover - numba
    """``keep_top_k``: rank by intensity descending, then m/z, then position."""
    if n <= k:
        return n
    if k == 0:
        return 0
    scratch[:n] = intensity[a : a + n]
    kth = _kth_smallest(scratch, n, n - k)  # the k-th largest intensity
    need = k
    sorted_ties = True
    last = -np.inf
    for i in range(n):
        mask[i] = intensity[a + i] > kth
        need -= mask[i]
        if intensity[a + i] == kth:
            sorted_ties &= mz[a + i] >= last
            last = mz[a + i]
    # `need` (>= 1) of the peaks equal to kth are kept: those of lowest m/z, then earliest
    if sorted_ties:  # always so in a library (m/z ascending): the earliest ones
        for i in range(n):
            if need > 0 and intensity[a + i] == kth:
                mask[i] = True
                need -= 1
    else:
        ties = np.flatnonzero(intensity[a : a + n] == kth)
        order = np.argsort(mz[a : a + n][ties], kind="mergesort")
        for j in range(need):
            mask[ties[order[j]]] = True
    return _keep_masked(mz, intensity, a, n, mask)


@njit(cache=True)
def _window_scan(mz, intensity, a, n, k, window, mask):  # pragma: no cover - numba
    """GNPS window filter, the loop of ``filters._window_mask``, stopping at k peaks above."""
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


@njit(cache=True)
def _window_sorted(mz, intensity, a, n, k, window, mask, lanes, counts):  # pragma: no cover - numba
    """The window mask for m/z-sorted peaks and a finite window, ``GROUP`` peaks at a time.

    With m/z sorted, peak ``j`` is in the window of peak ``i`` exactly when
    ``mz[i] - window <= mz[j] <= mz[i] + window`` (the loop of
    ``filters._window_mask`` visits exactly those), and it counts when it is
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


@njit(cache=True)
def _window(mz, intensity, a, n, k, window, mask, lanes, counts):  # pragma: no cover - numba
    """``window_filter``: keep peaks with fewer than ``k`` more intense within +-window."""
    if n <= k:  # fewer than k other peaks in any window: every peak stays
        return n
    seg = mz[a : a + n]
    ordered = True
    for t in range(1, n):
        ordered &= seg[t - 1] <= seg[t]
    if ordered and window < np.inf:  # always so in a library
        _window_sorted(mz, intensity, a, n, k, window, mask, lanes, counts)
    else:  # unsorted (or NaN) m/z, or an infinite window (m/z +- inf may be NaN)
        _window_scan(mz, intensity, a, n, k, window, mask)
    return _keep_masked(mz, intensity, a, n, mask)


@njit(cache=True)
def _apply_plan(
    mz, intensity, a, n, precursor, codes, params, mask, scratch, lanes, counts
):  # pragma: no cover - numba
    """Every step of the plan, in order, on the peaks ``[a, a + n)``; the peaks left."""
    for step in range(codes.shape[0]):
        code = codes[step]
        p0 = params[step, 0]
        p1 = params[step, 1]
        if code == MZ_RANGE:
            n = _mz_range(mz, intensity, a, n, p0, p1)
        elif code == PRECURSOR:
            n = _precursor(mz, intensity, a, n, precursor, p0)
        elif code == RELATIVE:
            n = _relative(mz, intensity, a, n, p0)
        elif code == KEEP_TOP_K:
            n = _top_k(mz, intensity, a, n, np.int64(p0), mask, scratch)
        elif code == WINDOW:
            n = _window(mz, intensity, a, n, np.int64(p0), p1, mask, lanes, counts)
        elif code == SQRT:
            seg = intensity[a : a + n]  # a view from 0: vector loads, not gathers
            for t in range(n):
                seg[t] = np.sqrt(seg[t])
        elif code == NORMALIZE:
            top = _max(intensity, a, n)
            seg = intensity[a : a + n]
            for t in range(n):
                seg[t] = seg[t] / top
    return n


@njit(cache=True, parallel=True, nogil=True)
def _filter_chunks(mz, intensity, offsets, precursor, codes, params, chunks):  # pragma: no cover
    """Filtered peaks of each spectrum at its input offset, and how many each kept."""
    buf_mz = np.empty_like(mz)
    buf_int = np.empty_like(intensity)
    kept = np.empty(offsets.shape[0] - 1, dtype=np.int64)
    for c in prange(chunks.shape[0] - 1):
        longest = 0
        for s in range(chunks[c], chunks[c + 1]):
            longest = max(longest, offsets[s + 1] - offsets[s])
        mask = np.empty(longest, dtype=np.bool_)
        scratch = np.empty(longest, dtype=np.float64)
        lanes = np.empty((3, GROUP), dtype=np.float64)
        counts = np.empty(GROUP, dtype=np.int32)
        for s in range(chunks[c], chunks[c + 1]):
            a = offsets[s]
            n = offsets[s + 1] - a
            buf_mz[a : a + n] = mz[a : a + n]
            buf_int[a : a + n] = intensity[a : a + n]
            kept[s] = _apply_plan(
                buf_mz, buf_int, a, n, precursor[s], codes, params, mask, scratch, lanes, counts
            )
    return buf_mz, buf_int, kept


@njit(cache=True, parallel=True, nogil=True)
def _pack(buf_mz, buf_int, offsets, kept, new_offsets, chunks):  # pragma: no cover - numba
    """The kept peaks of every spectrum, back to back."""
    out_mz = np.empty(new_offsets[-1], dtype=np.float64)
    out_int = np.empty(new_offsets[-1], dtype=np.float64)
    for c in prange(chunks.shape[0] - 1):
        for s in range(chunks[c], chunks[c + 1]):
            src = offsets[s]
            dst = new_offsets[s]
            out_mz[dst : dst + kept[s]] = buf_mz[src : src + kept[s]]
            out_int[dst : dst + kept[s]] = buf_int[src : src + kept[s]]
    return out_mz, out_int


def _chunks(offsets: np.ndarray) -> np.ndarray:
    """Spectrum bounds of chunks of about equal work (peaks plus a little per spectrum)."""
    n = offsets.shape[0] - 1
    cost = offsets[:-1] + _SPECTRUM_COST * np.arange(n, dtype=np.int64)
    total = int(offsets[-1]) + _SPECTRUM_COST * n
    targets = np.arange(_CHUNK_COST, total, _CHUNK_COST, dtype=np.int64)
    inner = np.searchsorted(cost, targets)
    return np.unique(np.concatenate(([0], inner, [n]))).astype(np.int64)


def filter_peaks(
    mz: np.ndarray,
    intensity: np.ndarray,
    offsets: np.ndarray,
    precursor_mz: np.ndarray,
    codes: np.ndarray,
    params: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Apply a plan of peak filters to every spectrum of a CSR set, in one parallel pass.

    Parameters
    ----------
    mz, intensity : ndarray of float64, shape (n_peaks,)
        Peaks of all spectra, each spectrum's slice sorted by m/z.
    offsets : ndarray of int64, shape (n_spectra + 1,)
    precursor_mz : ndarray of float64, shape (n_spectra,)
        NaN where unknown.
    codes : ndarray of int64, shape (n_steps,)
        Step codes (:data:`MZ_RANGE` ...), applied in order.
    params : ndarray of float64, shape (n_steps, 2)
        Parameters of each step.

    Returns
    -------
    mz, intensity : ndarray of float64
        The peaks kept, in their original order.
    offsets : ndarray of int64
        New offsets; every spectrum is kept (possibly with no peaks).
    """
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    chunks = _chunks(offsets)
    with parallel_region():
        buf_mz, buf_int, kept = _filter_chunks(
            np.ascontiguousarray(mz, dtype=np.float64),
            np.ascontiguousarray(intensity, dtype=np.float64),
            offsets,
            np.ascontiguousarray(precursor_mz, dtype=np.float64),
            np.ascontiguousarray(codes, dtype=np.int64),
            np.ascontiguousarray(params, dtype=np.float64).reshape(-1, 2),
            chunks,
        )
        new_offsets = np.zeros_like(offsets)
        np.cumsum(kept, out=new_offsets[1:])
        if new_offsets[-1] == offsets[-1]:  # nothing removed: the buffers are the result
            return buf_mz, buf_int, new_offsets
        out_mz, out_int = _pack(buf_mz, buf_int, offsets, kept, new_offsets, chunks)
    return out_mz, out_int, new_offsets
