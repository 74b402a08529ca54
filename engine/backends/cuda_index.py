"""Exact upper-bound pruning of the CUDA backend: device peak indexes and the bound launch.

Before a tile of a search with a threshold is scored, the bound kernel
(:mod:`engine.kernels.cuda_bound`) gives every pair its upper bound, the sum of
the terms of all its candidate peak pairs, from a device peak index of the
tile's library columns (built on the host once per column range and kept on
the device with the resident library).  By default it writes ``NOT_SCORED``
for the pairs whose bound cannot reach the threshold and lists the others, and
the score kernel runs over that list only (``list_survivors``); otherwise the
bounds stay in the score buffer and the score kernel skips the pairs below.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from engine.backends.base import PreparedSpectra, score_kind, score_tolerance
from engine.backends.cuda_buffers import Resident
from engine.kernels.bound_index import index_pieces, piece_bins
from engine.kernels.spectrum_set import COSINE, ENTROPY, MODIFIED_COSINE
from engine.kernels.threads import parallel_region
from engine.params import SearchParameters

__all__ = ["LISTED_BLOCKS", "GpuBounds", "bound_eps", "host_peak_index"]

#: Score kinds the bound is exact for.
BOUNDED_KINDS = (COSINE, MODIFIED_COSINE, ENTROPY)
#: Threads per block of the bound kernel (a multiple of 32: one warp per query peak).
BOUND_THREADS = 256
#: Most thread blocks of a score-kernel launch over listed pairs (a grid-stride loop;
#: about 30 blocks per streaming multiprocessor of an H100).
LISTED_BLOCKS = 4096


def host_peak_index(
    mz: np.ndarray,
    weight: np.ndarray,
    offsets: np.ndarray,
    precursor_mz: np.ndarray,
    l0: int,
    l1: int,
    shifted: bool,
    chunk: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Peaks of spectra ``[l0, l1)``, per piece of ``chunk`` columns sorted by key.

    Parameters
    ----------
    mz, weight, offsets, precursor_mz : ndarray
        The library in CSR form.
    l0, l1 : int
        The column range.
    shifted : bool
        Key ``mz - precursor_mz`` (peaks of spectra with a NaN precursor left
        out: they have no shifted candidates) instead of ``mz``.
    chunk : int
        Columns per piece.

    Returns
    -------
    key : ndarray of float64
    column : ndarray of int32
        Column of each peak (``l - l0``); nondecreasing across pieces.
    weight : ndarray of float64
    start : ndarray of int64
        Piece ``g`` is ``start[g]:start[g + 1]``.
    """
    # one parallel pass per piece (gather, sort, write): a shard of 10^8-spectrum
    # repositories has ~10^8 peaks, and each search of a new shard builds its index
    offsets = np.asarray(offsets, dtype=np.int64)
    return index_pieces(
        mz, weight, offsets, precursor_mz, int(l0), int(l1), bool(shifted), int(chunk)
    )


def bound_eps(res: Resident) -> float:
    """Window widening (Da) that covers the rounding of ``mz +- tol`` and of the shift.

    ``1e-6`` Da plus ~90 float64 ulps of the largest m/z or precursor of the set.
    """
    h = res.host
    big = 0.0
    for a in (h.mz, h.precursor_mz):
        a = np.asarray(a, dtype=np.float64)
        finite = a[np.isfinite(a)]
        if finite.size:
            big = max(big, float(np.abs(finite).max()))
    return 1e-6 + 1e-14 * big


def _bound_safe(res: Resident) -> bool:
    """Whether every weight is >= 0 (the sum of candidate terms bounds the score)."""
    w = np.asarray(res.host.weight)
    return bool(w.size == 0 or np.nanmin(w) >= 0.0)


class GpuBounds:
    """The bound pruning of a :class:`~engine.backends.cuda.CudaBackend` (its ``bounds``).

    Reads the backend's device, kernels, resident sets and settings
    (``bound_prune``, ``bound_threads``, ``bound_chunk``, ``list_survivors``,
    ``count_bound_survivors``).
    """

    def __init__(self, backend: Any) -> None:
        self.be = backend
        self._survivors: Any = None
        self.counted_pairs = 0  # pairs whose bounds were counted (``survivors``)
        self._bound_mod: Any = None
        self._dummy_listing: Any = None

    @property
    def survivors(self) -> int:
        """Pairs that passed the bound since counting was switched on (with a threshold)."""
        if self._survivors is None:
            return 0
        return int(self._survivors.copy_to_host()[0])

    def reset_survivors(self) -> None:
        """Set :attr:`survivors` and :attr:`counted_pairs` back to 0."""
        self._survivors = None
        self.counted_pairs = 0

    def pair_bounds(
        self, queries: PreparedSpectra, library: PreparedSpectra, params: SearchParameters
    ) -> np.ndarray:
        """The upper bound of every pair's score, as the search compares it (diagnostics).

        Parameters
        ----------
        queries, library : PreparedSpectra
        params : SearchParameters
            Tolerance and score kind (any threshold).

        Returns
        -------
        ndarray of float64, shape (len(queries), len(library))
            Raw bound (sum of all candidate terms) divided by the two norms,
            before the widening of :func:`~engine.kernels.cuda_bound.bound_passes`;
            NaN where a norm is 0.
        """
        kind = score_kind(params)
        if kind not in BOUNDED_KINDS:
            raise ValueError(f"no exact bound for score {params.score!r}")
        nq, nl = len(queries), len(library)
        dq, dl = self.be._upload(queries, keep=False), self.be._upload(library)
        out = self.be._cuda.device_array((max(nq, 1), max(nl, 1)), dtype=np.float64)
        stream = self.be._cuda.stream()
        tol = float(score_tolerance(params))
        if nq and nl:
            self._queue(dq, dl, 0, nq, 0, nl, kind, tol, self.no_listing(), out, stream)
        stream.synchronize()
        raw = out.copy_to_host()[:nq, :nl]
        den = np.outer(queries.norm, library.norm)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den > 0, raw / den, np.nan)

    def no_listing(self) -> Any:
        """A disabled :class:`~engine.kernels.cuda_bound.Listing` (raw bounds only)."""
        if self._dummy_listing is None:
            cuda = self.be._cuda
            self._dummy_listing = self.kernels().Listing(
                False, 0.0, cuda.to_device(np.zeros(1)), 0,
                cuda.to_device(np.zeros((1, 1), np.int32)), cuda.to_device(np.zeros(1, np.int32)),
                cuda.to_device(np.zeros(2, np.int32)), False, cuda.to_device(np.zeros(1)),
            )  # fmt: skip
        return self._dummy_listing

    def floor_args(self, floor: Any) -> tuple[bool, Any]:
        """``(use_floor, floor)`` of the score kernel's ``Pruning``."""
        if floor is None:
            return False, self.no_listing().floor
        return True, floor

    def bound_args(self, slot: Any, bounded: int) -> tuple[int, Any, Any]:
        """``(bounded, pairs, n_pairs)`` of the score kernel's ``Pruning`` for ``slot``."""
        if bounded == self.be._k.BOUNDS_LISTED:
            return bounded, slot.pairs, slot.n_pairs
        dummy = self.no_listing()
        return int(bounded), dummy.pairs, dummy.n_pairs

    def _queue(
        self, dq: Resident, dl: Resident, q0: int, q1: int, l0: int, l1: int,
        kind: int, tol: float, listing: Any, out: Any, stream: Any,
    ) -> None:  # fmt: skip
        """Queue the bound kernel: rows ``q0:q1`` × columns ``l0:l1`` into ``out``."""
        plain, piece0 = self.range_index(dl, l0, l1, False)
        shifted = self.range_index(dl, l0, l1, True)[0] if kind == MODIFIED_COSINE else plain
        eps = max(self.info(dq)["eps"], self.info(dl)["eps"])
        k = self.kernels()
        chunk = self._chunk()
        grid = (q1 - q0, -(-(l1 - l0) // chunk))
        k.bound_kernel[grid, self.be.bound_threads, stream](
            dq.spectrum_set, int(q0), int(l0), int(l1 - l0), chunk, int(piece0), int(kind),
            float(tol), float(eps), plain, shifted, listing, out,
        )  # fmt: skip

    def _chunk(self) -> int:
        return max(1, min(int(self.be.bound_chunk), self.kernels().BOUND_CHUNK))

    def kernels(self) -> Any:
        if self._bound_mod is None:
            from engine.kernels import cuda_bound  # device code: after the numpy shim

            self._bound_mod = cuda_bound
        return self._bound_mod

    def info(self, res: Resident) -> dict:
        if res.bound is None:
            res.bound = {
                "safe": _bound_safe(res),
                "eps": bound_eps(res),
                "peaks_max": int(res.counts.max(initial=0)),
                "index": OrderedDict(),
                "index_bytes": 0,
            }
        return res.bound

    def range_index(self, res: Resident, l0: int, l1: int, shifted: bool) -> tuple[Any, int]:
        """``(index, piece0)`` for the bound kernel over library columns ``[l0, l1)``.

        A range that starts on a piece boundary (the column tiles of searches without
        a precursor window) reads the index of the whole library, from its piece
        ``piece0 = l0 // chunk``: built once, whatever the tiles of later searches
        (their shape follows the number of query rows).  Other ranges (precursor
        windows) get an index of their own (``piece0`` 0).
        """
        chunk = self._chunk()
        if l0 % chunk == 0:
            return self.device_index(res, 0, len(res.counts), shifted)[0], l0 // chunk
        return self.device_index(res, l0, l1, shifted)[0], 0

    def device_index(self, res: Resident, l0: int, l1: int, shifted: bool) -> Any:
        """The device peak index of library columns ``[l0, l1)`` (cached on the resident set)."""
        info = self.info(res)
        cache: OrderedDict = info["index"]
        chunk = self._chunk()
        key = (l0, l1, shifted, chunk)
        found = cache.get(key)
        if found is not None:
            cache.move_to_end(key)
            return found
        h, k = res.host, self.kernels()
        with parallel_region():  # parallel=True kernels: one at a time on numba's workqueue
            arrays = host_peak_index(
                h.mz, h.weight, h.offsets, h.precursor_mz, l0, l1, shifted, chunk
            )
            bins, key_min, inv_width = piece_bins(arrays[0], arrays[3])
        if arrays[0].size == 0:  # the kernels need arrays of at least one element
            arrays = (np.array([np.inf]), np.zeros(1, np.int32), np.zeros(1), arrays[3])
        arrays = (*arrays, bins)
        device = [self.be._cuda.to_device(a) for a in arrays]
        index = k.DevicePeakIndex(*device, float(key_min), float(inv_width))
        nbytes = sum(a.nbytes for a in arrays)
        cache[key] = (index, nbytes)
        info["index_bytes"] += nbytes
        budget = max(256 << 20, 3 * res.nbytes)
        while info["index_bytes"] > budget and len(cache) > 1:
            _, (_, b) = cache.popitem(last=False)
            info["index_bytes"] -= b
        return cache[key]

    def applies(self, params: SearchParameters, running_top: bool = False) -> bool:
        """Whether a search with ``params`` is pruned by the bound (when the weights allow).

        Pruning is on, the score is one of :data:`BOUNDED_KINDS`, and a pair has
        something to reach: a threshold above 0, or (``running_top``) the floor of
        a device top-N, which rises to each query's N-th best score.  The floor
        alone counts only without a precursor window: every pair of the library is
        a candidate there, and the column tiles share one peak index; a window's
        few candidates would each need an index of their own for little gain.
        """
        floored = running_top and params.top_n > 0 and params.precursor_tolerance is None
        reach = params.threshold > 0.0 or floored
        return bool(self.be.bound_prune and reach and score_kind(params) in BOUNDED_KINDS)

    def bound_tile(
        self,
        tile: Any,
        slot: Any,
        dq: Resident,
        dl: Resident,
        params: SearchParameters,
        floor: Any = None,
        floor_may_prune: bool = False,
    ) -> int:
        """Queue the bound kernel of a tile; the score kernel's ``Pruning.bounded`` mode
        (0: no bounds).

        ``floor``: the queries' floors of a device top-N (a pair must reach its
        query's floor as well as the threshold), or None; ``floor_may_prune``:
        whether they may be above the threshold yet (then the floor alone is
        worth a bound, see :meth:`applies`).

        Bounds apply to searches of the kinds in :data:`BOUNDED_KINDS` with a
        threshold > 0 or a ``floor``, with non-negative weights on both sides (else 0).
        With :attr:`list_survivors` the pairs that pass are listed
        (``BOUNDS_LISTED``), otherwise the bounds go into ``slot.out_s``
        (``BOUNDS_IN_BUFFER``).
        """
        kind = score_kind(params)
        if not self.applies(params, running_top=floor is not None and floor_may_prune):
            return 0
        ql, ll = self.info(dq), self.info(dl)
        if not (ql["safe"] and ll["safe"]):
            return 0
        tol = float(score_tolerance(params))
        s = slot.stream
        k = self.kernels()
        listing = self.no_listing()
        mode = self.be._k.BOUNDS_IN_BUFFER
        if self.be.list_survivors and slot.rows * slot.cols < 2**31:
            if slot.pairs is None:
                slot.pairs = self.be._cuda.device_array(slot.rows * slot.cols, dtype=np.int32)
                slot.n_pairs = self.be._cuda.device_array(2, dtype=np.int32)
            slot.n_pairs.copy_to_device(slot.zeros_host, stream=s)
            listing = k.Listing(
                True, float(params.threshold), dl.norm, ll["peaks_max"], slot.out_m, slot.pairs,
                slot.n_pairs, *self.floor_args(floor),
            )  # fmt: skip
            mode = self.be._k.BOUNDS_LISTED
        self._queue(dq, dl, tile.q0, tile.q1, tile.l0, tile.l1, kind, tol, listing, slot.out_s, s)
        nrows, ncols = tile.q1 - tile.q0, tile.l1 - tile.l0
        if self.be.count_bound_survivors:
            if self._survivors is None:
                self._survivors = self.be._cuda.to_device(np.zeros(1, np.int64))
            self.counted_pairs += nrows * ncols
            self.kernels().count_kernel[nrows, self.be.bound_threads, s](
                slot.out_s, int(ncols), dq.spectrum_set, int(tile.q0), dl.spectrum_set,
                int(tile.l0), float(params.threshold), self._survivors,
            )  # fmt: skip
        return mode
