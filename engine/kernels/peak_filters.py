"""Peak filters fused into one parallel pass over CSR spectra.

A *plan* is a sequence of steps, each a code (:data:`MZ_RANGE` ...) and two
float parameters.  :func:`filter_peaks` applies the whole plan to every
spectrum, in parallel over spectra: each spectrum's peaks are copied once into
its slice of an output buffer, every step then works in place on that slice
(while it is in cache), and the kept peaks are finally packed into arrays of
their exact size.  Each step reproduces the arithmetic of the matching filter of
:mod:`engine.preprocess.filters` exactly (same comparisons, same operations in
float64), so the results are equal bit for bit.
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

#: Peaks compared in one vectorised block of the window filter.
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


@njit(cache=True)
def _window_sorted(mz, intensity, a, n, k, window, mask):  # pragma: no cover - numba
    """The same mask for m/z-sorted peaks: whole windows counted in loops LLVM vectorises.

    With m/z sorted, the window of peak ``i`` is a run of positions whose ends
    only move right.  Counting stops between blocks once ``k`` peaks are above.
    """
    stop = a + n
    lo = a
    hi = a
    for i in range(a, stop):
        while mz[lo] < mz[i] - window:
            lo += 1
        while hi < stop and mz[hi] <= mz[i] + window:
            hi += 1
        if hi - lo <= k:  # fewer than k other peaks in the window
            mask[i - a] = True
            continue
        x = intensity[i]
        above = 0
        for start in range(lo, hi, BLOCK):
            if above >= k:
                break
            for j in range(start, min(start + BLOCK, hi)):
                y = intensity[j]
                above += (y > x) | ((y == x) & (j < i))
        mask[i - a] = above < k


@njit(cache=True)
def _window(mz, intensity, a, n, k, window, mask):  # pragma: no cover - numba
    """``window_filter``: keep peaks with fewer than ``k`` more intense within +-window."""
    ordered = True
    for i in range(a + 1, a + n):
        ordered &= mz[i - 1] <= mz[i]
    if ordered:  # always so in a library
        _window_sorted(mz, intensity, a, n, k, window, mask)
    else:
        _window_scan(mz, intensity, a, n, k, window, mask)
    return _keep_masked(mz, intensity, a, n, mask)


@njit(cache=True)
def _apply_plan(mz, intensity, a, n, precursor, codes, params, mask, scratch):  # pragma: no cover
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
            n = _window(mz, intensity, a, n, np.int64(p0), p1, mask)
        elif code == SQRT:
            for i in range(a, a + n):
                intensity[i] = np.sqrt(intensity[i])
        elif code == NORMALIZE:
            top = _max(intensity, a, n)
            for i in range(a, a + n):
                intensity[i] = intensity[i] / top
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
        for s in range(chunks[c], chunks[c + 1]):
            a = offsets[s]
            n = offsets[s + 1] - a
            buf_mz[a : a + n] = mz[a : a + n]
            buf_int[a : a + n] = intensity[a : a + n]
            kept[s] = _apply_plan(buf_mz, buf_int, a, n, precursor[s], codes, params, mask, scratch)
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
