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
upper-bound test, see :func:`score_kernel`).  With bounds listed,
:func:`pair_list_kernel` scores the tiles' flagged pairs, many tiles at once,
resolving components of up to a thousand peaks a side in a global scratch; the
host rescores what is left exactly with the CPU core.  The top-N selection is in
:mod:`engine.kernels.cuda_select`.

This module imports ``numba.cuda``; import it only through
:mod:`engine.backends.gpu`, which applies the numpy compatibility shim first.
"""

from __future__ import annotations

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
from engine.kernels.cuda_select import SORT_MAX, select_kernel
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
    "PAIR_THREADS",
    "TileOutput",
    "pair_list_kernel",
    "score_kernel",
    "select_kernel",
]

#: Queries with at most this many peaks are staged in shared memory.
SMALL_QUERY = 256

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
        pairs whose bound is under ``threshold`` (or the query's ``floor``) are
        not scored (any score kind).
        :data:`BOUNDS_LISTED`: the bound kernel already wrote ``NOT_SCORED`` for
        those and listed the others in ``pairs``; only the listed pairs are scored.
    pairs : device array of int32
        Listed pairs as ``row * ncols + column`` (``BOUNDS_LISTED``).
    n_pairs : device array of int32
        ``n_pairs[0]``: how many are listed.
    use_floor, floor : bool, device array of float64
        Pairs with bounds in the buffer, and pairs flagged for the host's
        rescoring, must also have an upper bound that reaches ``floor[q]`` (a
        running top-N's N-th best score of query ``q``).
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
    no_big = (  # a scratch of one candidate: components over K are flagged
        cuda.local.array(1, float64),
        cuda.local.array(1, int32),
        cuda.local.array(1, int32),
        cuda.local.array(1, int32),
        cuda.local.array(1, uint8),
        cuda.local.array(1, uint8),
    )
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
                sq_mz, sq_w, options, pruning, out, no_big,
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
        out, no_big,
    )  # fmt: skip


@cuda.jit(device=True)
def _score_one(
    queries, library, r, col, l, q, qa, qb, staged, sq_mz, sq_w, options, pruning, out, big
):  # pragma: no cover
    """Score query ``q`` (row ``r``) against library spectrum ``l`` (column ``col``) into ``out``.

    ``staged``: the query's peaks are in ``sq_mz``/``sq_w`` (shared memory); ``big``:
    the scratch of components over :data:`K` candidates (see
    :func:`~engine.kernels.cuda_pair.pair_score`).
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
    if bounded == BOUNDS_IN_BUFFER:
        reach = threshold
        if pruning.use_floor and pruning.floor[q] > reach:
            reach = pruning.floor[q]
        if not bound_passes(out_s[r, col], den, reach, nqp, nlp):
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
            big,
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
            big,
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


#: Threads per block of :func:`pair_list_kernel`.
PAIR_THREADS = 64


@cuda.jit(cache=True)
def pair_list_kernel(
    queries, library, q_index, l_index, n, tolerance, kind, scores, matches, scratch
):  # pragma: no cover - device code
    r"""Exact scores of listed pairs (the tiles' long and overflowing pairs), a thread each.

    Pair ``k < n`` is query ``q_index[k]`` × library spectrum ``l_index[k]``
    (``queries`` and ``library`` are :class:`~engine.kernels.spectrum_set.SpectrumSet`\ s);
    its score and matches go to ``scores[k]`` and ``matches[k]`` as
    :func:`score_kernel` computes them, the score kind ``kind`` (cosine or modified
    cosine) at ``tolerance``.  Components of more than :data:`K` candidates are
    resolved in thread ``g``'s row of ``scratch``
    (:func:`~engine.backends.cuda_buffers.big_scratch`; the grid has one thread per
    row and loops over the pairs).  A pair it cannot resolve gets ``-1`` matches:
    the host rescores it.

    Tiles hand their long pairs here in lists of many tiles at once: a launch of
    one tile's few thousand pairs would leave most of the GPU idle while each
    thread walks its long merge.
    """
    g = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if g >= scratch[0].shape[0]:
        return
    big = (scratch[0][g], scratch[1][g], scratch[2][g], scratch[3][g], scratch[4][g], scratch[5][g])
    sp = cuda.local.array(K3, float64)
    si = cuda.local.array(K, int32)
    sj = cuda.local.array(K, int32)
    ua = cuda.local.array(K, uint8)
    ub = cuda.local.array(K, uint8)
    modified = kind == MODIFIED_COSINE
    q_mz, q_w, q_off, q_norm, q_prec, _, _ = queries
    l_mz, l_w, l_off, l_norm, l_prec, _, _ = library
    k = g
    stride = cuda.gridDim.x * cuda.blockDim.x
    while k < n:
        q = q_index[k]
        l = l_index[k]
        den = l_norm[l] * q_norm[q]
        raw, nm, _, oflag = pair_score(
            l_mz, l_w, l_off[l], l_off[l + 1], l_prec[l], q_mz, q_w, q_off[q], q_off[q + 1],
            q_prec[q], tolerance, modified, sp, si, sj, ua, ub, big,
        )  # fmt: skip
        if oflag:
            scores[k] = 0.0
            matches[k] = -1
        elif nm == 0 or den == 0.0:
            scores[k] = 0.0
            matches[k] = 0
        else:
            scores[k] = raw / den
            matches[k] = nm
        k += stride
