"""The client side of a Dask search: place shards, send query blocks, merge, stream hits.

The plan (:mod:`.plan`) cuts the library into shards (one, on every worker, when
it fits their memory; else a multiple of the workers) and the queries into blocks
sized by the cost model (:mod:`.cost`).  Shards go to the workers that hold them
already (:func:`.sources.resident_workers`), the others to the least loaded ones
(:func:`.dispatch.place_shards`).
Tasks ``(shard, block) -> each query's top-N within the shard``
(:func:`.shards.score_task`) go to a worker holding their shard whenever it has
a slot free (:class:`.dispatch.Dispatch`) and return only that top-N; the
futures of shard copies and tasks are kept by a :class:`.board.TaskBoard`
(submit, collect, resend to the workers left, rescue on a stop).  The client
merges each block's top-N over its shards (exact: the same kernel on the same
arrays, ties broken by library index; nothing to merge with one shard) and
streams the final hits of a block as soon as all its shards are done, with
progress and cancellation as in :class:`engine.search.SearchJob`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.distributed.board import Finished, TaskBoard, TasksDropped, shard_specs
from engine.distributed.cluster import (
    GRACE_PERIOD,
    ClusterBackend,
    ClusterError,
    ClusterLostError,
    describe,
    shutdown,
)
from engine.distributed.cost import TaskCost, record, task_cost
from engine.distributed.dispatch import (
    TaskRecord,
    balanced_shards,
    shards_for_memory,
)
from engine.distributed.plan import make_plan
from engine.distributed.shards import resident_tokens, worker_device, worker_memory
from engine.distributed.sources import library_file, library_fingerprint, resident_workers
from engine.distributed.watch import (
    CHECK_EVERY,
    STALL_TIMEOUT,
    ClusterGone,
    ClusterWatch,
    ask_timeout,
    ask_workers,
    check_timeouts,
    lost_error,
    silent_message,
)
from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search import CancelToken, SearchProgress, StreamingJob

__all__ = ["DaskSearchJob", "TaskRecord"]


class DaskSearchJob(StreamingJob):
    """One search of ``queries`` against ``library`` on a Dask cluster.

    Used like :class:`engine.search.SearchJob`: iterate (or :meth:`run`) to get
    :class:`~engine.hits.HitTable` chunks of final hits, in original indexes;
    ``progress``, ``hits``, ``cancel()``, ``messages``, ``backend`` as there.

    Parameters
    ----------
    queries, library : SpectrumLibrary
    params : SearchParameters, optional
    client : distributed.Client
        From :func:`connect` or :func:`local_cluster`.
    backend : {"auto", "cpu", "cuda"}
        Backend of each worker (``auto``: its GPU when it has a usable one).
    on_progress, on_message, cancel_token
        As in :class:`~engine.search.SearchJob`; progress is aggregated here.
    n_shards : int, optional
        Library shards (default: as few as the workers' free memory allows, one
        when the library fits: every worker then holds a copy and the query
        blocks are shared out).  Fewer shards than workers are copied.
    library_path : str or Path, optional
        An ``.npz`` (:meth:`SpectrumLibrary.save`) the workers can read that holds
        exactly ``library``; default: the library's cache file when it holds
        exactly these spectra.  Otherwise each shard's arrays are sent.
    own_client : bool
        Close the client (and its local cluster) when the job ends.
    grace_period : float
        Seconds to wait, once every worker is lost, for one to (re)join before
        raising :class:`ClusterLostError` (default :data:`GRACE_PERIOD`).
    stall_timeout : float
        Seconds a worker may go without a heartbeat before it is treated as lost
        and its tasks are redone on the others (default :data:`.watch.STALL_TIMEOUT`).
        A worker that does not answer the job's first questions (its device, free
        memory, resident shards) within ``min(stall_timeout, ASK_TIMEOUT)`` seconds
        is left out of the search from the start, the same way.
    max_block_queries : int, optional
        Most queries per block (default: as the task cost model sizes them).

    Attributes
    ----------
    task_cost : TaskCost
        The cost model the blocks were sized by (:mod:`engine.distributed.cost`).
    task_times : list of (int, float)
        Pairs and worker seconds of each finished task.
    task_log : list of TaskRecord
        Each finished task: worker, shard, block, and when it was sent and came back.
    planned_s : float
        Seconds from the start to the plan (queries prepared, shards placed).
    shard_sources : dict
        ``"shard s"`` -> ``"file"``, ``"data"`` or ``"resident"`` (found on its worker).
    silent_workers : set of str
        Workers that did not answer the first questions: left out of the search.

    Raises
    ------
    ClusterLostError
        While iterating: every worker was lost for ``grace_period`` seconds, or the
        connection to the scheduler was lost; hits streamed before stay valid.
    ClusterError
        The cluster does not answer, or Dask gave up on a task (``KilledWorker``).
    """

    def __init__(
        self,
        queries: SpectrumLibrary,
        library: SpectrumLibrary,
        params: SearchParameters | None = None,
        *,
        client,
        backend: str = "auto",
        on_progress: Callable[[SearchProgress], None] | None = None,
        on_message: Callable[[str], None] | None = None,
        cancel_token: CancelToken | None = None,
        n_shards: int | None = None,
        library_path: str | Path | None = None,
        own_client: bool = False,
        grace_period: float = GRACE_PERIOD,
        max_block_queries: int | None = None,
        stall_timeout: float = STALL_TIMEOUT,
    ) -> None:
        if backend not in ("auto", "cpu", "cuda"):
            raise ValueError(f"backend must be 'auto', 'cpu' or 'cuda', not {backend!r}")
        if n_shards is not None and n_shards < 1:
            raise ValueError("n_shards must be >= 1")
        if max_block_queries is not None and max_block_queries < 1:
            raise ValueError("max_block_queries must be >= 1")
        check_timeouts(grace_period, stall_timeout)
        super().__init__(
            queries, library, params, on_progress=on_progress, on_message=on_message,
            cancel_token=cancel_token,
        )  # fmt: skip
        self.grace_period, self.stall_timeout = float(grace_period), float(stall_timeout)
        self.client = client
        self.backend_name = backend
        self.shard_sources: dict[str, str] = {}
        self.tasks_done = 0
        self.task_times: list[tuple[int, float]] = []
        self.task_log: list[TaskRecord] = []
        self.planned_s = float("nan")
        #: Queries whose search did not finish (cancelled, or the cluster was lost):
        #: no hits, or only part of them (those are also in ``incomplete_queries``,
        #: which stays empty with ``top_n > 0``: a cancelled block's hits are dropped whole).
        self.unfinished_queries = np.empty(0, dtype=np.int64)
        self._n_shards, self._library_path = n_shards, library_path
        self._max_block = max_block_queries
        self._own_client = own_client
        self._seen_notes: set[str] = set()
        self._task_board: TaskBoard | None = None
        self.address = str(getattr(client.scheduler, "address", None) or "the Dask scheduler")
        self.silent_workers: set[str] = set()
        try:
            devices = self._ask(client.nthreads(), worker_device, backend)
        except Exception as exc:  # noqa: BLE001 - scheduler went away
            raise ClusterError(f"the Dask cluster does not answer: {exc}") from None
        kinds = sorted({str(d) for d in devices.values()})
        self._device_kind = "cuda" if any(k.startswith("cuda") for k in kinds) else "cpu"
        self.task_cost: TaskCost = task_cost(self.address, self._device_kind)
        self.backend = ClusterBackend(
            name="dask",
            device=f"{describe(client)} ({'; '.join(kinds) if kinds else 'no workers yet'})",
        )

    @property
    def tasks_total(self) -> int:
        """(shard, query block) tasks planned, and pieces of lost tasks cut since."""
        return self._task_board.tasks_total if self._task_board is not None else 0

    @property
    def duplicates_ignored(self) -> int:
        """Results of tasks already counted (a redone task's late twin), ignored."""
        return self._task_board.duplicates if self._task_board is not None else 0

    # -- internals --------------------------------------------------------------------
    def _ask(self, workers, function: Callable, *args: object) -> dict[str, object]:
        """``function(*args)`` on those of ``workers`` not silent, each awaited a bounded time.

        Those that do not answer within :func:`.watch.ask_timeout` seconds join
        ``silent_workers`` (each named in a message): the search leaves them out.
        """
        seconds = ask_timeout(self.stall_timeout)
        answers, silent = ask_workers(
            self.client, function, *args, workers=set(workers) - self.silent_workers,
            timeout=seconds,
        )  # fmt: skip
        for worker in silent:
            self.silent_workers.add(worker)
            self._say(silent_message(worker, seconds))
        return answers

    def _shards_for(self, workers: list[str]) -> int:
        """Shards of a search without ``n_shards``: as few as the workers' memory allows.

        One shard (a copy on every worker) when the library fits; else enough that
        each fits, made a divisor or multiple of the workers so their work is even.
        """
        try:
            free = self._ask(workers, worker_memory, self.backend_name)
        except Exception:  # noqa: BLE001 - the watch tells about the cluster
            free = {}
        known = [f for f in free.values() if isinstance(f, int | float)]
        peaks = int(self.library.offsets[-1]) if len(self.library) else 0
        n_workers = max(1, len(self._answering(workers)))
        return balanced_shards(shards_for_memory(len(self.library), peaks, known), n_workers)

    def _answering(self, workers: list[str]) -> list[str]:
        """Those of ``workers`` not left out as silent."""
        return [w for w in workers if w not in self.silent_workers]

    def _make_board(self) -> TaskBoard:
        """Plan the search, find the shards the workers hold, place them: its task board."""
        workers = sorted(set(self.client.nthreads()) - self.silent_workers)
        n_shards = self._n_shards or self._shards_for(workers)
        workers = self._answering(workers)
        plan = make_plan(
            self.queries, self.library, self.params, n_shards, self.task_cost, self._max_block,
            workers=max(1, len(workers)),
        )  # fmt: skip
        self.progress = SearchProgress(pairs_total=plan.pairs)
        fingerprint = library_fingerprint(self.library) if plan.blocks else ""
        path = (
            library_file(self.library, self._library_path, fingerprint, self._say)
            if plan.blocks
            else None
        )
        try:
            held = resident_workers(self._ask(workers, resident_tokens)) if plan.blocks else {}
        except Exception:  # noqa: BLE001 - then every shard is sent; the watch tells the rest
            held = {}
        self._task_board = TaskBoard(
            self.client, plan, self.library, self.params, backend=self.backend_name,
            specs=shard_specs(plan, self.params, fingerprint, path),
            workers=self._answering(workers), held=held, say=self._say,
        )  # fmt: skip
        return self._task_board

    def __iter__(self) -> Iterator[HitTable]:
        start = time.perf_counter()
        board = self._make_board()
        self.planned_s = time.perf_counter() - start
        watch = ClusterWatch(
            set(board.workers), len(board.workers), time.monotonic(),
            stall_timeout=self.stall_timeout,
            stalled=set(self.silent_workers),
        )  # fmt: skip
        costs = _Costs()
        parts: dict[int, list[HitTable]] = {b: [] for b in board.ledger.left}
        try:
            while not board.idle:
                if self.cancelled:
                    self._mark_unfinished()
                    self._say("search cancelled: hits of the query blocks done so far are kept")
                    return
                if time.monotonic() - watch.checked > CHECK_EVERY:
                    watch.check(self.client, self.grace_period, self._say, board.resend)
                for done in board.collect():
                    self._count(done, start, costs)
                    yield from self._final(done, parts, costs)
                    self._report()
            self.finished = True
            self._record_costs(costs, len(watch.live) or 1)
        except ClusterGone as gone:
            raise self._lost(watch, gone.scheduler) from None
        except TasksDropped:
            raise self._lost(watch, "its tasks were dropped") from None
        finally:
            self.progress.elapsed = time.perf_counter() - start
            board.close()
            if self._own_client:
                shutdown(self.client)

    def _count(self, done: Finished, start: float, costs: _Costs) -> None:
        """Count a finished task: its time, its shard's source, its notes, the progress."""
        task, sub = done.task, done.sub
        costs.hit_rows += len(done.hits)
        self.tasks_done += 1
        self.task_times.append((task.pairs, done.seconds))
        now = time.perf_counter()
        self.task_log.append(
            TaskRecord(
                sub.worker, task.shard, task.block, task.pairs, done.seconds,
                sub.sent - start, now - start,
            )
        )  # fmt: skip
        if math.isfinite(done.seconds):
            costs.first_start = min(costs.first_start or now, now - done.seconds)
        self.shard_sources.setdefault(f"shard {task.shard}", done.source)
        for note in done.notes:
            if note not in self._seen_notes:
                self._seen_notes.add(note)
                self._say(note)
        self.progress.pairs_done += task.pairs
        self.progress.elapsed = now - start

    def _final(
        self, done: Finished, parts: dict[int, list[HitTable]], costs: _Costs
    ) -> Iterator[HitTable]:
        """The final hits a finished task makes: its own (``top_n == 0``), or its block's
        merged over the shards when it was the block's last."""
        if self.params.top_n == 0:
            if len(done.hits):
                yield self._emit([done.hits])
            return
        parts[done.task.block].append(done.hits)
        if done.block_done:
            merge_start = time.perf_counter()
            chunk = self._emit(parts.pop(done.task.block))
            costs.client_s += time.perf_counter() - merge_start
            if len(chunk):
                yield chunk

    def _record_costs(self, costs: _Costs, workers: int) -> None:
        """Refine the task cost model of this scheduler and device with the search's tasks."""
        if self.task_times and costs.first_start is not None:
            pairs, seconds = zip(*self.task_times, strict=True)
            record(
                self.address, self._device_kind, pairs, seconds,
                span=time.perf_counter() - costs.first_start, workers=workers,
                hits=costs.hit_rows, client_s=costs.client_s,
            )  # fmt: skip

    def _emit(self, parts: list[HitTable]) -> HitTable:
        if len(parts) == 1:  # one shard: the worker's top-N is final (same selection)
            return self._keep(parts[0])
        return self._keep(HitTable.concat(parts).top_per_query(self.params.top_n))

    def _mark_unfinished(self) -> None:
        """Set ``unfinished_queries`` and ``incomplete_queries`` of a search stopped early."""
        empty = np.empty(0, dtype=np.int64)
        board = self._task_board
        unfinished, partial = board.rescue() if board is not None else (empty, empty)
        self.unfinished_queries = unfinished
        # with top_n > 0 a block's hits are streamed when all its shards are done
        self.incomplete_queries = partial if self.params.top_n == 0 else empty

    def _lost(self, watch: ClusterWatch, scheduler: str | None = None) -> ClusterLostError:
        """The error of a search whose workers (or scheduler) are gone."""
        self._mark_unfinished()
        return lost_error(self, watch, scheduler)


@dataclass
class _Costs:
    """What a search measures for the task cost model besides the tasks' own times."""

    first_start: float | None = None  # when the first timed task began, on this clock
    client_s: float = 0.0  # seconds merging hit rows
    hit_rows: int = 0
