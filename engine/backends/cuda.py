"""CUDA backend: exact greedy cosine on an NVIDIA GPU (numba CUDA).

The library (and the query set) are uploaded once and stay resident on the GPU
(CSR arrays: float64 m/z and weights, int32 offsets, norms, precursors), keyed
by object identity and, failing that, by a content hash, so repeated searches
against the same library pay no upload.  A batch is cut into tiles of at most
:data:`~engine.kernels.cuda_kernels.SORT_MAX` library columns; each tile runs

1. ``score_kernel``: one thread per pair, library columns ordered by peak
   count so the threads of a warp do similar work, small queries staged in
   shared memory; exact component formulation (see
   :mod:`engine.kernels.cuda_kernels`);
2. ``select_kernel``: threshold, min-matches and top-N per query on the GPU;
   only the sparse hits are copied back.

Pairs with a component too large for the on-chip scratch are never
approximated: the GPU bounds them from above (sum of all candidate products),
drops those that cannot reach the threshold, and flags the rest, which the host
rescores exactly with the CPU core (:mod:`engine.kernels.greedy`, via :mod:`.rescore`).

Two tile slots with their own streams and buffers overlap the GPU work of one
tile with the host's handling (hit copy, rescoring, merging) of the previous.
"""

from __future__ import annotations

import logging
import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from engine.backends.base import Backend, Batch, PreparedSpectra
from engine.backends.cuda_buffers import DenseSlot, Resident, TileSlot, resident_key
from engine.backends.cuda_dense import DenseOnGpu
from engine.backends.cuda_index import BoundOnGpu
from engine.backends.cuda_run import TileRun
from engine.backends.cuda_search import TileSearch
from engine.backends.gpu import cuda_status, numba_cuda
from engine.backends.rescore import submit_rescore
from engine.hits import HitTable, compile_large_order
from engine.kernels.heavy import HEAVY_MAX
from engine.params import SearchParameters

__all__ = ["CudaBackend", "CudaError"]

log = logging.getLogger(__name__)

#: Tile shapes (query rows, library columns) tried in order: the largest whose
#: buffers, ``depth`` times, fit in a quarter of the free GPU memory.  Larger tiles
#: mean fewer launches, and each launch costs the host about a millisecond of
#: argument marshalling and bookkeeping.
TILE_SHAPES = ((8192, 32768), (4096, 32768), (2048, 16384))
#: Query sets kept on the GPU after their search (apart from the resident libraries).
TRANSIENT_SETS = 2
#: Device bytes per pair of a tile: score (8), matches (4), listed-pair slot (4).
TILE_PAIR_BYTES = 16


def default_tile_shape(cuda: Any, depth: int) -> tuple[int, int]:
    """The largest of :data:`TILE_SHAPES` that the free GPU memory holds comfortably."""
    try:
        free = float(cuda.current_context().get_memory_info()[0])
    except Exception:  # no context: the smallest shape
        return TILE_SHAPES[-1]
    if not math.isfinite(free):  # the simulator: the smallest shape
        return TILE_SHAPES[-1]
    for rows, cols in TILE_SHAPES:
        if rows * cols * TILE_PAIR_BYTES * depth <= int(free) // 4:
            return rows, cols
    return TILE_SHAPES[-1]


def _is_oom(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".upper()
    return "OUT_OF_MEMORY" in text or "OUT OF MEMORY" in text or isinstance(exc, MemoryError)


def _tiny_spectra(readonly: bool) -> PreparedSpectra:
    """Two small spectra for :meth:`CudaBackend.warm_up` (read-only arrays as a
    library's, or writable; other m/z for each, so neither is found resident)."""
    mz = np.array([100.0, 100.05, 150.0, 100.0, 100.02, 150.01, 200.0]) + (1.0 if readonly else 0)
    w = np.array([1.0, 0.5, 0.2, 0.9, 0.6, 0.3, 0.1])
    offsets = np.array([0, 3, 7], np.int64)
    precursor = np.array([300.0, 310.0])
    if readonly:
        for a in (mz, offsets, precursor):
            a.flags.writeable = False
    return PreparedSpectra(
        mz=mz,
        weight=w,
        offsets=offsets,
        norm=np.array([np.sqrt(np.sum(w[:3] ** 2)), np.sqrt(np.sum(w[3:] ** 2))]),
        precursor_mz=precursor,
        mz_power=0.0,
        intensity_power=1.0,
    )


class CudaError(RuntimeError):
    """A CUDA failure inside the backend (the search job falls back to the CPU)."""


class CudaBackend(TileSearch, BoundOnGpu, DenseOnGpu, Backend):
    """Exact greedy cosine on an NVIDIA GPU with the library resident in GPU memory.

    Parameters
    ----------
    threads : int
        Threads per block of the scoring kernel (one thread per pair).
    select_threads : int
        Threads per block of the per-query selection kernel.
    max_rows : int, optional
        Most query rows per tile (default: from :data:`TILE_SHAPES` and the free
        GPU memory).
    max_cols : int, optional
        Most library columns per tile (one launch), when ``top_n > 0``; the
        selection handles pieces of at most ``SORT_MAX`` columns of one batch.
        Searches that keep all hits use ``SORT_MAX``-wide tiles.
    dense_chunk_bytes : int
        Output bytes per row chunk of :meth:`dense` (two chunks in flight; the
        buffers, on the device and pinned on the host, grow to what the largest
        matrix so far needed, up to this).  256 MiB: 16,384² compact took
        0.30–0.36 s on H100s against 0.40–0.44 s in 64 MiB chunks (fewer,
        larger copies and rescoring hand-offs).
    query_prune : bool
        With a threshold, also skip pairs in which no heavy peak of the query
        has a partner (exact, like the library-side test).
    bound_prune : bool
        With a threshold, merge only pairs whose exact upper bound (all candidate
        terms, :mod:`.cuda_index`) reaches it; False scores every pair.
    depth : int
        Search tiles in flight (each with its own buffers and stream).
    max_resident : int, optional
        Most libraries kept on the GPU (None: as many as ``resident_fraction``
        allows); least recently used ones are dropped first.
    resident_fraction : float
        Drop the least recently used libraries while the resident ones (with
        their peak indexes) take more than this fraction of the memory that was
        free when the backend started.  Query sets are not kept: the last
        :data:`TRANSIENT_SETS` uploaded stay apart and never push a library out.

    Raises
    ------
    CudaError
        If no usable GPU is present.
    """

    name = "cuda"
    block_overhead_pairs = 1 << 18  # a tile launch, its selection and its copy back

    def __init__(
        self,
        *,
        threads: int = 128,
        select_threads: int = 256,
        max_rows: int | None = None,
        max_cols: int | None = None,
        dense_chunk_bytes: int = 256 << 20,
        query_prune: bool = True,
        bound_prune: bool = True,
        depth: int = 3,
        max_resident: int | None = None,
        resident_fraction: float = 0.6,
    ) -> None:
        ok, what = cuda_status()
        if not ok:
            raise CudaError(what)
        self._cuda = numba_cuda()
        from engine.kernels import cuda_kernels  # device code: compiles once numba-cuda is in

        self._k = cuda_kernels
        self._name = what
        self.threads = int(threads)
        self.select_threads = int(select_threads)
        self.depth = max(2, int(depth))
        rows, cols = default_tile_shape(self._cuda, self.depth)
        self.max_rows = int(max_rows if max_rows is not None else rows)
        self.max_cols = max(int(max_cols if max_cols is not None else cols), self._k.SORT_MAX)
        self.dense_chunk_bytes = int(dense_chunk_bytes)
        self.query_prune = bool(query_prune)
        self.bound_prune = bool(bound_prune)
        self.max_resident = math.inf if max_resident is None else int(max_resident)
        self.resident_budget = float(resident_fraction) * self.memory_free()
        self._resident: OrderedDict[str, Resident] = OrderedDict()
        self._transient: OrderedDict[str, Resident] = OrderedDict()  # query sets
        self._by_id: dict[int, tuple[weakref.ref, str]] = {}
        self._slots: list[TileSlot] = []
        self._dense_slots: list[DenseSlot] = []
        self._lock = threading.RLock()
        #: Pairs rescored on the CPU (overflowing components) since creation.
        self.rescored_pairs = 0
        #: True once :meth:`warm_up` ran.
        self.warmed_up = False

    # -- Backend API --------------------------------------------------------------
    def block_shape(self, batch_size: int, top_n: int = 0) -> tuple[int, int]:
        """Queries and library spectra per batch: with a top-N, at least one tile's shape.

        Batches smaller than a tile would only add launches (the tiles of one
        query block are cut from its batches, :func:`~.cuda_tiles.plan_tiles`).
        A search that keeps every hit keeps square batches, which bound the
        hits each batch can hand back.
        """
        if top_n <= 0:
            return batch_size, batch_size
        return max(int(batch_size), self.max_rows), max(int(batch_size), self.max_cols)

    @property
    def device(self) -> str:
        """The GPU's name."""
        return self._name

    def score_batch(
        self,
        queries: PreparedSpectra,
        library: PreparedSpectra,
        batch: Batch,
        params: SearchParameters,
    ) -> HitTable:
        """Hits of one batch, filtered and top-N'd on the GPU (see :class:`Backend`)."""
        for _, hits in self.run_batches(queries, library, [batch], params):
            return hits
        return HitTable.empty()

    def run_batches(
        self,
        queries: PreparedSpectra,
        library: PreparedSpectra,
        batches: Iterable[Batch],
        params: SearchParameters,
        across_batches: bool = False,
    ) -> Iterator[tuple[Batch, HitTable]]:
        """Score batches with ``depth`` tiles in flight; yield each batch's hits in order.

        A batch is yielded once its tiles and their rescoring are done (:mod:`.cuda_run`);
        flagged pairs are rescored by worker threads while the GPU goes on.  With
        ``across_batches`` and a top-N, each query's top-N is kept on the GPU (its floor
        tightening the pruning) and reported with its last batch.
        """
        with self._lock:
            try:
                batches = list(batches)
                if batches:
                    yield from TileRun(self, queries, library, batches, params, across_batches)
            except CudaError:
                raise
            except GeneratorExit:
                raise
            except Exception as exc:
                if _is_oom(exc):
                    self._free_slots()
                    raise CudaError(f"GPU out of memory: {exc}") from exc
                raise CudaError(f"CUDA failure: {type(exc).__name__}: {exc}") from exc
            finally:
                for slot in self._slots:
                    try:
                        slot.stream.synchronize()
                    except Exception:  # the context may be gone after a failure
                        pass

    def dense(
        self,
        queries: PreparedSpectra,
        library: PreparedSpectra,
        params: SearchParameters,
        *,
        compact: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Full ``(scores, matches)`` matrices of a block.

        Parameters
        ----------
        queries, library : PreparedSpectra
        params : SearchParameters
            Tolerance and score; filters do not apply.
        compact : bool
            Return ``float32`` scores and ``int16`` matches (``int32`` when a
            spectrum has over 32,767 peaks) instead of ``float64`` / ``int32``.
            Scores are still computed in float64 and rounded once (error at
            most 6e-8, under the 1e-6 exactness bar); the matrices are half the
            bytes to copy and store.

        Returns
        -------
        scores : ndarray of float64 (float32 when ``compact``), shape (nq, nl)
        matches : ndarray of int32 (int16 when ``compact``), shape (nq, nl)
        """
        with self._lock:
            chunk = self.dense_chunk_bytes
            while True:
                try:
                    return self._dense(queries, library, params, chunk, compact)
                except CudaError:
                    raise
                except Exception as exc:
                    if _is_oom(exc) and chunk > (1 << 20):
                        chunk //= 4
                        self._free_slots()
                        log.warning(
                            "GPU out of memory in dense(); retrying with %d-byte chunks", chunk
                        )
                        continue
                    if _is_oom(exc):
                        raise CudaError(f"GPU out of memory: {exc}") from exc
                    raise CudaError(f"CUDA failure: {type(exc).__name__}: {exc}") from exc

    def memory_free(self) -> float:
        """Free bytes of the GPU's memory (inf when that cannot be asked)."""
        try:
            return float(self._cuda.current_context().get_memory_info()[0])
        except Exception:  # noqa: BLE001 - the simulator, or no context: no limit known
            return math.inf

    def resident_bytes(self) -> int:
        """Device bytes of the resident spectrum sets and their peak indexes."""
        sets = self._resident.values()
        return sum(r.nbytes + (r.bound or {}).get("index_bytes", 0) for r in sets)

    def close(self) -> None:
        """Drop resident spectra and tile buffers."""
        with self._lock:
            self._resident.clear()
            self._transient.clear()
            self._by_id.clear()
            self._free_slots()

    def warm_up(self) -> None:
        """Compile (or load from numba's cache) every kernel on tiny inputs.

        Host kernels are compiled per array type, and a library's arrays are
        read-only (immutable) where a filtered copy is not: both kinds are warmed
        up, so that no search compiles anything (a first search would otherwise
        wait seconds for the host rescoring kernel).  The GPU pair kernel (and its
        scratch) only where ``pairs_on_gpu`` is set before.
        """
        for readonly in (False, True):
            spectra = _tiny_spectra(readonly)
            params = SearchParameters(mode="custom", top_n=1)
            self.score_batch(spectra, spectra, Batch(0, 2, 0, 2), params)
            # threshold > 0 compiles the pruning precomputation too
            pruned = SearchParameters(mode="custom", top_n=1, threshold=0.5)
            self.score_batch(spectra, spectra, Batch(0, 2, 0, 2), pruned)
            # a device top-N across batches (the path of SearchJob and of Dask tasks)
            batches = [Batch(0, 2, 0, 1), Batch(0, 2, 1, 2)]
            for _ in self.run_batches(spectra, spectra, batches, pruned, across_batches=True):
                pass
            if self.pairs_on_gpu:  # opt-in: every pair flagged, every flush on the GPU
                work, few = self.pair_work_max, self.pair_gpu_min
                self.pair_work_max, self.pair_gpu_min = 1, 0
                try:
                    self.score_batch(spectra, spectra, Batch(0, 2, 0, 2), pruned)
                finally:
                    self.pair_work_max, self.pair_gpu_min = work, few
            for kind in (False, True):
                submit_rescore(spectra, spectra, np.array([0]), np.array([1]), 0.1, kind).result()
        self.dense(spectra, spectra, params)
        self.dense(spectra, spectra, params, compact=True)
        # the host-side merge of per-batch hits (SearchJob) is a numba kernel too
        compile_large_order()
        self.warmed_up = True

    # -- residency ----------------------------------------------------------------
    def _upload(self, spectra: PreparedSpectra, keep: bool = True) -> Resident:
        """Device copy of ``spectra``: the resident one, else uploaded.

        ``keep``: a library, kept resident (within ``max_resident`` and the byte
        budget); otherwise a query set, kept among the last :data:`TRANSIENT_SETS`
        only (a library already resident is used as it is).
        """
        hit = self._by_id.get(id(spectra))
        key = hit[1] if hit is not None and hit[0]() is spectra else resident_key(spectra)
        res = self._resident.get(key)
        if res is None:
            res = self._transient.pop(key, None) or self._to_device(spectra)
            if keep:
                self._resident[key] = res
                while len(self._resident) > 1 and (
                    len(self._resident) > self.max_resident
                    or self.resident_bytes() > self.resident_budget
                ):
                    self._resident.popitem(last=False)
            else:
                self._transient[key] = res
                while len(self._transient) > TRANSIENT_SETS:
                    self._transient.popitem(last=False)
        (self._resident if key in self._resident else self._transient).move_to_end(key)
        self._by_id = {i: v for i, v in self._by_id.items() if v[0]() is not None}
        self._by_id[id(spectra)] = (weakref.ref(spectra), key)
        return res

    def _to_device(self, spectra: PreparedSpectra) -> Resident:
        """Upload ``spectra`` (CSR arrays as the kernels take them)."""
        offsets = np.asarray(spectra.offsets)
        if offsets[-1] >= 2**31:
            raise CudaError("more than 2**31 peaks in one spectrum set")
        arrays = {
            "mz": np.ascontiguousarray(spectra.mz, np.float64),
            "weight": np.ascontiguousarray(spectra.weight, np.float64),
            "offsets": np.ascontiguousarray(offsets, np.int32),
            "norm": np.ascontiguousarray(spectra.norm, np.float64),
            "precursor_mz": np.ascontiguousarray(spectra.precursor_mz, np.float64),
            "index": np.ascontiguousarray(spectra.ranks, np.int64),
            "polarity": np.ascontiguousarray(spectra.polarities, np.int8),
        }
        nbytes = sum(a.nbytes for a in arrays.values())
        dev = {k: self._cuda.to_device(a) for k, a in arrays.items()}
        counts = np.diff(offsets).astype(np.int64)
        return Resident(**dev, counts=counts, nbytes=nbytes, host=spectra)

    def _dummy_heavy(self) -> tuple[Any, Any]:
        if getattr(self, "_dummy", None) is None:
            self._dummy = (
                self._cuda.to_device(np.full((1, HEAVY_MAX), np.nan)),
                self._cuda.to_device(np.full(1, -1, np.int32)),
            )
        return self._dummy

    def _free_slots(self) -> None:
        self._slots = []
        self._dense_slots = []
        self._pairs_scratch = None

    def _get_slots(
        self, rows: int, cols: int, segs: int, hit_cap: int, ovf_cap: int
    ) -> list[TileSlot]:
        if not self._slots or not self._slots[0].fits(rows, cols, segs, hit_cap, ovf_cap):
            self._slots = []
            self._slots = [
                TileSlot(self._cuda, rows, cols, segs, hit_cap, ovf_cap) for _ in range(self.depth)
            ]
        return self._slots
