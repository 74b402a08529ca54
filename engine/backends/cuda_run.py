"""One search run of the CUDA backend over its tiles: launches, collection, batch hits.

``depth`` tiles are in flight, each in its own slot.  After each launch, the
tiles the GPU has finished are collected at once (their hits filed under their
batches, their flagged pairs handed to the host's rescoring threads), and each
batch whose tiles and rescoring are in is yielded, in order.

A launcher thread that kept the GPU fed while the caller merged hits was
measured slower (all-vs-all on an H200: 426-445 ms against 373-410 ms): it and
the caller's thread held the GIL against the rescoring threads
(``benchmarks/GPU_NOTES.md``, v10).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterator
from typing import Any

from engine.backends.base import Batch, PreparedSpectra
from engine.backends.cuda_buffers import TileSlot
from engine.backends.cuda_pairs import PairQueue
from engine.backends.cuda_tiles import Tile
from engine.backends.cuda_topn import DeviceTop
from engine.backends.rescore import PendingScores
from engine.hits import HitTable
from engine.params import SearchParameters

__all__ = ["TileRun"]


class TileRun:
    """The state of one run: tiles, slots, hits filed per batch, tiles left per batch.

    Parameters
    ----------
    backend : CudaBackend
        Its ``pipeline`` (:class:`~.cuda_search.TilePipeline`) does the work.
    queries, library : PreparedSpectra
    batches : list of Batch
    params : SearchParameters
    across_batches : bool
        Each query's top-N across batches (kept on the device where possible).
    """

    def __init__(
        self,
        backend: Any,
        queries: PreparedSpectra,
        library: PreparedSpectra,
        batches: list[Batch],
        params: SearchParameters,
        across_batches: bool,
    ) -> None:
        self.backend, self.queries, self.library = backend, queries, library
        self.batches, self.params, self.across = batches, params, across_batches
        self.tiles = backend.pipeline.tiles(batches, params, across_batches)
        self.dq, self.dl = backend._upload(queries, keep=False), backend._upload(library)
        self.top: DeviceTop | None = None
        if across_batches and backend.device_top:
            topk = backend.pipeline.topn_kernels()
            if DeviceTop.usable(topk, self.tiles, batches, params.top_n):
                self.top = DeviceTop(
                    backend._cuda, topk, len(queries), params, batches, self.dl.index
                )
        self.left = [0] * len(batches)  # tiles not yet collected, per batch
        for t in self.tiles:
            for b in t.batches:
                self.left[b] += 1
        self.parts: dict[int, list] = {}
        # batches with more than one segment in a tile: their hits are selected again
        self.wide = {
            b for t in self.tiles for b, n in Counter(sb for *_, sb in t.segs).items() if n > 1
        }
        self.slots = backend.pipeline.slots_for(self.tiles, params, self.top is not None)
        self.pending: deque[tuple[Tile, TileSlot]] = deque()
        self.queue = (
            PairQueue(backend, queries, library, self.dq, self.dl, params)
            if backend.pairs_on_gpu
            else None
        )

    # -- the steps ---------------------------------------------------------------
    def _collect_oldest(self) -> None:
        tile, slot = self.pending.popleft()
        self.backend.pipeline.collect(
            tile, slot, self.queries, self.library, self.params, self.parts, self.left,
            self.queue, self.top,
        )  # fmt: skip

    def _feed(self, n: int) -> None:
        """Launch tile ``n`` (after collecting the tile whose slot it takes), then
        collect the tiles the GPU has finished: their flagged pairs go to the
        host's threads now, not when their slot is next needed."""
        slot = self.slots[n % len(self.slots)]
        if len(self.pending) == len(self.slots):
            self._collect_oldest()
        be = self.backend
        tile = self.tiles[n]
        be.pipeline.launch(tile, slot, self.dq, self.dl, self.params, self.top)
        if be.kernel_events is not None:  # diagnostics: one tile at a time, timed alone
            slot.stream.synchronize()
            if slot.n_pairs is not None:
                be.kernel_events.setdefault("listed", []).append(
                    int(slot.n_pairs.copy_to_host()[0])
                )
        self.pending.append((self.tiles[n], slot))
        while self.pending and be.pipeline.finished(self.pending[0][1]):
            self._collect_oldest()

    def _drain(self) -> None:
        while self.pending:
            self._collect_oldest()
        if self.queue is not None:
            self.queue.flush()

    def _hits(self, b: int) -> HitTable:
        return self.backend.pipeline.batch_hits(
            b, self.parts, self.params, b in self.wide, self.library.ranks, self.top,
            not self.across,
        )  # fmt: skip

    def _ready(self, b: int) -> bool:
        parts = self.parts.get(b, [])
        return self.left[b] == 0 and all(
            not isinstance(p, PendingScores) or p.done() for p in parts
        )

    def __iter__(self) -> Iterator[tuple[Batch, HitTable]]:
        """Launch every tile; a finished batch is yielded between launches once its
        rescoring is done (or when no tile is left to launch)."""
        nxt = 0
        for n in range(len(self.tiles)):
            self._feed(n)
            while nxt < len(self.batches) and self._ready(nxt):
                yield self.batches[nxt], self._hits(nxt)
                nxt += 1
        self._drain()
        for b in range(nxt, len(self.batches)):
            yield self.batches[b], self._hits(b)
