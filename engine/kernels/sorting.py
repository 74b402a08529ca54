"""Stable argsorts for the kernels: each gives ``np.argsort(keys, kind="stable")``.

* :func:`stable_order`, for the short arrays of one spectrum, quick to compile:
  ``np.argsort(kind="mergesort")`` in nopython code compiles numba's generic merge
  sort and its NaN-aware comparisons (~1.5 s of a first search for each key type);
  this one is a few plain loops.
* :func:`radix_order` and :func:`parallel_radix_order` (:func:`stable_argsort`
  for long arrays), for the arrays of a peak index: an LSD radix sort of the
  keys' IEEE bits, eight bits a pass, a pass whose digit is the same for every
  key skipped (float32 values widened to float64 leave the low bytes zero).  The
  first runs in one thread (inside a ``prange`` of its caller), the second on
  numba's thread count, a chunk of keys a thread (plain ``nogil`` kernels, like
  the search's: no parfor compilation, no threading-layer lock).

All give the same order: ascending, -0.0 equal to 0.0, NaN last, equal keys in
their original order.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit

from engine.kernels.jit import nopython_helper
from engine.kernels.threads import for_each_span

__all__ = [
    "PARALLEL_SORT_KEYS", "parallel_radix_order", "radix_order", "stable_argsort", "stable_order",
]  # fmt: skip

#: Runs this long are sorted by insertion before they are merged.
_RUN = 16


@njit(cache=True, inline="always")
def _before(a, b):  # pragma: no cover - numba
    """``a`` sorts strictly before ``b`` (NaN after every number, as numpy sorts)."""
    return a < b or (b != b and a == a)


@nopython_helper
def stable_order(keys):  # pragma: no cover - numba
    """``np.argsort(keys, kind="stable")`` of a 1-D array, as int64 positions."""
    n = keys.shape[0]
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        order[i] = i
    for start in range(0, n, _RUN):  # insertion sort of each run (stable)
        stop = min(start + _RUN, n)
        for i in range(start + 1, stop):
            item = order[i]
            key = keys[item]
            j = i
            while j > start and _before(key, keys[order[j - 1]]):
                order[j] = order[j - 1]
                j -= 1
            order[j] = item
    if n <= _RUN:
        return order
    other = np.empty(n, dtype=np.int64)
    width = _RUN
    while width < n:  # bottom-up merges; on a tie the left run's item goes first
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            for k in range(lo, hi):
                if j < hi and (i >= mid or _before(keys[order[j]], keys[order[i]])):
                    other[k] = order[j]
                    j += 1
                else:
                    other[k] = order[i]
                    i += 1
        order, other = other, order
        width *= 2
    return order


_TOP = np.uint64(1) << np.uint64(63)
_DIGIT = np.uint64(255)
#: A NaN's sortable bits: after +inf's, the same for every NaN (so they keep their order).
_NAN_BITS = np.uint64(0xFFF8000000000000)
#: Keys per thread below which :func:`parallel_radix_order` uses fewer threads.
_KEYS_PER_THREAD = 1 << 16
#: From this many keys on, :func:`stable_argsort` sorts on several threads (compiled
#: kernels); below it numpy's stable sort, which compiles nothing, takes < 0.05 s.
PARALLEL_SORT_KEYS = 1 << 18


@njit(cache=True, inline="always")
def _sortable(u, x):  # pragma: no cover - numba
    """Bits ``u`` of float64 ``x + 0.0`` mapped so that unsigned order is numpy's order."""
    if x != x:
        return _NAN_BITS
    return ~u if u & _TOP else u | _TOP


@njit(cache=True, nogil=True)
def radix_order(keys):  # pragma: no cover - numba
    """``np.argsort(keys, kind="stable")`` of a 1-D float array, in one thread."""
    m = keys.shape[0]
    widened = np.empty(m, dtype=np.float64)
    bits = widened.view(np.uint64)
    order = np.empty(m, dtype=np.int64)
    for i in range(m):
        x = np.float64(keys[i]) + 0.0  # + 0.0: -0.0 sorts with 0.0, as compared
        widened[i] = x
        bits[i] = _sortable(bits[i], x)
        order[i] = i
    if m < 2:
        return order
    other_bits = np.empty(m, dtype=np.uint64)
    other_order = np.empty(m, dtype=np.int64)
    counts = np.empty(257, dtype=np.int64)
    for shift in range(0, 64, 8):
        s = np.uint64(shift)
        counts[:] = 0
        for i in range(m):
            counts[((bits[i] >> s) & _DIGIT) + 1] += 1
        if counts[1:].max() == m:
            continue
        for d in range(256):
            counts[d + 1] += counts[d]
        for i in range(m):
            d = (bits[i] >> s) & _DIGIT
            p = counts[d]
            other_bits[p] = bits[i]
            other_order[p] = order[i]
            counts[d] = p + 1
        bits, other_bits = other_bits, bits
        order, other_order = other_order, order
    return order


@njit(cache=True, nogil=True)
def _sortable_span(start, stop, keys, widened, order):  # pragma: no cover - numba
    """Keys ``[start, stop)`` as sortable bits (:func:`_sortable`, written into
    ``widened``'s bytes), and their positions."""
    bits = widened.view(np.uint64)
    for i in range(start, stop):
        x = np.float64(keys[i]) + 0.0
        widened[i] = x
        bits[i] = _sortable(bits[i], x)
        order[i] = i


@njit(cache=True, nogil=True)
def _count_span(start, stop, bits, shift, counts, size):  # pragma: no cover - numba
    """``counts[c, d]``: keys of chunk ``c`` (``size`` keys each) whose digit is ``d``,
    for chunks ``[start, stop)``."""
    m = bits.shape[0]
    s = np.uint64(shift)
    for c in range(start, stop):
        counts[c, :] = 0
        for i in range(c * size, min(m, (c + 1) * size)):
            counts[c, (bits[i] >> s) & _DIGIT] += 1


@njit(cache=True, nogil=True)
def _scatter_span(
    start, stop, bits, order, shift, starts, size, to_bits, to_order
):  # pragma: no cover - numba
    """Chunks ``[start, stop)``' keys to their places: ``starts[c, d]``, the first of
    chunk ``c``'s keys of digit ``d``, after those of smaller digits and earlier chunks."""
    m = bits.shape[0]
    s = np.uint64(shift)
    for c in range(start, stop):
        for i in range(c * size, min(m, (c + 1) * size)):
            d = (bits[i] >> s) & _DIGIT
            p = starts[c, d]
            to_bits[p] = bits[i]
            to_order[p] = order[i]
            starts[c, d] = p + 1


def parallel_radix_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` of a 1-D float array, on numba's thread count.

    Each pass counts the digits of consecutive chunks of the keys at once (a
    thread a chunk, :func:`~engine.kernels.threads.for_each_span`), then moves
    each chunk's keys to their places in their digit's run, after those of the
    chunks before: stable, as in one thread.

    Parameters
    ----------
    keys : ndarray
        1-D, float32 or float64.

    Returns
    -------
    ndarray of int64
    """
    keys = np.ascontiguousarray(keys)
    m = len(keys)
    threads = numba.get_num_threads()
    chunks = max(1, min(threads, m // _KEYS_PER_THREAD))
    size = max(1, -(-m // chunks))
    widened, order = np.empty(m, dtype=np.float64), np.empty(m, dtype=np.int64)
    for_each_span(_sortable_span, m, keys, widened, order, max_span=size)
    if m < 2:
        return order
    bits = widened.view(np.uint64)
    counts = np.empty((chunks, 256), dtype=np.int64)
    to_bits, to_order = np.empty_like(bits), np.empty_like(order)
    for shift in range(0, 64, 8):
        for_each_span(_count_span, chunks, bits, shift, counts, size, max_span=1)
        if counts.sum(axis=0).max() == m:  # one digit for every key: nothing moves
            continue
        flat = counts.T.ravel()  # digit-major: a digit's run holds chunk 0's keys first
        starts = np.ascontiguousarray((np.cumsum(flat) - flat).reshape(256, chunks).T)
        for_each_span(
            _scatter_span, chunks, bits, order, shift, starts, size, to_bits, to_order,
            max_span=1,
        )  # fmt: skip
        bits, to_bits = to_bits, bits
        order, to_order = to_order, order
    return order


def stable_argsort(keys: np.ndarray) -> np.ndarray:
    """:func:`parallel_radix_order` of ``keys`` from :data:`PARALLEL_SORT_KEYS` keys on,
    numpy's stable argsort below (the same order, nothing compiled)."""
    if len(keys) >= PARALLEL_SORT_KEYS:
        return parallel_radix_order(keys)
    return np.argsort(keys, kind="stable")
