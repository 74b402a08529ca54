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
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from engine.backends.base import Backend, Batch, PreparedSpectra
from engine.backends.cuda_buffers import Resident, TileSlot
from engine.backends.cuda_dense import DenseScores
from engine.backends.cuda_index import BOUND_THREADS, GpuBounds
from engine.backends.cuda_resident import ResidentSets
from engine.backends.cuda_run import TileRun
from engine.backends.cuda_search import TilePipeline
from engine.backends.gpu import CudaError, cuda_status, numba_cuda
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


class CudaBackend(Backend):
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
        :data:`~.cuda_resident.QUERY_SETS` uploaded stay apart and never push a library out.

    Attributes
    ----------
    pipeline : TilePipeline
        The searches as pipelined tiles (:mod:`.cuda_search`).
    bounds : GpuBounds
        The exact bound pruning (:mod:`.cuda_index`).
    matrices : DenseScores
        The dense score matrices (:mod:`.cuda_dense`).
    sets : ResidentSets
        The spectrum sets on the GPU (:mod:`.cuda_resident`).

    Raises
    ------
    CudaError
        If no usable GPU is present.
    """

    name = "cuda"
    block_overhead_pairs = 1 << 18  # a tile launch, its selection and its copy back

    # -- settings of the parts (pipeline, bounds), read when they run ---------------
    #: Keep each query's top-N on the device when the caller merges across batches.
    device_top: bool = True
    #: Listed pairs whose peak counts multiply to more than this are flagged instead of
    #: merged by one thread of the score kernel, which would hold up its launch (0: never).
    pair_work_max: int = 1 << 16
    #: Score flagged pairs on the GPU, many tiles' at once (:mod:`.cuda_pairs`), instead
    #: of on the host's threads (:mod:`.rescore`).  Off by default: measured, it frees
    #: the host (6x less CPU time) but is no faster on a 16-core H100 host and ~2x
    #: slower on a 64-core H200 one (``benchmarks/GPU_NOTES.md``, v8); for hosts with
    #: few cores per GPU.  Scores may then differ from the host's in the last bits.
    pairs_on_gpu: bool = False
    #: Threads of the pair kernel (each with a scratch row for components of over ``K``
    #: candidates and up to ``big_peaks`` peaks a side, 26 bytes per peak).
    pair_rows: int = 1 << 15
    big_peaks: int = 1024
    #: Flushes of fewer flagged pairs than this go to the host's threads instead: a
    #: launch waits for its longest merge, one GPU thread, where a CPU core is faster.
    pair_gpu_min: int = 1 << 14
    #: Tiles of up to this many query rows may span a whole selection grid's columns
    #: (a repository shard for one query: 0.32 s against 1.15 s for an open query
    #: over 3e8 spectra on 4 H200s).  Tiles of more rows stay at most
    #: ``reuse_segments`` selection segments wide: at 1,000 rows, 131,072 columns
    #: searched faster than 268,288 (8.9 against 11.3 s, 3e7 spectra, one H200; 22.3
    #: against 27.2 s over 3e8 on four);
    #: the rows re-read the tile's library peaks, which then fit the GPU's L2 cache
    #: (a likely reason, not measured; nor is the best cut between 1 and 1,000 rows).
    few_rows: int = 16
    reuse_segments: int = 64
    #: Diagnostics: flagged pairs scored by the pair kernel; flagged pairs the host
    #: bounded against their query's running top-N floor (above the threshold).
    gpu_scored_pairs: int = 0
    floored_pairs: int = 0
    #: Diagnostics: set to a dict to collect CUDA events around each tile's kernels
    #: (``"start"``, ``"bound"``, ``"score"``, ``"select"``: one event per tile each)
    #: and the pairs each tile listed (``"listed"``); tiles then run one at a time.
    kernel_events: dict | None = None

    #: Count the pairs that pass the bound (one more small kernel per tile).
    count_bound_survivors: bool = False
    #: Threads per block of the bound kernels (a multiple of 32).
    bound_threads: int = BOUND_THREADS
    #: Library columns per block of the bound kernel (at most ``BOUND_CHUNK``).
    bound_chunk: int = 2048
    #: The bound kernel lists the pairs that pass; the score kernel runs over the list only.
    list_survivors: bool = True

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
        #: The spectrum sets on the GPU (libraries kept, query sets apart).
        self.sets = ResidentSets(
            self._cuda, max_resident, float(resident_fraction) * self.memory_free()
        )
        self._slots: list[TileSlot] = []
        self._lock = threading.RLock()
        #: The parts: tile searches, bound pruning, dense matrices.
        self.pipeline = TilePipeline(self)
        self.bounds = GpuBounds(self)
        self.matrices = DenseScores(self)
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
                    return self.matrices.scores(queries, library, params, chunk, compact)
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

    def make_resident(
        self, library: PreparedSpectra, batches: Iterable[Batch], params: SearchParameters
    ) -> None:
        """Upload ``library`` and build the device peak indexes of ``batches``' tiles
        (:meth:`TilePipeline.make_resident <.cuda_search.TilePipeline.make_resident>`)."""
        self.pipeline.make_resident(library, batches, params)

    def bounds_apply(self, params: SearchParameters, running_top: bool = False) -> bool:
        """Whether a search with ``params`` is pruned by the bound (:class:`.GpuBounds`)."""
        return self.bounds.applies(params, running_top)

    def pair_bounds(
        self, queries: PreparedSpectra, library: PreparedSpectra, params: SearchParameters
    ) -> np.ndarray:
        """Every pair's upper bound as the search compares it (:class:`.GpuBounds`)."""
        return self.bounds.pair_bounds(queries, library, params)

    @property
    def bound_survivors(self) -> int:
        """Pairs that passed the bound since ``count_bound_survivors`` was switched on."""
        return self.bounds.survivors

    def reset_bound_survivors(self) -> None:
        """Set :attr:`bound_survivors` back to 0."""
        self.bounds.reset_survivors()

    def memory_free(self) -> float:
        """Free bytes of the GPU's memory (inf when that cannot be asked)."""
        try:
            return float(self._cuda.current_context().get_memory_info()[0])
        except Exception:  # noqa: BLE001 - the simulator, or no context: no limit known
            return math.inf

    def resident_bytes(self) -> int:
        """Device bytes of the resident libraries and their peak indexes."""
        return self.sets.resident_bytes()

    def close(self) -> None:
        """Drop resident spectra and tile buffers."""
        with self._lock:
            self.sets.clear()
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
        """Device copy of ``spectra`` (:meth:`ResidentSets.upload
        <.cuda_resident.ResidentSets.upload>`: ``keep`` for a library)."""
        return self.sets.upload(spectra, keep)

    def _dummy_heavy(self) -> tuple[Any, Any]:
        if getattr(self, "_dummy", None) is None:
            self._dummy = (
                self._cuda.to_device(np.full((1, HEAVY_MAX), np.nan)),
                self._cuda.to_device(np.full(1, -1, np.int32)),
            )
        return self._dummy

    def _free_slots(self) -> None:
        self._slots = []
        self.matrices.slots = []
        self.pipeline.free_scratch()

    def _get_slots(
        self, rows: int, cols: int, segs: int, hit_cap: int, ovf_cap: int
    ) -> list[TileSlot]:
        if not self._slots or not self._slots[0].fits(rows, cols, segs, hit_cap, ovf_cap):
            self._slots = []
            self._slots = [
                TileSlot(self._cuda, rows, cols, segs, hit_cap, ovf_cap) for _ in range(self.depth)
            ]
        return self._slots
