"""numba CUDA kernels of the exact greedy cosine (device code only).

The logic mirrors :mod:`engine.kernels.greedy` operation for operation, so that
the GPU selects the same peak pairs as the CPU and as matchms, and adds the
products in the same order:

* the library spectrum is ``A`` (matchms ``reference``, the outer loop), the
  query spectrum ``B``;
* plain cosine: connected components of the candidate graph are found in one
  merge pass; components of one or two candidates are resolved directly, those
  of up to :data:`K` candidates by an insertion sort in per-thread scratch;
* modified cosine: when the shift exceeds the tolerance, all zero-shift and
  shifted candidates of the pair (up to :data:`K`) are sorted in the scratch;
* entropy similarity: the two-pointer walk of
  :func:`engine.kernels.entropy.entropy_core` (no scratch, never flagged).

Anything larger is **never approximated**: the pair is flagged (after an exact
upper-bound test, see :func:`score_kernel`) and the host rescores it exactly
with the CPU core.

This module imports ``numba.cuda``; import it only through
:mod:`engine.backends.gpu`, which applies the numpy compatibility shim first.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from numba import cuda, float64, int32, uint8

from engine.kernels.cuda_bound import NOT_SCORED, bound_passes
from engine.kernels.cuda_pair import (
    K3,
    K,
    entropy_pair,
    heavy_matched,
    pair_score,
    precursor_ok,
    query_heavy_matched,
)
from engine.kernels.spectrum_set import ENTROPY, MODIFIED_COSINE

__all__ = [
    "BOUNDS_IN_BUFFER",
    "BOUNDS_LISTED",
    "FLAGGED",
    "K",
    "NOT_SCORED",
    "SMALL_QUERY",
    "SORT_MAX",
    "Pruning",
    "TileOutput",
    "score_kernel",
    "select_kernel",
]

#: Queries with at most this many peaks are staged in shared memory.
SMALL_QUERY = 256
#: Longest row (library columns per launch) the top-N selection can sort.
SORT_MAX = 2048

#: ``Pruning.bounded`` modes: bounds in the score buffer; survivors listed.
BOUNDS_IN_BUFFER = 1
BOUNDS_LISTED = 2

#: Score sentinels written for pairs that are not (yet) scored (and ``NOT_SCORED``).
FLAGGED = -2.0


class Pruning(NamedTuple):
    """The exact heavy-peak pruning of :func:`score_kernel` (device arrays and scalars).

    Attributes
    ----------
    enabled : bool
        Skip library spectra none of whose heavy peaks has a partner.
    threshold : float
        The score threshold the heavy peaks were chosen for.
    heavy, heavy_count : device arrays
        :func:`~engine.kernels.heavy.heavy_peaks` of the library.
    query_enabled : bool
        The same test the other way round, with the queries' heavy peaks.
    query_heavy, query_heavy_count : device arrays
        :func:`~engine.kernels.heavy.heavy_peaks` of the queries.
    bounded : int
        0: no bounds.  :data:`BOUNDS_IN_BUFFER`: the score buffer holds each
        pair's upper bound (:func:`~engine.kernels.cuda_bound.bound_kernel`);
        pairs whose bound is under ``threshold`` are not scored (any score kind).
        :data:`BOUNDS_LISTED`: the bound kernel already wrote ``NOT_SCORED`` for
        those and listed the others in ``pairs``; only the listed pairs are scored.
    pairs : device array of int32
        Listed pairs as ``row * ncols + column`` (``BOUNDS_LISTED``).
    n_pairs : device array of int32
        ``n_pairs[0]``: how many are listed.
    use_floor, floor : bool, device array of float64
        Pairs flagged for the host's rescoring must also have an upper bound that
        reaches ``floor[q]`` (a running top-N's N-th best score of query ``q``).
    max_work : int
        With ``BOUNDS_LISTED``, a listed cosine pair whose peak counts multiply to
        more than this (> 0) is flagged for the host's exact rescoring at once: one
        GPU thread would hold up its whole launch with that merge.
    """

    enabled: bool
    threshold: float
    heavy: Any
    heavy_count: Any
    query_enabled: bool
    query_heavy: Any
    query_heavy_count: Any
    bounded: int = 0
    pairs: Any = None
    n_pairs: Any = None
    use_floor: bool = False
    floor: Any = None
    max_work: int = 0


class TileOutput(NamedTuple):
    """Where :func:`score_kernel` writes: scores, matches, flagged pairs and counters."""

    scores: Any
    matches: Any
    flagged_rows: Any
    flagged_cols: Any
    counts: Any


@cuda.jit(cache=True)
def score_kernel(
    queries, library, q_first, cols, ncols, l_first, options, pruning, out
):  # pragma: no cover
    r"""Score query rows × library columns, one thread per pair.

    ``queries`` and ``library`` are :class:`~engine.kernels.spectrum_set.SpectrumSet`\ s
    of device arrays, ``options`` a :class:`~engine.kernels.spectrum_set.SearchOptions`
    (tolerance, score kind, precursor window, ion mode), ``pruning`` a :class:`Pruning` and
    ``out`` a :class:`TileOutput`.  Grid ``(ceil(ncols / threads), rows)``.  Row ``r`` is query
    ``q_first + r``; thread ``c < ncols`` scores library spectrum ``cols[c]`` and
    writes ``out_s[r, cols[c] - l_first]`` / ``out_m[...]`` (so columns keep the
    library order although ``cols`` may be sorted by peak count).  ``out_s`` may
    be float64 or float32 (rounded once, at the store) and ``out_m`` any signed
    integer type that holds the peak counts; the buffers may be larger than the
    block (fixed per-slot buffers, no per-launch slicing).

    A pair outside the precursor window gets ``NOT_SCORED`` and 0 matches.  A
    pair with a component too big for the scratch is first bounded: the exact
    part plus the sum of all candidate products of the big components is an
    upper bound of the score; if ``prune`` and the bound is under ``threshold``
    the pair cannot be a hit (``NOT_SCORED``), otherwise it gets ``FLAGGED``
    and ``-1`` matches and is appended to ``ovf_r``/``ovf_c`` (their number is
    ``counts[1]``, which may exceed the buffers' length) for the host's exact
    rescoring.

    With ``prune``, ``heavy[l, :hcnt[l]]`` are the m/z of the heaviest peaks of
    library spectrum ``l`` whose removal leaves less than ``threshold**2`` of
    its squared norm (``hcnt[l] < 0``: no such short list).  By Cauchy-Schwarz
    a pair in which none of them has a candidate partner scores below the
    threshold, so it is skipped after a few binary searches (exact pruning).
    With ``qprune`` too, the same test runs the other way round with the
    query's heavy peaks ``qheavy[q, :qhcnt[q]]`` against the library spectrum
    (the bound is symmetric), with the merge's own float comparisons.

    With ``bounded == BOUNDS_IN_BUFFER``, ``out_s[r, col]`` holds the pair's raw
    upper bound on entry, and pairs whose bound cannot reach ``threshold`` get
    ``NOT_SCORED`` before any merge (:func:`~engine.kernels.cuda_bound.bound_passes`).
    With ``BOUNDS_LISTED`` the threads of the grid (any shape) score the listed
    pairs ``pairs[:n_pairs[0]]`` (``row * ncols + column``, columns relative to
    ``l_first``) in a grid-stride loop; ``cols`` is not read.
    """
    q_mz, q_w, q_off = queries.mz, queries.weight, queries.offsets
    bounded, pairs, n_pairs = pruning.bounded, pruning.pairs, pruning.n_pairs
    sq_mz = cuda.shared.array(SMALL_QUERY, float64)
    sq_w = cuda.shared.array(SMALL_QUERY, float64)
    if bounded == BOUNDS_LISTED:  # a grid-stride loop over the listed pairs
        i = (cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x) * cuda.blockDim.x
        i += cuda.threadIdx.x
        stride = cuda.gridDim.x * cuda.gridDim.y * cuda.blockDim.x
        n = n_pairs[0]
        while i < n:
            r = pairs[i] // ncols
            col = pairs[i] - r * ncols
            q = q_first + r
            _score_one(
                queries, library, r, col, l_first + col, q, q_off[q], q_off[q + 1], False,
                sq_mz, sq_w, options, pruning, out,
            )  # fmt: skip
            i += stride
        return
    r = cuda.blockIdx.y
    q = q_first + r
    c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    qa = q_off[q]
    qb = q_off[q + 1]
    staged = qb - qa <= SMALL_QUERY
    if staged:
        for t in range(cuda.threadIdx.x, qb - qa, cuda.blockDim.x):
            sq_mz[t] = q_mz[qa + t]
            sq_w[t] = q_w[qa + t]
        cuda.syncthreads()
    if c >= ncols:
        return
    l = cols[c]
    _score_one(
        queries, library, r, l - l_first, l, q, qa, qb, staged, sq_mz, sq_w, options, pruning,
        out,
    )  # fmt: skip


@cuda.jit(device=True)
def _score_one(
    queries, library, r, col, l, q, qa, qb, staged, sq_mz, sq_w, options, pruning, out
):  # pragma: no cover
    """Score query ``q`` (row ``r``) against library spectrum ``l`` (column ``col``) into ``out``.

    ``staged``: the query's peaks are in ``sq_mz``/``sq_w`` (shared memory).
    """
    q_mz, q_w, q_off, q_norm, q_prec, _, q_pol = queries
    l_mz, l_w, l_off, l_norm, l_prec, _, l_pol = library
    tol = options.tolerance
    modified = options.kind == MODIFIED_COSINE
    entropy = options.kind == ENTROPY
    ptol = options.precursor_tolerance
    ppm = options.ppm
    prune, threshold, heavy, hcnt = (
        pruning.enabled,
        pruning.threshold,
        pruning.heavy,
        pruning.heavy_count,
    )
    qprune, qheavy, qhcnt = pruning.query_enabled, pruning.query_heavy, pruning.query_heavy_count
    bounded = pruning.bounded
    out_s, out_m, ovf_r, ovf_c, counts = out
    nqp = qb - qa
    qp = q_prec[q]
    lp = l_prec[l]
    if not precursor_ok(qp, lp, ptol, ppm) or (options.same_polarity and q_pol[q] * l_pol[l] < 0):
        out_s[r, col] = NOT_SCORED
        out_m[r, col] = 0
        return
    den = l_norm[l] * q_norm[q]
    if den == 0.0:
        out_s[r, col] = 0.0
        out_m[r, col] = 0
        return
    nlp = l_off[l + 1] - l_off[l]
    if bounded == BOUNDS_IN_BUFFER and not bound_passes(out_s[r, col], den, threshold, nqp, nlp):
        out_s[r, col] = NOT_SCORED
        out_m[r, col] = 0
        return
    if bounded == BOUNDS_LISTED and 0 < pruning.max_work < nqp * nlp and not entropy:
        _flag(r, col, out)  # a long merge for one thread: the host's threads take it
        return
    if entropy:
        if staged:
            raw, nm = entropy_pair(sq_mz, sq_w, 0, nqp, l_mz, l_w, l_off[l], l_off[l + 1], tol)
        else:
            raw, nm = entropy_pair(q_mz, q_w, qa, qb, l_mz, l_w, l_off[l], l_off[l + 1], tol)
        out_s[r, col] = raw if nm > 0 else 0.0
        out_m[r, col] = nm
        return
    if prune:
        if staged:
            keep = heavy_matched(heavy, hcnt, l, tol, modified, lp - qp, sq_mz, 0, nqp)
        else:
            keep = heavy_matched(heavy, hcnt, l, tol, modified, lp - qp, q_mz, qa, qb)
        if keep and qprune:
            keep = query_heavy_matched(
                qheavy, qhcnt, q, tol, modified, lp - qp, l_mz, l_off[l], l_off[l + 1]
            )
        if not keep:
            out_s[r, col] = NOT_SCORED
            out_m[r, col] = 0
            return
    sp = cuda.local.array(K3, float64)
    si = cuda.local.array(K, int32)
    sj = cuda.local.array(K, int32)
    ua = cuda.local.array(K, uint8)
    ub = cuda.local.array(K, uint8)
    if staged:
        raw, nm, osum, oflag = pair_score(
            l_mz,
            l_w,
            l_off[l],
            l_off[l + 1],
            lp,
            sq_mz,
            sq_w,
            0,
            nqp,
            qp,
            tol,
            modified,
            sp,
            si,
            sj,
            ua,
            ub,
        )
    else:
        raw, nm, osum, oflag = pair_score(
            l_mz,
            l_w,
            l_off[l],
            l_off[l + 1],
            lp,
            q_mz,
            q_w,
            qa,
            qb,
            qp,
            tol,
            modified,
            sp,
            si,
            sj,
            ua,
            ub,
        )
    if oflag:
        bound = (raw + osum) / den
        floor = threshold
        if pruning.use_floor and pruning.floor[q] > floor:
            floor = pruning.floor[q]
        if (prune or pruning.use_floor) and bound * (1.0 + 1e-9) + 1e-12 < floor:
            out_s[r, col] = NOT_SCORED
            out_m[r, col] = 0
            return
        _flag(r, col, out)
        return
    if nm == 0:
        out_s[r, col] = 0.0
        out_m[r, col] = 0
        return
    out_s[r, col] = raw / den
    out_m[r, col] = nm


@cuda.jit(device=True)
def _flag(r, col, out):  # pragma: no cover - device code
    """Mark pair (r, col) for the host's exact rescoring and list it."""
    out_s, out_m, ovf_r, ovf_c, counts = out
    out_s[r, col] = FLAGGED
    out_m[r, col] = -1
    slot = cuda.atomic.add(counts, 1, 1)
    if slot < ovf_r.shape[0]:
        ovf_r[slot] = r
        ovf_c[slot] = col


@cuda.jit(device=True)
def _rank(index, base, i, n):  # pragma: no cover
    """Tie key of segment entry ``i``: the original library index (padding ranks last)."""
    if i < n:
        return index[base + i]
    return 1 << 62


@cuda.jit(device=True)
def _before(ka, ia, kb, ib):  # pragma: no cover
    return ka > kb or (ka == kb and ia < ib)


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
                    first = _before(
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
