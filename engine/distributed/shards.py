"""The worker side of a Dask search: library shards resident per process, and the task.

Each shard is loaded once on a worker, from the library's cache file when the
worker can read it, else from arrays sent by the client, and stays resident
there (also for later searches of the same library).  A task scores one query
block against one shard and returns each query's top-N in global indexes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.backends import Batch, PreparedSpectra, cpu_fallback, get_backend
from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search import library_window, precursor_order

__all__ = [
    "KERNEL_LOCK",
    "PEAK_FIELDS",
    "QueryBlock",
    "Shard",
    "ShardFileUnavailable",
    "ShardSpec",
    "file_fingerprint",
    "library_fingerprint",
    "load_shard",
    "score_task",
    "shard_order",
    "worker_backend",
    "worker_device",
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
        text = repr(dataclasses.astuple(dataclasses.replace(self, path=None)))
        return hashlib.sha1(text.encode()).hexdigest()[:16]


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


PEAK_FIELDS = ("mz", "intensity", "offsets", "precursor_mz", "charge", "ion_mode")

#: Worker-process cache of prepared shards, most recently used last.
_RESIDENT: OrderedDict[str, Shard] = OrderedDict()
_RESIDENT_MAX = 8
_LOCK = threading.Lock()  # guards _RESIDENT and _BACKENDS
KERNEL_LOCK = threading.Lock()  # one kernel launch at a time per process (numba layers)
_BACKENDS: dict = {}
_FINGERPRINTS: dict[tuple, str] = {}


def library_fingerprint(arrays) -> str:
    """Digest of a library's peaks and precursors (which library a cache file holds)."""
    h = hashlib.sha256()
    for name in ("mz", "intensity", "offsets", "precursor_mz"):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def file_fingerprint(path: Path) -> str | None:
    try:
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        if key not in _FINGERPRINTS:
            with np.load(path, allow_pickle=False) as data:
                _FINGERPRINTS[key] = library_fingerprint(data)
        return _FINGERPRINTS[key]
    except Exception:  # noqa: BLE001 - any problem means: do not use the file
        return None


def _shard_library(arrays, index: np.ndarray) -> SpectrumLibrary:
    """The spectra at ``index`` of raw library arrays (no metadata)."""
    full = SpectrumLibrary(**{k: np.asarray(arrays[k]) for k in PEAK_FIELDS}, metadata={})
    return full.subset(index)


def shard_order(precursor_mz: np.ndarray, by_precursor: bool) -> np.ndarray:
    """The library order shards are cut from: by precursor m/z, or the library's own."""
    if by_precursor:
        return precursor_order(precursor_mz)
    return np.arange(len(precursor_mz), dtype=np.int64)


def load_shard(spec: ShardSpec, payload: dict | None) -> Shard:
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
                arrays = {k: data[k] for k in PEAK_FIELDS}
        except Exception as exc:  # noqa: BLE001
            raise ShardFileUnavailable(f"cannot read {path}: {exc}") from None
        if library_fingerprint(arrays) != spec.fingerprint:
            raise ShardFileUnavailable(f"{path} holds another library")
        index = shard_order(arrays["precursor_mz"], spec.by_precursor)[spec.start : spec.stop]
        raw, source = _shard_library(arrays, index), "file"
    else:
        index = payload["global_index"]
        raw, source = _shard_library(payload, np.arange(len(index))), "data"
    prepared = PreparedSpectra.for_search(raw, spec.preparation)
    global_index = np.asarray(index, dtype=np.int64)
    shard = Shard(prepared.with_index(global_index), global_index, source)
    with _LOCK:
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


def worker_device(name: str) -> str:
    backend, _ = worker_backend(name)
    return f"{backend.name}: {backend.device}"


def score_task(shard: Shard, block: QueryBlock, params: SearchParameters, backend: str):
    """Worker task: each query's top-N of ``block`` within ``shard``, in global indexes."""
    library, queries = shard.spectra, block.spectra
    if params.precursor_tolerance is None:
        l_lo, l_hi = 0, len(library)
    else:
        l_lo, l_hi = library_window(queries.precursor_mz, library.precursor_mz, params)
    kernel_params = params  # the shard ranks ties by global library index (Shard.spectra.index)
    size = params.batch_size
    batches = [
        Batch(q0, min(q0 + size, len(queries)), l0, min(l0 + size, l_hi))
        for q0 in range(0, len(queries), size)
        for l0 in range(l_lo, l_hi, size)
    ]
    engine_backend, notes = worker_backend(backend)
    notes = list(notes)
    with KERNEL_LOCK:
        try:
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
    return mapped.top_per_query(params.top_n), shard.source, notes
