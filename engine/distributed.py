"""The same exact search, scaled out over a Dask cluster.

The library is split into shards: by precursor m/z ranges when a precursor
tolerance is set (a query block then only visits the shards its window
touches), evenly otherwise.  Each shard is loaded once on a worker, from the
library's cache file when the worker can read it, else from arrays sent by the
client, and stays resident there (a per-process cache, also reused by later
searches of the same library).  Query blocks go out as tasks
``(shard, block) -> each query's top-N within the shard``, in global library
indexes; the client merges each block's top-N over its shards and streams the
final hits of a block as soon as all its shards are done, with progress and
cancellation as in :class:`engine.search.SearchJob`.

Hits are identical to the single-process search: every pair is scored by the
same kernel on the same arrays, and top-N ties are broken by the library index.

Faults: tasks are pure and keyed per (shard, block); Dask recomputes the tasks
(and the shard) of a worker lost mid-search on another worker, and the client
counts each (shard, block) once, so no hit is lost or duplicated.  When every
worker is lost, the job waits ``grace_period`` seconds for one to (re)join and
then raises :class:`ClusterLostError`, as it does at once when the connection to
the scheduler is lost; the hits streamed before stay valid.

Dask is optional (``pip install 'simms-desktop[dask]'``); this module imports it
only when used.

Example
-------
>>> from engine.distributed import connect, search           # doctest: +SKIP
>>> client = connect("tcp://10.0.0.5:8786")                  # doctest: +SKIP
>>> hits = search(queries, library, client=client, top_n=5)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.backends import Batch, PreparedSpectra
from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search import CancelToken, SearchProgress, _growing_blocks

__all__ = [
    "ClusterError",
    "ClusterLostError",
    "DaskSearchJob",
    "connect",
    "describe",
    "local_cluster",
    "open_client",
    "search",
    "shutdown",
]

#: Seconds a search waits, once every worker is lost, for one to (re)join before it
#: raises :class:`ClusterLostError` (a nanny or a supervisor restarts a worker in seconds).
GRACE_PERIOD = 60.0
#: Seconds a check of the cluster may wait for the scheduler's answer.
_CHECK_TIMEOUT = 10.0

_INSTALL_HINT = "pip install 'simms-desktop[dask]' (or: pip install dask distributed)"


class ClusterError(ConnectionError):
    """The Dask cluster cannot be used: not installed, unreachable, or gone."""


class ClusterLostError(ClusterError, RuntimeError):
    """A search lost its cluster: every worker (for the grace period), or the scheduler.

    Raised while iterating a :class:`DaskSearchJob`; the chunks it yielded before,
    and ``job.hits``, stay valid final hits.  Also a :class:`ClusterError`, so
    code that catches that shows its one-line message as well.

    Attributes
    ----------
    address : str
        The scheduler's address.
    scheduler_lost : bool
        True when the connection to the scheduler was lost, False when the workers were.
    workers_lost : int
        Workers the search had at most at one time (all of them are gone).
    tasks_done, tasks_total : int
        (shard, query block) tasks finished, and planned.
    unfinished_queries : numpy.ndarray
        Queries (indexes into ``queries``, sorted) whose search did not finish: they
        have no hits, or (``top_n == 0``) only part of them.
    incomplete_queries : numpy.ndarray
        Those of ``unfinished_queries`` with hits streamed, as
        :attr:`engine.search.SearchJob.incomplete_queries`.
    hits : HitTable
        All hits streamed before the loss (``job.hits``).
    """

    def __init__(
        self,
        message: str,
        *,
        address: str,
        scheduler_lost: bool,
        workers_lost: int,
        tasks_done: int,
        tasks_total: int,
        unfinished_queries: np.ndarray,
        incomplete_queries: np.ndarray,
        hits: HitTable,
    ) -> None:
        super().__init__(message)
        self.address, self.scheduler_lost, self.workers_lost = address, scheduler_lost, workers_lost
        self.tasks_done, self.tasks_total = tasks_done, tasks_total
        self.unfinished_queries, self.incomplete_queries = unfinished_queries, incomplete_queries
        self.hits = hits


# -- connecting --------------------------------------------------------------------------
def _distributed():
    try:
        import distributed
    except ImportError as exc:
        raise ClusterError(f"Dask is not installed ({exc}); {_INSTALL_HINT}") from None
    return distributed


def connect(address: str, *, timeout: float = 10.0):
    """A ``distributed.Client`` of the scheduler at ``address``.

    Parameters
    ----------
    address : str
        Scheduler address, e.g. ``"tcp://10.0.0.5:8786"`` (``tcp://`` is implied).
    timeout : float
        Seconds to keep trying to reach the scheduler.

    Raises
    ------
    ClusterError
        Dask is not installed, or the scheduler cannot be reached in time; the
        message is one line, fit for a status bar.
    """
    distributed = _distributed()
    address = str(address).strip()
    if not address:
        raise ClusterError("no Dask scheduler address given")
    if "://" not in address:
        address = "tcp://" + address
    try:
        return distributed.Client(address, timeout=f"{timeout}s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ClusterError(
            f"cannot reach the Dask scheduler at {address} within {timeout:g} s ({reason}); "
            "is the cluster running and the address right?"
        ) from None


def local_cluster(n_workers: int, *, threads_per_worker: int = 1, gpu: bool | None = None):
    """Start a cluster on this machine and return a client of it.

    One worker per GPU through ``dask_cuda.LocalCUDACluster`` when dask-cuda is
    installed and a usable GPU is present (``gpu=None``: detect; ``False``: never),
    otherwise ``n_workers`` worker processes sharing the CPU cores (numba threads
    per worker: cores // n_workers).  :func:`shutdown` closes client and cluster.
    """
    distributed = _distributed()
    if n_workers < 1:
        raise ValueError("a local Dask cluster needs at least one worker")
    common = {"dashboard_address": None, "silence_logs": 40}
    cluster = None
    if gpu is not False:
        try:
            import dask_cuda  # noqa: F401
        except ImportError:
            dask_cuda = None
        if dask_cuda is not None:
            from engine.backends import gpu_status

            if gpu_status()[0]:
                cluster = dask_cuda.LocalCUDACluster(n_workers=n_workers, **common)
        elif gpu:
            raise ClusterError("dask-cuda is not installed: pip install dask-cuda")
    if cluster is None:
        cores = os.cpu_count() or 1
        threads = str(max(1, cores // (n_workers * threads_per_worker)))
        cluster = distributed.LocalCluster(
            n_workers=n_workers,
            threads_per_worker=threads_per_worker,
            processes=True,
            env={"NUMBA_NUM_THREADS": threads, "OMP_NUM_THREADS": threads},
            **common,
        )
    return distributed.Client(cluster, set_as_default=False)


def open_client(address: str | None = None, *, n_local: int | None = None, timeout: float = 10.0):
    """``connect(address)`` when an address is given, else ``local_cluster(n_local)``."""
    if address:
        return connect(address, timeout=timeout)
    if n_local:
        return local_cluster(n_local)
    raise ValueError("give a Dask scheduler address or a number of local workers")


def shutdown(client) -> None:
    """Close ``client``, and the local cluster when it was started by :func:`local_cluster`."""
    cluster = getattr(client, "cluster", None)
    try:
        client.close()
    finally:
        if cluster is not None:
            cluster.close()


def describe(client) -> str:
    """One line: the scheduler, its workers and their compute devices."""
    workers = client.nthreads()
    return f"Dask cluster at {client.scheduler.address}: {len(workers)} workers, " + (
        f"{sum(workers.values())} threads"
    )


# -- what travels to the workers ----------------------------------------------------------
@dataclass(frozen=True)
class _ShardSpec:
    """Which spectra a shard holds: positions ``[start, stop)`` of the library order."""

    fingerprint: str
    path: str | None  # cache file of the library (None: arrays are sent)
    preprocess: str
    mz_power: float
    intensity_power: float
    by_precursor: bool  # order: precursor m/z (stable) or the library's own
    start: int
    stop: int

    @property
    def token(self) -> str:
        text = repr(dataclasses.astuple(dataclasses.replace(self, path=None)))
        return hashlib.sha1(text.encode()).hexdigest()[:16]


@dataclass(frozen=True, eq=False)
class _Shard:
    """A prepared shard resident on a worker."""

    spectra: PreparedSpectra
    global_index: np.ndarray  # shard position -> library index
    source: str  # "file" or "data"

    def __sizeof__(self) -> int:  # lets Dask weigh moving it against recomputing
        s = self.spectra
        return int(
            s.mz.nbytes + s.weight.nbytes + s.offsets.nbytes + s.norm.nbytes
            + s.precursor_mz.nbytes + self.global_index.nbytes
        )  # fmt: skip


@dataclass(frozen=True, eq=False)
class _QueryBlock:
    spectra: PreparedSpectra
    global_index: np.ndarray

    def __sizeof__(self) -> int:
        return int(self.spectra.mz.nbytes * 2 + self.spectra.offsets.nbytes * 4)


class ShardFileUnavailable(OSError):
    """The worker cannot use the library cache file (absent, unreadable or other content)."""


_PEAK_FIELDS = ("mz", "intensity", "offsets", "precursor_mz", "charge", "ion_mode")

#: Worker-process cache of prepared shards, most recently used last.
_RESIDENT: OrderedDict[str, _Shard] = OrderedDict()
_RESIDENT_MAX = 8
_LOCK = threading.Lock()  # guards _RESIDENT and _BACKENDS
_KERNEL_LOCK = threading.Lock()  # one kernel launch at a time per process (numba layers)
_BACKENDS: dict = {}
_FINGERPRINTS: dict[tuple, str] = {}


def _fingerprint(arrays) -> str:
    """Digest of a library's peaks and precursors (which library a cache file holds)."""
    h = hashlib.sha256()
    for name in ("mz", "intensity", "offsets", "precursor_mz"):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _file_fingerprint(path: Path) -> str | None:
    try:
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        if key not in _FINGERPRINTS:
            with np.load(path, allow_pickle=False) as data:
                _FINGERPRINTS[key] = _fingerprint(data)
        return _FINGERPRINTS[key]
    except Exception:  # noqa: BLE001 - any problem means: do not use the file
        return None


def _shard_library(arrays, index: np.ndarray) -> SpectrumLibrary:
    """The spectra at ``index`` of raw library arrays (no metadata)."""
    full = SpectrumLibrary(**{k: np.asarray(arrays[k]) for k in _PEAK_FIELDS}, metadata={})
    return full.subset(index)


def _library_order(precursor_mz: np.ndarray, by_precursor: bool) -> np.ndarray:
    if by_precursor:
        return np.argsort(precursor_mz, kind="stable")
    return np.arange(len(precursor_mz), dtype=np.int64)


def _load_shard(spec: _ShardSpec, payload: dict | None) -> _Shard:
    """Worker task: the prepared shard, from the per-process cache, the file or the payload."""
    key = spec.token
    with _LOCK:
        if key in _RESIDENT:
            _RESIDENT.move_to_end(key)
            return _RESIDENT[key]
    if payload is None:
        path = Path(spec.path)
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k] for k in _PEAK_FIELDS}
        except Exception as exc:  # noqa: BLE001
            raise ShardFileUnavailable(f"cannot read {path}: {exc}") from None
        if _fingerprint(arrays) != spec.fingerprint:
            raise ShardFileUnavailable(f"{path} holds another library")
        index = _library_order(arrays["precursor_mz"], spec.by_precursor)[spec.start : spec.stop]
        raw, source = _shard_library(arrays, index), "file"
    else:
        index = payload["global_index"]
        raw, source = _shard_library(payload, np.arange(len(index))), "data"
    from engine.preprocess import pipeline_from_spec

    prepared = PreparedSpectra.from_library(
        pipeline_from_spec(spec.preprocess)(raw),
        mz_power=spec.mz_power,
        intensity_power=spec.intensity_power,
    )
    shard = _Shard(prepared, np.asarray(index, dtype=np.int64), source)
    with _LOCK:
        _RESIDENT[key] = shard
        while len(_RESIDENT) > _RESIDENT_MAX:
            _RESIDENT.popitem(last=False)
    return shard


def _worker_backend(name: str):
    from engine.backends import get_backend

    with _LOCK:
        if name not in _BACKENDS:
            notes: list[str] = []
            _BACKENDS[name] = (get_backend(name, on_message=notes.append), notes)
        return _BACKENDS[name]


def _worker_device(name: str) -> str:
    backend, _ = _worker_backend(name)
    return f"{backend.name}: {backend.device}"


def _window(q_prec: np.ndarray, l_prec: np.ndarray, params: SearchParameters) -> tuple[int, int]:
    """Library positions ``[lo, hi)`` (``l_prec`` sorted) a query block may match.

    The same widened window as :meth:`engine.search.SearchJob._plan`; the kernel
    applies the exact test to every pair.
    """
    lo = np.nanmin(q_prec, initial=np.inf)
    hi = np.nanmax(q_prec, initial=-np.inf)
    if not np.isfinite(lo):
        return 0, 0
    ppm = params.precursor_unit == "ppm"
    tol_lo = params.precursor_tolerance * (lo * 1e-6 if ppm else 1.0)
    tol_hi = params.precursor_tolerance * (hi * 1e-6 if ppm else 1.0)
    l_lo = int(np.searchsorted(l_prec, lo - tol_lo * (1 + 1e-9) - 1e-9, side="left"))
    l_hi = int(np.searchsorted(l_prec, hi + tol_hi * (1 + 1e-9) + 1e-9, side="right"))
    return l_lo, max(l_lo, l_hi)


def _score_task(shard: _Shard, block: _QueryBlock, params: SearchParameters, backend: str):
    """Worker task: each query's top-N of ``block`` within ``shard``, in global indexes."""
    from engine.backends import CpuBackend

    library, queries = shard.spectra, block.spectra
    if params.precursor_tolerance is None:
        l_lo, l_hi = 0, len(library)
        kernel_params = params  # shard order is library order: kernel ties are canonical
    else:
        l_lo, l_hi = _window(queries.precursor_mz, library.precursor_mz, params)
        # shard order is precursor order: take all hits, rank them by library index here
        kernel_params = dataclasses.replace(params, top_n=0)
    size = params.batch_size
    batches = [
        Batch(q0, min(q0 + size, len(queries)), l0, min(l0 + size, l_hi))
        for q0 in range(0, len(queries), size)
        for l0 in range(l_lo, l_hi, size)
    ]
    engine_backend, notes = _worker_backend(backend)
    notes = list(notes)
    with _KERNEL_LOCK:
        try:
            items = list(engine_backend.run_batches(queries, library, batches, kernel_params))
        except Exception as exc:
            if isinstance(engine_backend, CpuBackend):
                raise
            notes.append(
                f"{engine_backend.name} backend failed on a worker ({type(exc).__name__}: {exc}); "
                "that task ran on its CPU"
            )
            cpu = CpuBackend()
            items = [(b, cpu.score_batch(queries, library, b, kernel_params)) for b in batches]
    hits = HitTable.concat([h for _, h in items])
    mapped = HitTable(
        block.global_index[hits.query_index],
        shard.global_index[hits.library_index],
        hits.score,
        hits.matches,
    )
    return mapped.top_per_query(params.top_n), shard.source, notes


# -- the client side ------------------------------------------------------------------
@dataclass
class _Task:
    shard: int
    block: int
    pairs: int


@dataclass
class _Watch:
    """What the client last saw of the cluster."""

    live: set[str]  # worker addresses
    peak: int  # most workers at one time
    checked: float  # time.monotonic() of the last check
    no_worker_since: float | None = None
    silent_since: float | None = None  # the scheduler has not answered since


def _sorted_indexes(parts: list[np.ndarray]) -> np.ndarray:
    return np.sort(np.concatenate([np.empty(0, dtype=np.int64), *parts])).astype(np.int64)


@dataclass(frozen=True)
class _ClusterBackend:
    """What the CLI and provenance show as the backend of a Dask search."""

    name: str
    device: str


class DaskSearchJob:
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
        self.grace_period = float(grace_period)
        self.queries, self.library = queries, library
        self.params = params or SearchParameters()
        self.client = client
        self.backend_name = backend
        self.cancel_token = cancel_token or CancelToken()
        self.messages: list[str] = []
        self.progress = SearchProgress()
        self.finished = False
        self.shard_sources: dict[str, int] = {}  # "file"/"data" -> shards loaded that way
        self.tasks_done = 0
        #: Queries with only part of their hits (``top_n == 0`` and cancelled); with
        #: ``top_n > 0`` a cancelled block's hits are dropped whole, so this stays empty.
        self.incomplete_queries = np.empty(0, dtype=np.int64)
        #: Queries whose search did not finish (cancelled, or the cluster was lost):
        #: no hits, or only part of them (those are also in ``incomplete_queries``).
        self.unfinished_queries = np.empty(0, dtype=np.int64)
        self.tasks_total = 0
        self.duplicates_ignored = 0
        self._on_progress, self._on_message = on_progress, on_message
        self._n_shards, self._library_path = n_shards, library_path
        self._own_client = own_client
        self._chunks: list[HitTable] = []
        self._seen_notes: set[str] = set()
        self._left: tuple[dict, dict] = ({}, {})  # block -> tasks left; block -> (queries, tasks)
        self.address = str(getattr(client.scheduler, "address", None) or "the Dask scheduler")
        try:
            devices = client.run(_worker_device, backend, on_error="return")
        except Exception as exc:  # noqa: BLE001 - scheduler went away
            raise ClusterError(f"the Dask cluster does not answer: {exc}") from None
        kinds = sorted({str(d) for d in devices.values()})
        self.backend = _ClusterBackend(
            name="dask",
            device=f"{describe(client)} ({'; '.join(kinds) if kinds else 'no workers yet'})",
        )

    # -- control ----------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop: pending tasks are cancelled; hits of finished query blocks are kept."""
        self.cancel_token.cancel()

    @property
    def cancelled(self) -> bool:
        return self.cancel_token.cancelled

    @property
    def hits(self) -> HitTable:
        """All hits streamed so far, in canonical order."""
        return HitTable.concat(self._chunks).sorted()

    def run(self) -> HitTable:
        """Run to the end (or cancellation) and return all hits."""
        for _ in self:
            pass
        return self.hits

    # -- internals --------------------------------------------------------------------
    def _say(self, message: str) -> None:
        self.messages.append(message)
        if self._on_message is not None:
            self._on_message(message)

    def _report(self) -> None:
        if self._on_progress is not None:
            self._on_progress(self.progress)

    def _plan(self):
        from engine.preprocess import pipeline_from_spec

        p = self.params
        by_precursor = p.precursor_tolerance is not None
        powers = {"mz_power": p.mz_power, "intensity_power": p.intensity_power}
        queries = PreparedSpectra.from_library(
            pipeline_from_spec(p.preprocess)(self.queries), **powers
        )
        q_order = _library_order(queries.precursor_mz, by_precursor)
        if by_precursor:
            queries = queries.reordered(q_order)
        l_order = _library_order(self.library.precursor_mz, by_precursor)
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
        for b, (q0, q1) in enumerate(_growing_blocks(len(queries), task_size)):
            if by_precursor:
                lo, hi = _window(queries.precursor_mz[q0:q1], l_prec[:n_lib], p)
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
        arrays = {k: getattr(self.library, k) for k in _PEAK_FIELDS}
        fingerprint = _fingerprint(arrays)
        candidates = []
        if self._library_path is not None:
            candidates.append(Path(self._library_path))
        elif self.library.source is not None and self.library.source.sha256:
            from engine.io.cache import cache_path

            candidates.append(cache_path(self.library.source.sha256))
        for path in candidates:
            path = path.resolve()
            if _file_fingerprint(path) == fingerprint:
                return str(path), fingerprint
            if self._library_path is not None:
                self._say(f"{path} does not hold this library; sending the shards' spectra instead")
        return None, fingerprint

    def __iter__(self) -> Iterator[HitTable]:
        distributed = _distributed()
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

        def spec(s: int, with_path: bool) -> _ShardSpec:
            return _ShardSpec(
                fingerprint, path if with_path else None, p.preprocess, p.mz_power,
                p.intensity_power, p.precursor_tolerance is not None,
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
                    payload = {k: getattr(raw, k) for k in _PEAK_FIELDS}
                    payload["global_index"] = np.asarray(index, dtype=np.int64)
                key = f"simms-shard-{sp.token}-{kind}"
                if shard_round.get(s):  # a new key: the stranded one may linger on the scheduler
                    key += f"-{job}-{shard_round[s]}"
                shard_futures[s] = self.client.submit(_load_shard, sp, payload, key=key, **where)
            return shard_futures[s]

        query_blocks: dict[int, _QueryBlock] = {}
        futures: dict[str, tuple[object, _Task]] = {}
        ac = distributed.as_completed(loop=self.client.loop)

        def submit(task: _Task) -> None:
            q0, q1 = blocks_by_id[task.block][0]
            if task.block not in query_blocks:
                query_blocks[task.block] = _QueryBlock(
                    queries.reordered(np.arange(q0, q1)), np.asarray(q_order[q0:q1], dtype=np.int64)
                )
            key = f"simms-score-{job}-{task.shard}-{task.block}-{next(serial)}"
            fut = self.client.submit(
                _score_task, shard_future(task.shard), query_blocks[task.block], p,
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
        watch = _Watch(live=set(workers), peak=len(workers), checked=time.monotonic())
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
                        self._check_cluster(watch, rescue_shards)
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
                            result = fut.result(timeout=self.grace_period + _CHECK_TIMEOUT)
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
        hits = HitTable.concat(parts).top_per_query(self.params.top_n)
        self._chunks.append(hits)
        self.progress.hits += len(hits)
        return hits

    def _mark_unfinished(self) -> None:
        """Set ``unfinished_queries`` and ``incomplete_queries`` of a search stopped early."""
        remaining, blocks = self._left
        unfinished = [blocks[b][0] for b, left in remaining.items() if left > 0]
        partial = [blocks[b][0] for b, left in remaining.items() if 0 < left < blocks[b][1]]
        self.unfinished_queries = _sorted_indexes(unfinished)
        # with top_n > 0 a block's hits are streamed when all its shards are done
        self.incomplete_queries = _sorted_indexes(partial if self.params.top_n == 0 else [])

    def _check_cluster(self, watch: _Watch, rescue: Callable[[set[str]], None]) -> None:
        """Tell about lost workers, rescue stranded shards, raise when the cluster is gone."""
        now = watch.checked = time.monotonic()
        if self.client.status != "running":
            raise self._lost(watch, f"the client is {self.client.status}")
        try:
            live = set(self.client.nthreads(callback_timeout=_CHECK_TIMEOUT))
        except Exception as exc:  # noqa: BLE001 - no answer: the scheduler may be gone
            reason = " ".join(str(exc).split()) or type(exc).__name__
            watch.silent_since = watch.silent_since or now
            if self.client.status != "running" or now - watch.silent_since > self.grace_period:
                raise self._lost(watch, f"no answer: {reason}") from None
            return
        watch.silent_since = None
        gone = len(watch.live - live)
        if gone and live:
            self._say(f"{gone} Dask worker(s) left; their shards are redone on others")
        elif gone:
            self._say(f"all Dask workers left; waiting up to {self.grace_period:g} s for one")
        watch.peak = max(watch.peak, len(live))
        if not live:
            watch.no_worker_since = watch.no_worker_since or now
            if now - watch.no_worker_since > self.grace_period:
                raise self._lost(watch)
        else:
            watch.no_worker_since = None
            if live != watch.live:
                try:
                    rescue(live)
                except (OSError, TimeoutError):  # the scheduler did not answer: next check
                    return
        watch.live = live

    def _lost(self, watch: _Watch, scheduler: str | None = None) -> ClusterLostError:
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
