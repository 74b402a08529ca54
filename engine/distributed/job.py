"""The client side of a Dask search: place shards, send query blocks, merge, stream hits.

The plan (:mod:`.plan`) cuts the library into shards (one, on every worker, when
it fits their memory; else a multiple of the workers) and the queries into blocks
sized by the cost model (:mod:`.cost`).  Shards go to the workers that hold them
already (:func:`.sources.resident_workers`), the others to the least loaded ones
(:func:`.dispatch.place_shards`).
Tasks ``(shard, block) -> each query's top-N within the shard``
(:func:`.shards.score_task`) go to a worker holding their shard whenever it has
a slot free (:class:`.dispatch.Dispatch`) and return only that top-N; the client
merges each block's top-N over its shards (exact: the same kernel on the same
arrays, ties broken by library index; nothing to merge with one shard) and
streams the final hits of a block as soon as all its shards are done, with
progress and cancellation as in :class:`engine.search.SearchJob`.
"""

from __future__ import annotations

import itertools
import math
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from engine.distributed.cluster import (
    GRACE_PERIOD,
    ClusterBackend,
    ClusterError,
    ClusterLostError,
    describe,
    distributed_module,
    shutdown,
)
from engine.distributed.cost import TaskCost, record, task_cost
from engine.distributed.dispatch import (
    BlockLedger,
    Dispatch,
    Submitted,
    TaskRecord,
    balanced_shards,
    place_shards,
    shards_for_memory,
)
from engine.distributed.plan import SearchPlan, Task, make_plan
from engine.distributed.shards import (
    PEAK_FIELDS,
    QueryBlock,
    ShardFileUnavailable,
    ShardNotResident,
    ShardSpec,
    load_shard,
    resident_tokens,
    score_task,
    worker_device,
    worker_memory,
)
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
        self.tasks_total = 0
        self.duplicates_ignored = 0
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
        self._blocks = BlockLedger()
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
        n_workers = max(1, len([w for w in workers if w not in self.silent_workers]))
        return balanced_shards(shards_for_memory(len(self.library), peaks, known), n_workers)

    def __iter__(self) -> Iterator[HitTable]:
        distributed = distributed_module()
        start = time.perf_counter()
        p = self.params
        workers = sorted(set(self.client.nthreads()) - self.silent_workers)
        n_shards = self._n_shards or self._shards_for(workers)
        workers = [w for w in workers if w not in self.silent_workers]
        plan: SearchPlan = make_plan(
            self.queries, self.library, p, n_shards, self.task_cost, self._max_block,
            workers=max(1, len(workers)),
        )  # fmt: skip
        queries, q_order = plan.queries, plan.query_order
        l_order, bounds = plan.library_order, plan.bounds
        self.progress = SearchProgress(pairs_total=plan.pairs)
        self.tasks_total = plan.n_tasks
        job = uuid.uuid4().hex[:12]
        fingerprint = library_fingerprint(self.library) if plan.blocks else ""
        path = (
            library_file(self.library, self._library_path, fingerprint, self._say)
            if plan.blocks
            else None
        )
        specs = [
            ShardSpec(
                fingerprint, path, p.preprocess, p.mz_power, p.intensity_power, p.score,
                p.tolerance, p.precursor_tolerance is not None, int(bounds[s]), int(bounds[s + 1]),
            )
            for s in range(plan.n_shards)
        ]  # fmt: skip
        try:
            held = resident_workers(self._ask(workers, resident_tokens)) if plan.blocks else {}
        except Exception:  # noqa: BLE001 - then every shard is sent; the watch tells the rest
            held = {}
        workers = [w for w in workers if w not in self.silent_workers]
        homes = place_shards(
            plan.n_shards,
            workers,
            {s: held.get(specs[s].token, set()) for s in range(plan.n_shards)},
        )
        mode: dict[tuple[int, str], str] = {}  # (shard, worker) -> how its copy gets there

        def mode_of(s: int, w: str) -> str:
            if (s, w) not in mode:
                resident = w in held.get(specs[s].token, ())
                mode[s, w] = "resident" if resident else "file" if path else "data"
            return mode[s, w]

        serial = itertools.count()
        copies: dict[tuple[int, str], object] = {}  # (shard, worker) -> its shard future

        def copy_of(s: int, w: str):
            """The future of shard ``s`` on worker ``w`` (pinned: a task there uses it)."""
            if (s, w) not in copies:
                how, payload = mode_of(s, w), None
                sp = specs[s] if how == "file" else specs[s].without_source()
                if how == "data":
                    index = l_order[bounds[s] : bounds[s + 1]]
                    raw = self.library.subset(index)
                    payload = {k: getattr(raw, k) for k in PEAK_FIELDS}
                    payload["global_index"] = np.asarray(index, dtype=np.int64)
                key = f"simms-shard-{sp.token}-{how}-{job}-{next(serial)}"
                copies[s, w] = self.client.submit(
                    load_shard, sp, payload, key=key, workers=[w], allow_other_workers=False
                )
            return copies[s, w]

        block_spectra: dict[int, dict[tuple[int, int], QueryBlock]] = {}  # block -> queries ->
        # results are fetched by as_completed on the client's loop: a result whose worker
        # dies while sending it is waited for there (it is redone) while this loop goes on
        ac = distributed.as_completed(loop=self.client.loop, with_results=True, raise_errors=False)

        def submit(task: Task, w: str) -> tuple[object, str]:
            """Send ``task`` to worker ``w``, which holds (or is sent) a copy of its shard.

            Pinned: Dask would otherwise steal tasks to an idle worker and copy the
            shard there (without its peak index and GPU copy).
            """
            q0, q1 = task.queries
            spectra = block_spectra.setdefault(task.block, {})
            if task.queries not in spectra:
                spectra[task.queries] = QueryBlock(
                    queries.reordered(np.arange(q0, q1)), np.asarray(q_order[q0:q1], dtype=np.int64)
                )
            shard = copy_of(task.shard, w)
            fut = self.client.submit(
                score_task, shard, spectra[task.queries], p, self.backend_name,
                key=f"simms-score-{job}-{task.shard}-{task.block}-{q0}-{next(serial)}",
                priority=-task.block, pure=False, workers=[w], allow_other_workers=False,
            )  # fmt: skip
            ac.add(fut)
            return fut, shard.key

        dispatch = Dispatch(homes, [t for _, tasks in plan.blocks for t in tasks], submit)
        self.planned_s = time.perf_counter() - start

        def rescue_shards(live: set[str]) -> None:
            """Queue the tasks of lost workers again; give shards without a home one.

            A shard has none when its workers were lost, or when no worker was
            there at the start: the first to join takes it.
            """
            lost = {w for ws in dispatch.homes.values() for w in ws} - live
            lost |= {sub.worker for sub in dispatch.in_flight.values()} - live
            if lost:
                futures, _, cut = dispatch.drop_workers(lost)
                self.tasks_total += ledger.add_pieces(cut)  # a block waits for each piece
                if cut:
                    n = sum(len(pieces) for _, pieces in cut)
                    self._say(
                        f"{len(cut)} task(s) of the lost worker(s) cut into {n} pieces for the "
                        "workers left"
                    )
                futures += [copies.pop(k) for k in [k for k in copies if k[1] in lost]]
                self.client.cancel(futures)
            for s in [s for s, ws in dispatch.homes.items() if not ws]:
                if dispatch.add_home(s, sorted(live)) is not None and lost:
                    self._say(f"shard {s} was stranded by a lost worker; resubmitted it to another")

        def resend(sub: Submitted, exc: Exception) -> bool:
            """After a shard copy failed to load: send it another way; False if there is none."""
            s, w = sub.task.shard, sub.worker
            current = copies.get((s, w))
            if current is None or current.key != sub.shard_key:  # already replaced
                dispatch.requeue(sub.task)
                return True
            how = mode_of(s, w)
            if how == "data" or isinstance(exc, ShardFileUnavailable) and how != "file":
                return False
            if how == "file":
                self._say(
                    f"a worker cannot use the library file ({exc}); sending the shard's spectra"
                )
                mode[s, w] = "data"
            else:  # not resident after all (its worker was replaced)
                mode[s, w] = "file" if path else "data"
            copies.pop((s, w), None)
            dispatch.requeue(sub.task)
            return True

        ledger = self._blocks = BlockLedger(
            {b: len(tasks) for b, (_, tasks) in enumerate(plan.blocks)},
            {b: q_order[slice(*rng)] for b, (rng, _) in enumerate(plan.blocks)},
        )
        parts: dict[int, list[HitTable]] = {b: [] for b in ledger.left}
        done: set[tuple[int, int, tuple[int, int]]] = set()  # (shard, block, queries)
        watch = ClusterWatch(
            set(workers), len(workers), time.monotonic(), stall_timeout=self.stall_timeout,
            stalled=set(self.silent_workers),
        )  # fmt: skip
        first_start: float | None = None  # when the first finished task began, on this clock
        client_s, hit_rows = 0.0, 0  # seconds merging hit rows, and the rows
        try:
            while not dispatch.idle:
                if self.cancelled:
                    self._mark_unfinished()
                    self._say("search cancelled: hits of the query blocks done so far are kept")
                    return
                dispatch.fill()
                if time.monotonic() - watch.checked > CHECK_EVERY:
                    try:
                        watch.check(self.client, self.grace_period, self._say, rescue_shards)
                    except ClusterGone as gone:
                        raise self._lost(watch, gone.scheduler) from None
                ready = ac.next_batch(block=False) if ac.has_ready() else []
                if not ready:
                    time.sleep(0.002)
                    continue
                for fut, result in ready:
                    sub = dispatch.finished(fut.key)
                    if sub is None:
                        continue
                    task = sub.task
                    ident = (task.shard, task.block, task.queries)
                    if ident in done:
                        self.duplicates_ignored += 1
                        continue
                    if fut.status == "error":
                        exc = result if isinstance(result, BaseException) else fut.exception()
                        if isinstance(exc, ShardFileUnavailable | ShardNotResident) and resend(
                            sub, exc
                        ):
                            continue
                        if type(exc).__name__ == "KilledWorker":
                            raise ClusterError(f"Dask gave up on a task: {exc}") from None
                        raise exc
                    if fut.status == "cancelled" or isinstance(result, BaseException):
                        # not by this job (it forgets what it cancels): the scheduler lost it
                        raise self._lost(watch, "its tasks were dropped") from None
                    hits, source, notes, seconds = result
                    hit_rows += len(hits)
                    done.add(ident)
                    self.tasks_done += 1
                    self.task_times.append((task.pairs, float(seconds)))
                    now = time.perf_counter()
                    self.task_log.append(
                        TaskRecord(
                            sub.worker, task.shard, task.block, task.pairs, float(seconds),
                            sub.sent - start, now - start,
                        )
                    )  # fmt: skip
                    if math.isfinite(seconds):
                        first_start = min(first_start or now, now - float(seconds))
                    how = mode_of(task.shard, sub.worker)
                    self.shard_sources.setdefault(
                        f"shard {task.shard}", "resident" if how == "resident" else source
                    )
                    for note in notes:
                        if note not in self._seen_notes:
                            self._seen_notes.add(note)
                            self._say(note)
                    self.progress.pairs_done += task.pairs
                    self.progress.elapsed = now - start
                    block_done = ledger.finish(task.block)
                    if block_done:
                        block_spectra.pop(task.block, None)
                    if p.top_n == 0:
                        if len(hits):
                            yield self._emit([hits])
                    else:
                        parts[task.block].append(hits)
                        if block_done:
                            merge_start = time.perf_counter()
                            chunk = self._emit(parts.pop(task.block))
                            client_s += time.perf_counter() - merge_start
                            if len(chunk):
                                yield chunk
                    self._report()
            self.finished = True
            if self.task_times and first_start is not None:
                pairs, seconds = zip(*self.task_times, strict=True)
                record(
                    self.address, self._device_kind, pairs, seconds,
                    span=time.perf_counter() - first_start, workers=len(watch.live) or 1,
                    hits=hit_rows, client_s=client_s,
                )  # fmt: skip
        finally:
            self.progress.elapsed = time.perf_counter() - start
            leftover = [sub.future for sub in dispatch.in_flight.values()]
            dispatch.in_flight.clear()
            try:
                if leftover and self.client.status == "running":
                    self.client.cancel(leftover)
            except Exception:  # noqa: BLE001 - the cluster may be gone already
                pass
            copies.clear()
            if self._own_client:
                shutdown(self.client)

    def _emit(self, parts: list[HitTable]) -> HitTable:
        if len(parts) == 1:  # one shard: the worker's top-N is final (same selection)
            return self._keep(parts[0])
        return self._keep(HitTable.concat(parts).top_per_query(self.params.top_n))

    def _mark_unfinished(self) -> None:
        """Set ``unfinished_queries`` and ``incomplete_queries`` of a search stopped early."""
        self.unfinished_queries = self._blocks.unfinished()
        # with top_n > 0 a block's hits are streamed when all its shards are done
        top_n = self.params.top_n
        self.incomplete_queries = self._blocks.partial() if top_n == 0 else np.empty(0, np.int64)

    def _lost(self, watch: ClusterWatch, scheduler: str | None = None) -> ClusterLostError:
        """The error of a search whose workers (or scheduler) are gone."""
        self._mark_unfinished()
        return lost_error(self, watch, scheduler)
