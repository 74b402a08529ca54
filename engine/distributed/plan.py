"""The plan of a Dask search: library shards, query blocks sized by the task cost model.

The library is cut into shards of its order (:func:`shard_order`: precursor m/z
when a precursor tolerance is set, so a query block visits only the shards its
window touches; the library's own order otherwise; a worker reading the library
file cuts its shard in the same order).  Queries (precursor-sorted with a window) are
cut into blocks: a small first block so hits come early, then as many blocks as
the task cost model (:mod:`.cost`) finds best (fixed cost per task against the
client's merge of the last block); with a window, blocks are grouped by their
queries' own windows as :func:`engine.search.window.windowed_query_blocks` does,
wasting fewer pairs than a task's fixed cost is worth.  A task is one (shard, block) pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.backends import PreparedSpectra
from engine.distributed.cost import TaskCost
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search import FIRST_QUERY_BLOCK, library_window, precursor_order
from engine.search.window import windowed_query_blocks

__all__ = [
    "BLOCKS_PER_COPY",
    "SearchPlan",
    "Task",
    "make_plan",
    "query_block_bounds",
    "shard_order",
]

#: With a precursor window and shards copied on several workers: blocks per copy
#: at least (the search ends about one block after its last worker frees up).
BLOCKS_PER_COPY = 4


def shard_order(precursor_mz: np.ndarray, by_precursor: bool) -> np.ndarray:
    """The library order shards are cut from: by precursor m/z, or the library's own.

    The workers cut a shard from a library file in this same order
    (:func:`.shards.load_shard`).
    """
    if by_precursor:
        return precursor_order(precursor_mz)
    return np.arange(len(precursor_mz), dtype=np.int64)


@dataclass(frozen=True)
class Task:
    """One (shard, query block) task and the pairs it scores.

    ``queries`` is the range ``(q0, q1)`` of planned query positions it scores: its
    block's, or a piece of it (:meth:`split`).
    """

    shard: int
    block: int
    pairs: int
    queries: tuple[int, int]

    def split(self, pieces: int) -> list[Task]:
        """The task cut into at most ``pieces`` tasks of about equal query ranges.

        Every query of a block sees the same library span, so the pairs divide
        exactly by queries.
        """
        q0, q1 = self.queries
        n = q1 - q0
        pieces = max(1, min(int(pieces), n))
        if pieces == 1:
            return [self]
        per_query = self.pairs // n
        edges = np.linspace(q0, q1, pieces + 1).round().astype(np.int64)
        return [
            Task(self.shard, self.block, per_query * int(b - a), (int(a), int(b)))
            for a, b in zip(edges[:-1], edges[1:], strict=True)
        ]


@dataclass
class SearchPlan:
    """What a Dask search will do.

    Attributes
    ----------
    queries : PreparedSpectra
        The queries, prepared and (with a window) sorted by precursor m/z.
    query_order, library_order : ndarray
        Planned position -> original index.
    bounds : ndarray
        Shard ``s`` holds library positions ``bounds[s]:bounds[s + 1]`` of the order.
    blocks : list of ((q0, q1), list of Task)
        Query blocks with their tasks, in the order they are sent.
    """

    queries: PreparedSpectra
    query_order: np.ndarray
    library_order: np.ndarray
    bounds: np.ndarray
    blocks: list[tuple[tuple[int, int], list[Task]]]

    @property
    def n_shards(self) -> int:
        return len(self.bounds) - 1

    @property
    def pairs(self) -> int:
        return sum(t.pairs for _, tasks in self.blocks for t in tasks)

    @property
    def n_tasks(self) -> int:
        return sum(len(tasks) for _, tasks in self.blocks)


def query_block_bounds(
    query_precursors: np.ndarray,
    library_precursors: np.ndarray,
    params: SearchParameters,
    n_shards: int,
    cost: TaskCost,
    max_block: int | None = None,
    workers: int | None = None,
) -> list[tuple[int, int]]:
    """Query blocks ``(q0, q1)`` sized by the task cost model (:mod:`.cost`).

    Without a window: a first block of :data:`~engine.search.FIRST_QUERY_BLOCK`
    queries, then :meth:`TaskCost.blocks` equal blocks (fixed cost per task against
    the merge of the last block).  With a window: blocks grouped by their queries'
    own windows (wasting fewer pairs than a task's fixed cost is worth), those
    over :data:`~.cost.MAX_TASK_S` split evenly.

    Parameters
    ----------
    query_precursors, library_precursors : ndarray
        In planned order (sorted ascending, NaN last, when ``params`` has a
        precursor tolerance); the library part the shards cover.
    params : SearchParameters
    n_shards : int
        Shards the library is cut into (evenly).
    cost : TaskCost
        The task cost model.
    max_block : int, optional
        Most queries per block (default: no limit but the model's).
    workers : int, optional
        Workers sharing the shards (default: one per shard; more share out the
        blocks of each shard's copies, :mod:`.dispatch`).
    """
    n_q, n_lib = len(query_precursors), len(library_precursors)
    if n_q == 0 or n_lib == 0:
        return []
    cap = max(1, int(max_block)) if max_block else n_q
    if params.precursor_tolerance is None:
        first = min(FIRST_QUERY_BLOCK, cap, n_q)
        k = cost.blocks((n_q - first) * float(n_lib), n_shards, workers)
        size = min(cap, max(1, math.ceil((n_q - first) / k)))
        blocks = [(0, first)] + [(q0, min(q0 + size, n_q)) for q0 in range(first, n_q, size)]
        if workers and workers > n_shards and len(blocks) > 2:
            blocks = _lighter_last(blocks, cap, _task_queries(cost, first, n_lib / n_shards))
        return blocks
    grouped = windowed_query_blocks(
        query_precursors, library_precursors, params, cap,
        first_block=FIRST_QUERY_BLOCK, overhead_pairs=cost.overhead_pairs(),
    )  # fmt: skip
    spans = [
        library_window(query_precursors[q0:q1], library_precursors, params) for q0, q1 in grouped
    ]
    target = max(1.0, cost.max_task_pairs())
    if workers and workers > n_shards:  # shards' copies share out blocks: several per copy
        total = sum(
            (q1 - q0) * (hi - lo) for (q0, q1), (lo, hi) in zip(grouped, spans, strict=True)
        )
        balanced = max(total / (BLOCKS_PER_COPY * workers), 8.0 * cost.overhead_pairs())
        target = max(1.0, min(target, balanced))
    blocks = []
    for (q0, q1), (lo, hi) in zip(grouped, spans, strict=True):  # long blocks split evenly
        touched = max(1, math.ceil((hi - lo) * n_shards / n_lib))
        pieces = max(1, min(q1 - q0, round((q1 - q0) * (hi - lo) / touched / target)))
        edges = np.linspace(q0, q1, pieces + 1).round().astype(np.int64)
        blocks += [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]
    return blocks


def _task_queries(cost: TaskCost, first: int, pairs_per_query: float) -> int:
    """The first block's task on its worker, in queries of a block's task (its fixed
    cost counted as the queries it would score meanwhile)."""
    fixed = cost.worker_fixed_s if cost.worker_fixed_s > 0 else cost.fixed_s
    return first + int(fixed / max(cost.pair_s * pairs_per_query, 1e-30))


def _lighter_last(blocks: list[tuple[int, int]], cap: int, lighter: int) -> list[tuple[int, int]]:
    """Equal blocks after the first, but the last lighter than each by ``lighter``
    queries (by at most three quarters of a block).

    Copies of a shard pull their blocks in order, two in flight each, so the
    worker that runs the first block also runs the last: with one block per copy
    the copies then end together.  With more, a light last block is a short tail.
    """
    first, n_q = blocks[0][1], blocks[-1][1]
    k = len(blocks) - 1
    rest = n_q - first
    other = (rest + lighter) / k  # k - 1 blocks of ``other``, the last ``other - lighter``
    last = max(1, math.ceil(other - min(lighter, 0.75 * other)))
    size = math.ceil((rest - last) / (k - 1)) if last < rest / k else 0
    if not 0 < size <= cap:  # no room to shift queries: keep the blocks equal
        return blocks
    bounds = [(q0, min(q0 + size, n_q - last)) for q0 in range(first, n_q - last, size)]
    return [blocks[0], *bounds, (n_q - last, n_q)]


def make_plan(
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters,
    n_shards: int,
    cost: TaskCost,
    max_block: int | None = None,
    workers: int | None = None,
) -> SearchPlan:
    """Shards, query blocks and tasks of a search of ``queries`` against ``library``."""
    by_precursor = params.precursor_tolerance is not None
    prepared = PreparedSpectra.for_search(queries, params)
    q_order = shard_order(prepared.precursor_mz, by_precursor)
    if by_precursor:
        prepared = prepared.reordered(q_order)
    l_order = shard_order(library.precursor_mz, by_precursor)
    l_prec = library.precursor_mz[l_order]
    n_lib = int(np.isfinite(l_prec).sum()) if by_precursor else len(library)
    n_shards = max(1, min(n_shards, n_lib or 1))
    bounds = np.linspace(0, n_lib, n_shards + 1).round().astype(np.int64)
    blocks = []
    for q0, q1 in query_block_bounds(
        prepared.precursor_mz, l_prec[:n_lib], params, n_shards, cost, max_block, workers
    ):
        if by_precursor:
            lo, hi = library_window(prepared.precursor_mz[q0:q1], l_prec[:n_lib], params)
        else:
            lo, hi = 0, n_lib
        tasks = [
            Task(
                s,
                len(blocks),
                (q1 - q0) * int(min(hi, bounds[s + 1]) - max(lo, bounds[s])),
                (int(q0), int(q1)),
            )
            for s in range(n_shards)
            if min(hi, bounds[s + 1]) > max(lo, bounds[s])
        ]
        if tasks:
            blocks.append(((q0, q1), tasks))
    return SearchPlan(prepared, q_order, l_order, bounds, blocks)
