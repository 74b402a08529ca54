"""The worker side of a Dask search: library shards resident per process, and the task.

Each shard is prepared once on a worker and kept in a worker-local store keyed
by what decides its content (:attr:`ShardSpec.token`: the library's content
hash, the shard's range of the library order, the preprocessing and powers),
with what later searches derive from it (the CPU peak index, the GPU's resident
copy).  The client asks the workers which shards they hold
(:func:`resident_tokens`) and sends a shard's spectra (or the path of the
library's cache file) only to a worker that does not hold it; a second search
of the same library prepares and sends nothing (:func:`shard_stats` counts).

A task scores one query block against one shard and returns each query's top-N
in global indexes (merged on the worker, so only the top-N travels), with the
seconds it took (the client's task cost model, :mod:`.cost`).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.backends import Batch, PreparedSpectra, cpu_fallback, get_backend
from engine.backends.base import preparation_key
from engine.distributed.plan import shard_order
from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search import library_window

__all__ = [
    "KERNEL_LOCK",
    "PEAK_FIELDS",
    "QueryBlock",
    "Shard",
    "ShardFileUnavailable",
    "ShardNotResident",
    "ShardSpec",
    "library_fingerprint",
    "load_shard",
    "resident_tokens",
    "score_task",
    "shard_stats",
    "worker_backend",
    "worker_device",
    "worker_memory",
]


@dataclass(frozen=True)
class ShardSpec:
    """Which spectra a shard holds: positions ``[start, stop)`` of the library order."""

    fingerprint: str
    path: str | None  # cache file of the library (None: arrays are sent)
    preprocess: str
    mz_power: float
    intensity_power: float
    score: str
    tolerance: float
    by_precursor: bool  # order: precursor m/z (stable) or the library's own
    start: int
    stop: int

    @property
    def preparation(self) -> SearchParameters:
        """Parameters that decide how the shard's spectra are prepared."""
        return SearchParameters(
            mode="custom", tolerance=self.tolerance, score=self.score,
            mz_power=self.mz_power, intensity_power=self.intensity_power,
            preprocess=self.preprocess,
        )  # fmt: skip

    @property
    def token(self) -> str:
        """The shard's key in the worker store: what decides its prepared content.

        The library's content hash, the order and range the shard is cut from, and
        :func:`~engine.backends.base.preparation_key` (preprocessing and powers;
        the score and fragment tolerance only where they change the peaks, as for
        entropy), not where the spectra come from (file or sent arrays).
        """
        what = (
            self.fingerprint, self.by_precursor, self.start, self.stop,
            preparation_key(self.preparation),
        )  # fmt: skip
        return hashlib.sha1(repr(what).encode()).hexdigest()[:16]

    def without_source(self) -> ShardSpec:
        """This spec for a worker that holds the shard already (no path, no arrays)."""
        return ShardSpec(
            self.fingerprint, None, self.preprocess, self.mz_power, self.intensity_power,
            self.score, self.tolerance, self.by_precursor, self.start, self.stop,
        )  # fmt: skip


@dataclass(frozen=True, eq=False)
class Shard:
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
class QueryBlock:
    spectra: PreparedSpectra
    global_index: np.ndarray

    def __sizeof__(self) -> int:
        return int(self.spectra.mz.nbytes * 2 + self.spectra.offsets.nbytes * 4)


class ShardFileUnavailable(OSError):
    """The worker cannot use the library cache file (absent, unreadable or other content)."""


class ShardNotResident(LookupError):
    """The worker does not hold the shard that a task without its spectra asked for."""


PEAK_FIELDS = ("mz", "intensity", "offsets", "precursor_mz", "charge", "ion_mode")

#: Worker-process cache of prepared shards, most recently used last.
_RESIDENT: OrderedDict[str, Shard] = OrderedDict()
_RESIDENT_MAX = 8
_LOCK = threading.Lock()  # guards _RESIDENT and _BACKENDS
KERNEL_LOCK = threading.Lock()  # one kernel launch at a time per process (numba layers)
_BACKENDS: dict = {}
#: Backends that ran a task in this process: a first task also pays one-time costs
#: (host code compiled on first use), so its time is kept out of the cost model.
_TIMED: set[str] = set()
#: What this process did for its shards: ``prepared`` (spectra preprocessed and
#: weighted), ``received`` (shard spectra sent to it), ``read`` (shards read from a
#: library file), ``reused`` (a shard found in the store).
_STATS: Counter = Counter()


def resident_tokens() -> list[str]:
    """Worker function: tokens of the shards this process holds."""
    with _LOCK:
        return list(_RESIDENT)


def shard_stats() -> dict[str, int]:
    """Worker function: shard preparations, transfers, file reads and reuses so far."""
    with _LOCK:
        return {k: int(_STATS[k]) for k in ("prepared", "received", "read", "reused")}


def library_fingerprint(arrays) -> str:
    """Digest of a library's peaks and precursors (which library a cache file holds)."""
    h = hashlib.sha256()
    for name in ("mz", "intensity", "offsets", "precursor_mz"):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _shard_library(arrays, index: np.ndarray) -> SpectrumLibrary:
    """The spectra at ``index`` of raw library arrays (no metadata)."""
    full = SpectrumLibrary(**{k: np.asarray(arrays[k]) for k in PEAK_FIELDS}, metadata={})
    return full.subset(index)


def load_shard(spec: ShardSpec, payload: dict | None) -> Shard:
    """Worker task: the prepared shard, from the worker store, the file or the payload.

    Raises
    ------
    ShardNotResident
        Neither a path nor spectra were given and this worker does not hold it.
    ShardFileUnavailable
        The library file cannot be read here, or holds another library.
    """
    key = spec.token
    with _LOCK:
        if payload is not None:
            _STATS["received"] += 1
        if key in _RESIDENT:
            _STATS["reused"] += 1
            _RESIDENT.move_to_end(key)
            return _RESIDENT[key]
    if payload is None and spec.path is None:
        raise ShardNotResident(f"shard {key} is not resident on this worker")
    if payload is None:
        path = Path(spec.path)
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k] for k in PEAK_FIELDS}
        except Exception as exc:  # noqa: BLE001
            raise ShardFileUnavailable(f"cannot read {path}: {exc}") from None
        if library_fingerprint(arrays) != spec.fingerprint:
            raise ShardFileUnavailable(f"{path} holds another library")
        index = shard_order(arrays["precursor_mz"], spec.by_precursor)[spec.start : spec.stop]
        raw, source = _shard_library(arrays, index), "file"
        with _LOCK:
            _STATS["read"] += 1
    else:
        index = payload["global_index"]
        raw, source = _shard_library(payload, np.arange(len(index))), "data"
    prepared = PreparedSpectra.for_search(raw, spec.preparation)
    global_index = np.asarray(index, dtype=np.int64)
    shard = Shard(prepared.with_index(global_index), global_index, source)
    with _LOCK:
        _STATS["prepared"] += 1
        _RESIDENT[key] = shard
        while len(_RESIDENT) > _RESIDENT_MAX:
            _RESIDENT.popitem(last=False)
    return shard


def worker_backend(name: str):
    with _LOCK:
        if name not in _BACKENDS:
            notes: list[str] = []
            _BACKENDS[name] = (get_backend(name, on_message=notes.append), notes)
        return _BACKENDS[name]


def worker_memory(name: str) -> float:
    """Worker function: free bytes for resident shards here (host or GPU, the tighter).

    The host's available memory, capped by the Dask worker's memory limit, and
    the free memory of ``name``'s device; inf when none of them is known.
    """
    backend, _ = worker_backend(name)
    free = backend.memory_free()
    try:
        import psutil

        free = min(free, float(psutil.virtual_memory().available))
    except Exception:  # noqa: BLE001 - unknown: no limit from the host
        pass
    try:
        from distributed import get_worker

        limit = get_worker().memory_manager.memory_limit
        if limit:
            free = min(free, float(limit))
    except Exception:  # noqa: BLE001 - not in a Dask worker
        pass
    return free


def worker_device(name: str) -> str:
    backend, _ = worker_backend(name)
    return f"{backend.name}: {backend.device}"


def score_task(shard: Shard, block: QueryBlock, params: SearchParameters, backend: str):
    """Worker task: each query's top-N of ``block`` within ``shard``, in global indexes.

    Returns
    -------
    hits : HitTable
        The block's hits within the shard, each query's top-N (merged here, so
        only these travel), in global query and library indexes.
    source : str
        How the shard came to this worker (``"file"`` or ``"data"``).
    notes : list of str
        One-line notices (e.g. a GPU failure and the CPU fallback).
    seconds : float
        Time this task took on the worker (the client's cost model); NaN for the
        first task of ``backend`` in this worker process, which also paid one-time
        costs.
    """
    start = time.perf_counter()
    library, queries = shard.spectra, block.spectra
    if params.precursor_tolerance is None:
        l_lo, l_hi = 0, len(library)
    else:
        l_lo, l_hi = library_window(queries.precursor_mz, library.precursor_mz, params)
    kernel_params = params  # the shard ranks ties by global library index (Shard.spectra.index)
    engine_backend, notes = worker_backend(backend)
    notes = list(notes)
    q_size, l_size = engine_backend.block_shape(params.batch_size, params.top_n)
    batches = [
        Batch(q0, min(q0 + q_size, len(queries)), l0, min(l0 + l_size, l_hi))
        for q0 in range(0, len(queries), q_size)
        for l0 in range(l_lo, l_hi, l_size)
    ]
    with KERNEL_LOCK:
        try:
            engine_backend.make_resident(library, batches, kernel_params)
            start = time.perf_counter()  # a one-time upload is no cost of this task's pairs
            items = list(
                engine_backend.run_batches(
                    queries, library, batches, kernel_params, across_batches=True
                )
            )
        except Exception as exc:
            cpu, notice = cpu_fallback(
                engine_backend, exc, "that task ran on its CPU", where=" on a worker"
            )
            notes.append(notice)
            items = [(b, cpu.score_batch(queries, library, b, kernel_params)) for b in batches]
    hits = HitTable.concat([h for _, h in items])
    mapped = HitTable(
        block.global_index[hits.query_index],
        shard.global_index[hits.library_index],
        hits.score,
        hits.matches,
    )
    top = mapped.top_per_query(params.top_n)
    seconds = time.perf_counter() - start
    with _LOCK:
        if backend not in _TIMED:
            _TIMED.add(backend)
            seconds = float("nan")
    return top, shard.source, notes, seconds
