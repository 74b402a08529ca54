"""The tile pipeline of the CUDA backend's searches (its ``pipeline``).

A run's batches are cut into tiles (:mod:`.cuda_tiles`); ``depth`` tiles are in
flight, each with its own stream and buffers: the bound kernel (exact pruning,
:mod:`.cuda_index`), the score kernel over the pairs that pass, and the
selection kernel; with a top-N the selected hits are merged into each query's
running top-N on the device (:mod:`.cuda_topn`), otherwise copied back per tile.
Flagged pairs (long merges, components too large for the on-chip scratch) are
rescored exactly on the CPU by worker threads while the GPU goes on, each bounded
first against its query's running top-N floor; or, opt-in, queued from tile to
tile and scored on the GPU in large launches of their own (:mod:`.cuda_pairs`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

import numpy as np

from engine.backends.base import Batch, PreparedSpectra, score_kind, score_tolerance
from engine.backends.cuda_buffers import DenseSlot, Resident, TileSlot, big_scratch, event_done
from engine.backends.cuda_index import LISTED_BLOCKS
from engine.backends.cuda_pairs import PairQueue
from engine.backends.cuda_tiles import Tile, flagged_pairs, plan_tiles, split_rows
from engine.backends.cuda_topn import DeviceTop
from engine.backends.rescore import merge_batch_hits, submit_rescore
from engine.hits import HitTable
from engine.kernels import SearchOptions
from engine.kernels.spectrum_set import MODIFIED_COSINE
from engine.params import SearchParameters

__all__ = ["TilePipeline"]

#: Column orders of tiles kept per resident library: at least this many, and as many
#: as take up to 1 / :data:`COLUMN_ORDER_SHARE` of the library's device bytes (a
#: batch of queries visits every column tile of a shard once per query block, so
#: fewer than a shard's tiles would be made again in every block; identity searches
#: of other query sets cut other tiles).
COLUMN_ORDERS = 32
COLUMN_ORDER_SHARE = 8


class TilePipeline:
    """The searches of a :class:`~engine.backends.cuda.CudaBackend` as pipelined tiles
    (its ``pipeline``).

    Reads the backend's device, kernels, resident sets, tile slots, bound pruning
    (``bounds``) and settings, and counts its ``rescored_pairs`` and
    ``floored_pairs``.
    """

    def __init__(self, backend: Any) -> None:
        self.be = backend
        self._pairs_stream: Any = None
        self._pairs_scratch: Any = None
        self._pairs_key: Any = None
        self._no_running: Any = None

    def free_scratch(self) -> None:
        """Let the pair kernel's scratch go (it is allocated again when next needed)."""
        self._pairs_scratch = None

    def _mark(self, stream: Any, name: str) -> None:
        if self.be.kernel_events is not None:
            event = self.be._cuda.event()
            event.record(stream)
            self.be.kernel_events.setdefault(name, []).append(event)

    @staticmethod
    def batch_hits(
        b: int, parts: dict[int, list], params: SearchParameters, wide: bool, ranks: np.ndarray,
        top: DeviceTop | None, cut: bool = True,
    ) -> HitTable:  # fmt: skip
        """Batch ``b``'s hits: its tiles' tables, rescored pairs and final running top-N
        (without ``cut``, not selected again: the caller merges across batches)."""
        got = parts.pop(b, [])
        if top is not None:
            got = got + top.final_hits(b)
        return merge_batch_hits(got, params, wide, ranks, cut)

    @staticmethod
    def _pair_floors(
        tile: Tile, slot: TileSlot, top: DeviceTop | None, rows: np.ndarray,
        params: SearchParameters,
    ) -> np.ndarray:  # fmt: skip
        """Per flagged pair (query ``rows``), the least score that can still matter.

        The threshold; with a device top-N, the query's running floor where higher
        (its N-th best so far): the final N-th best is at least that, so a pair
        scoring less can enter no top-N, and the host's best-partner bound skips it.
        """
        threshold = np.full(len(rows), float(params.threshold))
        if top is None or params.top_n <= 0 or not len(rows):
            return threshold
        floor = top.acc.floor[tile.q0 : tile.q1].copy_to_host(stream=slot.stream)
        slot.stream.synchronize()
        return np.maximum(threshold, floor[rows - tile.q0])

    def pair_stream(self) -> Any:
        """The stream of the pair kernel (one per backend: launches run in turn)."""
        if self._pairs_stream is None:
            self._pairs_stream = self.be._cuda.stream()
        return self._pairs_stream

    def pair_scratch(self) -> tuple:
        """The pair kernel's scratch: ``pair_rows`` rows (fewer where free GPU memory is
        short, 256 under the simulator) of ``big_peaks`` peaks; allocated once."""
        key = (self.be.pair_rows, self.be.big_peaks)
        if self._pairs_scratch is None or self._pairs_key != key:
            threads, rows = self.be._k.PAIR_THREADS, self.be.pair_rows
            try:
                free = float(self.be._cuda.current_context().get_memory_info()[0])
            except Exception:  # no context yet: as set
                free = float("inf")
            if np.isfinite(free):
                rows = min(rows, int(free // 32 // (self.be.big_peaks * 26)))
            else:  # the simulator runs a Python thread per GPU thread
                rows = min(rows, 256)
            self._pairs_scratch = None
            rows = max(threads, rows // threads * threads)
            self._pairs_scratch = big_scratch(self.be._cuda, rows, self.be.big_peaks)
            self._pairs_key = key
        return self._pairs_scratch

    def tiles(self, batches: list[Batch], params: SearchParameters, across: bool) -> list[Tile]:
        """The tiles of a run over ``batches`` (``across``: a device top-N across them)."""
        sort_max = self.be._k.SORT_MAX
        max_cols = self.be.max_cols if params.top_n > 0 else sort_max
        if params.top_n > 0:
            # fewer query rows: wider tiles of the same pairs (fewer launches); a few
            # rows, up to what one selection takes (one query against a repository
            # shard is one tile)
            rows = min(max((b.q_stop - b.q_start for b in batches), default=1), self.be.max_rows)
            segments = self.be.reuse_segments
            if rows <= self.be.few_rows:
                segments = self.topn_kernels().TILE_SEGMENTS_MAX
            widest = segments * sort_max
            wide = self.be.max_rows * self.be.max_cols // max(rows, 1) // sort_max * sort_max
            max_cols = max(max_cols, min(wide, widest))
        return plan_tiles(batches, self.be.max_rows, max_cols, sort_max)

    def make_resident(
        self, library: PreparedSpectra, batches: Iterable[Batch], params: SearchParameters
    ) -> None:
        """Upload ``library`` and build the device peak indexes of ``batches``' tiles.

        Both stay on the GPU (keyed by the library's content) for every later search.
        """
        batches = list(batches)
        with self.be._lock:
            dl = self.be._upload(library)
            tiles = self.tiles(batches, params, True)
            # a running top-N's floor bounds the tiles after a row block's first (one
            # query against a repository shard is one tile: no index for it)
            later = len(tiles) > len({(t.q0, t.q1) for t in tiles})
            if not self.be.bounds.applies(params, running_top=self.be.device_top and later):
                return
            shifted = score_kind(params) == MODIFIED_COSINE
            for l0, l1 in sorted({(t.l0, t.l1) for t in tiles}):
                self.be.bounds.range_index(dl, l0, l1, False)
                if shifted:
                    self.be.bounds.range_index(dl, l0, l1, True)

    def topn_kernels(self) -> Any:
        from engine.kernels import cuda_topn  # device code: after the numpy shim

        return cuda_topn

    def slots_for(
        self, tiles: list[Tile], params: SearchParameters, fixed: bool = False
    ) -> list[TileSlot]:
        """Slots large enough for every tile of a run (``fixed``: hits at fixed places)."""
        rows = max(t.q1 - t.q0 for t in tiles)
        cols = max(t.l1 - t.l0 for t in tiles)
        segs = max(len(t.segs) for t in tiles)
        per_row = cols if params.top_n <= 0 else segs * params.top_n
        if not fixed:
            per_row = min(cols, per_row)
        return self.be._get_slots(rows, cols, segs, rows * per_row, min(rows * cols, 1 << 20))

    def _running(self, tile: Tile, slot: TileSlot, top: DeviceTop | None) -> Any:
        """The selection kernel's ``RunningTop`` (disabled without a device top-N)."""
        if top is not None:
            return top.running(tile, slot)
        if self._no_running is None:
            k, cuda = self.topn_kernels(), self.be._cuda
            dummy = (cuda.to_device(np.zeros(1)), cuda.to_device(np.zeros(1, np.int32)))
            self._no_running = k.RunningTop(False, 0, *dummy)
        return self._no_running

    def launch(
        self,
        tile: Tile,
        slot: TileSlot,
        dq: Resident,
        dl: Resident,
        params: SearchParameters,
        top: DeviceTop | None = None,
    ) -> None:
        """Queue score and select kernels of one tile and the copy of its counters."""
        nrows, ncols = tile.q1 - tile.q0, tile.l1 - tile.l0
        s = slot.stream
        s.synchronize()  # the pinned buffers of this slot are free again
        DeviceTop.release(slot)
        floor = top.acc.floor if top is not None else None
        self._mark(s, "start")
        # at threshold 0 the floor alone bounds pairs: not in a row's first tile
        floored = top is not None and top.floor_may_rise(tile)
        bounded = self.be.bounds.bound_tile(tile, slot, dq, dl, params, floor, floored)
        self._mark(s, "bound")
        cols = slot.cols_dev  # unread with listed pairs: the kernel reads the list
        if bounded != self.be._k.BOUNDS_LISTED:
            cols = self._columns(tile, dl, by_count=not bounded)
        slot.columns = cols  # held while the tile runs (an order may leave the cache)
        for g, (a, _, _) in enumerate(tile.segs):
            slot.segs_host[g] = a - tile.l0
        slot.segs_host[len(tile.segs)] = ncols
        slot.segs_dev.copy_to_device(slot.segs_host, stream=s)
        slot.counts.copy_to_device(slot.zeros_host, stream=s)
        prune = params.threshold > 0 and not params.entropy  # heavy peaks bound the cosine
        self.score(
            slot, dq, dl, tile.q0, nrows, cols, ncols, tile.l0, params, prune,
            bounded=bounded, floor=floor,
        )  # fmt: skip
        self._mark(s, "score")
        self.be._k.select_kernel[(nrows, len(tile.segs)), self.be.select_threads, s](
            slot.out_s, slot.out_m, slot.segs_dev, int(max(1, params.min_matches)),
            float(params.threshold), int(params.top_n), dl.index, int(tile.l0),
            slot.hit_r, slot.hit_c, slot.hit_s, slot.hit_m, slot.counts,
            self._running(tile, slot, top),
        )  # fmt: skip
        self._mark(s, "select")
        if top is not None:
            top.merge(tile, slot)
        slot.counts.copy_to_host(slot.counts_host, stream=s)
        slot.done = self.be._cuda.event()
        slot.done.record(s)

    def _columns(self, tile: Tile, dl: Resident, by_count: bool) -> Any:
        """The device array of a tile's library columns, kept with the resident library
        (the :data:`COLUMN_ORDERS` last used).

        ``by_count``: ordered by peak count (similar work per warp, when every pair
        is merged); otherwise in library order (few pairs pass the bound, and
        library order keeps their buffer accesses coalesced).  Copied once, before
        any stream may read it (tiles of other query rows share it).
        """
        if dl.orders is None:
            dl.orders = OrderedDict()
        key = (tile.l0, tile.l1, by_count)
        if key in dl.orders:
            dl.orders.move_to_end(key)
            return dl.orders[key]
        if by_count:  # a balance of work only: counts past 65,535 may tie (radix sort)
            counts = np.minimum(dl.counts[tile.l0 : tile.l1], 65535).astype(np.uint16)
            order = np.argsort(counts, kind="stable") + tile.l0
        else:
            order = np.arange(tile.l0, tile.l1)
        order = order.astype(np.int32)
        cols = dl.orders[key] = self.be._cuda.to_device(order)
        kept = max(COLUMN_ORDERS, dl.nbytes // (COLUMN_ORDER_SHARE * max(order.nbytes, 1)))
        while len(dl.orders) > kept:  # tiles of other query sets: made again
            dl.orders.popitem(last=False)
        return cols

    @staticmethod
    def finished(slot: TileSlot) -> bool:
        """Whether the GPU is through with the slot's tile (without waiting for it)."""
        return event_done(slot.done)

    def score(
        self,
        slot: TileSlot | DenseSlot,
        dq: Resident,
        dl: Resident,
        q0: int,
        nrows: int,
        cols: Any,
        ncols: int,
        l0: int,
        params: SearchParameters,
        prune: bool,
        *,
        window: bool = True,
        bounded: int = 0,
        floor: Any = None,
    ) -> None:
        """Queue ``score_kernel`` on the slot's stream: rows ``q0:q0+nrows`` × ``cols``.

        ``prune`` skips pairs in which no heavy peak of the library spectrum (and,
        with ``query_prune``, of the query) has a partner; ``window`` applies the
        precursor window of ``params``; ``bounded``: the bound mode (``Pruning``);
        ``floor``: the queries' floors of a device top-N (device array), or None.
        """
        threshold = float(params.threshold)
        heavy, hcnt = dl.heavy_for(self.be._cuda, threshold) if prune else self.be._dummy_heavy()
        qprune = prune and self.be.query_prune
        qheavy, qhcnt = dq.heavy_for(self.be._cuda, threshold) if qprune else self.be._dummy_heavy()
        precursor_tolerance = float(params.precursor_tolerance or 0.0) if window else 0.0
        ppm = window and params.precursor_unit == "ppm"
        options = SearchOptions(
            tolerance=score_tolerance(params),
            kind=score_kind(params),
            precursor_tolerance=precursor_tolerance,
            ppm=bool(ppm),
            same_polarity=bool(window and params.match_ion_mode),
        )
        pruning = self.be._k.Pruning(
            bool(prune), threshold, heavy, hcnt, bool(qprune), qheavy, qhcnt,
            *self.be.bounds.bound_args(slot, bounded), *self.be.bounds.floor_args(floor),
            int(self.be.pair_work_max),
        )  # fmt: skip
        out = self.be._k.TileOutput(slot.out_s, slot.out_m, slot.ovf_r, slot.ovf_c, slot.counts)
        grid = ((ncols + self.be.threads - 1) // self.be.threads, nrows)
        if bounded == self.be._k.BOUNDS_LISTED:  # a grid-stride loop over the few listed pairs
            grid = (min(grid[0] * nrows, LISTED_BLOCKS), 1)
        self.be._k.score_kernel[grid, self.be.threads, slot.stream](
            dq.spectrum_set, dl.spectrum_set, int(q0), cols, int(ncols), int(l0), options,
            pruning, out,
        )  # fmt: skip

    def collect(
        self,
        tile: Tile,
        slot: TileSlot,
        queries: PreparedSpectra,
        library: PreparedSpectra,
        params: SearchParameters,
        parts: dict[int, list],
        left: list[int],
        queue: PairQueue | None = None,
        top: DeviceTop | None = None,
    ) -> None:
        """Wait for a tile; file its hits (and its flagged pairs, queued for the GPU's
        pair kernel or the host's rescoring) under their batches."""
        s = slot.stream
        s.synchronize()
        n_hits, n_ovf = int(slot.counts_host[0]), int(slot.counts_host[1])
        if n_hits > slot.hit_cap:  # cannot happen: the capacity is the top-N bound
            raise RuntimeError(f"hit buffer overflow ({n_hits} > {slot.hit_cap})")
        if n_hits:
            r = slot.hit_r[:n_hits].copy_to_host(stream=s)
            c = slot.hit_c[:n_hits].copy_to_host(stream=s)
            sc = slot.hit_s[:n_hits].copy_to_host(stream=s)
            m = slot.hit_m[:n_hits].copy_to_host(stream=s)
            s.synchronize()
            hits = HitTable.from_arrays(
                r.astype(np.int64) + tile.q0, c.astype(np.int64) + tile.l0, sc, m
            )
            for b, rows in split_rows(tile, hits.library_index):
                parts.setdefault(b, []).append(hits if isinstance(rows, slice) else hits.take(rows))
        if n_ovf and queue is not None:
            r, c = flagged_pairs(tile, slot, n_ovf)
            for b, rows in split_rows(tile, c):
                parts.setdefault(b, []).append(queue.add(r[rows], c[rows]))
        elif n_ovf:
            r, c = flagged_pairs(tile, slot, n_ovf)
            self.be.rescored_pairs += n_ovf
            floors = self._pair_floors(tile, slot, top, r, params)
            self.be.floored_pairs += int(np.count_nonzero(floors > params.threshold))
            for b, rows in split_rows(tile, c):
                parts.setdefault(b, []).append(
                    submit_rescore(
                        queries,
                        library,
                        r[rows],
                        c[rows],
                        score_tolerance(params),
                        score_kind(params),
                        floors[rows],  # pairs below them can be no hits: bounded first
                    )
                )
        for b in tile.batches:
            left[b] -= 1
