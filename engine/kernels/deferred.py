"""Pairs with a large greedy component, scored apart from the pruned search's rows.

Few pairs have a component of more candidates than the greedy cores' scratch
holds (the demo's none; 1,000 MassBank queries x 54,390 in analog mode 240), but
the matchers of such components (:mod:`~engine.kernels.greedy_large`) are about a
fifth of what a first cosine or analog search compiles.  So the row kernel
(:func:`~engine.kernels.peak_index.indexed_rows`) scores with cores that *defer*
such a pair (:class:`~engine.kernels.greedy.DeferLarge`): it lists the pair here
and goes on.  When a span of rows has listed any, :func:`resolve_deferred` --
compiled only on the first search that needs it -- scores them with the resolving
cores, exactly as the rows would have, and adds the hits to their rows (a top-N
row by insertion: the row's pruning left the deferred pairs out of its running
N-th best, so it only scored more, never fewer, pairs).

That first compile happens in the middle of a search: it is said
(:mod:`~engine.kernels.compile_note`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit
from numba.extending import overload

from engine.kernels.cancel import cancelled
from engine.kernels.compile_note import call_noted
from engine.kernels.greedy_large import resolve_large
from engine.kernels.jit import HELPER_JIT_OPTIONS
from engine.kernels.rows import better, insert_hit, sort_row
from engine.kernels.score_kinds import EntropyKind, kind_score
from engine.kernels.spectrum_set import new_scratch

__all__ = ["defer", "deferring_span", "has_room", "new_deferred", "resolve_deferred"]


def new_deferred(block: int) -> tuple[np.ndarray, ...]:
    """Empty list of deferred pairs ``(query, library, code, count)`` for a library block
    of ``block`` spectra: room for the pairs of two rows at least."""
    capacity = 2 * max(int(block), 1)
    empty = np.empty(capacity, np.int64)
    return empty, np.empty_like(empty), np.empty_like(empty), np.zeros(1, np.int64)


def defer(marker, m, deferred, q, l):  # pragma: no cover - typed by the overload
    """Whether the pair ``(q, l)`` was deferred (``m``, the matches the deferring core
    returned, below 0); if so it is listed in ``deferred`` with ``m`` as its code
    (``-candidates`` of a modified-cosine pair, else -1).  A row's pairs always fit
    (:func:`has_room`).  Typed by the score kind's ``marker``: the entropy
    similarity, which never defers, compiles none of it."""


@overload(defer, jit_options=HELPER_JIT_OPTIONS)
def _defer_kind(marker, m, deferred, q, l):
    if getattr(marker, "instance_class", None) is EntropyKind:
        return lambda marker, m, deferred, q, l: False

    def impl(marker, m, deferred, q, l):  # pragma: no cover - numba
        if m >= 0:
            return False
        dq, dl, dc, dn = deferred
        k = dn[0]
        dq[k] = q
        dl[k] = l
        dc[k] = m
        dn[0] = k + 1
        return True

    return impl


def has_room(marker, deferred, block):  # pragma: no cover - typed by the overload
    """Whether ``deferred`` holds ``block`` more pairs (all of one row's, at most);
    always for the entropy similarity."""


@overload(has_room, jit_options=HELPER_JIT_OPTIONS)
def _has_room_kind(marker, deferred, block):
    if getattr(marker, "instance_class", None) is EntropyKind:
        return lambda marker, deferred, block: True

    def impl(marker, deferred, block):  # pragma: no cover - numba
        return deferred[3][0] + block <= deferred[0].shape[0]

    return impl


@njit(cache=True, nogil=True)
def resolve_deferred(deferred, queries, library, q_start, options, marker, rows, stop):
    """Score the pairs of ``deferred`` exactly and add their hits to ``rows``; empties it.

    ``rows`` are the row buffers of queries from ``q_start`` (as the row kernel
    filled them), ``marker`` the score kind's marker; the pairs passed the row's
    filters and bounds already, so only ``min_matches`` and ``threshold`` remain.
    A top-N row takes the hits by insertion; a row of every hit, sorted already,
    gets them merged in order.
    """  # pragma: no cover - numba
    dq, dl, dc, dn = deferred
    total = dn[0]
    longest = np.int64(0)
    for k in range(total):
        q, l = dq[k], dl[k]
        longest = max(longest, queries.offsets[q + 1] - queries.offsets[q])
        longest = max(longest, library.offsets[l + 1] - library.offsets[l])
    scratch = new_scratch(longest)
    hs = np.empty(total, dtype=np.float64)
    hl = np.empty(total, dtype=np.int64)
    hm = np.empty(total, dtype=np.int32)  # the rows' types: sort_row compiles once
    first = 0
    while first < total and not cancelled(stop):
        last = first + 1  # the pairs are listed row by row
        while last < total and dq[last] == dq[first]:
            last += 1
        n = np.int64(0)
        for k in range(first, last):
            q, l = dq[k], dl[k]
            if dc[k] < -1:  # a modified-cosine pair, its candidates counted
                s, m = _modified_resolved(q, l, queries, library, options.tolerance, -dc[k])
            else:
                s, m = kind_score(marker, q, l, queries, library, options.tolerance, scratch)
            if m >= options.min_matches and s >= options.threshold:
                hs[n] = s
                hl[n] = l
                hm[n] = m
                n += 1
        _add_hits(rows, dq[first] - q_start, options.top_n, hs, hl, hm, n, library.index)
        first = last
    dn[0] = 0


@njit(cache=True, nogil=True)
def _modified_resolved(q, l, queries, library, tolerance, candidates):  # pragma: no cover
    """The modified cosine of a pair deferred with its ``candidates`` counted: what
    :func:`~engine.kernels.greedy.modified_pair` gives, without counting them again."""
    la, lb = library.offsets[l], library.offsets[l + 1]
    qa, qb = queries.offsets[q], queries.offsets[q + 1]
    raw, nm = resolve_large(
        library.mz, library.weight, la, lb, queries.mz, queries.weight, qa, qb, tolerance,
        library.precursor_mz[l] - queries.precursor_mz[q], np.int64(2), candidates,
    )  # fmt: skip
    if nm <= 0:
        return 0.0, nm
    return raw / (library.norm[l] * queries.norm[q]), nm


@njit(cache=True, inline="always")
def _add_hits(rows, r, top_n, hs, hl, hm, n, index):  # pragma: no cover - numba
    """Add hits ``hs/hl/hm[:n]`` to row ``r``: into its top list, or merged into its
    sorted list of every hit (the new ones sorted, then both merged from the back)."""
    row_l, row_s, row_m, counts = rows
    have = counts[r]
    if top_n > 0:
        for k in range(n):
            m = np.int64(hm[k])  # as the row kernel passes it: insert_hit compiles once
            have = insert_hit(row_s[r], row_l[r], row_m[r], have, top_n, hs[k], hl[k], m, index)
        counts[r] = have
        return
    sort_row(hs, hl, hm, n, index)
    i = have - 1
    j = n - 1
    for out in range(have + n - 1, -1, -1):
        if j < 0:
            break
        if i >= 0 and better(hs[j], index[hl[j]], row_s[r, i], index[row_l[r, i]]):
            row_s[r, out] = row_s[r, i]
            row_l[r, out] = row_l[r, i]
            row_m[r, out] = row_m[r, i]
            i -= 1
        else:
            row_s[r, out] = hs[j]
            row_l[r, out] = hl[j]
            row_m[r, out] = hm[j]
            j -= 1
    counts[r] = have + n


def deferring_span(start: int, stop_row: int, kernel: Callable, *args) -> None:
    """Run ``kernel`` (:func:`~engine.kernels.peak_index.indexed_rows`) over rows
    ``[start, stop_row)`` and resolve what it defers, for
    :func:`~engine.kernels.threads.for_each_span`.

    ``args`` are the kernel's ``(queries, library, q_start, l_start, l_stop, options,
    marker, index, rows, stop, dense)``; the kernel returns the row to go on from
    when its list of deferred pairs is full.
    """
    queries, library, q_start, l_start, l_stop, options, marker, _index, rows, stop = args[:10]
    deferred = new_deferred(l_stop - l_start)
    row = start
    key = (type(marker), type(args[-1]))  # the score kind's and the dense rows' markers
    while row < stop_row:  # either may compile here on a first search (said)
        row = call_noted(kernel, row, stop_row, *args, deferred, key=key)
        if deferred[3][0]:
            call_noted(
                resolve_deferred, deferred, queries, library, q_start, options, marker, rows,
                stop, key=key,
            )  # fmt: skip
