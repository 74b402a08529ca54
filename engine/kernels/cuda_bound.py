"""numba CUDA kernels of the exact upper-bound pruning (device code only).

For a tile (query rows × a contiguous range of library columns) the library
peaks of each piece of :data:`BOUND_CHUNK` columns of the range are sorted by
m/z once (a *device peak index*, :class:`DevicePeakIndex`).  :func:`bound_kernel`
gives every pair of the tile the sum of the terms of *all* its candidate peak
pairs, accumulated in shared memory per (query row, column piece):

* cosine: ``w_q * w_l`` over all pairs with ``|mz_q - mz_l| <= tol``;
* modified cosine: the same plus the shifted candidates, found in a second
  index keyed by ``mz_l - precursor_l`` and searched with ``mz_q - precursor_q``;
* entropy similarity: the entropy term of each candidate pair (all >= 0).

The greedy (or two-pointer) score takes a subset of these candidates, each
term >= 0, so the sum bounds it from above; the score kernel skips pairs whose
bound, divided by the norms and widened by :data:`BOUND_REL` / :data:`BOUND_ABS`
plus a little per possible candidate, is below the threshold (see
:func:`bound_passes`).  The index windows are
widened by ``eps`` Da so that no candidate is lost to the rounding of
``mz +- tol`` or of the shift.

Import through :mod:`engine.backends.gpu` (the numpy compatibility shim comes first).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from numba import cuda, float64

from engine.kernels.spectrum_set import ENTROPY, MODIFIED_COSINE

__all__ = [
    "BOUND_ABS",
    "BOUND_CHUNK",
    "NOT_SCORED",
    "Listing",
    "BOUND_REL",
    "DevicePeakIndex",
    "bound_kernel",
    "bound_passes",
    "count_kernel",
    "listing_cut",
]

#: Relative widening of a bound before it is compared, plus :data:`PER_TERM_REL` per
#: possible candidate: covers the float64 rounding of both sums (in any order) and
#: of the products (on the GPU the merge may fuse them into its sum).
BOUND_REL = 1e-9
#: Absolute widening (scores near 0), plus :data:`PER_TERM_ABS` per possible
#: candidate (rounding of the entropy terms, each at most ~2 in magnitude).
BOUND_ABS = 1e-9
#: Per-candidate widening: relative (4 float64 units of roundoff), and absolute (an
#: entropy term, |value| <= 3, computed with ~10 units of roundoff on either side).
PER_TERM_REL = 4.5e-16
PER_TERM_ABS = 1e-14
#: Library columns per thread block of :func:`bound_kernel` (float64 sums in shared memory).
BOUND_CHUNK = 2048
#: Score sentinel of pairs that are not scored (``cuda_kernels.NOT_SCORED``).
NOT_SCORED = -1.0


class DevicePeakIndex(NamedTuple):
    """Library peaks of a column range, per piece of :data:`BOUND_CHUNK` columns
    sorted by key, on the device.

    Attributes
    ----------
    key : device array of float64
        Keys, sorted within each piece: the m/z (zero-shift index) or
        ``mz - precursor_mz`` (shifted index, peaks of spectra with a known
        precursor only).
    column : device array of int32
        Column of each peak's spectrum within the range (``l - l0``).
    weight : device array of float64
        The peak's weight.
    start : device array of int64
        Piece ``g`` (columns ``g * chunk`` onwards) is ``start[g]:start[g + 1]``.
    bins : device array of int32, shape (pieces, nbins)
        ``bins[g, j]``: first position (relative to ``start[g]``) of piece ``g``
        whose key is ``>= key_min + j / inv_width``
        (:func:`~engine.kernels.bound_index.piece_bins`).
    key_min, inv_width : float
        The bins' origin and inverse width.
    """

    key: Any
    column: Any
    weight: Any
    start: Any
    bins: Any
    key_min: float
    inv_width: float


class Listing(NamedTuple):
    """Where :func:`bound_kernel` lists the pairs that pass the bound (``enabled``).

    Attributes
    ----------
    enabled : bool
        False: only write the raw bounds.
    threshold : float
    library_norm : device array of float64
        Norms of the library (columns ``l_first + c``).
    peaks_max : int
        The most peaks of one library spectrum (peak counts bound a pair's
        candidates, and so the widening of the test).
    matches : device array of int32, 2-D
        The tile's match buffer (0 for pairs that fail the bound).
    pairs : device array of int32
        Receives ``row * ncols + column`` of each passing pair, in any order.
    n_pairs : device array of int32
        ``n_pairs[0]`` counts them (zeroed by the caller).
    use_floor : bool
        A pair must also reach its query's ``floor[q]`` (the N-th best score so
        far of a running top-N, :mod:`engine.kernels.cuda_topn`).
    floor : device array of float64
    """

    enabled: bool
    threshold: float
    library_norm: Any
    peaks_max: int
    matches: Any
    pairs: Any
    n_pairs: Any
    use_floor: bool
    floor: Any


@cuda.jit(device=True)
def _window_start(bins, g, key_min, inv_width, x):  # pragma: no cover - device code
    """A position of piece ``g`` at or before its first key ``>= x`` (relative to the piece).

    The bin below ``x``'s bin starts at a key under ``x`` whatever the rounding of
    the bin arithmetic, so no key of the window is skipped.
    """
    t = (x - key_min) * inv_width
    nbins = bins.shape[1]
    if not t < nbins:  # also NaN
        j = nbins - 1
    elif t < 1.0:
        j = 0
    else:
        j = int(math.floor(t)) - 1
    return bins[g, j]


@cuda.jit(device=True)
def _xlog2x(x):  # pragma: no cover - device code
    return x * math.log2(x)


@cuda.jit(device=True)
def _accumulate(
    acc, g, chunk, q_mz, q_w, qa, qb, offset, index, tol, eps, entropy
):  # pragma: no cover
    """Add the terms of every (query peak, peak of piece ``g``) pair within ``tol + eps``
    to ``acc`` (one slot per column of the piece).

    A warp takes one query peak at a time; its lanes share the peak's window.
    """
    key, column, weight, start, bins, key_min, inv_width = index
    a = start[g]
    b = start[g + 1]
    c0 = g * chunk
    lane = cuda.threadIdx.x % 32
    warp = cuda.threadIdx.x // 32
    warps = cuda.blockDim.x // 32
    for p in range(qa + warp, qb, warps):
        x = q_mz[p] - offset
        wq = q_w[p]
        lo = (x - tol) - eps
        hi = (x + tol) + eps
        # the warp reads 32 consecutive keys at a time from the window's bin on;
        # keys are sorted, so a lane stops at its first key past the window
        k = a + _window_start(bins, g, key_min, inv_width, lo) + lane
        while k < b:
            kk = key[k]
            if kk > hi:
                break
            if kk >= lo:
                wl = weight[k]
                if entropy:
                    v = (_xlog2x(wq + wl) - _xlog2x(wq) - _xlog2x(wl)) / 2.0
                else:
                    v = wq * wl
                cuda.atomic.add(acc, column[k] - c0, v)
            k += 32


@cuda.jit(cache=True)
def bound_kernel(
    queries, q_first, l_first, ncols, chunk, piece0, kind, tol, eps, plain, shifted, listing, bound
):  # pragma: no cover
    r"""Upper bounds of query rows × one library column range.

    Grid ``(rows, ceil(ncols / chunk))``: one block per (row, piece of ``chunk <=
    BOUND_CHUNK`` columns, as the indexes were built), a multiple of 32 threads
    per block.  ``queries`` is a
    :class:`~engine.kernels.spectrum_set.SpectrumSet` of device arrays, ``kind``
    the score kind, ``plain`` and ``shifted`` :class:`DevicePeakIndex`\ es whose piece
    ``piece0 + g`` holds the range's piece ``g`` (``piece0`` 0: an index of the range
    itself; else one of columns from 0, ``l_first == piece0 * chunk``, its columns
    counted from 0 as well); ``shifted`` is read for the modified cosine only.  ``bound[r, c]``
    (query ``q_first + r``, column ``c < ncols``, library spectrum ``l_first + c``)
    receives the sum of the terms of all candidate peak pairs (the raw numerator
    bound, before the division by the norms).  With ``listing`` (a
    :class:`Listing`) enabled, pairs that fail the test of :func:`listing_cut` (a
    little wider than :func:`bound_passes`), or have a zero norm, get ``NOT_SCORED``
    and 0 matches instead, and the others are listed for the score kernel.
    """
    q_mz, q_w, q_off, q_norm, q_prec, _, _ = queries
    acc = cuda.shared.array(BOUND_CHUNK, float64)
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    r = cuda.blockIdx.x
    g = cuda.blockIdx.y
    q = q_first + r
    c0 = g * chunk
    width = ncols - c0 if ncols - c0 < chunk else chunk
    for c in range(tid, width, nt):
        acc[c] = 0.0
    cuda.syncthreads()
    qa = q_off[q]
    qb = q_off[q + 1]
    entropy = kind == ENTROPY
    # past the range's last column a piece of a wider index may hold more columns:
    # their slots (< chunk) are summed into but never read
    _accumulate(acc, piece0 + g, chunk, q_mz, q_w, qa, qb, 0.0, plain, tol, eps, entropy)
    qp = q_prec[q]
    if kind == MODIFIED_COSINE and qp == qp:  # a NaN precursor: plain cosine, no shift
        _accumulate(acc, piece0 + g, chunk, q_mz, q_w, qa, qb, qp, shifted, tol, eps, False)
    cuda.syncthreads()
    enabled, threshold, l_norm, peaks_max, matches, pairs, n_pairs, use_floor, floor = listing
    if use_floor and floor[q] > threshold:
        threshold = floor[q]
    if not enabled:
        for c in range(tid, width, nt):
            bound[r, c0 + c] = acc[c]
        return
    dq = q_norm[q]
    grow, cut = listing_cut(threshold, qb - qa, peaks_max)
    # one pass; few pairs pass, so each takes its place in the list with its own
    # atomic add (the atomics are rare next to the per-pair work)
    for c in range(tid, width, nt):
        den = dq * l_norm[l_first + c0 + c]
        raw = acc[c]
        if den != 0.0 and not (raw * grow < cut * den):
            bound[r, c0 + c] = raw
            pairs[cuda.atomic.add(n_pairs, 0, 1)] = r * ncols + c0 + c
        else:
            bound[r, c0 + c] = NOT_SCORED
            matches[r, c0 + c] = 0


@cuda.jit(device=True)
def listing_cut(threshold, n_q, peaks_max):  # pragma: no cover - device code
    """``(grow, cut)`` of the listing test ``not (raw * grow < cut * den)`` of one query.

    The widening of :func:`bound_passes` for the largest possible candidate count
    (``peaks_max``: the most peaks of a library spectrum), plus a relative 1e-12 for
    the rounding of the multiplied form: the test passes every pair that
    :func:`bound_passes` passes (and a few more at most), with one multiply and
    no division per pair.
    """
    n = 2.0 * float(n_q) * float(peaks_max) + float(n_q + peaks_max)
    grow = (1.0 + (BOUND_REL + PER_TERM_REL * n)) * (1.0 + 1e-12)
    cut = threshold - (BOUND_ABS + PER_TERM_ABS * n)
    return grow, cut


@cuda.jit(device=True)
def bound_passes(raw, den, threshold, n_a, n_b):  # pragma: no cover - device code
    """Whether a pair's raw bound, divided by ``den`` and widened, reaches ``threshold``.

    ``n_a``, ``n_b``: the two spectra's peak counts; a pair has at most
    ``2 * n_a * n_b`` candidates (zero-shift and shifted), and the widening
    grows with that number.  NaN bounds pass (the pair is scored).
    """
    n = 2.0 * float(n_a) * float(n_b) + float(n_a + n_b)
    rel = BOUND_REL + PER_TERM_REL * n
    return not ((raw / den) * (1.0 + rel) + (BOUND_ABS + PER_TERM_ABS * n) < threshold)


@cuda.jit(cache=True)
def count_kernel(
    bound, ncols, queries, q_first, library, l_first, threshold, total
):  # pragma: no cover
    r"""Diagnostics: add the number of pairs of a tile that pass the bound to ``total[0]``.

    Grid ``(rows,)``; ``queries`` and ``library`` are
    :class:`~engine.kernels.spectrum_set.SpectrumSet`\ s of device arrays.  Pairs
    with a zero norm are not counted (they are never scored).
    """
    q_off, q_norm = queries.offsets, queries.norm
    l_off, l_norm = library.offsets, library.norm
    r = cuda.blockIdx.x
    q = q_first + r
    dq = q_norm[q]
    nq = q_off[q + 1] - q_off[q]
    mine = 0
    for c in range(cuda.threadIdx.x, ncols, cuda.blockDim.x):
        l = l_first + c
        den = dq * l_norm[l]
        if den != 0.0 and bound_passes(bound[r, c], den, threshold, nq, l_off[l + 1] - l_off[l]):
            mine += 1
    if mine > 0:
        cuda.atomic.add(total, 0, mine)
