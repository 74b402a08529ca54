"""numba CUDA kernels of the running top-N: each query's best hits kept on the device.

A search with a top-N keeps, per query, its best ``top_n`` hits found so far in
an :class:`Accumulator` on the device.  After each tile the selection kernel
(:func:`~engine.kernels.cuda_kernels.select_kernel`) leaves each (row, column
segment)'s best hits at fixed places, and :func:`merge_top_kernel` merges them
into the accumulator, ordered as everywhere (score descending, then the
library's original index).  The N-th best score so far is the query's
``floor``: a pair whose exact upper bound is below it cannot enter the top N, so
the bound and score kernels skip it, and the host receives only the final hits.

Import through :mod:`engine.backends.gpu` (the numpy compatibility shim comes first).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from numba import cuda, float64, int32, int64

__all__ = [
    "MAX_SEGMENTS",
    "MERGE_THREADS",
    "TILE_SEGMENTS_MAX",
    "Accumulator",
    "RunningTop",
    "merge_top_kernel",
    "ranks_before",
]

#: Threads per block of :func:`merge_top_kernel`; ``top_n`` may not exceed it.
MERGE_THREADS = 256
#: Most column segments :func:`merge_top_kernel` merges in one pass (a tile's
#: segments are merged in passes of at most this many).
MAX_SEGMENTS = 128
#: Entries one pass sorts (``top_n * (segments of the pass + 1)`` must fit).
MERGE_MAX = 2048
#: Most column segments of one tile: the selection's grid has a block per (row,
#: segment), and a grid's y dimension holds at most 65,535.
TILE_SEGMENTS_MAX = 32768
#: Shared-memory slots of the segment starts (a compile-time constant for numba).
_STARTS = MAX_SEGMENTS + 1


class Accumulator(NamedTuple):
    """Each query's best hits so far (device arrays, one row per query).

    Attributes
    ----------
    score : float64 (queries, top_n)
    library : int32 (queries, top_n)
        Library positions (as the backend's columns, not original indexes).
    matches : int32 (queries, top_n)
    count : int32 (queries,)
        Entries in use, at most ``top_n``, best first.
    floor : float64 (queries,)
        The threshold, raised to the N-th best score once a query has N hits.
    """

    score: Any
    library: Any
    matches: Any
    count: Any
    floor: Any


class RunningTop(NamedTuple):
    """What the selection kernel needs of the running top-N (``enabled`` False: unused).

    Attributes
    ----------
    enabled : bool
    q_first : int
        Query of the tile's row 0.
    floor : device array of float64
        :attr:`Accumulator.floor`.
    seg_n : device array of int32
        Receives the number of hits of each (row, segment), ``r * segments + g``.
    """

    enabled: bool
    q_first: int
    floor: Any
    seg_n: Any


@cuda.jit(device=True)
def ranks_before(ka, ra, kb, rb):  # pragma: no cover - device code
    """Whether entry a ranks before entry b: higher score, then lower original index."""
    return ka > kb or (ka == kb and ra < rb)


@cuda.jit(cache=True)
def merge_top_kernel(
    hit_c, hit_s, hit_m, seg_n, segments, top_n, q_first, l_first, index, acc
):  # pragma: no cover
    """Merge a tile's per-(row, segment) hits into the running top-N of its queries.

    Grid ``(rows,)``, :data:`MERGE_THREADS` threads.  Row ``r`` (query
    ``q_first + r``) has ``seg_n[r * segments + g]`` hits of segment ``g`` at
    ``(r * segments + g) * top_n + i`` of ``hit_*`` (``hit_c``: tile columns,
    library position ``l_first + column``).  In passes over consecutive segments
    (as many as ``top_n * (segments + 1) <= MERGE_MAX`` allows, at most
    :data:`MAX_SEGMENTS`), they and the query's entries of ``acc`` (an
    :class:`Accumulator`) are sorted in shared memory by score (descending) and
    original library index ``index[position]`` (ascending) and the first
    ``top_n`` become the new entries; with ``top_n`` entries the floor rises to
    the last one's score.
    """
    keys = cuda.shared.array(MERGE_MAX, float64)
    rank = cuda.shared.array(MERGE_MAX, int64)
    slot = cuda.shared.array(MERGE_MAX, int32)
    start = cuda.shared.array(_STARTS, int32)
    r = cuda.blockIdx.x
    q = q_first + r
    tid = cuda.threadIdx.x
    per_pass = min(MAX_SEGMENTS, MERGE_MAX // top_n - 1)
    for g0 in range(0, segments, per_pass):
        n_seg = min(per_pass, segments - g0)
        if tid == 0:
            start[0] = acc.count[q]
            for g in range(n_seg):
                start[g + 1] = start[g] + seg_n[r * segments + g0 + g]
        cuda.syncthreads()
        if start[n_seg] > start[0]:  # new hits for this query (the same for every thread)
            _merge_pass(hit_c, hit_s, hit_m, g0, n_seg, segments, top_n, l_first, index, acc,
                        r, q, keys, rank, slot, start)  # fmt: skip
        cuda.syncthreads()  # acc and start are read by the next pass


@cuda.jit(device=True)
def _merge_pass(
    hit_c, hit_s, hit_m, g0, n_seg, segments, top_n, l_first, index, acc, r, q, keys, rank,
    slot, start,
):  # pragma: no cover - device code  # fmt: skip
    """One pass of :func:`merge_top_kernel`: segments ``g0:g0 + n_seg`` of row ``r``."""
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    n_acc = start[0]
    total = start[n_seg]
    size = 1
    while size < total:
        size *= 2
    for t in range(tid, size, nt):
        if t < n_acc:
            keys[t] = acc.score[q, t]
            rank[t] = index[acc.library[q, t]]
            slot[t] = -1 - t
        elif t < total:
            g = 0
            while start[g + 1] <= t:
                g += 1
            pos = (r * segments + g0 + g) * top_n + (t - start[g])
            keys[t] = hit_s[pos]
            rank[t] = index[l_first + hit_c[pos]]
            slot[t] = pos
        else:
            keys[t] = -math.inf
            rank[t] = 1 << 62
            slot[t] = 0
    cuda.syncthreads()
    k = 2
    while k <= size:  # bitonic sort, best first
        j = k // 2
        while j > 0:
            for t in range(tid, size, nt):
                p = t ^ j
                if p > t:
                    if ((t & k) == 0) != ranks_before(keys[t], rank[t], keys[p], rank[p]):
                        kt = keys[t]
                        keys[t] = keys[p]
                        keys[p] = kt
                        rt = rank[t]
                        rank[t] = rank[p]
                        rank[p] = rt
                        st = slot[t]
                        slot[t] = slot[p]
                        slot[p] = st
            cuda.syncthreads()
            j //= 2
        k *= 2
    keep = min(total, top_n)
    score = 0.0
    lib = 0
    nm = 0
    if tid < keep:  # read every kept entry before any is overwritten
        score = keys[tid]
        s = slot[tid]
        if s < 0:
            lib = acc.library[q, -1 - s]
            nm = acc.matches[q, -1 - s]
        else:
            lib = l_first + hit_c[s]
            nm = hit_m[s]
    cuda.syncthreads()
    if tid < keep:
        acc.score[q, tid] = score
        acc.library[q, tid] = lib
        acc.matches[q, tid] = nm
    if tid == 0:
        acc.count[q] = keep
        if keep == top_n and keys[top_n - 1] > acc.floor[q]:
            acc.floor[q] = keys[top_n - 1]
