"""Candidate bounds of one query row from the inverted peak index (the pruned CPU search).

For one query, every library spectrum of the block that shares at least one
(slightly widened) candidate peak pair with it gets the number of those pairs
and the sum of their terms (products, or entropy terms).  Only these *touched*
spectra are listed, so a row costs the work of its candidates, not of the
whole block; the caller resets the entries it was given.

The modified cosine's shifted candidates come from a second index keyed by
``mz - precursor_mz`` (a library peak at ``mz_l`` matches a query peak at
``mz_q`` shifted by ``prec_l - prec_q`` when ``mz_l - prec_l`` is within the
tolerance of ``mz_q - prec_q``), searched with the query's own keys.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit
from numba.extending import overload

from engine.kernels.cancel import cancelled
from engine.kernels.entropy import pair_entropy
from engine.kernels.jit import HELPER_JIT_OPTIONS, nopython_helper
from engine.kernels.window_max import window_push, window_start

__all__ = [
    "DENSE_ROW",
    "INDEX_EPS",
    "LIST_SHARE",
    "DENSE_ROWS",
    "NO_DENSE_ROWS",
    "accumulate_bounds",
    "dense_rows",
    "list_touched",
]

#: Widening (Da) of the inverted-index window; keeps the bound a true upper bound
#: whatever the rounding of ``mz +- tolerance`` and of ``mz - precursor_mz``.
INDEX_EPS = 1e-6

#: Relative widening for the index's float32 keys: a key rounded to float32 is
#: within ``|key| * 2**-24`` of its float64 value; twice that is allowed for, so
#: every true candidate stays inside the window (a few more only loosen the bound).
KEY_ROUNDING = 2.0**-23

#: Bins of the tangent table of the entropy terms (:data:`ENTROPY_TANGENTS`) over
#: ``p in [0, 1/2]``.
ENTROPY_BINS = 2048


def _entropy_tangents(bins: int) -> np.ndarray:
    """Row ``i``: ``(c0, c1)`` of the tangent ``(c0 + c1 p)`` of ``H(p) / 2`` at bin ``i``'s centre.

    ``H(p) = -p log2 p - (1 - p) log2(1 - p)`` is concave, so every tangent lies
    above it on all of ``[0, 1]``; ``c0`` is raised by 1e-12 against rounding.
    """
    a = (np.arange(bins + 1) + 0.5) / (2.0 * bins)
    h = -a * np.log2(a) - (1.0 - a) * np.log2(1.0 - a)
    slope = np.log2((1.0 - a) / a)
    return np.ascontiguousarray(np.column_stack([(h - slope * a) / 2.0 + 1e-12, slope / 2.0]))


#: The entropy term of a candidate pair of weights ``x``, ``y`` is ``(x + y) H(p) / 2``
#: with ``p = x / (x + y)``; a table of tangents bounds it from above without a logarithm
#: (the bound is at most ~1e-4 of the term above it, except for the smallest ``p``).
ENTROPY_TANGENTS = _entropy_tangents(ENTROPY_BINS)


@njit(cache=True, inline="always")
def entropy_term_bound(x, y):  # pragma: no cover - numba
    """An upper bound of :func:`~engine.kernels.entropy.pair_entropy` of ``x, y >= 0``;
    always > 0 (columns are listed when their bound leaves 0)."""
    s = x + y
    if not s > 0.0:  # no weight (never in cleaned spectra): no 0 / 0 below; still > 0
        return 1e-300
    p = x / s
    if p > 0.5:
        p = 1.0 - p
    i = int(p * (2 * ENTROPY_BINS))
    return max(s * (ENTROPY_TANGENTS[i, 0] + ENTROPY_TANGENTS[i, 1] * p), 1e-300)


#: A row lists the columns it touches while it sums its candidates when they are at
#: most this share of the block's columns; rows with more (wide tolerances, raw
#: peaks) list them afterwards in one pass over the block, which then costs less
#: than a store per candidate.
LIST_SHARE = 0.5

#: A query row whose candidates outnumber the library peaks they reach this many
#: times over (profile-mode spectra: ~10⁹ candidates) is bounded peak by peak of the
#: library (:func:`_dense_bounds`); centroided spectra never are.
DENSE_ROW = 8


class DenseRows(NamedTuple):
    """Marker: some query row may take :func:`_dense_bounds` (compiled only for it)."""

    dense: bool = True


class NoDenseRows(NamedTuple):
    """Marker: no query row can take :func:`_dense_bounds` (:func:`dense_rows`)."""

    dense: bool = False


DENSE_ROWS = DenseRows()
NO_DENSE_ROWS = NoDenseRows()


def dense_rows(queries, q_start: int, q_stop: int, tolerance: float) -> NamedTuple:
    """:data:`NO_DENSE_ROWS` when no row of queries ``[q_start, q_stop)`` can be a dense row.

    A row is dense when its candidates outnumber ``DENSE_ROW`` × (the library
    peaks they reach + its peaks).  A library key lies in the windows of at most
    ``DENSE_ROW`` query peaks when, in every spectrum (m/z ascending), peaks
    ``DENSE_ROW`` positions apart are more than two windows apart; then no row
    is dense (for the modified cosine's shifted keys ``mz - precursor_mz`` too:
    the same differences).  Centroided spectra always pass, so their searches
    never compile :func:`_dense_bounds`.  Any doubt (unsorted or NaN peaks):
    :data:`DENSE_ROWS`.  Either way the bounds are exact bounds: the dense path
    only makes profile-mode rows fast.  The flags of the whole set are computed
    once (numpy) and kept for the set last asked about.
    """
    global _last_flags
    key = (_memory(queries.mz), _memory(queries.offsets), tolerance)
    last = _last_flags  # one read: other threads may replace it
    if last is not None and last[0] == key:
        flags = last[1]
    else:
        flags = _dense_flags(queries, tolerance)
        _last_flags = (key, flags)
    return DENSE_ROWS if flags[q_start:q_stop].any() else NO_DENSE_ROWS


#: ``(key of the query set last asked about, its per-spectrum flags)``.  The sets are
#: read-only views made anew for each block, so the key is their memory; a stale entry
#: could only cost speed (the bounds are exact with either marker).
_last_flags = None


def _memory(a: np.ndarray) -> tuple[int, int, int]:
    """Where an array's data lies and its first and last values' bits (a cheap identity)."""
    a = np.asarray(a)
    if a.shape[0] == 0:
        return (a.__array_interface__["data"][0], 0, 0)
    ends = np.array([a[0], a[-1]], dtype=np.float64).view(np.int64)
    return (a.__array_interface__["data"][0], a.shape[0], hash((int(ends[0]), int(ends[1]))))


def _dense_flags(queries, tolerance: float) -> np.ndarray:
    """Per spectrum of ``queries``: whether :func:`dense_rows` must allow a dense row."""
    offsets = np.asarray(queries.offsets)
    mz = np.asarray(queries.mz)
    flags = np.zeros(offsets.shape[0] - 1, dtype=bool)
    if mz.shape[0] <= DENSE_ROW:
        return flags

    def mark(pos: np.ndarray, lag: int) -> None:  # spectra holding both t and t + lag
        first = np.searchsorted(offsets, pos, side="right") - 1
        same = first == np.searchsorted(offsets, pos + lag, side="right") - 1
        flags[first[same]] = True

    mark(np.flatnonzero(mz[1:] < mz[:-1]), 1)
    precursor = np.asarray(queries.precursor_mz)
    precursor = np.abs(precursor[np.isfinite(precursor)])
    top = float(np.abs(mz).max()) + (float(precursor.max()) if precursor.size else 0.0)
    reach = 2.0 * (tolerance + INDEX_EPS + (top + tolerance) * KEY_ROUNDING) * (1 + 1e-9) + 1e-9
    mark(np.flatnonzero(~(mz[DENSE_ROW:] - mz[:-DENSE_ROW] > reach)), DENSE_ROW)  # NaN: close
    return flags


def _dense_if_marked(dense, qw, imz, ispec, iw, entropy, lows, highs, los, his, bound, cnt,
                     touched, nt, listing, stop):  # fmt: skip
    """:func:`_dense_bounds` for :data:`DENSE_ROWS`; -2 (not taken) for the other marker,
    whose kernels compile none of it."""


@overload(_dense_if_marked, jit_options=HELPER_JIT_OPTIONS)
def _dense_if_marked_kind(dense, qw, imz, ispec, iw, entropy, lows, highs, los, his, bound,
                          cnt, touched, nt, listing, stop):  # fmt: skip
    if getattr(dense, "instance_class", None) is not DenseRows:
        return lambda dense, qw, imz, ispec, iw, entropy, lows, highs, los, his, bound, cnt, \
            touched, nt, listing, stop: -2  # fmt: skip

    def impl(dense, qw, imz, ispec, iw, entropy, lows, highs, los, his, bound, cnt, touched,
             nt, listing, stop):  # fmt: skip  # pragma: no cover - numba
        return _dense_bounds(qw, imz, ispec, iw, entropy, lows, highs, los, his, bound, cnt,
                             touched, nt, listing, stop)  # fmt: skip

    return impl


@njit(cache=True, inline="always")
def _touch(c, cnt, touched, nt):  # pragma: no cover - numba
    """List column ``c`` the first time it gets a candidate; returns the new length.

    Branch-free (a column's first candidate is hard to predict): ``c`` is always
    written, and kept only when new.
    """
    touched[nt] = c
    return nt + (cnt[c] == 0)


@njit(cache=True, inline="always")
def _first_index(keys, value, above):  # pragma: no cover - numba
    """``np.searchsorted(keys, value, side="right" if above else "left")`` for keys and
    a value without NaN (index keys are finite m/z): the first key ``> value`` (``above``)
    or ``>= value``.  A binary search by hand: numba's ``searchsorted`` compiles its
    NaN-aware comparisons for every key and value type (~1 s of a first search).
    """
    lo = 0
    hi = keys.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < value or (above and keys[mid] == value):
            lo = mid + 1
        else:
            hi = mid
    return lo


@nopython_helper
def accumulate_bounds(
    qmz, qw, imz, ispec, iw, tolerance, entropy, counting, bound, cnt, touched, nt, stop, dense
):  # pragma: no cover - numba
    """Add the candidates of query peaks ``(qmz, qw)`` in index ``(imz, ispec, iw)``.

    The index's keys ``imz`` and weights ``iw`` are float32 (keys rounded to
    nearest, hence the window's widening by :data:`KEY_ROUNDING`; weights rounded
    up, so every term stays an upper bound: both terms grow with either weight).

    ``bound[c]`` gets the sum of the candidates' terms with block spectrum ``c``
    (entropy: a bound of the entropy term, :func:`entropy_term_bound`; else the
    product), ``cnt[c]`` their number; a spectrum's first candidate appends it to
    ``touched[nt:]``.  Without ``counting`` (entropy only, whose terms are all > 0:
    a column is new while its bound is 0) ``cnt`` may be left as it is, for a
    search that needs no match count.  Returns the new ``nt`` and whether the
    columns were listed: rows with more candidates than :data:`LIST_SHARE` of the
    block list none (:func:`list_touched` then lists them in one pass over the
    block); ``nt`` is -1 when ``stop`` was set (the arrays are then left dirty).
    Rows whose candidates are far more than the library peaks they reach:
    :func:`_dense_bounds`, when ``dense`` is :data:`DENSE_ROWS` (:func:`dense_rows`).
    """
    nq = qmz.shape[0]
    widen = tolerance + INDEX_EPS + (np.abs(qmz) + tolerance) * KEY_ROUNDING
    lows = qmz - widen
    highs = qmz + widen
    los = np.empty(nq, dtype=np.int64)
    his = np.empty(nq, dtype=np.int64)
    for t in range(nq):
        los[t] = _first_index(imz, lows[t], False)
        his[t] = _first_index(imz, highs[t], True)
    total = 0
    reached = 0
    top = 0
    for t in range(nq):
        total += his[t] - los[t]
        reached += max(0, his[t] - max(los[t], top))
        top = max(top, his[t])
    listing = total <= LIST_SHARE * bound.shape[0]
    if total > DENSE_ROW * (reached + nq):
        dense_nt = _dense_if_marked(dense, qw, imz, ispec, iw, entropy, lows, highs, los, his,
                                    bound, cnt, touched, nt, listing, stop)  # fmt: skip
        if dense_nt != -2:
            return dense_nt, listing
    for t in range(nq):
        if cancelled(stop):
            return -1, listing
        wq = qw[t]
        if not listing:
            for k in range(los[t], his[t]):
                c = ispec[k]
                if entropy:
                    bound[c] += entropy_term_bound(wq, np.float64(iw[k]))
                else:
                    bound[c] += np.float64(iw[k]) * wq
                cnt[c] += 1
        elif entropy and not counting:
            for k in range(los[t], his[t]):
                c = ispec[k]
                touched[nt] = c
                nt += bound[c] == 0.0
                bound[c] += entropy_term_bound(wq, np.float64(iw[k]))
        elif entropy:
            for k in range(los[t], his[t]):
                c = ispec[k]
                nt = _touch(c, cnt, touched, nt)
                bound[c] += entropy_term_bound(wq, np.float64(iw[k]))
                cnt[c] += 1
        else:
            for k in range(los[t], his[t]):
                c = ispec[k]
                nt = _touch(c, cnt, touched, nt)
                bound[c] += np.float64(iw[k]) * wq
                cnt[c] += 1
    return nt, listing


@nopython_helper
def list_touched(bound, cnt, touched):  # pragma: no cover - numba
    """List every column with a candidate in ``touched`` (in column order); returns how many."""
    nt = 0
    for c in range(bound.shape[0]):
        touched[nt] = c
        nt += (cnt[c] != 0) | (bound[c] != 0.0)
    return nt


@nopython_helper
def _dense_bounds(
    weight, imz, ispec, iw, entropy, lows, highs, los, his, bound, cnt, touched, nt, listing, stop
):  # pragma: no cover
    """:func:`accumulate_bounds` library peak by library peak, in O(reached + query peaks).

    Library peak ``k`` is a candidate of the query peaks ``t`` with ``lows[t] <=
    mz[k] <= highs[t]`` (the index's own comparisons), a run of them since both
    are sorted; each of their terms is at most the term of the run's largest
    query weight (both terms grow with either weight), kept by a sliding-window
    maximum.  The counts are exact, the bounds looser than the sum of the terms.
    """
    nq = weight.shape[0]
    queue = np.empty(nq, dtype=np.int64)
    head = 0
    tail = 0
    first = 0
    last = 0
    top = 0
    for t in range(nq):
        for k in range(max(los[t], top), his[t]):
            if (k & 0xFFFF) == 0 and cancelled(stop):
                return -1
            m = imz[k]
            while first < nq and highs[first] < m:
                first += 1
            while last < nq and not m < lows[last]:
                tail = window_push(queue, head, tail, weight, last)
                last += 1
            head = window_start(queue, head, tail, first)
            if head == tail:
                continue
            wq = weight[queue[head]]
            c = ispec[k]
            if listing:
                nt = _touch(c, cnt, touched, nt)
            if entropy:
                bound[c] += (last - first) * pair_entropy(wq, np.float64(iw[k]))
            else:
                bound[c] += (last - first) * (np.float64(iw[k]) * wq)
            cnt[c] += last - first
        top = max(top, his[t])
    return nt
