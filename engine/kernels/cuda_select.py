"""The top-N selection of a scored tile (device code only).

Import through :mod:`engine.backends.gpu` (the numpy compatibility shim comes first).
"""

from __future__ import annotations

import math

from numba import cuda, float64, int32

from engine.kernels.cuda_topn import ranks_before

__all__ = ["SORT_MAX", "select_kernel"]

#: Longest row (library columns per launch) the top-N selection can sort.
SORT_MAX = 2048


@cuda.jit(device=True)
def _rank(index, base, i, n):  # pragma: no cover
    """Tie key of segment entry ``i``: the original library index (padding ranks last)."""
    if i < n:
        return index[base + i]
    return 1 << 62


@cuda.jit(cache=True)
def select_kernel(
    out_s, out_m, segs, min_matches, threshold, top_n, index, l_first,
    hit_r, hit_c, hit_s, hit_m, counts, running,
):  # pragma: no cover  # fmt: skip
    """Per-row, per-segment hits of a scored block: one thread block per (row, segment).

    Grid ``(rows, len(segs) - 1)``; segment ``g`` is columns
    ``segs[g]:segs[g + 1]`` (at most :data:`SORT_MAX` of them).  A column is a
    hit when ``matches >= min_matches`` (>= 1), ``score >= 0`` and
    ``score >= threshold``.  With ``top_n > 0`` and more hits than that in the
    segment, it is bitonic-sorted in shared memory by (score descending, original
    library index ``index[l_first + column]`` ascending) and the first ``top_n``
    are kept.  Hits are appended to the
    ``hit_*`` arrays at a slot reserved with one atomic add on ``counts[0]`` per
    (row, segment).

    With ``running`` (a :class:`~engine.kernels.cuda_topn.RunningTop` that is
    ``enabled``) a hit also needs a score of at least the row's current floor
    (``running.floor[running.q_first + r]``, the query's N-th best so far), and the
    hits of (row, segment) go to the fixed places ``(r * segments + g) * top_n + i``
    with their number in ``running.seg_n[r * segments + g]`` (for the merge kernel).
    """
    r = cuda.blockIdx.x
    g = cuda.blockIdx.y
    c0 = segs[g]
    ncols = segs[g + 1] - c0
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    fixed = running.enabled
    cell = r * cuda.gridDim.y + g
    if fixed:
        floor = running.floor[running.q_first + r]
        if floor > threshold:
            threshold = floor
    keys = cuda.shared.array(SORT_MAX, float64)
    idx = cuda.shared.array(SORT_MAX, int32)
    shared_i = cuda.shared.array(2, int32)
    if tid == 0:
        shared_i[0] = 0
    cuda.syncthreads()
    mine = 0
    for c in range(c0 + tid, c0 + ncols, nt):
        s = out_s[r, c]
        if out_m[r, c] >= min_matches and s >= 0.0 and s >= threshold:
            mine += 1
    if mine > 0:
        cuda.atomic.add(shared_i, 0, mine)
    cuda.syncthreads()
    count = shared_i[0]
    cuda.syncthreads()
    if fixed and tid == 0:
        running.seg_n[cell] = min(count, top_n)
    if count == 0:
        return
    if top_n <= 0 or count <= top_n:
        if tid == 0:
            shared_i[1] = cell * top_n if fixed else cuda.atomic.add(counts, 0, count)
            shared_i[0] = 0
        cuda.syncthreads()
        base = shared_i[1]
        for c in range(c0 + tid, c0 + ncols, nt):
            s = out_s[r, c]
            m = out_m[r, c]
            if m >= min_matches and s >= 0.0 and s >= threshold:
                pos = base + cuda.atomic.add(shared_i, 0, 1)
                if pos < hit_r.shape[0]:
                    hit_r[pos] = r
                    hit_c[pos] = c
                    hit_s[pos] = s
                    hit_m[pos] = m
        return
    # more hits than top_n: sort the segment (padded to a power of two)
    size = 1
    while size < ncols:
        size *= 2
    for c in range(tid, size, nt):
        if c < ncols:
            s = out_s[r, c0 + c]
            hit = out_m[r, c0 + c] >= min_matches and s >= 0.0 and s >= threshold
            keys[c] = s if hit else -math.inf
        else:
            keys[c] = -math.inf
        idx[c] = c
    cuda.syncthreads()
    k = 2
    while k <= size:
        j = k // 2
        while j > 0:
            for t in range(tid, size, nt):
                p = t ^ j
                if p > t:
                    first = ranks_before(
                        keys[t], _rank(index, l_first + c0, idx[t], ncols),
                        keys[p], _rank(index, l_first + c0, idx[p], ncols),
                    )  # fmt: skip
                    if ((t & k) == 0) != first:
                        kt = keys[t]
                        keys[t] = keys[p]
                        keys[p] = kt
                        it = idx[t]
                        idx[t] = idx[p]
                        idx[p] = it
            cuda.syncthreads()
            j //= 2
        k *= 2
    if tid == 0:
        shared_i[1] = cell * top_n if fixed else cuda.atomic.add(counts, 0, top_n)
    cuda.syncthreads()
    base = shared_i[1]
    for t in range(tid, top_n, nt):
        pos = base + t
        if pos < hit_r.shape[0]:
            c = c0 + idx[t]
            hit_r[pos] = r
            hit_c[pos] = c
            hit_s[pos] = out_s[r, c]
            hit_m[pos] = out_m[r, c]
