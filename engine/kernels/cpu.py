"""CPU kernels: exact greedy cosine for pairs, dense blocks and library search.

All scores equal matchms 0.33 ``CosineGreedy`` / ``ModifiedCosineGreedy``
(within float rounding of the final sum, identical match counts).  In
:func:`search_block` and :func:`dense_block` the *library* spectrum plays
matchms' ``reference`` (first argument of ``pair``) and the query spectrum the
``query``, as in ``matchms.calculate_scores(references=library, queries=queries)``;
this fixes the enumeration order that decides exact ties and the sign of the
modified-cosine shift (``precursor_library - precursor_query``, added to the
query's m/z).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .cancel import cancelled, new_flag
from .greedy import (
    SCRATCH_SIZE,
    cosine_core,
    modified_core,
    order_desc,
    score_pair,
    weights_and_norms,
)

__all__ = [
    "cosine_greedy_pair",
    "dense_block",
    "modified_cosine_pair",
    "prepare_weights",
    "search_block",
]


# --------------------------------------------------------------------------- #
# input validation
# --------------------------------------------------------------------------- #
def _peaks(mz: np.ndarray, intensity: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    mz = np.ascontiguousarray(mz, dtype=np.float64)
    intensity = np.ascontiguousarray(intensity, dtype=np.float64)
    if mz.ndim != 1 or intensity.ndim != 1:
        raise ValueError(f"{name}: m/z and intensity must be one-dimensional")
    if mz.shape != intensity.shape:
        raise ValueError(
            f"{name}: m/z and intensity differ in length ({mz.shape[0]} != {intensity.shape[0]})"
        )
    if mz.size > 1 and not np.all(mz[1:] >= mz[:-1]):
        raise ValueError(f"{name}: m/z must be sorted ascending")
    if not (np.all(np.isfinite(mz)) and np.all(np.isfinite(intensity))):
        raise ValueError(f"{name}: m/z and intensity must be finite")
    return mz, intensity


def _check_params(tolerance: float, mz_power: float, intensity_power: float) -> None:
    if not np.isfinite(tolerance) or tolerance < 0:
        raise ValueError(f"tolerance must be finite and >= 0, got {tolerance!r}")
    if not (np.isfinite(mz_power) and np.isfinite(intensity_power)):
        raise ValueError("mz_power and intensity_power must be finite")


# --------------------------------------------------------------------------- #
# public helpers
# --------------------------------------------------------------------------- #
def prepare_weights(
    mz: np.ndarray,
    intensity: np.ndarray,
    offsets: np.ndarray,
    mz_power: float = 0.0,
    intensity_power: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Peak weights and spectrum norms of a CSR spectrum set, as matchms computes them.

    Parameters
    ----------
    mz, intensity : ndarray of float64, shape (n_peaks,)
        Peak m/z (sorted within each spectrum) and intensity.
    offsets : ndarray of int64, shape (n_spectra + 1,)
        Spectrum ``s`` owns peaks ``offsets[s]:offsets[s + 1]``.
    mz_power, intensity_power : float
        Exponents of the weight ``(mz ** mz_power) * (intensity ** intensity_power)``.

    Returns
    -------
    w : ndarray of float64, shape (n_peaks,)
        Peak weights, bitwise equal to matchms' ``collect_peak_pairs`` factors.
    norm : ndarray of float64, shape (n_spectra,)
        ``sqrt(sum(w ** 2))`` per spectrum (0 for a spectrum without peaks).
    """
    mz = np.ascontiguousarray(mz, dtype=np.float64)
    intensity = np.ascontiguousarray(intensity, dtype=np.float64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if mz.shape != intensity.shape or mz.ndim != 1:
        raise ValueError("mz and intensity must be 1-D arrays of equal length")
    if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0 or offsets[-1] != mz.size:
        raise ValueError("offsets must be 1-D, start at 0 and end at len(mz)")
    _check_params(0.0, mz_power, intensity_power)
    return weights_and_norms(mz, intensity, offsets, float(mz_power), float(intensity_power))


@njit(cache=True)
def _pair_kernel(mzA, wA, nA, pA, mzB, wB, nB, pB, tol, modified):  # pragma: no cover
    na = mzA.shape[0]
    nb = mzB.shape[0]
    m = max(SCRATCH_SIZE, na, nb)
    sp = np.empty(SCRATCH_SIZE, dtype=np.float64)
    si = np.empty(SCRATCH_SIZE, dtype=np.int64)
    sj = np.empty(SCRATCH_SIZE, dtype=np.int64)
    ua = np.empty(m, dtype=np.bool_)
    ub = np.empty(m, dtype=np.bool_)
    if modified:
        raw, nm = modified_core(mzA, wA, 0, na, pA, mzB, wB, 0, nb, pB, tol, sp, si, sj, ua, ub)
    else:
        raw, nm = cosine_core(mzA, wA, 0, na, mzB, wB, 0, nb, tol, sp, si, sj, ua, ub)
    if nm == 0:
        return 0.0, 0
    return raw / (nA * nB), nm


def _pair(mz1, int1, p1, mz2, int2, p2, tolerance, mz_power, intensity_power, modified):
    _check_params(tolerance, mz_power, intensity_power)
    mz1, int1 = _peaks(mz1, int1, "spectrum 1")
    mz2, int2 = _peaks(mz2, int2, "spectrum 2")
    w1, n1 = weights_and_norms(
        mz1, int1, np.array([0, mz1.size], dtype=np.int64), float(mz_power), float(intensity_power)
    )
    w2, n2 = weights_and_norms(
        mz2, int2, np.array([0, mz2.size], dtype=np.int64), float(mz_power), float(intensity_power)
    )
    s, m = _pair_kernel(
        mz1, w1, n1[0], float(p1), mz2, w2, n2[0], float(p2), float(tolerance), modified
    )
    return float(s), int(m)


def cosine_greedy_pair(
    mz1: np.ndarray,
    int1: np.ndarray,
    mz2: np.ndarray,
    int2: np.ndarray,
    *,
    tolerance: float = 0.1,
    mz_power: float = 0.0,
    intensity_power: float = 1.0,
) -> tuple[float, int]:
    """Greedy cosine of two spectra, equal to matchms ``CosineGreedy().pair(s1, s2)``.

    Parameters
    ----------
    mz1, int1 : array_like of float
        Peaks of the first spectrum (matchms ``reference``), m/z sorted ascending.
    mz2, int2 : array_like of float
        Peaks of the second spectrum (matchms ``query``), m/z sorted ascending.
    tolerance : float, optional
        Peaks match when ``|mz1 - mz2| <= tolerance`` (Da), evaluated as matchms does.
    mz_power, intensity_power : float, optional
        Weight exponents: ``w = mz ** mz_power * intensity ** intensity_power``.

    Returns
    -------
    score : float
        Sum of the greedily taken products over ``||w1|| * ||w2||``.
    matches : int
        Number of matched peak pairs.

    Raises
    ------
    ValueError
        If the arrays are not 1-D, differ in length, are unsorted or not finite.
    """
    return _pair(mz1, int1, np.nan, mz2, int2, np.nan, tolerance, mz_power, intensity_power, False)


def modified_cosine_pair(
    mz1: np.ndarray,
    int1: np.ndarray,
    precursor_mz1: float,
    mz2: np.ndarray,
    int2: np.ndarray,
    precursor_mz2: float,
    *,
    tolerance: float = 0.1,
    mz_power: float = 0.0,
    intensity_power: float = 1.0,
) -> tuple[float, int]:
    """Greedy modified cosine, equal to matchms ``ModifiedCosineGreedy().pair(s1, s2)``.

    Candidates are the zero-shift matches followed by the matches after adding
    ``shift = precursor_mz1 - precursor_mz2`` to the m/z of spectrum 2; when
    ``|shift| <= tolerance`` it is the plain greedy cosine.

    Parameters
    ----------
    mz1, int1 : array_like of float
        Peaks of the first spectrum (matchms ``reference``), m/z sorted ascending.
    precursor_mz1 : float
        Precursor m/z of the first spectrum.
    mz2, int2 : array_like of float
        Peaks of the second spectrum (matchms ``query``), m/z sorted ascending.
    precursor_mz2 : float
        Precursor m/z of the second spectrum.
    tolerance : float, optional
        Peak m/z tolerance in Da.
    mz_power, intensity_power : float, optional
        Weight exponents.

    Returns
    -------
    score : float
        Modified cosine score.
    matches : int
        Number of matched peak pairs.

    Raises
    ------
    ValueError
        On malformed peaks, or a precursor m/z that is not a finite positive
        number (matchms refuses those too).
    """
    for name, p in (("precursor_mz1", precursor_mz1), ("precursor_mz2", precursor_mz2)):
        if not (np.isfinite(p) and p > 0):
            raise ValueError(f"{name} must be a finite positive number, got {p!r}")
    return _pair(
        mz1,
        int1,
        precursor_mz1,
        mz2,
        int2,
        precursor_mz2,
        tolerance,
        mz_power,
        intensity_power,
        True,
    )


# --------------------------------------------------------------------------- #
# block kernels
# --------------------------------------------------------------------------- #
@njit(cache=True)
def _max_len(off, start, stop):  # pragma: no cover
    m = 0
    for s in range(start, stop):
        d = off[s + 1] - off[s]
        if d > m:
            m = d
    return m


@njit(cache=True)
def _prec_ok(qp, lp, ptol, ppm):  # pragma: no cover
    if ptol <= 0.0:
        return True
    t = ptol * 1e-6 * qp if ppm else ptol
    # NaN on either side makes the comparison False: skipped
    return abs(qp - lp) <= t


@njit(cache=True, parallel=True, nogil=True)  # nogil: the GUI thread runs meanwhile
def _dense_kernel(
    q_mz,
    q_w,
    q_off,
    q_norm,
    q_prec,
    l_mz,
    l_w,
    l_off,
    l_norm,
    l_prec,
    q_start,
    q_stop,
    l_start,
    l_stop,
    tol,
    modified,
):  # pragma: no cover
    nq = q_stop - q_start
    nl = l_stop - l_start
    scores = np.zeros((nq, nl), dtype=np.float64)
    matches = np.zeros((nq, nl), dtype=np.int32)
    mlen = max(SCRATCH_SIZE, _max_len(l_off, l_start, l_stop), _max_len(q_off, q_start, q_stop))
    for r in prange(nq):
        q = q_start + r
        sp = np.empty(SCRATCH_SIZE, dtype=np.float64)
        si = np.empty(SCRATCH_SIZE, dtype=np.int64)
        sj = np.empty(SCRATCH_SIZE, dtype=np.int64)
        ua = np.empty(mlen, dtype=np.bool_)
        ub = np.empty(mlen, dtype=np.bool_)
        for c in range(nl):
            s, m = score_pair(
                q,
                l_start + c,
                q_mz,
                q_w,
                q_off,
                q_norm,
                q_prec,
                l_mz,
                l_w,
                l_off,
                l_norm,
                l_prec,
                tol,
                modified,
                sp,
                si,
                sj,
                ua,
                ub,
            )
            scores[r, c] = s
            matches[r, c] = m
    return scores, matches


@njit(cache=True, parallel=True, nogil=True)  # nogil: the GUI thread runs meanwhile
def _topn_kernel(
    q_mz,
    q_w,
    q_off,
    q_norm,
    q_prec,
    l_mz,
    l_w,
    l_off,
    l_norm,
    l_prec,
    q_start,
    q_stop,
    l_start,
    l_stop,
    tol,
    modified,
    ptol,
    ppm,
    min_matches,
    threshold,
    top_n,
    stop,
):  # pragma: no cover
    nq = q_stop - q_start
    out_l = np.empty((nq, top_n), dtype=np.int64)
    out_s = np.empty((nq, top_n), dtype=np.float64)
    out_m = np.empty((nq, top_n), dtype=np.int32)
    counts = np.zeros(nq, dtype=np.int64)
    mlen = max(SCRATCH_SIZE, _max_len(l_off, l_start, l_stop), _max_len(q_off, q_start, q_stop))
    for r in prange(nq):
        if cancelled(stop):
            continue
        q = q_start + r
        sp = np.empty(SCRATCH_SIZE, dtype=np.float64)
        si = np.empty(SCRATCH_SIZE, dtype=np.int64)
        sj = np.empty(SCRATCH_SIZE, dtype=np.int64)
        ua = np.empty(mlen, dtype=np.bool_)
        ub = np.empty(mlen, dtype=np.bool_)
        hl = out_l[r]
        hs = out_s[r]
        hm = out_m[r]
        n = 0
        qp = q_prec[q]
        for l in range(l_start, l_stop):
            if cancelled(stop):
                break
            if not _prec_ok(qp, l_prec[l], ptol, ppm):
                continue
            s, m = score_pair(
                q,
                l,
                q_mz,
                q_w,
                q_off,
                q_norm,
                q_prec,
                l_mz,
                l_w,
                l_off,
                l_norm,
                l_prec,
                tol,
                modified,
                sp,
                si,
                sj,
                ua,
                ub,
            )
            if m < min_matches or not (s >= threshold):
                continue
            if n == top_n:
                # library indices grow: an equal score never displaces a kept hit
                if not (s > hs[n - 1]):
                    continue
                pos = n - 1
            else:
                pos = n
                n += 1
            while pos > 0 and hs[pos - 1] < s:
                hs[pos] = hs[pos - 1]
                hl[pos] = hl[pos - 1]
                hm[pos] = hm[pos - 1]
                pos -= 1
            hs[pos] = s
            hl[pos] = l
            hm[pos] = m
        counts[r] = n
    return out_l, out_s, out_m, counts


@njit(cache=True, parallel=True, nogil=True)  # nogil: the GUI thread runs meanwhile
def _all_kernel(
    q_mz,
    q_w,
    q_off,
    q_norm,
    q_prec,
    l_mz,
    l_w,
    l_off,
    l_norm,
    l_prec,
    q_start,
    q_stop,
    l_start,
    l_stop,
    tol,
    modified,
    ptol,
    ppm,
    min_matches,
    threshold,
    stop,
):  # pragma: no cover
    nq = q_stop - q_start
    nl = l_stop - l_start
    row_l = np.empty((nq, nl), dtype=np.int64)
    row_s = np.empty((nq, nl), dtype=np.float64)
    row_m = np.empty((nq, nl), dtype=np.int32)
    counts = np.zeros(nq, dtype=np.int64)
    mlen = max(SCRATCH_SIZE, _max_len(l_off, l_start, l_stop), _max_len(q_off, q_start, q_stop))
    for r in prange(nq):
        if cancelled(stop):
            continue
        q = q_start + r
        sp = np.empty(SCRATCH_SIZE, dtype=np.float64)
        si = np.empty(SCRATCH_SIZE, dtype=np.int64)
        sj = np.empty(SCRATCH_SIZE, dtype=np.int64)
        ua = np.empty(mlen, dtype=np.bool_)
        ub = np.empty(mlen, dtype=np.bool_)
        qp = q_prec[q]
        n = 0
        for l in range(l_start, l_stop):
            if cancelled(stop):
                break
            if not _prec_ok(qp, l_prec[l], ptol, ppm):
                continue
            s, m = score_pair(
                q,
                l,
                q_mz,
                q_w,
                q_off,
                q_norm,
                q_prec,
                l_mz,
                l_w,
                l_off,
                l_norm,
                l_prec,
                tol,
                modified,
                sp,
                si,
                sj,
                ua,
                ub,
            )
            if m < min_matches or not (s >= threshold):
                continue
            row_l[r, n] = l
            row_s[r, n] = s
            row_m[r, n] = m
            n += 1
        if n > 1:
            # score descending; the stable sort keeps library indices ascending on ties
            order = order_desc(row_s[r], n, False)
            tl = row_l[r, :n][order]
            ts = row_s[r, :n][order]
            tm = row_m[r, :n][order]
            row_l[r, :n] = tl
            row_s[r, :n] = ts
            row_m[r, :n] = tm
        counts[r] = n
    return row_l, row_s, row_m, counts


#: Widening (Da) of the inverted-index window; keeps the bound a true upper bound
#: whatever the rounding of ``mz +- tolerance``.
_INDEX_EPS = 1e-6


@njit(cache=True)
def _lower_bound(x, v):  # pragma: no cover
    """First index with ``not x[k] < v``."""
    lo = 0
    hi = x.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if x[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def _upper_bound(x, v):  # pragma: no cover
    """First index with ``x[k] > v``."""
    lo = 0
    hi = x.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if x[mid] > v:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def _better(s1, l1, s2, l2):  # pragma: no cover
    return s1 > s2 or (s1 == s2 and l1 < l2)


@njit(cache=True)
def _heap_insert(hs, hl, hm, n, cap, s, l, m):  # pragma: no cover
    """Insert (s, l, m) into the sorted top list of length n <= cap; returns new n."""
    if n == cap:
        if not _better(s, l, hs[n - 1], hl[n - 1]):
            return n
        pos = n - 1
    else:
        pos = n
        n += 1
    while pos > 0 and _better(s, l, hs[pos - 1], hl[pos - 1]):
        hs[pos] = hs[pos - 1]
        hl[pos] = hl[pos - 1]
        hm[pos] = hm[pos - 1]
        pos -= 1
    hs[pos] = s
    hl[pos] = l
    hm[pos] = m
    return n


@njit(cache=True)
def _indexed_row(
    q,
    qn,
    q_mz,
    q_w,
    q_off,
    q_norm,
    q_prec,
    l_mz,
    l_w,
    l_off,
    l_norm,
    l_prec,
    l_start,
    nl,
    tol,
    ptol,
    ppm,
    min_matches,
    threshold,
    top_n,
    s_mz,
    s_sid,
    s_w,
    mlen,
    hl,
    hs,
    hm,
    stop,
):  # pragma: no cover
    """One query row of :func:`_indexed_kernel`; returns the number of hits written.

    Stops early (with the hits scored so far) once ``stop[0]`` is set.
    """
    sp = np.empty(SCRATCH_SIZE, dtype=np.float64)
    si = np.empty(SCRATCH_SIZE, dtype=np.int64)
    sj = np.empty(SCRATCH_SIZE, dtype=np.int64)
    ua = np.empty(mlen, dtype=np.bool_)
    ub = np.empty(mlen, dtype=np.bool_)
    bound = np.zeros(nl, dtype=np.float64)
    cnt = np.zeros(nl, dtype=np.int32)
    for j in range(q_off[q], q_off[q + 1]):
        if cancelled(stop):
            return 0
        mq = q_mz[j]
        wq = q_w[j]
        lo = _lower_bound(s_mz, mq - tol - _INDEX_EPS)
        hi = _upper_bound(s_mz, mq + tol + _INDEX_EPS)
        for k in range(lo, hi):
            c = s_sid[k]
            bound[c] += s_w[k] * wq
            cnt[c] += 1
    qp = q_prec[q]
    n = 0
    if top_n == 0:
        for c in range(nl):
            if cancelled(stop):
                break
            if cnt[c] < min_matches:
                continue
            l = l_start + c
            den = l_norm[l] * qn
            if den == 0.0 or not _prec_ok(qp, l_prec[l], ptol, ppm):
                continue
            if (bound[c] / den) * (1.0 + 1e-9) + 1e-12 < threshold:
                continue
            s, m = score_pair(
                q,
                l,
                q_mz,
                q_w,
                q_off,
                q_norm,
                q_prec,
                l_mz,
                l_w,
                l_off,
                l_norm,
                l_prec,
                tol,
                False,
                sp,
                si,
                sj,
                ua,
                ub,
            )
            if m >= min_matches and s >= threshold:
                hl[n] = l
                hs[n] = s
                hm[n] = m
                n += 1
        if n > 1:
            order = order_desc(hs, n, False)
            tl = hl[:n][order]
            ts = hs[:n][order]
            tm = hm[:n][order]
            hl[:n] = tl
            hs[:n] = ts
            hm[:n] = tm
    else:
        # pass 1: the top_n largest bounds seed the top list
        cb = np.empty(top_n, dtype=np.float64)
        cc = np.empty(top_n, dtype=np.int64)
        cm = np.empty(top_n, dtype=np.int32)
        nc = 0
        for c in range(nl):
            if cnt[c] < min_matches:
                bound[c] = -1.0
                continue
            l = l_start + c
            den = l_norm[l] * qn
            if den == 0.0 or not _prec_ok(qp, l_prec[l], ptol, ppm):
                bound[c] = -1.0
                continue
            u = (bound[c] / den) * (1.0 + 1e-9) + 1e-12
            if u < threshold:
                bound[c] = -1.0
                continue
            bound[c] = u
            nc = _heap_insert(cb, cc, cm, nc, top_n, u, c, 0)
        for t in range(nc):
            if cancelled(stop):
                return n
            c = cc[t]
            l = l_start + c
            bound[c] = -1.0
            s, m = score_pair(
                q,
                l,
                q_mz,
                q_w,
                q_off,
                q_norm,
                q_prec,
                l_mz,
                l_w,
                l_off,
                l_norm,
                l_prec,
                tol,
                False,
                sp,
                si,
                sj,
                ua,
                ub,
            )
            if m >= min_matches and s >= threshold:
                n = _heap_insert(hs, hl, hm, n, top_n, s, l, m)
        # pass 2: everything whose bound can still reach the n-th best
        floor = threshold
        if n == top_n and hs[n - 1] > floor:
            floor = hs[n - 1]
        for c in range(nl):
            if cancelled(stop):
                return n
            u = bound[c]
            if u < 0.0 or u < floor:
                continue
            l = l_start + c
            s, m = score_pair(
                q,
                l,
                q_mz,
                q_w,
                q_off,
                q_norm,
                q_prec,
                l_mz,
                l_w,
                l_off,
                l_norm,
                l_prec,
                tol,
                False,
                sp,
                si,
                sj,
                ua,
                ub,
            )
            if m >= min_matches and s >= threshold:
                n = _heap_insert(hs, hl, hm, n, top_n, s, l, m)
                if n == top_n and hs[n - 1] > floor:
                    floor = hs[n - 1]
    return n


@njit(cache=True, parallel=True, nogil=True)  # nogil: the GUI thread runs meanwhile
def _indexed_kernel(
    q_mz,
    q_w,
    q_off,
    q_norm,
    q_prec,
    l_mz,
    l_w,
    l_off,
    l_norm,
    l_prec,
    q_start,
    q_stop,
    l_start,
    l_stop,
    tol,
    ptol,
    ppm,
    min_matches,
    threshold,
    top_n,
    s_mz,
    s_sid,
    s_w,
    stop,
):  # pragma: no cover
    """Plain-cosine search with an exact upper-bound prune.

    For each query, an inverted index over the block's library peaks (sorted by
    m/z: ``s_mz``, ``s_sid`` local spectrum id, ``s_w`` weight) gives every library
    spectrum the number of (slightly widened) candidate pairs and the sum of all
    their products.  That sum bounds the greedy numerator from above and the count
    bounds the matches, so pairs that cannot reach ``threshold``, ``min_matches``
    or (with ``top_n``) the current n-th best are never scored; all others are
    scored exactly.
    """
    nq = q_stop - q_start
    nl = l_stop - l_start
    width = top_n if top_n > 0 else nl
    row_l = np.empty((nq, width), dtype=np.int64)
    row_s = np.empty((nq, width), dtype=np.float64)
    row_m = np.empty((nq, width), dtype=np.int32)
    counts = np.zeros(nq, dtype=np.int64)
    mlen = max(SCRATCH_SIZE, _max_len(l_off, l_start, l_stop), _max_len(q_off, q_start, q_stop))
    for r in prange(nq):
        if cancelled(stop):
            continue
        q = q_start + r
        qn = q_norm[q]
        if qn == 0.0:
            continue
        counts[r] = _indexed_row(
            q,
            qn,
            q_mz,
            q_w,
            q_off,
            q_norm,
            q_prec,
            l_mz,
            l_w,
            l_off,
            l_norm,
            l_prec,
            l_start,
            nl,
            tol,
            ptol,
            ppm,
            min_matches,
            threshold,
            top_n,
            s_mz,
            s_sid,
            s_w,
            mlen,
            row_l[r],
            row_s[r],
            row_m[r],
            stop,
        )
    return row_l, row_s, row_m, counts


def library_peak_index(l_mz, l_w, l_off, l_start, l_stop):
    """Peaks of library spectra ``[l_start, l_stop)`` sorted by m/z, for the pruned search.

    Returns
    -------
    tuple of ndarray
        m/z (float64), spectrum position within the block (int32) and weight
        (float64) of every peak, in m/z order.  Pass it to :func:`search_block`
        as ``library_index`` to reuse it across query blocks.
    """
    p0, p1 = l_off[l_start], l_off[l_stop]
    order = np.argsort(l_mz[p0:p1], kind="stable")
    sid = np.repeat(
        np.arange(l_stop - l_start, dtype=np.int32), np.diff(l_off[l_start : l_stop + 1])
    )
    return (
        np.ascontiguousarray(l_mz[p0:p1][order]),
        np.ascontiguousarray(sid[order]),
        np.ascontiguousarray(l_w[p0:p1][order]),
    )


@njit(cache=True)
def _compact(q_start, row_l, row_s, row_m, counts):  # pragma: no cover
    total = 0
    for r in range(counts.shape[0]):
        total += counts[r]
    qi = np.empty(total, dtype=np.int64)
    li = np.empty(total, dtype=np.int64)
    sc = np.empty(total, dtype=np.float64)
    mt = np.empty(total, dtype=np.int32)
    k = 0
    for r in range(counts.shape[0]):
        for c in range(counts[r]):
            qi[k] = q_start + r
            li[k] = row_l[r, c]
            sc[k] = row_s[r, c]
            mt[k] = row_m[r, c]
            k += 1
    return qi, li, sc, mt


def _csr_args(mz, w, off, norm, prec, start, stop, name):
    mz = np.ascontiguousarray(mz, dtype=np.float64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    off = np.ascontiguousarray(off, dtype=np.int64)
    norm = np.ascontiguousarray(norm, dtype=np.float64)
    prec = np.ascontiguousarray(prec, dtype=np.float64)
    n = off.shape[0] - 1
    if mz.shape != w.shape or mz.ndim != 1:
        raise ValueError(f"{name}: mz and w must be 1-D arrays of equal length")
    if off.ndim != 1 or n < 0 or off[0] != 0 or off[-1] != mz.shape[0]:
        raise ValueError(f"{name}: offsets must start at 0 and end at len(mz)")
    if norm.shape != (n,) or prec.shape != (n,):
        raise ValueError(f"{name}: norm and prec must have one value per spectrum")
    start, stop = int(start), int(stop)
    if not 0 <= start <= stop <= n:
        raise ValueError(f"{name}: range [{start}, {stop}) outside [0, {n}]")
    return mz, w, off, norm, prec, start, stop


#: Query rows per call of the all-hits kernel (bounds its row buffers).
_ALL_CHUNK = 16


def search_block(
    q_mz: np.ndarray,
    q_w: np.ndarray,
    q_off: np.ndarray,
    q_norm: np.ndarray,
    q_prec: np.ndarray,
    l_mz: np.ndarray,
    l_w: np.ndarray,
    l_off: np.ndarray,
    l_norm: np.ndarray,
    l_prec: np.ndarray,
    q_start: int,
    q_stop: int,
    l_start: int,
    l_stop: int,
    tolerance: float = 0.1,
    modified: bool = False,
    precursor_tolerance: float = 0.0,
    precursor_ppm: bool = False,
    min_matches: int = 0,
    threshold: float = 0.0,
    top_n: int = 0,
    *,
    prune: bool = True,
    library_index: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    stop: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Exact greedy-cosine hits of a block of queries against a block of the library.

    Parallel over queries; memory per query is one top-n buffer (or, when
    ``top_n == 0``, one row of the block, for at most 16 queries at a time).

    Parameters
    ----------
    q_mz, q_w, q_off, q_norm, q_prec : ndarray
        Whole query set in CSR form: m/z (float64, sorted per spectrum), weights
        from :func:`prepare_weights`, offsets (int64, n + 1), norms and precursor
        m/z (float64, NaN when unknown).
    l_mz, l_w, l_off, l_norm, l_prec : ndarray
        Whole library in the same form.
    q_start, q_stop : int
        Queries ``[q_start, q_stop)`` are scored.
    l_start, l_stop : int
        Against library spectra ``[l_start, l_stop)``.
    tolerance : float
        Fragment m/z tolerance (Da).
    modified : bool
        Modified cosine (matchms ``ModifiedCosineGreedy``, library = reference,
        shift = library precursor - query precursor).  A pair with a NaN
        precursor gets only the zero-shift candidates (plain cosine).
    precursor_tolerance : float
        When > 0, pairs with ``|q_prec - l_prec| > tol`` are skipped, where tol is
        ``precursor_tolerance`` Da, or ``precursor_tolerance * 1e-6 * q_prec`` if
        ``precursor_ppm``.  A NaN precursor is skipped when the filter is on.
    precursor_ppm : bool
        Interpret ``precursor_tolerance`` in ppm of the query precursor.
    min_matches : int
        Hits need ``matches >= max(1, min_matches)``.
    threshold : float
        Hits need ``score >= threshold``.
    top_n : int
        When > 0, keep only each query's ``top_n`` best hits (score descending,
        then library index ascending).
    prune : bool, keyword-only
        Plain cosine only: skip pairs whose exact upper bound (sum of all
        candidate products, found with an inverted index over the library block's
        peaks) cannot pass ``threshold``, ``min_matches`` or the current
        ``top_n``-th best.  The hits are identical either way; ``False`` scores
        every pair (brute force).
    library_index : tuple of ndarray, optional, keyword-only
        :func:`library_peak_index` of this library block, to reuse it across
        query blocks (building it is a sort of the block's peaks); made here when
        omitted.
    stop : ndarray of uint8, shape (1,), optional, keyword-only
        Cancellation flag another thread may set while the kernel runs: once
        ``stop[0]`` is non-zero every query row returns the hits it has scored so
        far (within about one pair's time), so the block's hits are incomplete.

    Returns
    -------
    query_index : ndarray of int64
    library_index : ndarray of int64
    score : ndarray of float64
    matches : ndarray of int32
        One entry per hit, ordered by query index, then score descending, then
        library index ascending.  Indices are absolute (into the whole sets).
    """
    q_mz, q_w, q_off, q_norm, q_prec, q_start, q_stop = _csr_args(
        q_mz, q_w, q_off, q_norm, q_prec, q_start, q_stop, "query"
    )
    l_mz, l_w, l_off, l_norm, l_prec, l_start, l_stop = _csr_args(
        l_mz, l_w, l_off, l_norm, l_prec, l_start, l_stop, "library"
    )
    _check_params(tolerance, 0.0, 1.0)
    ptol = float(precursor_tolerance)
    if not np.isfinite(ptol):
        raise ValueError("precursor_tolerance must be finite")
    mm = max(1, int(min_matches))
    thr = float(threshold)
    top_n = int(top_n)
    if top_n < 0:
        raise ValueError("top_n must be >= 0")
    if stop is None:
        stop = new_flag()
    elif stop.dtype != np.uint8 or stop.shape != (1,):
        raise ValueError("stop must be a uint8 array of shape (1,)")
    args = (q_mz, q_w, q_off, q_norm, q_prec, l_mz, l_w, l_off, l_norm, l_prec)
    empty = (
        np.empty(0, np.int64),
        np.empty(0, np.int64),
        np.empty(0, np.float64),
        np.empty(0, np.int32),
    )
    if q_stop <= q_start or l_stop <= l_start:
        return empty
    if prune and not modified:
        index = library_index or library_peak_index(l_mz, l_w, l_off, l_start, l_stop)
        chunk = q_stop - q_start if top_n > 0 else _ALL_CHUNK
        parts = []
        for c0 in range(q_start, q_stop, chunk):
            if cancelled(stop) and parts:
                break
            c1 = min(q_stop, c0 + chunk)
            rl, rs, rm, cnt = _indexed_kernel(
                *args,
                c0,
                c1,
                l_start,
                l_stop,
                float(tolerance),
                ptol,
                bool(precursor_ppm),
                mm,
                thr,
                top_n,
                *index,
                stop,
            )
            parts.append(_compact(c0, rl, rs, rm, cnt))
        return tuple(np.concatenate([p[k] for p in parts]) for k in range(4))  # type: ignore[return-value]
    if top_n > 0:
        rl, rs, rm, cnt = _topn_kernel(
            *args,
            q_start,
            q_stop,
            l_start,
            l_stop,
            float(tolerance),
            bool(modified),
            ptol,
            bool(precursor_ppm),
            mm,
            thr,
            top_n,
            stop,
        )
        return _compact(q_start, rl, rs, rm, cnt)
    parts = []
    for c0 in range(q_start, q_stop, _ALL_CHUNK):
        if cancelled(stop) and parts:
            break
        c1 = min(q_stop, c0 + _ALL_CHUNK)
        rl, rs, rm, cnt = _all_kernel(
            *args,
            c0,
            c1,
            l_start,
            l_stop,
            float(tolerance),
            bool(modified),
            ptol,
            bool(precursor_ppm),
            mm,
            thr,
            stop,
        )
        parts.append(_compact(c0, rl, rs, rm, cnt))
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(4))  # type: ignore[return-value]


def dense_block(
    q_mz: np.ndarray,
    q_w: np.ndarray,
    q_off: np.ndarray,
    q_norm: np.ndarray,
    q_prec: np.ndarray,
    l_mz: np.ndarray,
    l_w: np.ndarray,
    l_off: np.ndarray,
    l_norm: np.ndarray,
    l_prec: np.ndarray,
    q_start: int,
    q_stop: int,
    l_start: int,
    l_stop: int,
    tolerance: float = 0.1,
    modified: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Dense score and match matrices of a (small) query block x library block.

    Same inputs and scoring convention as :func:`search_block`, without filters.

    Returns
    -------
    scores : ndarray of float64, shape (q_stop - q_start, l_stop - l_start)
    matches : ndarray of int32, same shape
    """
    q_mz, q_w, q_off, q_norm, q_prec, q_start, q_stop = _csr_args(
        q_mz, q_w, q_off, q_norm, q_prec, q_start, q_stop, "query"
    )
    l_mz, l_w, l_off, l_norm, l_prec, l_start, l_stop = _csr_args(
        l_mz, l_w, l_off, l_norm, l_prec, l_start, l_stop, "library"
    )
    _check_params(tolerance, 0.0, 1.0)
    return _dense_kernel(
        q_mz,
        q_w,
        q_off,
        q_norm,
        q_prec,
        l_mz,
        l_w,
        l_off,
        l_norm,
        l_prec,
        q_start,
        q_stop,
        l_start,
        l_stop,
        float(tolerance),
        bool(modified),
    )
