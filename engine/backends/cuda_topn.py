"""The running top-N of the CUDA backend: each query's best hits kept on the GPU.

With a top-N, the tiles of a search merge their hits into each query's best
``top_n`` so far on the device (:mod:`engine.kernels.cuda_topn`), and the N-th
best score (the query's *floor*) tightens the exact bound pruning of later
tiles.  The host then receives each query's final hits once, when the last
batch that covers it is done, instead of every tile's candidates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.backends.base import Batch
from engine.backends.cuda_tiles import Tile
from engine.hits import HitTable
from engine.params import SearchParameters

__all__ = ["DeviceTop"]


class DeviceTop:
    """Each query's best hits so far, on the device, for one run of tiles.

    Parameters
    ----------
    cuda : module
        ``numba.cuda``.
    kernels : module
        :mod:`engine.kernels.cuda_topn`.
    n_queries : int
    params : SearchParameters
        ``top_n`` (> 0) and ``threshold``.
    batches : list of Batch
        The run's batches, in order; each query's hits are final after the last
        batch that covers it.
    index : device array of int64
        Original library index of each library position (ties).
    """

    def __init__(
        self,
        cuda: Any,
        kernels: Any,
        n_queries: int,
        params: SearchParameters,
        batches: list[Batch],
        index: Any,
    ) -> None:
        self._cuda, self._k = cuda, kernels
        self.top_n = int(params.top_n)
        nq, n = max(int(n_queries), 1), self.top_n
        self.acc = kernels.Accumulator(
            cuda.device_array((nq, n), dtype=np.float64),
            cuda.device_array((nq, n), dtype=np.int32),
            cuda.device_array((nq, n), dtype=np.int32),
            cuda.to_device(np.zeros(nq, dtype=np.int32)),
            cuda.to_device(np.full(nq, float(params.threshold), dtype=np.float64)),
        )
        self.index = index
        self._merged_rows = np.zeros(nq, dtype=bool)  # rows with a merge queued
        self.stream = cuda.stream()
        self._copies = cuda.stream()  # final hits: waits for no later tile's merge
        self._merged: dict[int, Any] = {}  # final batch -> event after its last tile's merge
        last: dict[tuple[int, int], int] = {}
        for b, batch in enumerate(batches):
            last[(batch.q_start, batch.q_stop)] = b
        self._final = {b: rows for rows, b in last.items()}

    @staticmethod
    def usable(kernels: Any, tiles: list[Tile], batches: list[Batch], top_n: int) -> bool:
        """Whether a run can keep its top-N on the device.

        Needs ``0 < top_n <= MERGE_THREADS`` (a merge pass then takes at least one
        segment), tiles of at most ``TILE_SEGMENTS_MAX`` segments, and batches
        whose query ranges are equal or disjoint (so each query's last batch is
        known).
        """
        if not 0 < top_n <= kernels.MERGE_THREADS or 2 * top_n > kernels.MERGE_MAX:
            return False
        if max(len(t.segs) for t in tiles) > kernels.TILE_SEGMENTS_MAX:
            return False
        ranges = sorted({(b.q_start, b.q_stop) for b in batches})
        return all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:], strict=False))

    def running(self, tile: Tile, slot: Any) -> Any:
        """The selection kernel's :class:`~engine.kernels.cuda_topn.RunningTop` for a tile."""
        return self._k.RunningTop(True, int(tile.q0), self.acc.floor, slot.seg_n)

    def merge(self, tile: Tile, slot: Any) -> None:
        """Queue the merge of a tile's selected hits after its selection kernel.

        The merges run in order on one stream (they update the same queries);
        the slot must not be reused before :meth:`release` returns.
        """
        selected = self._cuda.event()
        selected.record(slot.stream)
        selected.wait(self.stream)
        rows = tile.q1 - tile.q0
        self._k.merge_top_kernel[rows, self._k.MERGE_THREADS, self.stream](
            slot.hit_c, slot.hit_s, slot.hit_m, slot.seg_n, len(tile.segs), self.top_n,
            int(tile.q0), int(tile.l0), self.index, self.acc,
        )  # fmt: skip
        slot.merged = self._cuda.event()
        slot.merged.record(self.stream)
        self._merged_rows[tile.q0 : tile.q1] = True
        for b in tile.batches:
            if b in self._final:  # only final batches copy hits out
                self._merged[b] = slot.merged

    def floor_may_rise(self, tile: Tile) -> bool:
        """Whether a merge was queued for any of the tile's query rows: until then
        their floors are the threshold."""
        return bool(self._merged_rows[tile.q0 : tile.q1].any())

    @staticmethod
    def release(slot: Any) -> None:
        """Wait until the slot's hits are merged (before the slot takes a new tile)."""
        if getattr(slot, "merged", None) is not None:
            slot.merged.synchronize()
            slot.merged = None

    def final_hits(self, b: int) -> list[HitTable]:
        """Final hits of the queries whose last batch is ``b`` (an empty list otherwise)."""
        rows = self._final.get(b)
        if rows is None:
            return []
        q0, q1 = rows
        # only this batch's merges: a sync of the merge stream (or a copy on the
        # default stream) would also wait for the tiles queued after it
        merged = self._merged.pop(b, None)
        if merged is not None:
            merged.synchronize()
        s = self._copies
        count = self.acc.count[q0:q1].copy_to_host(stream=s)
        score = self.acc.score[q0:q1].copy_to_host(stream=s)
        library = self.acc.library[q0:q1].copy_to_host(stream=s)
        matches = self.acc.matches[q0:q1].copy_to_host(stream=s)
        s.synchronize()
        keep = np.arange(self.top_n)[None, :] < count[:, None]
        score, matches = score[keep], matches[keep]
        library = library[keep].astype(np.int64)
        query = np.repeat(np.arange(q0, q1, dtype=np.int64), count)
        return [HitTable.from_arrays(query, library, score, matches)]
