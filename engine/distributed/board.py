"""The futures of one Dask search, per shard and query block: submit, collect, resend, rescue.

A :class:`TaskBoard` keeps the books of a search's futures on dask.distributed's
own primitives (``Client.submit``, ``as_completed``, ``Client.cancel``):

* :meth:`~TaskBoard.submit` sends a task ``(shard, block) -> each query's top-N
  within the shard`` (:func:`.shards.score_task`) to a worker holding a copy of
  its shard, sending the copy first when it lacks one (:func:`.shards.load_shard`:
  from the workers' store, the library file or the shard's spectra); it is the
  callback of :class:`.dispatch.Dispatch`, which decides which worker runs what;
* :meth:`~TaskBoard.collect` fills the workers' free slots and hands out the
  tasks that came back since, each (shard, block, queries) once: a redone task's
  late twin is ignored, and a shard copy that could not be loaded is sent
  another way (file, then spectra) with its task queued again;
* :meth:`~TaskBoard.resend` queues the tasks of lost workers again (cut into
  pieces for the shard's other copies) and gives a shard left without a
  worker a new home;
* :meth:`~TaskBoard.rescue` stops the search where it is: the tasks in flight
  are cancelled, and it names the queries whose search did not finish, so the
  hits streamed before stay valid final hits.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from engine.distributed.cluster import ClusterError, distributed_module
from engine.distributed.dispatch import BlockLedger, Dispatch, Submitted, place_shards
from engine.distributed.plan import SearchPlan, Task
from engine.distributed.shards import (
    PEAK_FIELDS,
    QueryBlock,
    ShardFileUnavailable,
    ShardNotResident,
    ShardSpec,
    load_shard,
    score_task,
)
from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters

__all__ = ["POLL_S", "Finished", "TaskBoard", "TasksDropped", "shard_specs"]

#: Seconds :meth:`TaskBoard.collect` waits when no task came back.
POLL_S = 0.002


class TasksDropped(RuntimeError):
    """A task came back cancelled (not by the search, which forgets what it cancels)
    or without its result: the scheduler dropped the search's tasks."""


@dataclass(frozen=True)
class Finished:
    """A task that came back, counted once.

    Attributes
    ----------
    sub : Submitted
        The task, the worker it ran on, and when it was sent.
    hits : HitTable
        Each query's top-N within the task's shard, in original indexes.
    source : str
        How its shard came to the worker: ``"resident"``, ``"file"`` or ``"data"``.
    notes : list of str
        One-line notices of the worker (e.g. a GPU failure and the CPU fallback).
    seconds : float
        Seconds on the worker (NaN: its first task, which paid one-time costs).
    block_done : bool
        True when it was the last task of its query block.
    """

    sub: Submitted
    hits: HitTable
    source: str
    notes: list[str]
    seconds: float
    block_done: bool

    @property
    def task(self) -> Task:
        return self.sub.task


def shard_specs(
    plan: SearchPlan, params: SearchParameters, fingerprint: str, path: str | None
) -> list[ShardSpec]:
    """What each shard of ``plan`` holds, and the library file it may be read from."""
    p, bounds = params, plan.bounds
    return [
        ShardSpec(
            fingerprint, path, p.preprocess, p.mz_power, p.intensity_power, p.score,
            p.tolerance, p.precursor_tolerance is not None, int(bounds[s]), int(bounds[s + 1]),
        )
        for s in range(plan.n_shards)
    ]  # fmt: skip


class TaskBoard:
    """The futures of one search: shard copies and tasks, per worker, shard and block.

    Parameters
    ----------
    client : distributed.Client
    plan : SearchPlan
        Shards, query blocks and tasks (:func:`.plan.make_plan`).
    library : SpectrumLibrary
        The library of the plan (a shard's spectra are sent from it when needed).
    params : SearchParameters
    backend : str
        Backend of each worker (``"auto"``, ``"cpu"`` or ``"cuda"``).
    specs : list of ShardSpec
        Each shard's spec (:func:`shard_specs`).
    workers : sequence of str
        The workers to place the shards on (sorted).
    held : mapping
        Shard token -> workers that hold that shard already (:func:`.sources.resident_workers`).
    say : callable
        Called with one-line notices.

    Attributes
    ----------
    workers : list of str
        The workers the shards were placed on (at the start).
    dispatch : Dispatch
        Which worker runs which task; the tasks queued and in flight.
    ledger : BlockLedger
        Tasks left and done of each query block.
    tasks_total : int
        Tasks planned, and pieces of lost tasks cut since.
    duplicates : int
        Results of tasks already counted (a redone task's late twin), ignored.
    """

    def __init__(
        self,
        client,
        plan: SearchPlan,
        library: SpectrumLibrary,
        params: SearchParameters,
        *,
        backend: str,
        specs: list[ShardSpec],
        workers: Sequence[str],
        held: Mapping[str, set[str]],
        say: Callable[[str], None],
    ) -> None:
        self.client, self.plan, self.library, self.params = client, plan, library, params
        self.backend, self.specs, self.held, self._say = backend, specs, held, say
        self.workers = list(workers)
        self.path = specs[0].path if specs else None
        self.job = uuid.uuid4().hex[:12]
        self._serial = itertools.count()
        self._modes: dict[tuple[int, str], str] = {}  # (shard, worker) -> how its copy gets there
        self._copies: dict[tuple[int, str], object] = {}  # (shard, worker) -> its shard future
        self._blocks: dict[int, dict[tuple[int, int], QueryBlock]] = {}  # block -> queries ->
        self._done: set[tuple[int, int, tuple[int, int]]] = set()  # (shard, block, queries)
        # results are fetched by as_completed on the client's loop: a result whose worker
        # dies while sending it is waited for there (it is redone) while the search goes on
        self._ac = distributed_module().as_completed(
            loop=client.loop, with_results=True, raise_errors=False
        )
        resident = {s: set(held.get(spec.token, set())) for s, spec in enumerate(specs)}
        homes = place_shards(plan.n_shards, self.workers, resident)
        self.dispatch = Dispatch(homes, [t for _, tasks in plan.blocks for t in tasks], self.submit)
        self.ledger = BlockLedger(
            {b: len(tasks) for b, (_, tasks) in enumerate(plan.blocks)},
            {b: plan.query_order[slice(*rng)] for b, (rng, _) in enumerate(plan.blocks)},
        )
        self.tasks_total = plan.n_tasks
        self.duplicates = 0

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing in flight: the search is done."""
        return self.dispatch.idle

    # -- submit -------------------------------------------------------------------------
    def submit(self, task: Task, worker: str) -> tuple[object, str]:
        """Send ``task`` to ``worker``, which holds (or is sent) a copy of its shard.

        Pinned: Dask would otherwise steal tasks to an idle worker and copy the
        shard there (without its peak index and GPU copy).

        Returns
        -------
        future, shard_key
            The task's future, and the key of the shard copy it uses.
        """
        q0, q1 = task.queries
        spectra = self._blocks.setdefault(task.block, {})
        if task.queries not in spectra:
            prepared = self.plan.queries.reordered(np.arange(q0, q1))
            order = np.asarray(self.plan.query_order[q0:q1], dtype=np.int64)
            spectra[task.queries] = QueryBlock(prepared, order)
        shard = self._copy(task.shard, worker)
        future = self.client.submit(
            score_task, shard, spectra[task.queries], self.params, self.backend,
            key=f"simms-score-{self.job}-{task.shard}-{task.block}-{q0}-{next(self._serial)}",
            priority=-task.block, pure=False, workers=[worker], allow_other_workers=False,
        )  # fmt: skip
        self._ac.add(future)
        return future, shard.key

    def _mode(self, shard: int, worker: str) -> str:
        """How the copy of ``shard`` gets to ``worker``: ``resident``, ``file`` or ``data``."""
        if (shard, worker) not in self._modes:
            resident = worker in self.held.get(self.specs[shard].token, ())
            self._modes[shard, worker] = "resident" if resident else "file" if self.path else "data"
        return self._modes[shard, worker]

    def _copy(self, shard: int, worker: str):
        """The future of ``shard`` on ``worker`` (pinned: a task there uses it)."""
        if (shard, worker) not in self._copies:
            how, payload = self._mode(shard, worker), None
            spec = self.specs[shard] if how == "file" else self.specs[shard].without_source()
            if how == "data":
                bounds = self.plan.bounds
                index = self.plan.library_order[bounds[shard] : bounds[shard + 1]]
                raw = self.library.subset(index)
                payload = {k: getattr(raw, k) for k in PEAK_FIELDS}
                payload["global_index"] = np.asarray(index, dtype=np.int64)
            key = f"simms-shard-{spec.token}-{how}-{self.job}-{next(self._serial)}"
            self._copies[shard, worker] = self.client.submit(
                load_shard, spec, payload, key=key, workers=[worker], allow_other_workers=False
            )
        return self._copies[shard, worker]

    # -- collect ------------------------------------------------------------------------
    def collect(self) -> Iterator[Finished]:
        """Fill the workers' free slots; then each task that came back since, once.

        Waits :data:`POLL_S` seconds when none came back.

        Raises
        ------
        TasksDropped
            A task came back cancelled or without its result.
        ClusterError
            Dask gave up on a task (``KilledWorker``).
        Exception
            What a task raised (other than a shard copy that a resend can replace).
        """
        self.dispatch.fill()
        ready = self._ac.next_batch(block=False) if self._ac.has_ready() else []
        if not ready:
            time.sleep(POLL_S)
        for future, result in ready:
            finished = self._came_back(future, result)
            if finished is not None:
                yield finished

    def _came_back(self, future, result) -> Finished | None:
        """Book one future that came back; None when it needs nothing more from the job."""
        sub = self.dispatch.finished(future.key)
        if sub is None:  # not one of ours any more (its worker was lost)
            return None
        task = sub.task
        ident = (task.shard, task.block, task.queries)
        if ident in self._done:
            self.duplicates += 1
            return None
        if future.status == "error":
            exc = result if isinstance(result, BaseException) else future.exception()
            if isinstance(exc, ShardFileUnavailable | ShardNotResident) and self._reload(sub, exc):
                return None
            if type(exc).__name__ == "KilledWorker":
                raise ClusterError(f"Dask gave up on a task: {exc}") from None
            raise exc
        if future.status == "cancelled" or isinstance(result, BaseException):
            raise TasksDropped("its tasks were dropped")
        hits, source, notes, seconds = result
        self._done.add(ident)
        block_done = self.ledger.finish(task.block)
        if block_done:
            self._blocks.pop(task.block, None)
        how = self._mode(task.shard, sub.worker)
        source = "resident" if how == "resident" else source
        return Finished(sub, hits, source, list(notes), float(seconds), block_done)

    # -- resend -------------------------------------------------------------------------
    def _reload(self, sub: Submitted, exc: Exception) -> bool:
        """After a shard copy failed to load: send it another way; False if there is none."""
        s, w = sub.task.shard, sub.worker
        current = self._copies.get((s, w))
        if current is None or current.key != sub.shard_key:  # already replaced
            self.dispatch.requeue(sub.task)
            return True
        how = self._mode(s, w)
        if how == "data" or isinstance(exc, ShardFileUnavailable) and how != "file":
            return False
        if how == "file":
            self._say(f"a worker cannot use the library file ({exc}); sending the shard's spectra")
            self._modes[s, w] = "data"
        else:  # not resident after all (its worker was replaced)
            self._modes[s, w] = "file" if self.path else "data"
        self._copies.pop((s, w), None)
        self.dispatch.requeue(sub.task)
        return True

    def resend(self, live: set[str]) -> None:
        """Queue the tasks of workers not in ``live`` again; give shards without a home one.

        A shard has none when its workers were lost, or when no worker was there
        at the start: the first to join takes it.  (The callback ``rescue`` of
        :meth:`.watch.ClusterWatch.check`.)
        """
        dispatch = self.dispatch
        lost = {w for ws in dispatch.homes.values() for w in ws} - live
        lost |= {sub.worker for sub in dispatch.in_flight.values()} - live
        if lost:
            futures, _, cut = dispatch.drop_workers(lost)
            self.tasks_total += self.ledger.add_pieces(cut)  # a block waits for each piece
            if cut:
                n = sum(len(pieces) for _, pieces in cut)
                self._say(
                    f"{len(cut)} task(s) of the lost worker(s) cut into {n} pieces for the "
                    "workers left"
                )
            futures += [self._copies.pop(k) for k in [k for k in self._copies if k[1] in lost]]
            self.client.cancel(futures)
        for s in [s for s, ws in dispatch.homes.items() if not ws]:
            if dispatch.add_home(s, sorted(live)) is not None and lost:
                self._say(f"shard {s} was stranded by a lost worker; resubmitted it to another")

    # -- rescue -------------------------------------------------------------------------
    def rescue(self) -> tuple[np.ndarray, np.ndarray]:
        """Stop here: cancel the tasks in flight; the queries whose search did not finish.

        Returns
        -------
        unfinished : ndarray
            Queries (original indexes, sorted) of the blocks with tasks left.
        partial : ndarray
            Those of them with tasks (or pieces) done: hits streamed with
            ``top_n == 0``, none otherwise (a block's hits are merged when all its
            shards are done).
        """
        self._cancel_in_flight()
        return self.ledger.unfinished(), self.ledger.partial()

    def close(self) -> None:
        """Cancel the tasks still in flight and let go of the shard copies."""
        self._cancel_in_flight()
        self._copies.clear()

    def _cancel_in_flight(self) -> None:
        leftover = [sub.future for sub in self.dispatch.in_flight.values()]
        self.dispatch.in_flight.clear()
        try:
            if leftover and self.client.status == "running":
                self.client.cancel(leftover)
        except Exception:  # noqa: BLE001 - the cluster may be gone already
            pass
