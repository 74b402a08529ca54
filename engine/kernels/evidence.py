"""What else a chemist judges a hit by: the reverse score and the library intensity explained.

* **Reverse score** (library-centric, as NIST's and MS-DIAL's reverse search):
  query peaks without any library peak within the tolerance are not
  penalised.  For the (modified) cosine, the greedy numerator over the norm of
  the library spectrum and of the query's partnered peaks only; for entropy
  similarity, the similarity with the query reduced to its partnered peaks
  (renormalised to a sum of 1).
* **Explained**: the share of the library spectrum's peak weight (its
  intensities, as scored) that has a query peak within the tolerance.

A partner is any peak within the tolerance (for the modified cosine also at the
precursor shift), so both numbers need no matching beyond the score's.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.extending import overload

from engine.kernels.entropy import entropy_core
from engine.kernels.jit import HELPER_JIT_OPTIONS, nopython_helper
from engine.kernels.score_kinds import EntropyKind, ModifiedCosineKind, kind_marker
from engine.kernels.spectrum_set import read_only_view
from engine.kernels.threads import for_each_span

__all__ = ["hit_evidence"]


@nopython_helper
def _partners(mzA, a0, a1, mzB, b0, b1, tol, shift, flags_a, flags_b):  # pragma: no cover
    """Mark peaks of A and B that have a partner within ``tol`` (B shifted by ``shift``)."""
    lo = b0
    for i in range(a0, a1):
        low = mzA[i] - tol
        high = mzA[i] + tol
        while lo < b1 and mzB[lo] + shift < low:
            lo += 1
        j = lo
        while j < b1 and mzB[j] + shift <= high:
            flags_a[i - a0] = True
            flags_b[j - b0] = True
            j += 1


def _shifted_partners(marker, q, l, queries, library, tolerance, fq, fl):  # pragma: no cover
    """The modified cosine's partners at the precursor shift; typed by ``marker``: the other
    kinds compile nothing of it."""


@overload(_shifted_partners, jit_options=HELPER_JIT_OPTIONS)
def _shifted_partners_kind(marker, q, l, queries, library, tolerance, fq, fl):
    if getattr(marker, "instance_class", None) is not ModifiedCosineKind:
        return lambda marker, q, l, queries, library, tolerance, fq, fl: None

    def impl(marker, q, l, queries, library, tolerance, fq, fl):  # pragma: no cover - numba
        shift = queries.precursor_mz[q] - library.precursor_mz[l]
        if np.isfinite(shift) and abs(shift) > tolerance:
            q0, q1 = queries.offsets[q], queries.offsets[q + 1]
            l0, l1 = library.offsets[l], library.offsets[l + 1]
            _partners(queries.mz, q0, q1, library.mz, l0, l1, tolerance, shift, fq, fl)

    return impl


def _reverse(marker, q, l, score, queries, library, tolerance, fq):  # pragma: no cover
    """The reverse score of a hit whose query peaks with a partner are ``fq``; typed by
    ``marker``: an entropy search compiles only the entropy's, the cosines only theirs."""


@overload(_reverse, jit_options=HELPER_JIT_OPTIONS)
def _reverse_kind(marker, q, l, score, queries, library, tolerance, fq):
    if getattr(marker, "instance_class", None) is not EntropyKind:

        def cosine(marker, q, l, score, queries, library, tolerance, fq):  # pragma: no cover
            q0 = queries.offsets[q]
            partnered = 0.0
            for j in range(fq.shape[0]):
                if fq[j]:
                    partnered += queries.weight[q0 + j] ** 2
            if not partnered > 0:
                return 0.0
            return min(1.0, score * queries.norm[q] / np.sqrt(partnered))

        return cosine

    def entropy(marker, q, l, score, queries, library, tolerance, fq):  # pragma: no cover
        q0 = queries.offsets[q]
        m = np.int64(0)
        kept = 0.0
        for j in range(fq.shape[0]):
            if fq[j]:
                m += 1
                kept += queries.weight[q0 + j]
        if m == 0 or not kept > 0:
            return 0.0
        mz = np.empty(m, dtype=np.float64)
        w = np.empty(m, dtype=np.float64)
        k = 0
        for j in range(fq.shape[0]):
            if fq[j]:
                mz[k] = queries.mz[q0 + j]
                w[k] = queries.weight[q0 + j] / kept
                k += 1
        reverse, _ = entropy_core(
            read_only_view(mz), read_only_view(w), np.int64(0), m, library.mz, library.weight,
            library.offsets[l], library.offsets[l + 1], tolerance,
        )  # fmt: skip
        return reverse

    return entropy


@njit(cache=True, inline="always")  # one caller: compiled with it, not apart
def _one(q, l, score, queries, library, tolerance, marker):  # pragma: no cover - numba
    q0, q1 = queries.offsets[q], queries.offsets[q + 1]
    l0, l1 = library.offsets[l], library.offsets[l + 1]
    fq = np.zeros(q1 - q0, dtype=np.bool_)
    fl = np.zeros(l1 - l0, dtype=np.bool_)
    _partners(queries.mz, q0, q1, library.mz, l0, l1, tolerance, 0.0, fq, fl)
    _shifted_partners(marker, q, l, queries, library, tolerance, fq, fl)
    total = 0.0
    part = 0.0
    for i in range(l1 - l0):
        total += library.weight[l0 + i]
        if fl[i]:
            part += library.weight[l0 + i]
    explained = part / total if total > 0 else 0.0
    return _reverse(marker, q, l, score, queries, library, tolerance, fq), explained


@njit(cache=True, nogil=True)
def _evidence_span(
    start, stop, q_index, l_index, score, queries, library, tolerance, marker, reverse, explained
):  # pragma: no cover - numba
    for k in range(start, stop):
        reverse[k], explained[k] = _one(
            q_index[k], l_index[k], score[k], queries, library, tolerance, marker
        )


def hit_evidence(q_index, l_index, score, queries, library, tolerance: float, kind: int):
    """Reverse score and explained library intensity of hits ``(q_index[k], l_index[k])``.

    Parameters
    ----------
    q_index, l_index : ndarray of int
        Positions in ``queries`` and ``library`` (:class:`SpectrumSet`\\ s, prepared
        as the search scored them).
    score : ndarray of float64
        The hits' scores (the cosine's reverse score is derived from it).
    tolerance : float
        Fragment tolerance as the kernels compare it.
    kind : int
        Score kind (``COSINE``, ``MODIFIED_COSINE``, ``ENTROPY``).

    Returns
    -------
    reverse, explained : ndarray of float64
    """
    n = len(q_index)
    reverse = np.zeros(n, dtype=np.float64)
    explained = np.zeros(n, dtype=np.float64)
    for_each_span(
        _evidence_span, n,
        np.ascontiguousarray(q_index, dtype=np.int64),
        np.ascontiguousarray(l_index, dtype=np.int64),
        np.ascontiguousarray(score, dtype=np.float64),
        queries, library, float(tolerance), kind_marker(kind), reverse, explained,
    )  # fmt: skip
    return reverse, explained
