"""The pruned search (cosine, entropy): an inverted index over a library block's peaks.

For each query, the index gives every library spectrum of the block the number of
(slightly widened) candidate peak pairs and the sum of all their products.  That
sum bounds the greedy numerator from above (for entropy similarity: the sum of
every candidate pair's entropy term, all >= 0) and the count bounds the matches, so
pairs that cannot reach ``threshold``, ``min_matches`` or (with ``top_n``) the
current n-th best are never scored; all others are scored exactly.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from engine.kernels.cancel import cancelled
from engine.kernels.entropy import pair_entropy
from engine.kernels.pair_bound import pair_can_reach
from engine.kernels.rows import better, insert_hit, row_buffers, sort_row
from engine.kernels.score_kinds import kind_marker, kind_score
from engine.kernels.spectrum_set import (
    COSINE,
    ENTROPY,
    longest_in_block,
    new_scratch,
    pair_allowed,
)
from engine.kernels.threads import for_each_span
from engine.kernels.window_max import window_push, window_start

__all__ = ["PeakIndex", "indexed_kernel", "library_peak_index"]

#: Widening (Da) of the inverted-index window; keeps the bound a true upper bound
#: whatever the rounding of ``mz +- tolerance``.
INDEX_EPS = 1e-6


class PeakIndex(NamedTuple):
    """Peaks of a library block sorted by m/z.

    Attributes
    ----------
    mz : ndarray of float64
    spectrum : ndarray of int32
        Position of each peak's spectrum within the block.
    weight : ndarray of float64
    """

    mz: np.ndarray
    spectrum: np.ndarray
    weight: np.ndarray


def library_peak_index(library, l_start: int, l_stop: int) -> PeakIndex:
    """Peaks of library spectra ``[l_start, l_stop)`` sorted by m/z, for the pruned search.

    Parameters
    ----------
    library : SpectrumSet
    l_start, l_stop : int
        The block.

    Returns
    -------
    PeakIndex
        Pass it to :func:`~engine.kernels.search_block` as ``library_index`` to
        reuse it across query blocks.
    """
    offsets = library.offsets
    p0, p1 = offsets[l_start], offsets[l_stop]
    order = np.argsort(library.mz[p0:p1], kind="stable")
    sid = np.repeat(
        np.arange(l_stop - l_start, dtype=np.int32), np.diff(offsets[l_start : l_stop + 1])
    )
    return PeakIndex(
        np.ascontiguousarray(library.mz[p0:p1][order]),
        np.ascontiguousarray(sid[order]),
        np.ascontiguousarray(library.weight[p0:p1][order]),
    )


@njit(cache=True)
def _bound(u, den):  # pragma: no cover - numba
    """The relative upper bound of a pair, widened so rounding never makes it too small."""
    return (u / den) * (1.0 + 1e-9) + 1e-12


#: Pairs whose peak counts multiply to more than this are checked against the
#: best-partner bound before their exact cosine (for shorter ones the exact score
#: costs about what the bound does).  5,439 x 54,390 MassBank (every 10th as a query),
#: thr 0.7, top 100: 1.59 -> 1.44 s on 2 cores, the same hits (2^10: 1.42 s, 2^14: 1.55 s).
LONG_PAIR = 1 << 12


@njit(cache=True, inline="always")
def _can_reach(q, l, queries, library, tolerance, kind, floor, colmax):  # pragma: no cover
    """False when a long pair's cosine is proven below ``floor``; True otherwise
    (other scores, short pairs)."""
    if kind != COSINE:
        return True
    na = library.offsets[l + 1] - library.offsets[l]
    if na * (queries.offsets[q + 1] - queries.offsets[q]) <= LONG_PAIR:
        return True
    return pair_can_reach(q, l, queries, library, tolerance, floor, colmax)


@njit(cache=True)
def _insert_candidate(bounds, columns, n, cap, u, c):  # pragma: no cover - numba
    """Keep the ``cap`` largest bounds (ties: lower column first); returns the new length."""
    if n == cap:
        if not better(u, c, bounds[n - 1], columns[n - 1]):
            return n
        pos = n - 1
    else:
        pos = n
        n += 1
    while pos > 0 and better(u, c, bounds[pos - 1], columns[pos - 1]):
        bounds[pos] = bounds[pos - 1]
        columns[pos] = columns[pos - 1]
        pos -= 1
    bounds[pos] = u
    columns[pos] = c
    return n


#: A query row whose candidates outnumber the library peaks they reach this many
#: times over (profile-mode spectra: ~10⁹ candidates) is bounded peak by peak of the
#: library (:func:`_dense_bounds`); centroided spectra never are.
DENSE_ROW = 8


@njit(cache=True)
def _candidate_bounds(q, queries, index, tolerance, entropy, bound, cnt, stop):  # pragma: no cover
    """Add to ``bound[c]`` an upper bound of the sum of the candidate terms of query ``q``
    with block spectrum ``c``, and to ``cnt[c]`` the number of its candidates.

    Centroided queries: every candidate's product (or entropy term), one query peak
    after the other.  Queries whose candidates are far more than the library peaks
    they reach: :func:`_dense_bounds`.  False when ``stop`` was set.
    """
    q0 = queries.offsets[q]
    q1 = queries.offsets[q + 1]
    lows = queries.mz[q0:q1] - tolerance - INDEX_EPS
    highs = queries.mz[q0:q1] + tolerance + INDEX_EPS
    los = np.searchsorted(index.mz, lows, side="left")
    his = np.searchsorted(index.mz, highs, side="right")
    total = 0
    reached = 0
    top = 0
    for t in range(q1 - q0):
        total += his[t] - los[t]
        reached += max(0, his[t] - max(los[t], top))
        top = max(top, his[t])
    if total > DENSE_ROW * (reached + q1 - q0):
        return _dense_bounds(q0, q1, queries, index, entropy, lows, highs, los, his,
                             bound, cnt, stop)  # fmt: skip
    for t in range(q1 - q0):
        if cancelled(stop):
            return False
        wq = queries.weight[q0 + t]
        for k in range(los[t], his[t]):
            c = index.spectrum[k]
            if entropy:
                bound[c] += pair_entropy(wq, index.weight[k])
            else:
                bound[c] += index.weight[k] * wq
            cnt[c] += 1
    return True


@njit(cache=True)
def _dense_bounds(
    q0, q1, queries, index, entropy, lows, highs, los, his, bound, cnt, stop
):  # pragma: no cover
    """:func:`_candidate_bounds` library peak by library peak, in O(reached + query peaks).

    Library peak ``k`` is a candidate of the query peaks ``t`` with ``lows[t] <=
    mz[k] <= highs[t]`` (the index's own comparisons), a run of them since both
    are sorted; each of their terms is at most the term of the run's largest
    query weight (both terms grow with either weight), kept by a sliding-window
    maximum.  The counts are exact, the bounds looser than the sum of the terms.
    """
    weight = queries.weight[q0:q1]
    queue = np.empty(q1 - q0, dtype=np.int64)
    head = 0
    tail = 0
    first = 0
    last = 0
    top = 0
    for t in range(q1 - q0):
        for k in range(max(los[t], top), his[t]):
            if (k & 0xFFFF) == 0 and cancelled(stop):
                return False
            m = index.mz[k]
            while first < q1 - q0 and highs[first] < m:
                first += 1
            while last < q1 - q0 and not m < lows[last]:
                tail = window_push(queue, head, tail, weight, last)
                last += 1
            head = window_start(queue, head, tail, first)
            if head == tail:
                continue
            wq = weight[queue[head]]
            c = index.spectrum[k]
            if entropy:
                bound[c] += (last - first) * pair_entropy(wq, index.weight[k])
            else:
                bound[c] += (last - first) * (index.weight[k] * wq)
            cnt[c] += last - first
        top = max(top, his[t])
    return True


@njit(cache=True)
def _indexed_row(
    q, queries, library, l_start, nl, options, marker, index, scratch, hl, hs, hm, stop
):  # pragma: no cover - numba
    """One query row of :func:`indexed_kernel`; returns the number of hits written.

    Stops early (with the hits scored so far) once ``stop[0]`` is set.
    """
    tolerance = options.tolerance
    min_matches = options.min_matches
    threshold = options.threshold
    top_n = options.top_n
    qn = queries.norm[q]
    kind = marker.kind
    entropy = kind == ENTROPY
    colmax = np.empty(queries.offsets[q + 1] - queries.offsets[q], dtype=np.float64)
    bound = np.zeros(nl, dtype=np.float64)
    cnt = np.zeros(nl, dtype=np.int64)
    if not _candidate_bounds(q, queries, index, tolerance, entropy, bound, cnt, stop):
        return 0
    n = np.int64(0)  # not the literal 0: callees would compile for it too
    if top_n == 0:
        for c in range(nl):
            if cancelled(stop):
                break
            if cnt[c] < min_matches:
                continue
            l = l_start + c
            den = library.norm[l] * qn
            if den == 0.0 or not pair_allowed(q, l, queries, library, options):
                continue
            if _bound(bound[c], den) < threshold:
                continue
            if not _can_reach(q, l, queries, library, tolerance, kind, threshold, colmax):
                continue
            s, m = kind_score(marker, q, l, queries, library, tolerance, scratch)
            if m >= min_matches and s >= threshold:
                hl[n] = l
                hs[n] = s
                hm[n] = m
                n += 1
        sort_row(hs, hl, hm, n, library.index)
        return n
    # pass 1: the top_n largest bounds seed the top list
    cb = np.empty(top_n, dtype=np.float64)
    cc = np.empty(top_n, dtype=np.int64)
    nc = np.int64(0)
    for c in range(nl):
        if cnt[c] < min_matches:
            bound[c] = -1.0
            continue
        l = l_start + c
        den = library.norm[l] * qn
        if den == 0.0 or not pair_allowed(q, l, queries, library, options):
            bound[c] = -1.0
            continue
        u = _bound(bound[c], den)
        if u < threshold:
            bound[c] = -1.0
            continue
        bound[c] = u
        nc = _insert_candidate(cb, cc, nc, top_n, u, c)
    for t in range(nc):
        if cancelled(stop):
            return n
        c = cc[t]
        l = l_start + c
        bound[c] = -1.0
        if not _can_reach(q, l, queries, library, tolerance, kind, threshold, colmax):
            continue
        s, m = kind_score(marker, q, l, queries, library, tolerance, scratch)
        if m >= min_matches and s >= threshold:
            n = insert_hit(hs, hl, hm, n, top_n, s, l, m, library.index)
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
        if not _can_reach(q, l, queries, library, tolerance, kind, floor, colmax):
            continue
        s, m = kind_score(marker, q, l, queries, library, tolerance, scratch)
        if m >= min_matches and s >= threshold:
            n = insert_hit(hs, hl, hm, n, top_n, s, l, m, library.index)
            if n == top_n and hs[n - 1] > floor:
                floor = hs[n - 1]
    return n


@njit(cache=True, nogil=True)  # nogil: run by several threads, the GUI thread meanwhile
def indexed_rows(
    start, stop_row, queries, library, q_start, l_start, l_stop, options, marker, index, rows, stop
):  # pragma: no cover - numba
    """Rows ``[start, stop_row)`` of :func:`indexed_kernel` into ``rows``.

    ``marker`` is :func:`~engine.kernels.score_kinds.kind_marker` of ``options.kind``:
    each score kind compiles only its own scoring code.
    """
    row_l, row_s, row_m, counts = rows
    nl = l_stop - l_start
    q0, q1 = q_start + start, q_start + stop_row
    longest = longest_in_block(queries, library, q0, q1, l_start, l_stop)
    scratch = new_scratch(longest)
    for r in range(start, stop_row):
        if cancelled(stop):
            return
        q = q_start + r
        if queries.norm[q] == 0.0:
            continue
        counts[r] = _indexed_row(
            q, queries, library, l_start, nl, options, marker, index, scratch,
            row_l[r], row_s[r], row_m[r], stop,
        )  # fmt: skip


def indexed_kernel(queries, library, q_start, q_stop, l_start, l_stop, options, index, width, stop):
    """Plain-cosine search of queries ``[q_start, q_stop)`` with the exact upper-bound prune.

    Returns per-row buffers ``(library position, score, matches)`` of ``width``
    columns and the hit count of each row, as :func:`~engine.kernels.rows.scan_kernel`.
    Rows are spread over threads by :func:`~engine.kernels.threads.for_each_span`.
    """
    rows = row_buffers(q_stop - q_start, width)
    marker = kind_marker(options.kind)
    for_each_span(
        indexed_rows, q_stop - q_start,
        queries, library, q_start, l_start, l_stop, options, marker, index, rows, stop,
    )  # fmt: skip
    return rows
