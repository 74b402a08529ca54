"""The pruned search: an inverted index over a library block's peaks.

For each query, the index gives every library spectrum of the block that shares
a (slightly widened) candidate peak pair with it the number of its candidate
pairs and the sum of all their terms (:mod:`~engine.kernels.index_bounds`).  That
sum bounds the score's numerator from above (greedy cosine: the products; entropy
similarity: every candidate pair's entropy term, all >= 0; modified cosine: the
products of the zero-shift and of the shifted candidates, the latter found in a
second index keyed by ``mz - precursor_mz``) and the count bounds the matches, so
pairs that cannot reach ``threshold``, ``min_matches`` or (with ``top_n``) the
current n-th best are never scored; all others are scored exactly.  Only the
spectra that share a candidate are visited, so an open search (no precursor
window) costs the work of its candidates, not of the whole block.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit
from numba.extending import overload

from engine.kernels.cancel import cancelled
from engine.kernels.deferred import defer, deferring_span, has_room
from engine.kernels.index_bounds import INDEX_EPS, accumulate_bounds, dense_rows, list_touched
from engine.kernels.jit import HELPER_JIT_OPTIONS, nopython_helper
from engine.kernels.pair_bound import pair_can_reach
from engine.kernels.rows import better, insert_hit, row_buffers, sort_row
from engine.kernels.score_kinds import (
    CosineKind,
    ModifiedCosineKind,
    kind_marker,
    kind_score_deferring,
)
from engine.kernels.sorting import stable_argsort
from engine.kernels.spectrum_set import (
    COSINE,
    ENTROPY,
    MODIFIED_COSINE,
    longest_in_block,
    new_scratch,
    pair_allowed,
    read_only_view,
)
from engine.kernels.threads import for_each_span

__all__ = ["INDEX_EPS", "PeakIndex", "index_fits", "indexed_kernel", "library_peak_index"]


class PeakIndex(NamedTuple):
    """Peaks of a library block sorted by m/z (and, for the modified cosine, by loss).

    Attributes
    ----------
    mz : ndarray of float32
        The peaks' m/z rounded to float32: the index only bounds, so its window is
        widened by the rounding (:data:`~engine.kernels.index_bounds.KEY_ROUNDING`)
        and the pairs it lets through are scored from the library's float64 peaks.
    spectrum : ndarray of int32
        Position of each peak's spectrum within the block.
    weight : ndarray of float32
        Each peak's weight rounded *up* to float32 (so the bounds stay bounds);
        divided by its spectrum's norm (0 for a zero norm) but for the entropy
        similarity, whose norms are 1.
    loss : ndarray of float32
        Modified cosine: ``mz - precursor_mz`` of the block's peaks, sorted (peaks
        of spectra with an unknown precursor left out); else empty.
    loss_spectrum : ndarray of int32
    loss_weight : ndarray of float32
        Spectrum and weight of each ``loss`` entry.
    kind : int
        The score kind it was built for.
    """

    mz: np.ndarray
    spectrum: np.ndarray
    weight: np.ndarray
    loss: np.ndarray
    loss_spectrum: np.ndarray
    loss_weight: np.ndarray
    kind: int


def library_peak_index(library, l_start: int, l_stop: int, kind: int = COSINE) -> PeakIndex:
    """Peaks of library spectra ``[l_start, l_stop)`` sorted by m/z, for the pruned search.

    Parameters
    ----------
    library : SpectrumSet
    l_start, l_stop : int
        The block.
    kind : int, default COSINE
        The score kind it serves: weights divided by the spectrum norms but for
        ``ENTROPY``; ``MODIFIED_COSINE`` adds the index of the shifted candidates.

    Returns
    -------
    PeakIndex
        Pass it to :func:`~engine.kernels.search_block` as ``library_index`` to
        reuse it across query blocks (of a search of the same kind).
    """
    offsets = library.offsets
    p0, p1 = offsets[l_start], offsets[l_stop]
    mz = library.mz[p0:p1]
    weight = np.ascontiguousarray(library.weight[p0:p1], dtype=np.float64)
    order = stable_argsort(mz)
    sid = np.repeat(
        np.arange(l_stop - l_start, dtype=np.int32), np.diff(offsets[l_start : l_stop + 1])
    )
    empty = np.empty(0, dtype=np.float32)
    if kind != ENTROPY:  # bounds of pairs then need only the query's norm
        norm = library.norm[l_start:l_stop][sid]
        weight = np.divide(weight, norm, out=np.zeros_like(weight), where=norm > 0)
    loss, loss_spectrum, loss_weight = empty, np.empty(0, dtype=np.int32), empty
    if kind == MODIFIED_COSINE:
        key = mz - library.precursor_mz[l_start:l_stop][sid]
        known = np.flatnonzero(np.isfinite(key))
        by_loss = known[stable_argsort(key[known])]
        loss = key[by_loss].astype(np.float32)
        loss_spectrum = np.ascontiguousarray(sid[by_loss])
        loss_weight = _rounded_up(weight[by_loss])
    return PeakIndex(
        mz[order].astype(np.float32),
        np.ascontiguousarray(sid[order]),
        _rounded_up(weight[order]),
        loss,
        loss_spectrum,
        loss_weight,
        int(kind),
    )


def _rounded_up(values: np.ndarray) -> np.ndarray:
    """``values`` as float32, each rounded up (never below its float64 value)."""
    single = values.astype(np.float32)
    return np.nextafter(single, np.float32(np.inf), out=single, where=single < values)


def index_fits(index: PeakIndex, kind: int) -> bool:
    """Whether ``index`` was built for a search of score ``kind``."""
    return int(index.kind) == int(kind)


@nopython_helper
def _bound(u, den):  # pragma: no cover - numba
    """The relative upper bound of a pair, widened so rounding never makes it too small."""
    return (u / den) * (1.0 + 1e-9) + 1e-12


#: Pairs whose peak counts multiply to more than this are checked against the
#: best-partner bound before their exact cosine (for shorter ones the exact score
#: costs about what the bound does).  5,439 x 54,390 MassBank (every 10th as a query),
#: thr 0.7, top 100: 1.59 -> 1.44 s on 2 cores, the same hits (2^10: 1.42 s, 2^14: 1.55 s).
LONG_PAIR = 1 << 12


def _can_reach(marker, q, l, queries, library, tolerance, floor, colmax):  # pragma: no cover
    """False when a long pair's cosine is proven below ``floor``; True otherwise
    (other scores, short pairs).  Typed by ``marker``: only the cosine's kernel
    compiles the bound."""


@overload(_can_reach, jit_options=HELPER_JIT_OPTIONS)
def _can_reach_kind(marker, q, l, queries, library, tolerance, floor, colmax):
    if getattr(marker, "instance_class", None) is not CosineKind:
        return lambda marker, q, l, queries, library, tolerance, floor, colmax: True

    def impl(marker, q, l, queries, library, tolerance, floor, colmax):  # pragma: no cover
        na = library.offsets[l + 1] - library.offsets[l]
        if na * (queries.offsets[q + 1] - queries.offsets[q]) <= LONG_PAIR:
            return True
        return pair_can_reach(q, l, queries, library, tolerance, floor, colmax)

    return impl


def _shifted_bounds(marker, q, qmz, qw, queries, index, tolerance, entropy, counting, work, nt,
                    stop, dense):  # fmt: skip
    """The modified cosine's shifted candidates added to :func:`_candidate_bounds`'s;
    returns ``(nt, listed)``.  Typed by ``marker``: the other kinds compile none."""


@overload(_shifted_bounds, jit_options=HELPER_JIT_OPTIONS)
def _shifted_bounds_kind(marker, q, qmz, qw, queries, index, tolerance, entropy, counting, work,
                         nt, stop, dense):  # fmt: skip
    if getattr(marker, "instance_class", None) is not ModifiedCosineKind:
        return lambda marker, q, qmz, qw, queries, index, tolerance, entropy, counting, work, \
            nt, stop, dense: (nt, True)  # fmt: skip

    def impl(
        marker, q, qmz, qw, queries, index, tolerance, entropy, counting, work, nt, stop, dense
    ):
        prec = queries.precursor_mz[q]
        if nt < 0 or prec != prec:  # NaN: no shifted candidates
            return nt, True
        bound, cnt, touched = work
        # entropy is False and counting True for this kind: the zero-shift call's own (not
        # literals), and the keys read-only as its query peaks: accumulate_bounds compiles once
        return accumulate_bounds(read_only_view(qmz - prec), qw, index.loss, index.loss_spectrum,
                                 index.loss_weight, tolerance, entropy, counting, bound, cnt,
                                 touched, nt, stop, dense)  # fmt: skip

    return impl


@nopython_helper
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


@njit(cache=True, inline="always")  # one caller: compiled into it, not apart
def _candidate_bounds(
    q, queries, index, tolerance, marker, counting, bound, cnt, touched, stop, dense
):  # pragma: no cover
    """Bounds and candidate counts of query ``q`` with the block's spectra.

    Fills ``bound``/``cnt`` of the spectra sharing a candidate with ``q`` and
    lists them in ``touched``; returns how many, or -1 when ``stop`` was set.
    """
    q0 = queries.offsets[q]
    q1 = queries.offsets[q + 1]
    qmz = queries.mz[q0:q1]
    qw = queries.weight[q0:q1]
    entropy = marker.kind == ENTROPY
    nt, listed = accumulate_bounds(qmz, qw, index.mz, index.spectrum, index.weight,
                                   tolerance, entropy, counting, bound, cnt, touched,
                                   np.int64(0), stop, dense)  # fmt: skip
    nt, shifted_listed = _shifted_bounds(marker, q, qmz, qw, queries, index, tolerance, entropy,
                                         counting, (bound, cnt, touched), nt, stop,
                                         dense)  # fmt: skip
    listed = listed and shifted_listed
    if nt >= 0 and not listed:  # (re)list them all, once each
        nt = list_touched(bound, cnt, touched)
    return nt


@njit(cache=True, inline="always")  # one caller: compiled into it, not apart
def _indexed_row(
    q, queries, library, l_start, options, marker, index, scratch, work, hl, hs, hm, stop, dense,
    deferred,
):  # fmt: skip  # pragma: no cover - numba
    """One query row of :func:`indexed_kernel`; returns the number of hits written.

    ``work`` is a thread's ``(bound, cnt, touched)``, all zero on entry and on
    return.  Stops early (with the hits scored so far) once ``stop[0]`` is set.
    """
    bound, cnt, touched = work
    # one matched peak is implied by a candidate: the entropy search then counts none
    counting = marker.kind != ENTROPY or options.min_matches > 1
    nt = _candidate_bounds(q, queries, index, options.tolerance, marker, counting,
                           bound, cnt, touched, stop, dense)  # fmt: skip
    if nt < 0:
        bound[:] = 0.0
        cnt[:] = 0
        return 0
    n = _row_hits(q, queries, library, l_start, options, marker, scratch, bound, cnt,
                  counting, touched[:nt], hl, hs, hm, stop, deferred)  # fmt: skip
    for i in range(nt):
        c = touched[i]
        bound[c] = 0.0
        cnt[c] = 0
    return n


@njit(cache=True, inline="always")
def _may_score(q, l, queries, library, options):  # pragma: no cover - numba
    """Whether the pair passes its filters (precursor window, ion mode) and may score."""
    return library.norm[l] != 0.0 and pair_allowed(q, l, queries, library, options)


@nopython_helper
def _scored(q, l, queries, library, options, marker, scratch, floor, colmax, deferred):
    """``(hit, score, matches)`` of query ``q`` x library spectrum ``l``, scored only when it
    may score and its bound can reach ``floor`` (``hit`` False otherwise).  A pair with a
    large component is added to ``deferred`` (:func:`~engine.kernels.deferred.defer`)
    instead, and is no hit here."""  # pragma: no cover - numba
    if not _may_score(q, l, queries, library, options):
        return False, 0.0, 0
    if not _can_reach(marker, q, l, queries, library, options.tolerance, floor, colmax):
        return False, 0.0, 0
    s, m = kind_score_deferring(marker, q, l, queries, library, options.tolerance, scratch)
    if defer(marker, m, deferred, q, l):
        return False, 0.0, 0
    return m >= options.min_matches and s >= options.threshold, s, m


@njit(cache=True, inline="always")  # one caller: compiled into it, not apart
def _row_hits(
    q,
    queries,
    library,
    l_start,
    options,
    marker,
    scratch,
    bound,
    cnt,
    counting,
    touched,
    hl,
    hs,
    hm,
    stop,
    deferred,
):  # pragma: no cover - numba
    """The hits of query ``q`` among the ``touched`` columns, scored exactly where
    their bound can reach ``threshold`` (and the running ``top_n``-th best).

    ``cnt`` is read only when ``counting`` (otherwise every touched column has a
    candidate, and ``min_matches <= 1``).  Pairs with a large component go to
    ``deferred``: the running ``top_n``-th best leaves them out, so it only prunes
    less.
    """
    min_matches = options.min_matches
    threshold = options.threshold
    top_n = options.top_n
    qn = queries.norm[q]
    colmax = np.empty(queries.offsets[q + 1] - queries.offsets[q], dtype=np.float64)
    n = np.int64(0)  # not the literal 0: callees would compile for it too
    if top_n == 0:
        for c in touched:
            if cancelled(stop):
                break
            if (counting and cnt[c] < min_matches) or _bound(bound[c], qn) < threshold:
                continue
            l = l_start + c
            hit, s, m = _scored(
                q, l, queries, library, options, marker, scratch, threshold, colmax, deferred
            )
            if hit:
                hl[n] = l
                hs[n] = s
                hm[n] = m
                n += 1
        sort_row(hs, hl, hm, n, library.index)
        return n
    # pass 1: the top_n largest bounds (of pairs that may be scored) seed the top list;
    # every bound is made relative, or -1 when the pair cannot become a hit
    cb = np.empty(top_n, dtype=np.float64)
    cc = np.empty(top_n, dtype=np.int64)
    nc = np.int64(0)
    for c in touched:
        if counting and cnt[c] < min_matches:
            bound[c] = -1.0
            continue
        u = _bound(bound[c], qn)  # the index's weights are divided by the library norms
        if u < threshold:
            bound[c] = -1.0
            continue
        bound[c] = u
        if nc == top_n and not better(u, c, cb[nc - 1], cc[nc - 1]):
            continue  # pass 2 checks the pair's filters if it gets that far
        if not _may_score(q, l_start + c, queries, library, options):
            bound[c] = -1.0
            continue
        nc = _insert_candidate(cb, cc, nc, top_n, u, c)
    # pass 2: everything whose bound can still reach the n-th best
    floor = threshold
    if n == top_n and hs[n - 1] > floor:
        floor = hs[n - 1]
    for i in range(touched.shape[0]):
        if (i & 0xFF) == 0 and cancelled(stop):
            return n
        c = touched[i]
        u = bound[c]
        if u < 0.0 or u < floor:
            continue
        l = l_start + c
        hit, s, m = _scored(
            q, l, queries, library, options, marker, scratch, floor, colmax, deferred
        )
        if hit:
            n = insert_hit(hs, hl, hm, n, top_n, s, l, m, library.index)
            if n == top_n and hs[n - 1] > floor:
                floor = hs[n - 1]
    return n


@njit(cache=True, nogil=True)  # nogil: run by several threads, the GUI thread meanwhile
def indexed_rows(
    start, stop_row, queries, library, q_start, l_start, l_stop, options, marker, index, rows,
    stop, dense, deferred,
):  # fmt: skip  # pragma: no cover - numba
    """Rows ``[start, stop_row)`` of :func:`indexed_kernel` into ``rows``; returns the row
    to go on from (``stop_row`` when done or cancelled).

    ``marker`` is :func:`~engine.kernels.score_kinds.kind_marker` of ``options.kind``:
    each score kind compiles only its own scoring code; ``dense``
    (:func:`~engine.kernels.index_bounds.dense_rows`) likewise the dense rows' bounds.
    The span's rows share one set of block-wide bound arrays, each row resetting only
    what it touched.  Pairs with a large component are listed in ``deferred``
    (:mod:`~engine.kernels.deferred`); a row starts only while ``deferred`` has room
    for a whole block of them.
    """
    row_l, row_s, row_m, counts = rows
    nl = l_stop - l_start
    q0, q1 = q_start + start, q_start + stop_row
    longest = longest_in_block(queries, library, q0, q1, l_start, l_stop)
    scratch = new_scratch(longest)
    work = (
        np.zeros(nl, dtype=np.float64),
        np.zeros(nl, dtype=np.int64),
        np.empty(nl, dtype=np.int64),
    )
    for r in range(start, stop_row):
        if cancelled(stop):
            return stop_row
        if not has_room(marker, deferred, nl):
            return r
        q = q_start + r
        if queries.norm[q] == 0.0:
            continue
        counts[r] = _indexed_row(
            q, queries, library, l_start, options, marker, index, scratch, work,
            row_l[r], row_s[r], row_m[r], stop, dense, deferred,
        )  # fmt: skip
    return stop_row


def indexed_kernel(queries, library, q_start, q_stop, l_start, l_stop, options, index, width, stop):
    """Pruned search of queries ``[q_start, q_stop)`` (any score kind) with the exact bound.

    Returns per-row buffers ``(library position, score, matches)`` of ``width``
    columns and the hit count of each row, as :func:`~engine.kernels.rows.scan_kernel`.
    Rows are spread over threads by :func:`~engine.kernels.threads.for_each_span`.
    ``index`` is :func:`library_peak_index` of the block for ``options.kind``.
    """
    rows = row_buffers(q_stop - q_start, width)
    marker = kind_marker(options.kind)
    dense = dense_rows(queries, q_start, q_stop, float(options.tolerance))
    for_each_span(
        deferring_span, q_stop - q_start,
        indexed_rows, queries, library, q_start, l_start, l_stop, options, marker, index, rows,
        stop, dense,
    )  # fmt: skip
    return rows
