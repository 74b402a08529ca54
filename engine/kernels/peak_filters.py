"""Peak filters fused: a whole plan in one call, two parallel passes over CSR spectra.

A *plan* is a sequence of steps, each a code (:data:`MZ_RANGE` ...) and two
float parameters.  :func:`filter_peaks` applies the whole plan to every
spectrum, in parallel over spectra, in two passes that touch the output once:

1. *Decide*: each spectrum's peaks are copied, with their positions, into a
   small working buffer of its chunk (reused from spectrum to spectrum, so it
   stays in cache); the steps up to the last one that drops peaks work there
   in place, and what stays is written as a keep mask of one bit an input
   peak, with the number kept and the divisor of each normalisation.
2. *Write*: the output is allocated at its exact size, uninitialised
   (``np.empty``), and each thread gathers its spectra's kept peaks from the
   input into it, then applies the steps that only change intensities (square
   root, normalisation) in place.

So each page of the output is first touched by the thread that fills it, once;
no buffer of the input's size is allocated and nothing is packed afterwards (a
one-shot call gets fresh pages from the kernel, which zeroes each on first
touch: that cost now follows the peaks kept, not the peaks read).  Each step reproduces
the arithmetic of the matching filter of :mod:`engine.preprocess.filters`
exactly (same comparisons, same operations in float64; the second pass divides
by the divisor the first found), so the results are equal bit for bit.

Loops that LLVM should vectorise index views that start at 0 (``seg =
x[a : a + n]; seg[t]``): an index that numba may have to wrap (``x[a + t]``)
turns vector loads into gathers, several times slower.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.kernels.jit import nopython_helper
from engine.kernels.peak_window import GROUP, window_mask
from engine.kernels.sorting import stable_order
from engine.kernels.threads import for_each_span

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

#: Steps that may drop peaks (the others change intensities only).
_SELECTING = (MZ_RANGE, PRECURSOR, RELATIVE, KEEP_TOP_K, WINDOW)
#: Weight of one spectrum against one peak when spectra are split into chunks.
_SPECTRUM_COST = 1
_CHUNK_COST = 8192


@njit(cache=True, inline="always")
def _max(intensity, n):  # pragma: no cover - numba
    """Largest of ``intensity[:n]`` as ``np.maximum`` finds it (0 if none)."""
    if n == 0:
        return 0.0
    top = intensity[0]
    for i in range(1, n):
        x = intensity[i]
        if x > top or x != x:  # a NaN wins, as in np.maximum
            top = x
    return top


@njit(cache=True, inline="always")
def _move(mz, intensity, pos, m, i, keep):  # pragma: no cover - numba
    """Copy peak ``i`` to slot ``m``; the next slot (``m`` again when not ``keep``).

    Every peak is written, only kept ones advance ``m``: no unpredictable branch.
    """
    mz[m] = mz[i]
    intensity[m] = intensity[i]
    pos[m] = pos[i]
    return m + keep


@nopython_helper
def _keep_masked(mz, intensity, pos, n, mask):  # pragma: no cover - numba
    """Move the peaks where ``mask[:n]`` is True, and their positions, to the front; how many."""
    m = 0
    for i in range(n):
        m = _move(mz, intensity, pos, m, i, mask[i])
    return m


@nopython_helper
def _mz_range(mz, intensity, pos, n, lo, hi):  # pragma: no cover - numba
    m = 0
    for i in range(n):
        m = _move(mz, intensity, pos, m, i, (mz[i] >= lo) & (mz[i] <= hi))
    return m


@nopython_helper
def _precursor(mz, intensity, pos, n, precursor, tolerance):  # pragma: no cover - numba
    m = 0
    for i in range(n):  # a NaN precursor is never near
        m = _move(mz, intensity, pos, m, i, not np.abs(mz[i] - precursor) <= tolerance)
    return m


@nopython_helper
def _relative(mz, intensity, pos, n, min_relative):  # pragma: no cover - numba
    threshold = _max(intensity, n) * min_relative
    m = 0
    for i in range(n):
        m = _move(mz, intensity, pos, m, i, intensity[i] >= threshold)
    return m


@nopython_helper
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


@nopython_helper
def _top_k(mz, intensity, pos, n, k, mask, scratch):  # pragma: no cover - numba
    """``keep_top_k``: rank by intensity descending, then m/z, then position."""
    if n <= k:
        return n
    if k == 0:
        return 0
    for i in range(n):  # not a slice assignment: see rows.sort_row
        scratch[i] = intensity[i]
    kth = _kth_smallest(scratch, n, n - k)  # the k-th largest intensity
    need = k
    sorted_ties = True
    last = -np.inf
    for i in range(n):
        mask[i] = intensity[i] > kth
        need -= mask[i]
        if intensity[i] == kth:
            sorted_ties &= mz[i] >= last
            last = mz[i]
    # `need` (>= 1) of the peaks equal to kth are kept: those of lowest m/z, then earliest
    if sorted_ties:  # always so in a library (m/z ascending): the earliest ones
        for i in range(n):
            if need > 0 and intensity[i] == kth:
                mask[i] = True
                need -= 1
    else:
        ties = np.flatnonzero(intensity[:n] == kth)
        order = stable_order(mz[:n][ties])
        for j in range(need):
            mask[ties[order[j]]] = True
    return _keep_masked(mz, intensity, pos, n, mask)


@nopython_helper
def _window(mz, intensity, pos, n, k, window, mask, lanes, counts):  # pragma: no cover - numba
    """``window_filter``: keep peaks with fewer than ``k`` more intense within +-window."""
    if n <= k:  # fewer than k other peaks in any window: every peak stays
        return n
    window_mask(mz, intensity, 0, n, k, window, mask, lanes, counts)
    return _keep_masked(mz, intensity, pos, n, mask)


@nopython_helper
def _decide(
    mz, intensity, pos, n, precursor, codes, params, stop, tops, mask, scratch, lanes, counts
):  # pragma: no cover - numba
    """Steps ``[0, stop)`` on the working peaks ``[0, n)``; the number left.

    The kept peaks end at the front, ``pos`` moved along with them; the divisor
    of each normalisation goes to ``tops``, in order.
    """
    t = 0
    for step in range(stop):
        code = codes[step]
        p0 = params[step, 0]
        p1 = params[step, 1]
        if code == MZ_RANGE:
            n = _mz_range(mz, intensity, pos, n, p0, p1)
        elif code == PRECURSOR:
            n = _precursor(mz, intensity, pos, n, precursor, p0)
        elif code == RELATIVE:
            n = _relative(mz, intensity, pos, n, p0)
        elif code == KEEP_TOP_K:
            n = _top_k(mz, intensity, pos, n, np.int64(p0), mask, scratch)
        elif code == WINDOW:
            n = _window(mz, intensity, pos, n, np.int64(p0), p1, mask, lanes, counts)
        elif code == SQRT:
            for i in range(n):
                intensity[i] = np.sqrt(intensity[i])
        elif code == NORMALIZE:
            top = _max(intensity, n)
            tops[t] = top
            t += 1
            for i in range(n):
                intensity[i] = intensity[i] / top
    return n


@nopython_helper
def _scale(intensity, n, codes, stop, tops):  # pragma: no cover - numba
    """The intensity steps of the plan on the kept peaks ``intensity[:n]``, in order.

    A normalisation before ``stop`` divides by its divisor of the first pass
    (the largest intensity of the peaks then left, some dropped since); one
    after it by the largest of these peaks, as the filter does.
    """
    t = 0
    for step in range(codes.shape[0]):
        code = codes[step]
        if code == SQRT:
            for i in range(n):
                intensity[i] = np.sqrt(intensity[i])
        elif code == NORMALIZE:
            if step < stop:
                top = tops[t]
                t += 1
            else:
                top = _max(intensity, n)
            for i in range(n):
                intensity[i] = intensity[i] / top


@njit(cache=True)
def _mask_layout(offsets, chunks, n_tops):  # pragma: no cover - numba
    """Buffers of the first pass: the keep mask, its chunks' bases, new offsets, divisors.

    The keep mask holds one bit a peak, each chunk's bits from a byte of their
    own, at ``bases[c]`` (no byte is written by two threads); it is written and
    read only for spectra that lose some peaks but not all.  ``tops[s]`` holds
    spectrum ``s``'s divisors of the normalisations before ``stop``.
    """
    n_spectra = offsets.shape[0] - 1
    n_chunks = chunks.shape[0] - 1
    bases = np.empty(n_chunks + 1, dtype=np.int64)  # each chunk's first byte of the mask
    bases[0] = 0
    for c in range(n_chunks):
        bases[c + 1] = bases[c] + (offsets[chunks[c + 1]] - offsets[chunks[c]] + 7) // 8
    keep = np.empty(bases[n_chunks], dtype=np.uint8)
    new_offsets = np.zeros(n_spectra + 1, dtype=np.int64)  # first the counts kept, at s + 1
    tops = np.empty((n_spectra, n_tops), dtype=np.float64)
    return keep, bases, new_offsets, tops


@njit(cache=True, nogil=True)
def _decide_span(
    c0, c1, mz, intensity, offsets, precursor, codes, params, stop, chunks, layout
):  # pragma: no cover - numba
    """The first pass over chunks ``[c0, c1)``: which peaks stay, into ``layout``."""
    keep, bases, new_offsets, tops = layout
    for c in range(c0, c1):
        longest = 0
        for s in range(chunks[c], chunks[c + 1]):
            longest = max(longest, offsets[s + 1] - offsets[s])
        work_mz = np.empty(longest, dtype=np.float64)
        work_int = np.empty(longest, dtype=np.float64)
        pos = np.empty(longest, dtype=np.int64)
        mask = np.empty(longest, dtype=np.bool_)
        scratch = np.empty(longest, dtype=np.float64)
        lanes = np.empty((3, GROUP), dtype=np.float64)
        counts = np.empty(GROUP, dtype=np.int32)
        bits = keep[bases[c] : bases[c + 1]]
        bits[:] = 0
        first = offsets[chunks[c]]
        for s in range(chunks[c], chunks[c + 1]):
            a = offsets[s]
            n = offsets[s + 1] - a
            if stop == 0:  # no step drops peaks
                new_offsets[s + 1] = n
                continue
            for i in range(n):  # not slice assignments: see rows.sort_row
                work_mz[i] = mz[a + i]
                work_int[i] = intensity[a + i]
                pos[i] = i
            m = _decide(
                work_mz, work_int, pos, n, precursor[s], codes, params, stop, tops[s],
                mask, scratch, lanes, counts,
            )  # fmt: skip
            new_offsets[s + 1] = m
            if 0 < m < n:
                for i in range(m):
                    b = a - first + pos[i]
                    bits[b >> 3] |= np.uint8(1 << (b & 7))


@njit(cache=True, nogil=True)
def _write_span(
    c0, c1, mz, intensity, offsets, codes, stop, chunks, layout, out_mz, out_int
):  # pragma: no cover - numba
    """The second pass over chunks ``[c0, c1)``: each spectrum's kept peaks into its
    slice of ``out_mz``, ``out_int``."""
    keep, bases, new_offsets, tops = layout
    for c in range(c0, c1):
        bits = keep[bases[c] : bases[c + 1]]
        first = offsets[chunks[c]]
        for s in range(chunks[c], chunks[c + 1]):
            a = offsets[s]
            n = offsets[s + 1] - a
            d = new_offsets[s]
            m = new_offsets[s + 1] - d
            om = out_mz[d : d + m]
            oi = out_int[d : d + m]
            if m == n:
                for i in range(n):  # not slice assignments: see rows.sort_row
                    om[i] = mz[a + i]
                    oi[i] = intensity[a + i]
            elif m > 0:
                base = a - first
                last = base + n - 1
                while not (bits[last >> 3] >> (last & 7)) & 1:  # the last kept peak:
                    last -= 1  # the writes below stay in the spectrum's slice
                im = mz[a : a + last - base + 1]
                ii = intensity[a : a + last - base + 1]
                j = 0
                for i in range(im.shape[0]):  # writes every peak, advances over kept ones
                    om[j] = im[i]
                    oi[j] = ii[i]
                    b = base + i
                    j += (bits[b >> 3] >> (b & 7)) & 1
            _scale(oi, m, codes, stop, tops[s])


@njit(cache=True)
def _chunks(offsets):  # pragma: no cover - numba
    """Spectrum bounds of chunks of about equal work (peaks plus a little per spectrum).

    A chunk starts at each spectrum whose cost before it (peaks, plus
    ``_SPECTRUM_COST`` a spectrum) first reaches a multiple of ``_CHUNK_COST``.
    """
    n = offsets.shape[0] - 1
    bounds = np.empty((offsets[n] + _SPECTRUM_COST * n) // _CHUNK_COST + 2, dtype=np.int64)
    bounds[0] = 0
    k = 1
    target = _CHUNK_COST
    for s in range(n):
        cost = offsets[s] + _SPECTRUM_COST * s
        if cost >= target:
            bounds[k] = s
            k += 1
            while target <= cost:
                target += _CHUNK_COST
    if n > 0:
        bounds[k] = n
        k += 1
    return bounds[:k].copy()


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
        The peaks kept, in their original order: the two rows of one new block,
        each of the exact size.
    offsets : ndarray of int64
        New offsets; every spectrum is kept (possibly with no peaks).
    """
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    selecting = np.flatnonzero(np.isin(codes, _SELECTING))
    stop = int(selecting[-1]) + 1 if selecting.size else 0
    n_tops = int(np.count_nonzero(codes[:stop] == NORMALIZE))
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    mz = np.ascontiguousarray(mz, dtype=np.float64)
    intensity = np.ascontiguousarray(intensity, dtype=np.float64)
    chunks = _chunks(offsets)
    layout = _mask_layout(offsets, chunks, n_tops)
    for_each_span(
        _decide_span, chunks.shape[0] - 1,
        mz, intensity, offsets, np.ascontiguousarray(precursor_mz, dtype=np.float64), codes,
        np.ascontiguousarray(params, dtype=np.float64).reshape(-1, 2), stop, chunks, layout,
    )  # fmt: skip
    new_offsets = layout[2]
    np.cumsum(new_offsets, out=new_offsets)  # counts kept -> offsets
    # one block for both (numpy asks the kernel for huge pages from 4 MiB on: far
    # fewer page faults on fresh memory); np.empty: the threads touch it first
    out = np.empty((2, int(new_offsets[-1])), dtype=np.float64)
    for_each_span(
        _write_span, chunks.shape[0] - 1,
        mz, intensity, offsets, codes, stop, chunks, layout, out[0], out[1],
    )  # fmt: skip
    return out[0], out[1], new_offsets
