"""Query rows of a search: every library spectrum of a block scored, hits kept per row.

One row body serves both kinds of search: with ``top_n > 0`` a row keeps a sorted
list of its best hits, otherwise every hit, sorted at the end.  Equal scores are
ranked by the library spectra's original index (``SpectrumSet.index``), the order
of :class:`HitTable`, so a precursor-sorted library gives the same top-N.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.kernels.cancel import cancelled
from engine.kernels.jit import nopython_helper
from engine.kernels.score_kinds import kind_marker, kind_score
from engine.kernels.spectrum_set import longest_in_block, new_scratch, pair_allowed
from engine.kernels.threads import for_each_span

__all__ = [
    "better",
    "compact_rows",
    "insert_hit",
    "row_buffers",
    "row_width",
    "scan_kernel",
    "sort_row",
]


@njit(cache=True, inline="always")
def better(s1, k1, s2, k2):  # pragma: no cover - numba
    """Whether a hit of score ``s1`` and tie key ``k1`` ranks before one of ``s2``, ``k2``."""
    return s1 > s2 or (s1 == s2 and k1 < k2)


@nopython_helper
def insert_hit(hs, hl, hm, n, cap, s, l, m, index):  # pragma: no cover - numba
    """Insert hit ``(s, l, m)`` into a row's sorted top list of length ``n <= cap``.

    Returns the new length.  Sorted by score descending, then ``index[l]``
    ascending (the library's original index); when the list is full, a hit no
    better than the last is dropped.
    """
    key = index[l]
    if n == cap:
        if not better(s, key, hs[n - 1], index[hl[n - 1]]):
            return n
        pos = n - 1
    else:
        pos = n
        n += 1
    while pos > 0 and better(s, key, hs[pos - 1], index[hl[pos - 1]]):
        hs[pos] = hs[pos - 1]
        hl[pos] = hl[pos - 1]
        hm[pos] = hm[pos - 1]
        pos -= 1
    hs[pos] = s
    hl[pos] = l
    hm[pos] = m
    return n


@nopython_helper
def sort_row(hs, hl, hm, n, index):  # pragma: no cover - numba
    """Sort a row's first ``n`` hits: score descending, then library ``index`` ascending.

    A heapsort of the row's positions (the order is total: library indices are
    unique); numba's ``argsort`` would compile a merge sort per key type.
    """
    if n < 2:
        return
    order = np.arange(n)
    for top in range(n // 2 - 1, -1, -1):
        _sift_down(order, top, n, hs, hl, index)
    for end in range(n - 1, 0, -1):
        first = order[0]
        order[0] = order[end]
        order[end] = first
        _sift_down(order, 0, end, hs, hl, index)
    # element by element: an array assigned to a slice compiles numba's shape-mismatch
    # message (its string formatting: about a second of a first run)
    sorted_l, sorted_s, sorted_m = hl[:n][order], hs[:n][order], hm[:n][order]
    for k in range(n):
        hl[k] = sorted_l[k]
        hs[k] = sorted_s[k]
        hm[k] = sorted_m[k]


@njit(cache=True, inline="always")
def _sift_down(order, top, end, hs, hl, index):  # pragma: no cover - numba
    """Restore the heap below ``order[top]``: each parent sorts after its children."""
    while True:
        child = 2 * top + 1
        if child >= end:
            return
        a = order[child]
        if child + 1 < end:
            b = order[child + 1]
            if better(hs[a], index[hl[a]], hs[b], index[hl[b]]):
                child += 1
                a = b
        parent = order[top]
        if not better(hs[parent], index[hl[parent]], hs[a], index[hl[a]]):
            return
        order[top] = a
        order[child] = parent
        top = child


@nopython_helper
def _scan_row(
    q, queries, library, l_start, l_stop, options, marker, scratch, hl, hs, hm, stop
):  # pragma: no cover
    """One query against library ``[l_start, l_stop)``: returns the number of hits written."""
    top_n = options.top_n
    n = np.int64(0)  # not the literal 0: callees would compile for it too
    for l in range(l_start, l_stop):
        if cancelled(stop):
            break
        if not pair_allowed(q, l, queries, library, options):
            continue
        s, m = kind_score(marker, q, l, queries, library, options.tolerance, scratch)
        if m < options.min_matches or not (s >= options.threshold):
            continue
        if top_n > 0:
            n = insert_hit(hs, hl, hm, n, top_n, s, l, m, library.index)
        else:
            hl[n] = l
            hs[n] = s
            hm[n] = m
            n += 1
    if top_n == 0:
        sort_row(hs, hl, hm, n, library.index)
    return n


def row_width(options, l_start: int, l_stop: int) -> int:
    """Hits one query row may hold: ``top_n``, or the whole library block."""
    return options.top_n if options.top_n > 0 else l_stop - l_start


@njit(cache=True, nogil=True)  # nogil: run by several threads, the GUI thread meanwhile
def scan_rows(
    start, stop_row, queries, library, q_start, l_start, l_stop, options, marker, rows, stop
):  # pragma: no cover
    """Rows ``[start, stop_row)`` of :func:`scan_kernel` into ``rows``.

    ``marker``: :func:`~engine.kernels.score_kinds.kind_marker` of ``options.kind``.
    """
    row_l, row_s, row_m, counts = rows
    q0, q1 = q_start + start, q_start + stop_row
    longest = longest_in_block(queries, library, q0, q1, l_start, l_stop)
    scratch = new_scratch(longest)
    for r in range(start, stop_row):
        if cancelled(stop):
            return
        counts[r] = _scan_row(
            q_start + r, queries, library, l_start, l_stop, options, marker, scratch,
            row_l[r], row_s[r], row_m[r], stop,
        )  # fmt: skip


def scan_kernel(queries, library, q_start, q_stop, l_start, l_stop, options, width, stop):
    """Score every pair of queries ``[q_start, q_stop)`` × library ``[l_start, l_stop)``.

    Parallel over queries (:func:`~engine.kernels.threads.for_each_span`).  Returns
    per-row buffers ``(library position, score, matches)`` of ``width`` columns and
    the hit count of each row.
    """
    rows = row_buffers(q_stop - q_start, width)
    marker = kind_marker(options.kind)
    for_each_span(
        scan_rows, q_stop - q_start,
        queries, library, q_start, l_start, l_stop, options, marker, rows, stop,
    )  # fmt: skip
    return rows


def row_buffers(nq: int, width: int) -> tuple[np.ndarray, ...]:
    """Per-row hit buffers ``(library position, score, matches)`` and row hit counts.

    numpy, not numba: the kernels get the same C-contiguous arrays, and a first
    search compiles nothing for them.
    """
    return (
        np.empty((nq, width), dtype=np.int64),
        np.empty((nq, width), dtype=np.float64),
        np.empty((nq, width), dtype=np.int32),
        np.zeros(nq, dtype=np.int64),
    )


#: Rows at most this wide (top-N searches) are compacted by numpy; wider ones (every
#: hit kept: a library block wide) by :func:`_compact_wide`, which reads only the hits.
NUMPY_COMPACT_WIDTH = 256


def compact_rows(
    q_start: int, row_l: np.ndarray, row_s: np.ndarray, row_m: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-row hit buffers as flat ``(query, library, score, matches)`` arrays, in row order."""
    if row_l.shape[1] > NUMPY_COMPACT_WIDTH:
        return _compact_wide(q_start, row_l, row_s, row_m, counts)
    filled = np.arange(row_l.shape[1]) < counts[:, None]  # row-major: row order, then column
    qi = np.repeat(np.arange(q_start, q_start + counts.shape[0], dtype=np.int64), counts)
    return qi, row_l[filled], row_s[filled], row_m[filled]


@njit(cache=True)
def _compact_wide(q_start, row_l, row_s, row_m, counts):  # pragma: no cover - numba
    """:func:`compact_rows` of wide rows."""
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
