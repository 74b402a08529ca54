"""Sliding-window maxima: the largest weight of a run of peaks that only moves up.

The bounds of profile-mode spectra take each peak's largest partner in its
tolerance window; windows of sorted peaks only move up, so a queue of the peaks
no later peak outweighs gives each window's maximum in O(1) amortised.
"""

from __future__ import annotations

from numba import njit

__all__ = ["window_push", "window_start"]


@njit(cache=True, nogil=True, inline="always")
def window_push(queue, head, tail, weight, k):  # pragma: no cover - numba
    """Peak ``k`` enters the window; returns the new ``tail``.

    ``queue[head:tail]`` holds the window's peaks that no later peak outweighs,
    weights strictly descending: ``weight[queue[head]]`` is the window's largest.
    """
    while tail > head and weight[queue[tail - 1]] <= weight[k]:
        tail -= 1
    queue[tail] = k
    return tail + 1


@njit(cache=True, nogil=True, inline="always")
def window_start(queue, head, tail, first):  # pragma: no cover - numba
    """Peaks before ``first`` leave the window; returns the new ``head``."""
    while head < tail and queue[head] < first:
        head += 1
    return head
