"""Exact greedy-cosine cores on plain arrays (numba ``njit``, device-agnostic logic).

Everything here reproduces matchms 0.33 ``CosineGreedy`` / ``ModifiedCosineGreedy``
bit for bit in the *selection* of peak pairs (the score sum may differ in the last
bits because products are added in another order):

* candidates ``(i, j)`` are all pairs with ``mz_A[i] - tol <= mz_B[j] + shift <=
  mz_A[i] + tol`` in float64, exactly as ``find_matches`` evaluates them;
* a candidate's product is ``w_A[i] * w_B[j]`` with ``w = (mz ** mz_power) *
  (intensity ** intensity_power)`` (the evaluation order of ``collect_peak_pairs``);
* candidates are taken greedily by product, descending; on equal products the
  candidate enumerated later (i-major, j-minor) comes first, since matchms
  reverses a stable ascending mergesort.

Spectrum ``A`` is matchms' ``reference`` (first argument of ``pair``), ``B`` the
``query``.

The plain cosine core uses the connected-component formulation: with both
spectra sorted, the bipartite candidate graph splits into runs of consecutive
peaks with overlapping tolerance windows.  The greedy choice never crosses a
component, so each component is resolved on its own: a single candidate is just
added, small components are sorted by insertion in a fixed scratch, and large
ones (more than ``scratch.size`` candidates) are matched by proposals, without a
sort of their candidates (:func:`~engine.kernels.greedy_large.resolve_large`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit
from numba.extending import overload

from engine.kernels.entropy import entropy_core
from engine.kernels.greedy_large import count_candidates, resolve_large
from engine.kernels.jit import HELPER_JIT_OPTIONS, nopython_helper
from engine.kernels.spectrum_set import ENTROPY, MODIFIED_COSINE, SCRATCH_SIZE

__all__ = [
    "SCRATCH_SIZE",
    "cosine_core",
    "cosine_pair",
    "cosine_pair_deferring",
    "entropy_pair",
    "modified_core",
    "modified_pair",
    "modified_pair_deferring",
    "score_pair",
    "weights_and_norms",
]


class ResolveLarge(NamedTuple):
    """Large components resolved in place (:func:`~engine.kernels.greedy_large.resolve_large`)."""

    defer: bool = False


class DeferLarge(NamedTuple):
    """Large components not resolved: the core returns ``(0.0, code)`` at the first one,
    ``code`` minus the candidates of a modified-cosine pair resolved as a whole (<= -2),
    -1 for a cosine component.

    A kernel typed with it compiles none of :mod:`~engine.kernels.greedy_large`'s
    matchers (about 3 s of a first search); the pairs it defers are scored again
    by a separately compiled kernel, only when there are any
    (:mod:`~engine.kernels.deferred`).
    """

    defer: bool = True


def _large(policy, mzA, wA, i0, i1, mzB, wB, j0, j1, tol, shift, passes, candidates):
    """:func:`~engine.kernels.greedy_large.resolve_large`, or ``(0.0, code)`` for
    :class:`DeferLarge` (typed by ``policy``: only the resolving cores compile it)."""


@overload(_large, jit_options=HELPER_JIT_OPTIONS)
def _large_policy(policy, mzA, wA, i0, i1, mzB, wB, j0, j1, tol, shift, passes, candidates):
    if getattr(policy, "instance_class", None) is DeferLarge:

        def defer(policy, mzA, wA, i0, i1, mzB, wB, j0, j1, tol, shift, passes, candidates):
            if passes == 2 and candidates > 1:  # pragma: no cover - numba
                return 0.0, -candidates
            return 0.0, np.int64(-1)

        return defer

    def resolve(policy, mzA, wA, i0, i1, mzB, wB, j0, j1, tol, shift, passes, candidates):
        return resolve_large(  # pragma: no cover - numba
            mzA, wA, i0, i1, mzB, wB, j0, j1, tol, shift, passes, candidates
        )

    return resolve


@njit(cache=True)
def weights_and_norms(mz, intensity, offsets, mz_power, intensity_power):  # pragma: no cover
    """Peak weights ``(mz ** p) * (intensity ** q)`` and per-spectrum L2 norms."""
    n = mz.shape[0]
    w = np.empty(n, dtype=np.float64)
    for k in range(n):
        w[k] = (mz[k] ** mz_power) * (intensity[k] ** intensity_power)
    ns = offsets.shape[0] - 1
    norm = np.empty(ns, dtype=np.float64)
    for s in range(ns):
        acc = 0.0
        for k in range(offsets[s], offsets[s + 1]):
            acc += w[k] * w[k]
        norm[s] = np.sqrt(acc)
    return w, norm


@njit(cache=True, inline="always")
def _insert_desc(sp, si, sj, t, p, i, j):  # pragma: no cover
    """Insert candidate number ``t`` into ``sp[:t]`` (sorted descending, later first on ties)."""
    pos = t
    while pos > 0 and sp[pos - 1] <= p:
        sp[pos] = sp[pos - 1]
        si[pos] = si[pos - 1]
        sj[pos] = sj[pos - 1]
        pos -= 1
    sp[pos] = p
    si[pos] = i
    sj[pos] = j


@njit(cache=True, inline="always")
def _gallop_b(mzB, lo, b1, low):  # pragma: no cover
    """First ``j >= lo`` with ``not mzB[j] < low`` (``mzB[lo] < low`` holds)."""
    step = 1
    # exponential search: keep mzB[lo] < low
    while lo + step < b1 and mzB[lo + step] < low:
        lo += step
        step += step
    hi = min(lo + step, b1)
    lo += 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if mzB[mid] < low:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, inline="always")
def _gallop_a(mzA, i, a1, tol, b):  # pragma: no cover
    """First ``k >= i`` with ``not mzA[k] + tol < b`` (or ``a1``)."""
    if i >= a1 or not mzA[i] + tol < b:
        return i
    step = 1
    while i + step < a1 and mzA[i + step] + tol < b:
        i += step
        step += step
    hi = min(i + step, a1)
    i += 1
    while i < hi:
        mid = (i + hi) >> 1
        if mzA[mid] + tol < b:
            i = mid + 1
        else:
            hi = mid
    return i


@njit(cache=True, inline="always")
def _collect(mzA, wA, a0, a1, mzB, wB, b0, b1, tol, shift, sp, si, sj, t):  # pragma: no cover
    """Insert every candidate of ``A[a0:a1]`` x ``B[b0:b1] + shift`` after the ``t`` in the
    scratch (positions relative to ``a0``, ``b0``); the new count.  No shift is ``-0.0``:
    ``x + -0.0`` is ``x`` exactly, so the addition compiles away."""
    lo = b0
    for i in range(a0, a1):
        a = mzA[i]
        low = a - tol
        high = a + tol
        wa = wA[i]
        for j in range(lo, b1):
            b = mzB[j] + shift
            if b > high:
                break
            if b < low:
                lo = j + 1
            else:
                _insert_desc(sp, si, sj, t, wa * wB[j], i - a0, j - b0)
                t += 1
    return t


@njit(cache=True, inline="always")
def _take(sp, si, sj, ua, ub, t, na, nb, score, nm):  # pragma: no cover
    """Take the ``t`` sorted candidates greedily (``na`` x ``nb`` peaks); ``score`` and ``nm``
    grow by what is taken, in order (the sum stays that of the one loop)."""
    for r in range(na):
        ua[r] = False
    for r in range(nb):
        ub[r] = False
    left = min(na, nb)  # once one side is used up, no candidate is left
    for r in range(t):
        x_ = si[r]
        y_ = sj[r]
        if not ua[x_] and not ub[y_]:
            ua[x_] = True
            ub[y_] = True
            score += sp[r]
            nm += 1
            left -= 1
            if left == 0:
                break
    return score, nm


@nopython_helper
def cosine_core(mzA, wA, a0, a1, mzB, wB, b0, b1, tol, sp, si, sj, ua, ub):  # pragma: no cover
    """Greedy cosine numerator and match count of ``A[a0:a1]`` vs ``B[b0:b1]``.

    ``sp`` (float64), ``si``, ``sj`` (int64) are scratch arrays of length K and
    ``ua``, ``ub`` (bool) scratch of length >= K; components with more than K
    candidates are resolved by :func:`~engine.kernels.greedy_large.resolve_large`.
    Returns ``(sum of taken products, matches)``.
    """
    return _cosine_core(
        mzA, wA, a0, a1, mzB, wB, b0, b1, tol, sp, si, sj, ua, ub, ResolveLarge(False)
    )


@nopython_helper
def _cosine_core(
    mzA, wA, a0, a1, mzB, wB, b0, b1, tol, sp, si, sj, ua, ub, large
):  # pragma: no cover
    """:func:`cosine_core`; with ``large`` a :class:`DeferLarge`, ``(0.0, -1)`` as soon as a
    component has more candidates than the scratch holds."""
    kmax = sp.shape[0]
    score = 0.0
    nm = 0
    if a0 == a1 or b0 == b1:
        return score, nm
    # disjoint m/z ranges (widened far beyond rounding): no candidate at all
    if mzA[a1 - 1] + tol + 1e-6 < mzB[b0] or mzB[b1 - 1] + tol + 1e-6 < mzA[a0]:
        return score, nm
    lo = b0
    i = a0
    while i < a1:
        a = mzA[i]
        low = a - tol
        if lo < b1 and mzB[lo] < low:
            lo = _gallop_b(mzB, lo, b1, low)
        if lo == b1:
            break
        high = a + tol
        b = mzB[lo]
        if b > high:
            # no candidate for peak i; skip A peaks whose window ends below b
            i = _gallop_a(mzA, i + 1, a1, tol, b)
            continue
        hi = lo + 1
        while hi < b1 and mzB[hi] <= high:
            hi += 1
        # peak i opens a component: extend over following A peaks sharing B peaks
        ci0 = i
        cj0 = lo
        cnt = hi - lo
        k = i + 1
        lo_k = lo
        while k < a1:
            low_k = mzA[k] - tol
            while lo_k < b1 and mzB[lo_k] < low_k:
                lo_k += 1
            if lo_k >= hi:
                break
            high_k = mzA[k] + tol
            while hi < b1 and mzB[hi] <= high_k:
                hi += 1
            cnt += hi - lo_k
            k += 1
        if cnt == 1:
            score += wA[i] * wB[lo]
            nm += 1
        elif cnt == 2:
            # two candidates always share a peak: take the larger, the later on ties
            if k - ci0 == 1:
                p0 = wA[i] * wB[lo]
                p1 = wA[i] * wB[lo + 1]
            else:
                p0 = wA[i] * wB[lo]
                p1 = wA[i + 1] * wB[hi - 1]
            score += p1 if p1 >= p0 else p0
            nm += 1
        elif cnt <= kmax:
            t = _collect(mzA, wA, ci0, k, mzB, wB, cj0, hi, tol, -0.0, sp, si, sj, 0)
            score, nm = _take(sp, si, sj, ua, ub, t, k - ci0, hi - cj0, score, nm)
        else:
            s_, n_ = _large(large, mzA, wA, ci0, k, mzB, wB, cj0, hi, tol, 0.0, np.int64(1), cnt)
            if n_ < 0:
                return 0.0, n_
            score += s_
            nm += n_
        i = k
        lo = lo_k
    return score, nm


@nopython_helper
def modified_core(
    mzA, wA, a0, a1, pA, mzB, wB, b0, b1, pB, tol, sp, si, sj, ua, ub
):  # pragma: no cover
    """Greedy modified-cosine numerator and match count (matchms ``ModifiedCosineGreedy``).

    ``shift = pA - pB`` is added to the m/z of ``B``.  When ``|shift| <= tol``
    (or a precursor is NaN) this is the plain cosine.  Otherwise the zero-shift
    candidates followed by the shifted ones are ordered by product (later first on
    ties) and taken greedily.
    """
    return _modified_core(
        mzA, wA, a0, a1, pA, mzB, wB, b0, b1, pB, tol, sp, si, sj, ua, ub, ResolveLarge(False)
    )


@nopython_helper
def _modified_core(
    mzA, wA, a0, a1, pA, mzB, wB, b0, b1, pB, tol, sp, si, sj, ua, ub, large
):  # pragma: no cover
    """:func:`modified_core`, large pairs resolved or deferred by ``large`` (as
    :func:`_cosine_core`)."""
    shift = pA - pB
    if not (abs(shift) > tol):
        return _cosine_core(mzA, wA, a0, a1, mzB, wB, b0, b1, tol, sp, si, sj, ua, ub, large)
    n0 = count_candidates(mzA, a0, a1, mzB, b0, b1, tol, 0.0)
    n1 = count_candidates(mzA, a0, a1, mzB, b0, b1, tol, shift)
    cnt = n0 + n1
    if cnt == 0:
        return 0.0, 0
    na = a1 - a0
    nb = b1 - b0
    kmax = sp.shape[0]
    if cnt <= kmax and na <= ua.shape[0] and nb <= ub.shape[0]:
        t = _collect(mzA, wA, a0, a1, mzB, wB, b0, b1, tol, -0.0, sp, si, sj, 0)
        t = _collect(mzA, wA, a0, a1, mzB, wB, b0, b1, tol, shift, sp, si, sj, t)
        return _take(sp, si, sj, ua, ub, t, na, nb, 0.0, np.int64(0))
    return _large(large, mzA, wA, a0, a1, mzB, wB, b0, b1, tol, shift, np.int64(2), cnt)


@nopython_helper
def score_pair(q, l, queries, library, tolerance, kind, scratch):  # pragma: no cover
    r"""Exact score and match count of query ``q`` against library spectrum ``l``.

    ``queries`` and ``library`` are :class:`~engine.kernels.spectrum_set.SpectrumSet`\ s
    (the library spectrum is matchms' reference; for entropy the query is
    ms_entropy's ``peaks_a``); ``kind`` a score kind (0 cosine, 1 modified
    cosine, 2 entropy); ``scratch`` a :class:`~engine.kernels.spectrum_set.Scratch`.
    0, 0 when a norm is zero or nothing matches.  Compiles every kind: kernels
    that run one kind call :func:`~engine.kernels.score_kinds.kind_score`.
    """
    if kind == ENTROPY:
        return entropy_pair(q, l, queries, library, tolerance, scratch)
    if kind == MODIFIED_COSINE:
        return modified_pair(q, l, queries, library, tolerance, scratch)
    return cosine_pair(q, l, queries, library, tolerance, scratch)


@nopython_helper
def entropy_pair(q, l, queries, library, tolerance, scratch):  # pragma: no cover
    """:func:`score_pair` of the entropy similarity (``scratch`` unused)."""
    if library.norm[l] * queries.norm[q] == 0.0:
        return 0.0, 0
    raw, nm = entropy_core(
        queries.mz, queries.weight, queries.offsets[q], queries.offsets[q + 1],
        library.mz, library.weight, library.offsets[l], library.offsets[l + 1],
        tolerance,
    )  # fmt: skip
    return (raw, nm) if nm > 0 else (0.0, 0)


@nopython_helper
def cosine_pair(q, l, queries, library, tolerance, scratch):  # pragma: no cover
    """:func:`score_pair` of the greedy cosine."""
    return _greedy_pair(q, l, queries, library, tolerance, scratch, False, ResolveLarge(False))


@nopython_helper
def modified_pair(q, l, queries, library, tolerance, scratch):  # pragma: no cover
    """:func:`score_pair` of the greedy modified cosine."""
    return _greedy_pair(q, l, queries, library, tolerance, scratch, True, ResolveLarge(False))


@nopython_helper
def cosine_pair_deferring(q, l, queries, library, tolerance, scratch):  # pragma: no cover
    """:func:`cosine_pair`, or ``(0.0, -1)`` when the pair has a large component."""
    return _greedy_pair(q, l, queries, library, tolerance, scratch, False, DeferLarge(True))


@nopython_helper
def modified_pair_deferring(q, l, queries, library, tolerance, scratch):  # pragma: no cover
    """:func:`modified_pair`, or ``(0.0, code < 0)`` when the pair has too many candidates
    (:class:`DeferLarge`)."""
    return _greedy_pair(q, l, queries, library, tolerance, scratch, True, DeferLarge(True))


@njit(cache=True, inline="always")
def _greedy_pair(q, l, queries, library, tolerance, scratch, shifted, large):  # pragma: no cover
    """Greedy cosine of the pair, or with ``shifted`` its modified cosine (a constant of
    each caller: the other branch compiles away); ``large`` as :func:`_cosine_core`."""
    den = library.norm[l] * queries.norm[q]
    if den == 0.0:
        return 0.0, 0
    sp, si, sj, ua, ub = scratch
    la, lb = library.offsets[l], library.offsets[l + 1]
    qa, qb = queries.offsets[q], queries.offsets[q + 1]
    if shifted:
        raw, nm = _modified_core(
            library.mz, library.weight, la, lb, library.precursor_mz[l],
            queries.mz, queries.weight, qa, qb, queries.precursor_mz[q],
            tolerance, sp, si, sj, ua, ub, large,
        )  # fmt: skip
    else:
        raw, nm = _cosine_core(
            library.mz, library.weight, la, lb, queries.mz, queries.weight, qa, qb,
            tolerance, sp, si, sj, ua, ub, large,
        )  # fmt: skip
    if nm <= 0:
        return 0.0, nm
    return raw / den, nm
