"""The long pairs of a tile, scored on the GPU after the score kernel (device code only).

With bounds listed, :func:`~engine.kernels.cuda_kernels.score_kernel` does not merge
a pair whose peak counts multiply to more than ``Pruning.max_work``: one thread
with such a merge would hold up the whole grid-stride launch.  It flags the pair
instead.  :func:`long_pair_kernel` then takes the flagged pairs in a launch of
their own, on the tile's stream and before the selection, one thread per pair.
Only long pairs hold it up, while the other tiles in flight keep the GPU busy.
It writes their exact scores into the tile's buffers, so the selection and the
device top-N see them like any other pair.

A pair it cannot resolve on chip (a component of more than ``K`` candidates
whose upper bound reaches the threshold) is listed again, in a second list, for
the host's exact rescoring.  So are the flagged pairs that are not long: their
components already overflowed in the score kernel.  Import through
:mod:`engine.backends.gpu` (the numpy compatibility shim comes first).
"""

from __future__ import annotations

from numba import cuda, float64

from engine.kernels.cuda_kernels import _flag, _score_one

__all__ = ["LONG_BLOCKS", "LONG_THREADS", "long_pair_kernel"]

#: Launch shape of :func:`long_pair_kernel` (a grid-stride loop over the flagged pairs).
LONG_BLOCKS = 512
LONG_THREADS = 64


@cuda.jit(cache=True)
def long_pair_kernel(
    queries, library, q_first, l_first, options, pruning, work_max, flagged, out
):  # pragma: no cover - device code
    r"""Score a tile's flagged long pairs exactly; list what is left for the host.

    ``flagged`` is ``(rows, cols, counts)``: the score kernel's list of flagged
    pairs (row and column in the tile) and its counters, ``counts[1]`` of them
    (only the first ``len(rows)`` are listed).  A pair whose peak counts multiply
    to more than ``work_max`` is scored as :func:`score_kernel` scores a listed
    pair (``pruning.max_work`` must be 0), into ``out``'s score and match
    buffers; any other flagged pair overflowed its scratch in the score kernel
    and is listed again at once.  Pairs listed again go to ``out``'s flagged
    list, counted in ``out.counts[1]``.  The other arguments are those of
    :func:`score_kernel`.
    """
    rows, cols, counts = flagged
    q_off, l_off = queries.offsets, library.offsets
    sq_mz = cuda.shared.array(1, float64)  # queries are read from global memory here
    sq_w = cuda.shared.array(1, float64)
    n = min(counts[1], rows.shape[0])
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    stride = cuda.gridDim.x * cuda.blockDim.x
    while i < n:
        r = rows[i]
        col = cols[i]
        q = q_first + r
        l = l_first + col
        qa = q_off[q]
        qb = q_off[q + 1]
        if (qb - qa) * (l_off[l + 1] - l_off[l]) > work_max:
            _score_one(
                queries, library, r, col, l, q, qa, qb, False, sq_mz, sq_w, options, pruning, out
            )
        else:
            _flag(r, col, out)
        i += stride
