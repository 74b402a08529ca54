"""Searching a repository shard by shard with the engine's own search.

Each shard is opened as a :class:`~engine.library.SpectrumLibrary` over its
stored peaks and searched by :func:`engine.api.search_job` (the same kernels,
backends and exact scores as any library search), only with the queries whose
precursor window and ion mode can reach the shard.  Each shard's hits (its top
N per query) get repository indexes (``shard.start + position``); a query's
top N over the shards is the top N of these, ties broken by repository index
as the in-memory search breaks them by library index.  So the hits equal those
of :meth:`Repository.library` searched in memory.

Where shards run:

* locally (``client=None``): one after the other, each on ``backend``;
* ``via="tasks"`` on a Dask cluster: one task per shard; a worker opens the
  shard from the repository folder (which every worker must see at the same
  path) and keeps up to ``resident_bytes`` of opened shards (their prepared
  peaks, indexes and, on a GPU worker, device copies) for later searches;
* ``via="job"`` on a Dask cluster: each shard is read here and searched by a
  :class:`engine.distributed.DaskSearchJob` over the whole cluster.

Hits stream: iterating the job yields a :class:`~engine.hits.HitTable` chunk of
final hits each time the last shard a query needs finishes.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from engine.api import parameters_with, search_job
from engine.backends import Backend, PreparedSpectra, get_backend
from engine.backends.base import preparation_key
from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.memo import nbytes
from engine.params import SearchParameters
from engine.repository.prepared import load_prepared
from engine.repository.store import Shard
from engine.search import CancelToken, SearchJob

__all__ = ["RepositoryProgress", "RepositorySearchJob", "shard_queries"]

VIAS = ("tasks", "job")


@dataclass
class RepositoryProgress:
    """Where a repository search stands.

    Attributes
    ----------
    shards_done, shards_total : int
        Shard searches finished, and planned (shards no query can reach are skipped).
    queries_done : int
        Queries whose hits are final.
    first_hits_seconds : float or None
        Seconds from the start to the first final chunk.
    seconds : float
        Seconds so far.
    """

    shards_done: int = 0
    shards_total: int = 0
    queries_done: int = 0
    first_hits_seconds: float | None = None
    seconds: float = 0.0
    shard_seconds: dict[str, float] = field(default_factory=dict)


def shard_queries(shard: Shard, queries: SpectrumLibrary, params: SearchParameters) -> np.ndarray:
    """Positions of the queries that can have hits in ``shard`` (a superset, never fewer).

    With a precursor window, a query reaches a shard when its window (widened
    by a hair) meets the shard's precursor range; with ``match_ion_mode``, not
    when its ion mode is the shard's opposite.  Queries without a precursor,
    and shards holding spectra without one, are left to the search to decide.
    """
    m = shard.manifest
    keep = np.ones(len(queries), dtype=bool)
    mode = {"positive": 1, "negative": -1}.get(m["ion_mode"], 0)
    if params.match_ion_mode and mode:
        keep &= queries.polarity() * mode >= 0
    if params.precursor_tolerance is not None and not m["precursor_nan"]:
        if m["precursor_min"] is None:
            return np.empty(0, dtype=np.int64)
        p = np.asarray(queries.precursor_mz, dtype=np.float64)
        tol = params.precursor_tolerance * (p * 1e-6 if params.precursor_unit == "ppm" else 1.0)
        tol = tol * (1 + 1e-6) + 1e-6
        reach = (p + tol >= m["precursor_min"]) & (p - tol <= m["precursor_max"])
        keep &= reach | np.isnan(p)
    return np.flatnonzero(keep)


class _ShardCache:
    """Shards prepared for searching, least recently used first out, up to a byte budget.

    Only the prepared spectra are kept (with what searches derive from them: the
    precursor order, pruning indexes, GPU copies), not the shard's raw peaks
    widened to float64, which would double the host memory of a resident
    repository.
    """

    def __init__(self) -> None:
        self.items: OrderedDict[tuple, tuple[PreparedSpectra, int]] = OrderedDict()
        self.lock = threading.Lock()  # a Dask worker may run shard tasks in several threads

    def get(self, shard: Shard, params: SearchParameters, budget: int) -> PreparedSpectra:
        key = (
            str(shard.folder.resolve()), shard.manifest["spectra"], shard.manifest["peaks"],
            preparation_key(params),
        )  # fmt: skip
        with self.lock:
            found = self.items.get(key)
            if found is not None:
                self.items.move_to_end(key)
                return found[0]
        prepared = load_prepared(shard, params)
        if prepared is None:
            prepared = PreparedSpectra.for_search(shard.library(), params)
        if budget > 0:
            size = nbytes(prepared)
            with self.lock:
                prepared = self.items.setdefault(key, (prepared, size))[0]
                while sum(s for _, s in self.items.values()) > budget and len(self.items) > 1:
                    self.items.popitem(last=False)
        return prepared


#: This process's opened shards (the client's, or a Dask worker's).
_CACHE = _ShardCache()
_BACKENDS: dict[tuple, Backend] = {}
_BACKENDS_LOCK = threading.Lock()


def _backend(name: str | Backend, cpu_threads: int | None) -> Backend:
    if isinstance(name, Backend):
        return name
    key = (name, cpu_threads)
    with _BACKENDS_LOCK:
        if key not in _BACKENDS:
            _BACKENDS[key] = get_backend(name, cpu_threads=cpu_threads)
        return _BACKENDS[key]


def search_shard(
    shard: Shard,
    queries: SpectrumLibrary,
    rows: np.ndarray,
    params: SearchParameters,
    backend: str | Backend = "cpu",
    *,
    cpu_threads: int | None = None,
    resident_bytes: int = 0,
    cancel_token: CancelToken | None = None,
) -> HitTable:
    """Hits of queries ``rows`` in one shard (query and repository indexes)."""
    library = _CACHE.get(shard, params, resident_bytes)
    subset = queries if len(rows) == len(queries) else queries.subset(rows)
    job = SearchJob(
        subset, library, params, backend=_backend(backend, cpu_threads),
        cancel_token=cancel_token, keep_hits=True,
    )  # fmt: skip
    hits = job.run()
    return HitTable(
        np.asarray(rows, dtype=np.int64)[hits.query_index],
        hits.library_index + shard.start,
        hits.score,
        hits.matches,
    )


def _shard_task(folder, manifest, start, queries, rows, params, backend, cpu_threads, budget):
    """A Dask task: :func:`search_shard` on a worker, the shard opened from disk there
    (a GPU worker keeps it resident as its memory allows)."""
    return search_shard(
        Shard(folder, manifest, start), queries, rows, params,
        _backend(backend, cpu_threads), resident_bytes=budget,
    )  # fmt: skip


def _shard_number(shard: Shard) -> int:
    return int(shard.name) if shard.name.isdigit() else sum(shard.name.encode())


class RepositorySearchJob:
    """A search of ``queries`` against every shard of a repository.

    Parameters
    ----------
    repository : Repository
    queries : SpectrumLibrary
    params : SearchParameters, optional
        Default: identity mode.  ``fdr`` is not supported here.
    backend : str or Backend, default "cpu"
        ``"cpu"``, ``"cuda"`` or ``"auto"`` (on a cluster: each worker's).
    client : dask.distributed.Client, optional
        Run the shards on this cluster.
    via : {"tasks", "job"}
        On a cluster: one task per shard opened by the workers from disk, or a
        :class:`~engine.distributed.DaskSearchJob` per shard (see the module).
    cpu_threads : int, optional
        Threads of a CPU backend.
    resident_bytes : int, default 0
        Keep opened shards (and what searches derive from them) up to about
        this many bytes, in this process or on each worker, for later searches.
    on_shard : callable, optional
        ``on_shard(shard_name, hits)`` with each shard's own hits as it finishes.
    on_message : callable, optional
        One-line notices.
    cancel_token : CancelToken, optional
    **param_overrides
        Fields of :class:`~engine.params.SearchParameters`.
    """

    def __init__(
        self,
        repository,
        queries: SpectrumLibrary,
        params: SearchParameters | None = None,
        *,
        backend: str | Backend = "cpu",
        client=None,
        via: str = "tasks",
        cpu_threads: int | None = None,
        resident_bytes: int = 0,
        on_shard: Callable[[str, HitTable], None] | None = None,
        on_message: Callable[[str], None] | None = None,
        cancel_token: CancelToken | None = None,
        **param_overrides,
    ) -> None:
        self.params = parameters_with(params, param_overrides, "Repository.search")
        if self.params.fdr is not None:
            raise ValueError("repository searches do not estimate q-values (fdr must be None)")
        if via not in VIAS:
            raise ValueError(f"via must be one of {', '.join(VIAS)}, not {via!r}")
        self.repository = repository
        self.queries = queries
        self.backend = backend
        self.client = client
        self.via = via
        self.cpu_threads = cpu_threads
        self.resident_bytes = int(resident_bytes)
        self.on_shard = on_shard
        self.on_message = on_message
        self.cancel_token = cancel_token or CancelToken()
        self.progress = RepositoryProgress()
        self._chunks: list[HitTable] = []
        if repository.synthetic:
            self._say(f"searching a SYNTHETIC repository ({repository.path.name})")

    def _say(self, message: str) -> None:
        if self.on_message is not None:
            self.on_message(message)

    def cancel(self) -> None:
        """Stop soon; the hits streamed before (queries whose shards all finished) stay final."""
        self.cancel_token.cancel()

    def plan(self) -> list[tuple[Shard, np.ndarray]]:
        """Each shard with the queries that can reach it (shards none reach are left out)."""
        plan = []
        for shard in self.repository.shards:
            rows = shard_queries(shard, self.queries, self.params)
            if len(rows) and len(shard):
                plan.append((shard, rows))
        return plan

    @property
    def hits(self) -> HitTable:
        """Final hits so far, canonical order (query, score descending, repository index)."""
        return HitTable.concat(self._chunks).sorted()

    def run(self) -> HitTable:
        """Search every shard and return all hits."""
        for _ in self:
            pass
        return self.hits

    def __iter__(self) -> Iterator[HitTable]:
        start = time.perf_counter()
        plan = self.plan()
        self.progress = RepositoryProgress(shards_total=len(plan))
        left = np.zeros(len(self.queries), dtype=np.int64)
        for _, rows in plan:
            left[rows] += 1
        merged = HitTable.empty()
        done_without_shards = np.flatnonzero(left == 0)
        self.progress.queries_done = len(done_without_shards)
        for shard, rows, hits in self._shard_results(plan):
            if self.cancel_token.cancelled:
                break  # a shard cut short counts for none of its queries
            self.progress.shards_done += 1
            self.progress.shard_seconds[shard.name] = time.perf_counter() - start
            if self.on_shard is not None:
                self.on_shard(shard.name, hits)
            merged = HitTable.concat([merged, hits]).top_per_query(self.params.top_n)
            left[rows] -= 1
            final = np.zeros(len(self.queries), dtype=bool)
            final[rows[left[rows] == 0]] = True
            if final.any():
                out = final[merged.query_index]
                chunk, merged = merged.take(np.flatnonzero(out)), merged.take(np.flatnonzero(~out))
                self.progress.queries_done += int(final.sum())
                if self.progress.first_hits_seconds is None:
                    self.progress.first_hits_seconds = time.perf_counter() - start
                self.progress.seconds = time.perf_counter() - start
                self._chunks.append(chunk)
                yield chunk
        self.progress.seconds = time.perf_counter() - start

    def _shard_results(self, plan) -> Iterator[tuple[Shard, np.ndarray, HitTable]]:
        if self.client is None:
            backend = _backend(self.backend, self.cpu_threads)
            for shard, rows in plan:
                if self.cancel_token.cancelled:
                    return
                hits = search_shard(
                    shard, self.queries, rows, self.params, backend,
                    resident_bytes=self.resident_bytes, cancel_token=self.cancel_token,
                )  # fmt: skip
                yield shard, rows, hits
        elif self.via == "job":
            yield from self._via_job(plan)
        else:
            yield from self._via_tasks(plan)

    def _via_job(self, plan) -> Iterator[tuple[Shard, np.ndarray, HitTable]]:
        for shard, rows in plan:
            if self.cancel_token.cancelled:
                return
            subset = self.queries if len(rows) == len(self.queries) else self.queries.subset(rows)
            job = search_job(
                subset, shard.library(), self.params, client=self.client,
                backend=self.backend, on_message=self.on_message, cancel_token=self.cancel_token,
            )  # fmt: skip
            hits = job.run()
            yield (
                shard,
                rows,
                HitTable(
                    rows[hits.query_index],
                    hits.library_index + shard.start,
                    hits.score,
                    hits.matches,
                ),
            )

    def _via_tasks(self, plan) -> Iterator[tuple[Shard, np.ndarray, HitTable]]:
        from distributed import as_completed

        if not isinstance(self.backend, str):
            raise ValueError("on a Dask cluster the backend is named: 'cpu', 'cuda' or 'auto'")
        queries = self.client.scatter(self.queries, broadcast=True, hash=False)
        token = uuid.uuid4().hex[:12]
        workers = sorted(self.client.scheduler_info()["workers"])
        futures = {}
        for shard, rows in plan:
            # each shard goes to the same worker every search (its resident copy),
            # or to another when that one is gone
            home = workers[_shard_number(shard) % len(workers)] if workers else None
            future = self.client.submit(
                _shard_task, shard.folder, shard.manifest, shard.start, queries, rows,
                self.params, self.backend, self.cpu_threads, self.resident_bytes,
                key=f"simms-repository-{token}-{shard.name}", pure=False,
                workers=None if home is None else [home], allow_other_workers=True,
            )  # fmt: skip
            futures[future.key] = (future, shard, rows)
        # results arrive with their futures (no round trip each), and only the
        # unfinished futures are cancelled, in one call: with one query, these
        # round trips took longer than the shards' searches
        done = as_completed(
            [f for f, _, _ in futures.values()], with_results=True, loop=self.client.loop
        )
        try:
            for future, hits in done:
                if self.cancel_token.cancelled:
                    return
                _, shard, rows = futures[future.key]
                yield shard, rows, hits
        finally:
            left = [f for f, _, _ in futures.values() if not f.done()]
            if left:
                self.client.cancel(left)
            queries.release()
