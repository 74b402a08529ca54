"""Spectral entropy similarity (Li et al., Nat Methods 2021), equal to ms_entropy 1.5.

Three steps, each reproducing ms_entropy's arithmetic (peaks in float32):

1. :func:`clean_spectra` - ms_entropy's ``clean_spectrum``: drop peaks with m/z or
   intensity <= 0 and peaks above a maximum m/z (the precursor minus 1.6 Da in a
   search, as Flash entropy search cleans), centroid (the most intense peak
   absorbs every peak within ``min_difference`` Da, intensity-weighted m/z,
   repeated until no two peaks are closer), drop peaks under ``noise`` × the
   highest, normalise to a sum of 1.
2. :func:`entropy_weights` - ``apply_weight_to_intensity``: a spectrum of
   entropy ``S < 3`` gets intensities ``p ** (0.25 + 0.25 S)``, renormalised.
3. :func:`entropy_core` - the two-pointer walk of
   ``calculate_unweighted_entropy_similarity``: peak ``a`` of the first spectrum
   and peak ``b`` of the second match when ``|mz_a - mz_b| <= tolerance`` and
   both pointers then advance; the similarity is half the sum of
   ``f(a + b) - f(a) - f(b)``, ``f(x) = x log2 x``, over matched pairs.

Tolerance edges are decided as ms_entropy decides them: its peaks are float32 and
its tolerance is compared as a float32, so the tolerance here is
``float32(tolerance)`` and peak m/z are float32 values; the difference of two
close float32 values is exact in float64 (Sterbenz), so the comparison is the
same.  Sums are accumulated in float64 (ms_entropy: float32), which moves scores
by at most a few 1e-7.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.kernels.jit import nopython_helper
from engine.kernels.sorting import stable_order
from engine.kernels.spectrum_set import read_only
from engine.kernels.threads import SPECTRA_PER_SPAN, for_each_span

__all__ = [
    "clean_spectra",
    "entropy_similarity_pair",
    "entropy_core",
    "entropy_weights",
    "pair_entropy",
    "float32_tolerance",
]


def float32_tolerance(tolerance: float) -> float:
    """The tolerance as ms_entropy compares it (a float32), as a Python float."""
    return float(np.float32(tolerance))


#: Above this many peaks the intensity order uses a stable sort instead of
#: ms_entropy's quicksort (which is quadratic on equal intensities); the two
#: differ only in the order of equal intensities within one merge window.
QUICKSORT_LIMIT = 4096


@nopython_helper
def _by_mz_drop_zero(mz, intensity, n):  # pragma: no cover - numba
    """Sort the first ``n`` peaks by m/z, dropping zero intensities; returns the new length."""
    order = stable_order(mz[:n])
    m = 0
    new_mz = mz[:n][order]
    new_int = intensity[:n][order]
    for k in range(n):
        if new_int[k] > 0:
            mz[m] = new_mz[k]
            intensity[m] = new_int[k]
            m += 1
    return m


@njit(cache=True, inline="always")  # one caller: compiled into it, not apart
def _intensity_order(intensity, n, order, stack):  # pragma: no cover - numba
    """Peaks by intensity, highest first, in ms_entropy's order (its Lomuto quicksort)."""
    for k in range(n):
        order[k] = k
    if n > QUICKSORT_LIMIT:
        by_intensity = stable_order(-intensity[:n])
        for k in range(n):  # not a slice assignment (see rows.sort_row)
            order[k] = by_intensity[k]
        return
    top = 0
    stack[0] = 0
    stack[1] = n - 1
    top = 2
    while top > 0:
        high = stack[top - 1]
        low = stack[top - 2]
        top -= 2
        if low >= high:
            continue
        pivot = intensity[order[high]]
        i = low - 1
        for j in range(low, high):
            if intensity[order[j]] >= pivot:
                i += 1
                order[i], order[j] = order[j], order[i]
        order[i + 1], order[high] = order[high], order[i + 1]
        p = i + 1
        stack[top] = low
        stack[top + 1] = p - 1
        stack[top + 2] = p + 1
        stack[top + 3] = high
        top += 4


@njit(cache=True, inline="always")  # one caller: compiled into it, not apart
def _needs_centroid(mz, n, min_difference):  # pragma: no cover - numba
    for k in range(1, n):
        if mz[k] - mz[k - 1] <= min_difference:
            return True
    return False


@njit(cache=True, inline="always")  # one caller: compiled into it, not apart
def _centroid_once(mz, intensity, n, min_difference, order, stack):  # pragma: no cover
    """One merging round, in place; returns the new length.

    In intensity order, a peak still standing absorbs every peak within
    ``min_difference`` (scanning outwards over the current m/z, merged peaks
    included) and takes their intensity-weighted m/z.
    """
    _intensity_order(intensity, n, order, stack)
    for r in range(n):
        i = order[r]
        if intensity[i] > 0:
            left = i - 1
            while left >= 0 and mz[i] - mz[left] <= min_difference:
                left -= 1
            right = i + 1
            while right < n and mz[right] - mz[i] <= min_difference:
                right += 1
            # ms_entropy 1.5.3's compiled clean_spectrum: float products, double sums
            total = 0.0
            weighted = 0.0
            for k in range(left + 1, right):
                total += np.float64(intensity[k])
                weighted += np.float64(intensity[k] * mz[k])
                intensity[k] = 0
            mz[i] = np.float32(weighted / total) if total > 0 else np.float32(0.0)
            intensity[i] = np.float32(total)
    return _by_mz_drop_zero(mz, intensity, n)


@njit(cache=True, inline="always")  # one caller: compiled into it, not apart
def _clean_one(mz_in, int_in, max_mz, noise, min_difference, mz, intensity):  # pragma: no cover
    """Clean one spectrum into ``mz``/``intensity`` (float32 scratch); returns its length."""
    n = np.int64(0)  # not the literal 0: callees would compile for it too
    for k in range(mz_in.shape[0]):
        a = np.float32(mz_in[k])
        b = np.float32(int_in[k])
        if a > -1 and b > 0 and (max_mz <= 0 or a < max_mz):
            mz[n] = a
            intensity[n] = b
            n += 1
    n = _by_mz_drop_zero(mz, intensity, n)
    if n == 0:
        return 0
    order = np.empty(n, dtype=np.int64)
    stack = np.empty(2 * n + 4, dtype=np.int64)
    while _needs_centroid(mz, n, min_difference):
        n = _centroid_once(mz, intensity, n, min_difference, order, stack)
    highest = np.float32(0.0)
    for k in range(n):
        if intensity[k] > highest:
            highest = intensity[k]
    floor = noise * highest
    kept = 0
    total = np.float32(0.0)
    for k in range(n):
        if not intensity[k] < floor:
            mz[kept] = mz[k]
            intensity[kept] = intensity[k]
            total += intensity[kept]
            kept += 1
    if not total > 0:
        return 0
    for k in range(kept):
        intensity[k] = intensity[k] / total
    return kept


@njit(cache=True, nogil=True)
def _clean_span(
    start, stop, mz, intensity, offsets, max_mz, noise, min_difference, out_mz, out_int, counts
):  # pragma: no cover - numba
    for s in range(start, stop):
        a, b = offsets[s], offsets[s + 1]
        counts[s] = _clean_one(
            mz[a:b], intensity[a:b], max_mz[s], noise, min_difference, out_mz[a:b], out_int[a:b]
        )


#: From this many kept peaks on, packing runs on several threads (a compiled kernel;
#: below it numpy, which compiles nothing, is as fast).
PARALLEL_PACK_PEAKS = 1 << 22


@njit(cache=True, nogil=True)
def _pack_span(
    start, stop, out_mz, out_int, offsets, new_offsets, mz, intensity
):  # pragma: no cover - numba
    for s in range(start, stop):
        a, c = offsets[s], new_offsets[s]
        for k in range(new_offsets[s + 1] - c):
            mz[c + k] = out_mz[a + k]
            intensity[c + k] = out_int[a + k]


def _packed(
    out_mz: np.ndarray, out_int: np.ndarray, offsets: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first ``counts[s]`` peaks of each spectrum's slice, packed, as float64."""
    new_offsets = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=new_offsets[1:])
    if new_offsets[-1] >= PARALLEL_PACK_PEAKS:
        out = np.empty((2, int(new_offsets[-1])), dtype=np.float64)
        for_each_span(
            _pack_span, counts.shape[0], out_mz, out_int, offsets, new_offsets, out[0], out[1],
            max_span=SPECTRA_PER_SPAN,
        )  # fmt: skip
        return out[0], out[1], new_offsets
    # each kept peak's position in the input: its spectrum's start plus its rank
    within = np.arange(new_offsets[-1], dtype=np.int64) - np.repeat(new_offsets[:-1], counts)
    take = np.repeat(offsets[:-1], counts) + within
    return out_mz[take].astype(np.float64), out_int[take].astype(np.float64), new_offsets


def clean_spectra(
    mz: np.ndarray,
    intensity: np.ndarray,
    offsets: np.ndarray,
    max_mz: np.ndarray | None = None,
    *,
    noise: float = 0.01,
    min_difference: float = 0.05,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ms_entropy's ``clean_spectrum`` on every spectrum of a CSR set.

    Parameters
    ----------
    mz, intensity : ndarray, shape (n_peaks,)
        Peaks of all spectra (any order within a spectrum).
    offsets : ndarray of int64, shape (n_spectra + 1,)
    max_mz : ndarray of float64, shape (n_spectra,), optional
        Peaks above this m/z are dropped (<= 0 or NaN: no limit).
    noise : float
        Peaks under ``noise`` × the highest peak are dropped (after centroiding).
    min_difference : float
        Peaks closer than this (Da) are merged.

    Returns
    -------
    mz, intensity : ndarray of float64 (float32 values)
        Cleaned peaks, m/z ascending, intensities summing to 1 per spectrum.
    offsets : ndarray of int64
    """
    # the inputs read-only whoever owns them: one compiled signature (a library's
    # arrays are read-only, a caller's own are not)
    offsets = read_only(np.ascontiguousarray(offsets, dtype=np.int64))
    n = offsets.shape[0] - 1
    if max_mz is None:
        max_mz = np.zeros(n, dtype=np.float32)
    limit = np.nan_to_num(np.asarray(max_mz, dtype=np.float64), nan=0.0).astype(np.float32)
    mz = read_only(np.ascontiguousarray(mz, dtype=np.float64))
    out_mz = np.empty(mz.shape[0], dtype=np.float32)
    out_int = np.empty(mz.shape[0], dtype=np.float32)
    counts = np.zeros(n, dtype=np.int64)
    for_each_span(
        _clean_span, n,
        mz, read_only(np.ascontiguousarray(intensity, dtype=np.float64)), offsets, limit,
        np.float32(noise), np.float32(min_difference), out_mz, out_int, counts,
        max_span=SPECTRA_PER_SPAN,
    )  # fmt: skip
    return _packed(out_mz, out_int, offsets, counts)


@njit(cache=True, nogil=True)
def _weights_span(start, stop, intensity, offsets, out):  # pragma: no cover - numba
    for s in range(start, stop):
        a, b = offsets[s], offsets[s + 1]
        total = np.float32(0.0)
        for k in range(a, b):
            total += np.float32(intensity[k])
        entropy = np.float32(0.0)
        if total > 0:
            for k in range(a, b):
                p = np.float32(intensity[k]) / total
                entropy -= p * np.log(p)
        if b > a and entropy < 3:
            power = np.float32(0.25 + 0.25 * np.float64(entropy))
            total = np.float32(0.0)
            for k in range(a, b):
                w = np.float32(intensity[k]) ** power
                out[k] = w
                total += w
            reciprocal = np.float32(1.0) / total
            for k in range(a, b):
                out[k] = np.float32(out[k]) * reciprocal
        else:
            for k in range(a, b):
                out[k] = intensity[k]


def entropy_weights(intensity: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """ms_entropy's ``apply_weight_to_intensity`` on every spectrum of a cleaned CSR set."""
    intensity = read_only(np.ascontiguousarray(intensity, dtype=np.float64))
    offsets = read_only(np.ascontiguousarray(offsets, dtype=np.int64))
    out = np.empty(intensity.shape[0], dtype=np.float64)
    for_each_span(
        _weights_span, offsets.shape[0] - 1, intensity, offsets, out, max_span=SPECTRA_PER_SPAN
    )
    return out


@njit(cache=True, inline="always")
def _xlog2x(x):  # pragma: no cover - numba
    return x * np.log2(x)


@njit(cache=True, inline="always")
def pair_entropy(x, y):  # pragma: no cover - numba
    """Entropy term of one matched pair of intensities: ``(f(x + y) - f(x) - f(y)) / 2``."""
    return (_xlog2x(x + y) - _xlog2x(x) - _xlog2x(y)) / 2.0


@nopython_helper
def entropy_core(mzA, pA, a0, a1, mzB, pB, b0, b1, tol):  # pragma: no cover - numba
    """Entropy similarity and matched peaks of ``A[a0:a1]`` and ``B[b0:b1]``.

    ``pA``, ``pB`` are cleaned (and, for the weighted score, entropy-weighted)
    intensities summing to 1; ``tol`` is :func:`float32_tolerance` of the
    fragment tolerance.  Returns ``(similarity, matches)``.
    """
    a = a0
    b = b0
    total = 0.0
    nm = 0
    while a < a1 and b < b1:
        d = mzA[a] - mzB[b]
        if d < -tol:
            a += 1
        elif d > tol:
            b += 1
        else:
            total += pair_entropy(pA[a], pB[b])
            nm += 1
            a += 1
            b += 1
    return min(max(total, 0.0), 1.0), nm


def entropy_similarity_pair(
    mz1: np.ndarray,
    intensity1: np.ndarray,
    mz2: np.ndarray,
    intensity2: np.ndarray,
    *,
    tolerance: float = 0.02,
    weighted: bool = True,
    clean: bool = True,
) -> tuple[float, int]:
    """Spectral entropy similarity of two spectra and the number of matched peaks.

    Equal to ms_entropy's ``calculate_entropy_similarity`` (``weighted=True``) or
    ``calculate_unweighted_entropy_similarity`` (``weighted=False``) with
    ``ms2_tolerance_in_da=tolerance`` on the same peaks.

    Parameters
    ----------
    mz1, intensity1, mz2, intensity2 : array_like
        Peaks of the two spectra.
    tolerance : float
        Fragment m/z tolerance in Da.
    weighted : bool
        Entropy-weight the intensities of low-entropy spectra (Li et al. 2021).
    clean : bool
        Clean both spectra as ms_entropy does by default (peaks merged within
        ``2 * tolerance``, 1 % noise removed, intensities summing to 1).  With
        ``False`` the peaks are used as given: they must be sorted by m/z and
        normalised, as ms_entropy requires.

    Returns
    -------
    score : float
    matches : int
    """
    if not np.isfinite(tolerance) or tolerance <= 0:
        raise ValueError(f"tolerance must be finite and > 0 Da, got {tolerance!r}")
    sides = []
    for mz, intensity, name in ((mz1, intensity1, "spectrum 1"), (mz2, intensity2, "spectrum 2")):
        mz = np.asarray(mz, dtype=np.float32).astype(np.float64).ravel()
        intensity = np.asarray(intensity, dtype=np.float32).astype(np.float64).ravel()
        if mz.shape != intensity.shape:
            raise ValueError(f"{name}: m/z and intensity differ in length")
        offsets = np.array([0, mz.size], dtype=np.int64)
        if clean:
            mz, intensity, offsets = clean_spectra(
                mz, intensity, offsets, min_difference=2 * tolerance
            )
        if weighted:
            intensity = entropy_weights(intensity, offsets)
        sides.append((mz, intensity, int(offsets[-1])))
    (ma, pa, na), (mb, pb, nb) = sides
    if na == 0 or nb == 0:
        return 0.0, 0
    score, matches = entropy_core(ma, pa, 0, na, mb, pb, 0, nb, float32_tolerance(tolerance))
    return float(score), int(matches)
