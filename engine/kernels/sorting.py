"""A stable argsort for the kernels, quick to compile.

``np.argsort(kind="mergesort")`` in nopython code compiles numba's generic merge
sort and its NaN-aware comparisons (~1.5 s of a first search for each key type);
:func:`stable_order` gives the same order (ascending, equal keys in their
original order, NaN last) from a few plain loops.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.kernels.jit import nopython_helper

__all__ = ["stable_order"]

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
