"""The client side of a Dask search: plan (shard, query block) tasks, merge, stream hits.

The library is split into shards: by precursor m/z ranges when a precursor
tolerance is set (a query block then only visits the shards its window
touches), evenly otherwise.  Query blocks go out as tasks
``(shard, block) -> each query's top-N within the shard`` (:mod:`.shards`); the
client merges each block's top-N over its shards and streams the final hits of a
block as soon as all its shards are done, with progress and cancellation as in
:class:`engine.search.SearchJob`.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.backends import PreparedSpectra
from engine.distributed.cluster import (
    CHECK_TIMEOUT,
    GRACE_PERIOD,
    ClusterError,
    ClusterLostError,
    describe,
    distributed_module,
    shutdown,
)
from engine.distributed.shards import (
    PEAK_FIELDS,
    QueryBlock,
    ShardFileUnavailable,
    ShardSpec,
    file_fingerprint,
    library_fingerprint,
    load_shard,
    score_task,
    shard_order,
    worker_device,
)
from engine.distributed.watch import ClusterGone, ClusterWatch
from engine.hits import HitTable
from engine.io.cache import cache_path
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search import CancelToken, SearchProgress, StreamingJob, library_window, query_blocks

__all__ = ["DaskSearchJob", "search"]


@dataclass
class _Task:
    shard: int
    block: int
    pairs: int


def _sorted_indexes(parts: list[np.ndarray]) -> np.ndarray:
    return np.sort(np.concatenate([np.empty(0, dtype=np.int64), *parts])).astype(np.int64)


@dataclass(frozen=True)
class _ClusterBackend:
    """What the CLI and provenance show as the backend of a Dask search."""

    name: str
    device: str


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
        Library shards (default: one per worker).
    library_path : str or Path, optional
        An ``.npz`` (:meth:`SpectrumLibrary.save`) the workers can read that holds
        exactly ``library``; default: the library's cache file when it holds
        exactly these spectra.  Otherwise each shard's arrays are sent.
    own_client : bool
        Close the client (and its local cluster) when the job ends.
    grace_period : float
        Seconds to wait, once every worker is lost, for one to (re)join before
        raising :class:`ClusterLostError` (default :data:`GRACE_PERIOD`).

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
    ) -> None:
        if backend not in ("auto", "cpu", "cuda"):
            raise ValueError(f"backend must be 'auto', 'cpu' or 'cuda', not {backend!r}")
        if n_shards is not None and n_shards < 1:
            raise ValueError("n_shards must be >= 1")
        if not grace_period >= 0:
            raise ValueError(f"grace_period must be >= 0 seconds, not {grace_period!r}")
        super().__init__(
            queries, library, params, on_progress=on_progress, on_message=on_message,
            cancel_token=cancel_token,
        )  # fmt: skip
        self.grace_period = float(grace_period)
        self.client = client
        self.backend_name = backend
        self.shard_sources: dict[str, int] = {}  # "file"/"data" -> shards loaded that way
        self.tasks_done = 0
        self.tasks_total = 0
        self.duplicates_ignored = 0
        #: Queries whose search did not finish (cancelled, or the cluster was lost):
        #: no hits, or only part of them (those are also in ``incomplete_queries``,
        #: which stays empty with ``top_n > 0``: a cancelled block's hits are dropped whole).
        self.unfinished_queries = np.empty(0, dtype=np.int64)
        self._n_shards, self._library_path = n_shards, library_path
        self._own_client = own_client
        self._seen_notes: set[str] = set()
        self._left: tuple[dict, dict] = ({}, {})  # block -> tasks left; block -> (queries, tasks)
        self.address = str(getattr(client.scheduler, "address", None) or "the Dask scheduler")
        try:
            devices = client.run(worker_device, backend, on_error="return")
        except Exception as exc:  # noqa: BLE001 - scheduler went away
            raise ClusterError(f"the Dask cluster does not answer: {exc}") from None
        kinds = sorted({str(d) for d in devices.values()})
        self.backend = _ClusterBackend(
            name="dask",
            device=f"{describe(client)} ({'; '.join(kinds) if kinds else 'no workers yet'})",
        )

    # -- internals --------------------------------------------------------------------
    def _plan(self):
        p = self.params
        by_precursor = p.precursor_tolerance is not None
        queries = PreparedSpectra.for_search(self.queries, p)
        q_order = shard_order(queries.precursor_mz, by_precursor)
        if by_precursor:
            queries = queries.reordered(q_order)
        l_order = shard_order(self.library.precursor_mz, by_precursor)
        l_prec = self.library.precursor_mz[l_order]
        n_lib = int(np.isfinite(l_prec).sum()) if by_precursor else len(self.library)
        workers = sorted(self.client.nthreads())
        n_shards = max(1, min(self._n_shards or len(workers) or 1, n_lib or 1))
        bounds = np.linspace(0, n_lib, n_shards + 1).round().astype(np.int64)
        # Without a precursor window, larger query blocks make fewer, longer tasks: a
        # task has a fixed cost (shipping and uploading its queries, draining the
        # GPU pipeline), so aim at a few tasks per worker.  With a window, blocks
        # stay small so each one's precursor range (and so its shard set) stays narrow.
        task_size = p.batch_size
        if not by_precursor:
            per_worker = -(-len(queries) // (4 * max(1, len(workers))))
            task_size = max(p.batch_size, -(-per_worker // p.batch_size) * p.batch_size)
        blocks = []
        for b, (q0, q1) in enumerate(query_blocks(len(queries), task_size)):
            if by_precursor:
                lo, hi = library_window(queries.precursor_mz[q0:q1], l_prec[:n_lib], p)
            else:
                lo, hi = 0, n_lib
            tasks = [
                _Task(s, b, (q1 - q0) * int(min(hi, bounds[s + 1]) - max(lo, bounds[s])))
                for s in range(n_shards)
                if min(hi, bounds[s + 1]) > max(lo, bounds[s])
            ]
            if tasks:
                blocks.append(((q0, q1), tasks))
        return queries, q_order, l_order, bounds, workers, blocks

    def _library_file(self) -> tuple[str | None, str]:
        arrays = {k: getattr(self.library, k) for k in PEAK_FIELDS}
        fingerprint = library_fingerprint(arrays)
        candidates = []
        if self._library_path is not None:
            candidates.append(Path(self._library_path))
        elif self.library.source is not None and self.library.source.sha256:
            candidates.append(cache_path(self.library.source.sha256))
        for path in candidates:
            path = path.resolve()
            if file_fingerprint(path) == fingerprint:
                return str(path), fingerprint
            if self._library_path is not None:
                self._say(f"{path} does not hold this library; sending the shards' spectra instead")
        return None, fingerprint

    def __iter__(self) -> Iterator[HitTable]:
        distributed = distributed_module()
        start = time.perf_counter()
        p = self.params
        queries, q_order, l_order, bounds, workers, blocks = self._plan()
        self.progress = SearchProgress(pairs_total=sum(t.pairs for _, ts in blocks for t in ts))
        self.tasks_total = sum(len(ts) for _, ts in blocks)
        job = uuid.uuid4().hex[:12]
        path, fingerprint = self._library_file() if blocks else (None, "")
        shard_futures: dict[int, object] = {}
        shard_home: dict[int, str] = {}  # the worker each shard was pinned to
        shard_round: dict[int, int] = {}  # how often each shard was resubmitted
        payload_mode: set[int] = set()
        placement = list(workers)  # workers the shards are spread over (the live ones)
        n_workers = max(1, len(workers))

        def spec(s: int, with_path: bool) -> ShardSpec:
            return ShardSpec(
                fingerprint, path if with_path else None, p.preprocess, p.mz_power,
                p.intensity_power, p.score, p.tolerance, p.precursor_tolerance is not None,
                int(bounds[s]), int(bounds[s + 1]),
            )  # fmt: skip

        def shard_future(s: int):
            if s not in shard_futures:
                where = {}
                if placement:  # prefer a worker per shard; any other when it is gone
                    shard_home[s] = placement[s % len(placement)]
                    where = {"workers": [shard_home[s]], "allow_other_workers": True}
                if path is not None and s not in payload_mode:
                    sp, payload, kind = spec(s, True), None, "file"
                else:
                    sp, kind = spec(s, False), "data"
                    index = l_order[bounds[s] : bounds[s + 1]]
                    raw = self.library.subset(index)
                    payload = {k: getattr(raw, k) for k in PEAK_FIELDS}
                    payload["global_index"] = np.asarray(index, dtype=np.int64)
                key = f"simms-shard-{sp.token}-{kind}"
                if shard_round.get(s):  # a new key: the stranded one may linger on the scheduler
                    key += f"-{job}-{shard_round[s]}"
                shard_futures[s] = self.client.submit(load_shard, sp, payload, key=key, **where)
            return shard_futures[s]

        block_spectra: dict[int, QueryBlock] = {}
        futures: dict[str, tuple[object, _Task]] = {}
        ac = distributed.as_completed(loop=self.client.loop)

        def submit(task: _Task) -> None:
            q0, q1 = blocks_by_id[task.block][0]
            if task.block not in block_spectra:
                block_spectra[task.block] = QueryBlock(
                    queries.reordered(np.arange(q0, q1)), np.asarray(q_order[q0:q1], dtype=np.int64)
                )
            key = f"simms-score-{job}-{task.shard}-{task.block}-{next(serial)}"
            fut = self.client.submit(
                score_task, shard_future(task.shard), block_spectra[task.block], p,
                self.backend_name, key=key, priority=-task.block, pure=False,
            )  # fmt: skip
            futures[key] = (fut, task)
            ac.add(fut)

        def rescue_shards(live: set[str]) -> None:
            """Resubmit the shards (and their tasks) that Dask stranded when all workers left.

            Dask keeps a task pinned with ``allow_other_workers`` that it had to
            reschedule while no worker was left in 'no-worker' until its pinned worker
            comes back, which a lost worker never does (distributed 2026.8).
            """
            placement[:] = sorted(live)
            stale = [
                s for s, fut in shard_futures.items()
                if shard_home.get(s) not in live and fut.status != "finished"
            ]  # fmt: skip
            if not stale:
                return
            running = {key for keys in self.client.processing().values() for key in keys}
            for s in stale:
                old = shard_futures[s]
                if old.key in running or old.status == "finished":
                    continue
                del shard_futures[s]
                shard_round[s] = shard_round.get(s, 0) + 1
                waiting = [
                    futures.pop(k) for k in [k for k, (_, t) in futures.items() if t.shard == s]
                ]
                self.client.cancel([old, *(fut for fut, _ in waiting)])
                for _, task in waiting:
                    submit(task)
                self._say(f"shard {s} was stranded by the lost workers; resubmitted it")

        serial = itertools.count()
        blocks_by_id = {tasks[0].block: (rng, tasks) for rng, tasks in blocks}
        pending_blocks = list(blocks_by_id)
        remaining = {b: len(tasks) for b, (_, tasks) in blocks_by_id.items()}
        self._left = (
            remaining,
            {b: (q_order[slice(*rng)], len(ts)) for b, (rng, ts) in blocks_by_id.items()},
        )
        parts: dict[int, list[HitTable]] = {b: [] for b in blocks_by_id}
        done: set[tuple[int, int]] = set()
        in_flight_max = max(2 * n_workers, 4) * max(1, len(bounds) - 1)
        watch = ClusterWatch(live=set(workers), peak=len(workers), checked=time.monotonic())
        try:
            while pending_blocks or futures:
                while pending_blocks and len(futures) < in_flight_max and not self.cancelled:
                    for task in blocks_by_id[pending_blocks.pop(0)][1]:
                        submit(task)
                if self.cancelled:
                    self._mark_unfinished()
                    self._say("search cancelled: hits of the query blocks done so far are kept")
                    return
                ready = ac.next_batch(block=False) if ac.has_ready() else []
                if not ready:
                    if time.monotonic() - watch.checked > 1.0:
                        try:
                            watch.check(self.client, self.grace_period, self._say, rescue_shards)
                        except ClusterGone as gone:
                            raise self._lost(watch, gone.scheduler) from None
                    time.sleep(0.02)
                    continue
                for fut in ready:
                    if fut.key not in futures:
                        continue
                    _, task = futures.pop(fut.key)
                    ident = (task.shard, task.block)
                    if ident in done:
                        self.duplicates_ignored += 1
                        continue
                    if fut.status == "error":
                        exc = fut.exception()
                        if isinstance(exc, ShardFileUnavailable) and task.shard not in payload_mode:
                            self._say(
                                f"a worker cannot use the library file ({exc}); "
                                "sending the shard's spectra"
                            )
                            payload_mode.add(task.shard)
                            shard_futures.pop(task.shard, None)
                            submit(task)
                            continue
                        if type(exc).__name__ == "KilledWorker":
                            raise ClusterError(f"Dask gave up on a task: {exc}") from None
                        raise exc
                    result = None
                    if fut.status == "finished":
                        try:  # bounded: a result whose worker dies while sending it is redone
                            result = fut.result(timeout=self.grace_period + CHECK_TIMEOUT)
                        except TimeoutError:
                            pass
                        except Exception:
                            if fut.status != "cancelled":
                                raise
                    if fut.status == "cancelled":  # not by this job: the scheduler's state is gone
                        raise self._lost(watch, "its tasks were dropped") from None
                    if result is None:  # its result went with a worker: it is redone
                        futures[fut.key] = (fut, task)
                        ac.add(fut)
                        continue
                    hits, source, notes = result
                    done.add(ident)
                    self.tasks_done += 1
                    self.shard_sources.setdefault(f"shard {task.shard}", source)
                    for note in notes:
                        if note not in self._seen_notes:
                            self._seen_notes.add(note)
                            self._say(note)
                    self.progress.pairs_done += task.pairs
                    self.progress.elapsed = time.perf_counter() - start
                    remaining[task.block] -= 1
                    if p.top_n == 0:
                        if len(hits):
                            yield self._emit([hits])
                    else:
                        parts[task.block].append(hits)
                        if remaining[task.block] == 0:
                            chunk = self._emit(parts.pop(task.block))
                            if len(chunk):
                                yield chunk
                    self._report()
            self.finished = True
        finally:
            self.progress.elapsed = time.perf_counter() - start
            leftover = [f for f, _ in futures.values()]
            futures.clear()
            try:
                if leftover and self.client.status == "running":
                    self.client.cancel(leftover)
            except Exception:  # noqa: BLE001 - the cluster may be gone already
                pass
            shard_futures.clear()
            if self._own_client:
                shutdown(self.client)

    def _emit(self, parts: list[HitTable]) -> HitTable:
        return self._keep(HitTable.concat(parts).top_per_query(self.params.top_n))

    def _mark_unfinished(self) -> None:
        """Set ``unfinished_queries`` and ``incomplete_queries`` of a search stopped early."""
        remaining, blocks = self._left
        unfinished = [blocks[b][0] for b, left in remaining.items() if left > 0]
        partial = [blocks[b][0] for b, left in remaining.items() if 0 < left < blocks[b][1]]
        self.unfinished_queries = _sorted_indexes(unfinished)
        # with top_n > 0 a block's hits are streamed when all its shards are done
        self.incomplete_queries = _sorted_indexes(partial if self.params.top_n == 0 else [])

    def _lost(self, watch: ClusterWatch, scheduler: str | None = None) -> ClusterLostError:
        """The error of a search whose workers (or scheduler) are gone."""
        self._mark_unfinished()
        hits, grace = self.hits, f"{self.grace_period:g} s"
        if scheduler is not None:
            what = f"lost the connection to the Dask scheduler at {self.address} ({scheduler})"
        elif watch.peak == 0:
            what = f"no Dask worker joined {self.address} within {grace}"
        elif watch.peak == 1:
            what = f"the only Dask worker of {self.address} was lost (none back within {grace})"
        else:
            what = (
                f"all {watch.peak} Dask workers of {self.address} were lost "
                f"(none back within {grace})"
            )
        message = (
            f"{what}; {self.tasks_total - self.tasks_done} of {self.tasks_total} tasks not done, "
            f"{len(self.unfinished_queries)} of {len(self.queries)} queries unfinished; "
            f"the {len(hits)} hits found before are kept"
        )
        return ClusterLostError(
            message, address=self.address, scheduler_lost=scheduler is not None,
            workers_lost=watch.peak, tasks_done=self.tasks_done, tasks_total=self.tasks_total,
            unfinished_queries=self.unfinished_queries,
            incomplete_queries=self.incomplete_queries, hits=hits,
        )  # fmt: skip


def search(
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters | None = None,
    *,
    client,
    backend: str = "auto",
    on_progress: Callable[[SearchProgress], None] | None = None,
    cancel_token: CancelToken | None = None,
    n_shards: int | None = None,
    **param_overrides,
) -> HitTable:
    """:func:`engine.search` on a Dask cluster: the same hits, in canonical order."""
    params = params or SearchParameters()
    if param_overrides:
        params = SearchParameters.from_dict({**params.to_dict(), **param_overrides})
    job = DaskSearchJob(
        queries, library, params, client=client, backend=backend, on_progress=on_progress,
        cancel_token=cancel_token, n_shards=n_shards,
    )  # fmt: skip
    return job.run()
