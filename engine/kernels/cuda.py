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
rescores exactly with the CPU core (:mod:`engine.kernels.greedy`).

Two tile slots with their own streams and buffers overlap the GPU work of one
tile with the host's handling (hit copy, rescoring, merging) of the previous.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import weakref
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit, prange

from engine.backends import Backend, Batch, PreparedSpectra
from engine.hits import HitTable
from engine.kernels.greedy import SCRATCH_SIZE, cosine_core, modified_core
from engine.params import SearchParameters

__all__ = ["CudaBackend", "gpu_status", "rescore_pairs"]

log = logging.getLogger(__name__)

_IMPORT_LOCK = threading.Lock()


def _numba_cuda() -> Any:
    """Import ``numba.cuda`` (with the numpy 2.5 ``row_stack`` shim) and return it."""
    with _IMPORT_LOCK:
        if not hasattr(np, "row_stack"):  # removed in numpy 2.5; numba-cuda 0.30 still uses it
            np.row_stack = np.vstack  # type: ignore[attr-defined]  # noqa: NPY201
        from numba import cuda

    return cuda


def _kernels() -> Any:
    _numba_cuda()
    from engine.kernels import cuda_kernels

    return cuda_kernels


def gpu_status() -> tuple[bool, str]:
    """Whether a usable CUDA GPU is present.

    Returns
    -------
    ok : bool
        True when numba CUDA imports, reports CUDA available and sees a device.
    description : str
        The device name when ``ok``, otherwise the reason.  Never raises.
    """
    try:
        cuda = _numba_cuda()
    except Exception as exc:
        return False, f"numba CUDA cannot be imported: {type(exc).__name__}: {exc}"
    try:
        if not cuda.is_available():
            return False, "no CUDA driver or GPU found"
        if len(cuda.gpus) == 0:
            return False, "no CUDA GPU found"
        return True, _device_name(cuda)
    except Exception as exc:
        return False, f"CUDA is not usable: {type(exc).__name__}: {exc}"


def _device_name(cuda: Any) -> str:
    try:
        name = cuda.get_current_device().name
    except AttributeError:  # the simulator
        name = cuda.gpus[0].name if hasattr(cuda.gpus[0], "name") else "CUDA simulator"
    return name.decode() if isinstance(name, bytes) else str(name)


# --------------------------------------------------------------------------- #
# exact host rescoring of flagged pairs
# --------------------------------------------------------------------------- #
@njit(cache=True, parallel=True)
def _rescore_kernel(qs, ls, q_mz, q_w, q_off, q_norm, q_prec, l_mz, l_w, l_off, l_norm,
                    l_prec, tol, modified, mlen):  # pragma: no cover
    n = qs.shape[0]
    scores = np.zeros(n, dtype=np.float64)
    matches = np.zeros(n, dtype=np.int32)
    for k in prange(n):
        q = qs[k]
        l = ls[k]
        den = l_norm[l] * q_norm[q]
        if den == 0.0:
            continue
        sp = np.empty(SCRATCH_SIZE, dtype=np.float64)
        si = np.empty(SCRATCH_SIZE, dtype=np.int64)
        sj = np.empty(SCRATCH_SIZE, dtype=np.int64)
        ua = np.empty(mlen, dtype=np.bool_)
        ub = np.empty(mlen, dtype=np.bool_)
        if modified:
            raw, nm = modified_core(l_mz, l_w, l_off[l], l_off[l + 1], l_prec[l],
                                    q_mz, q_w, q_off[q], q_off[q + 1], q_prec[q], tol,
                                    sp, si, sj, ua, ub)
        else:
            raw, nm = cosine_core(l_mz, l_w, l_off[l], l_off[l + 1],
                                  q_mz, q_w, q_off[q], q_off[q + 1], tol, sp, si, sj, ua, ub)
        if nm > 0:
            scores[k] = raw / den
            matches[k] = nm
    return scores, matches


def rescore_pairs(queries: PreparedSpectra, library: PreparedSpectra, q_index: np.ndarray,
                  l_index: np.ndarray, tolerance: float,
                  modified: bool) -> tuple[np.ndarray, np.ndarray]:
    """Exact scores of listed pairs on the CPU (the overflow path of the GPU kernels).

    Parameters
    ----------
    queries, library : PreparedSpectra
    q_index, l_index : ndarray of int
        Pair ``k`` is query ``q_index[k]`` × library spectrum ``l_index[k]``.
    tolerance : float
        Fragment tolerance (Da).
    modified : bool
        Modified cosine instead of cosine.

    Returns
    -------
    scores : ndarray of float64
    matches : ndarray of int32
    """
    q_index = np.ascontiguousarray(q_index, dtype=np.int64)
    l_index = np.ascontiguousarray(l_index, dtype=np.int64)
    if len(q_index) == 0:
        return np.empty(0, np.float64), np.empty(0, np.int32)
    mlen = int(max(SCRATCH_SIZE, np.diff(queries.offsets).max(initial=0),
                   np.diff(library.offsets).max(initial=0)))
    q, lib = queries, library
    return _rescore_kernel(q_index, l_index, q.mz, q.weight, q.offsets, q.norm, q.precursor_mz,
                           lib.mz, lib.weight, lib.offsets, lib.norm, lib.precursor_mz,
                           float(tolerance), bool(modified), mlen)


#: Heaviest peaks per library spectrum kept for the pruning test.
HEAVY_MAX = 4


@njit(cache=True)
def heavy_peaks(mz, weight, offsets, norm, threshold, hmax):  # pragma: no cover
    """m/z of each spectrum's heaviest peaks that carry all but ``threshold**2`` of its norm².

    Returns ``(heavy float64[n, hmax], count int32[n])``; ``count`` is -1 when
    more than ``hmax`` peaks are needed (no pruning for that spectrum).  A
    spectrum scores at least ``threshold`` with another only if one of these
    peaks is matched (Cauchy-Schwarz over the matched peaks), with a 1e-6
    relative safety margin.
    """
    n = offsets.shape[0] - 1
    heavy = np.full((n, hmax), np.nan)
    count = np.full(n, -1, dtype=np.int32)
    chosen = np.empty(hmax, dtype=np.int64)
    for s in range(n):
        a = offsets[s]
        b = offsets[s + 1]
        n2 = norm[s] * norm[s]
        target = threshold * threshold * n2 * (1.0 - 1e-6)
        rem = 0.0
        for p in range(a, b):
            rem += weight[p] * weight[p]
        k = 0
        while rem >= target and k < hmax and k < b - a:
            best = -1
            bw = -1.0
            for p in range(a, b):
                taken = False
                for t in range(k):
                    if chosen[t] == p:
                        taken = True
                if not taken and weight[p] > bw:
                    bw = weight[p]
                    best = p
            chosen[k] = best
            heavy[s, k] = mz[best]
            rem -= bw * bw
            k += 1
        if rem < target:
            count[s] = k
    return heavy, count


# --------------------------------------------------------------------------- #
# resident spectra and tile buffers
# --------------------------------------------------------------------------- #
@dataclass
class _Resident:
    """Spectra uploaded to the GPU."""

    mz: Any
    weight: Any
    offsets: Any
    norm: Any
    precursor_mz: Any
    counts: np.ndarray  # host: peaks per spectrum
    nbytes: int
    host: PreparedSpectra | None = None
    heavy: dict | None = None  # threshold -> (device heavy, device counts)

    def heavy_for(self, cuda: Any, threshold: float) -> tuple[Any, Any]:
        """Device arrays of :func:`heavy_peaks` for ``threshold`` (cached)."""
        if self.heavy is None:
            self.heavy = {}
        if threshold not in self.heavy:
            h = self.host
            heavy, count = heavy_peaks(h.mz, h.weight, h.offsets, h.norm, float(threshold),
                                       HEAVY_MAX)
            if len(self.heavy) > 4:
                self.heavy.clear()
            self.heavy[threshold] = (cuda.to_device(heavy), cuda.to_device(count))
        return self.heavy[threshold]


class _Slot:
    """Device and pinned host buffers of one tile in flight, with its stream."""

    def __init__(self, cuda: Any, rows: int, cols: int) -> None:
        n = rows * cols
        self.rows, self.cols = rows, cols
        self.stream = cuda.stream()
        self.out_s = cuda.device_array(n, dtype=np.float64)
        self.out_m = cuda.device_array(n, dtype=np.int32)
        self.hit_r = cuda.device_array(n, dtype=np.int32)
        self.hit_c = cuda.device_array(n, dtype=np.int32)
        self.hit_s = cuda.device_array(n, dtype=np.float64)
        self.hit_m = cuda.device_array(n, dtype=np.int32)
        self.ovf_r = cuda.device_array(n, dtype=np.int32)
        self.ovf_c = cuda.device_array(n, dtype=np.int32)
        self.counts = cuda.device_array(2, dtype=np.int32)
        self.cols_dev = cuda.device_array(cols, dtype=np.int32)
        self.cols_host = cuda.pinned_array(cols, dtype=np.int32)
        self.counts_host = cuda.pinned_array(2, dtype=np.int32)
        self.zeros_host = cuda.pinned_array(2, dtype=np.int32)
        self.zeros_host[:] = 0


@dataclass
class _Tile:
    batch_no: int
    q0: int
    q1: int
    l0: int
    l1: int


def _is_oom(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".upper()
    return "OUT_OF_MEMORY" in text or "OUT OF MEMORY" in text or isinstance(exc, MemoryError)


class CudaError(RuntimeError):
    """A CUDA failure inside the backend (the search job falls back to the CPU)."""


class CudaBackend(Backend):
    """Exact greedy cosine on an NVIDIA GPU with the library resident in GPU memory.

    Parameters
    ----------
    threads : int
        Threads per block of the scoring kernel (one thread per pair).
    select_threads : int
        Threads per block of the per-query selection kernel.
    max_rows : int
        Most query rows per tile (tiles have at most ``SORT_MAX`` columns).
    max_resident : int
        Spectrum sets kept on the GPU (least recently used ones are dropped).

    Raises
    ------
    CudaError
        If no usable GPU is present.
    """

    name = "cuda"

    def __init__(self, *, threads: int = 128, select_threads: int = 256, max_rows: int = 2048,
                 max_resident: int = 4) -> None:
        ok, what = gpu_status()
        if not ok:
            raise CudaError(what)
        self._cuda = _numba_cuda()
        self._k = _kernels()
        self._name = what
        self.threads = int(threads)
        self.select_threads = int(select_threads)
        self.max_rows = int(max_rows)
        self.max_resident = int(max_resident)
        self._resident: OrderedDict[str, _Resident] = OrderedDict()
        self._by_id: dict[int, tuple[weakref.ref, str]] = {}
        self._slots: list[_Slot] = []
        self._lock = threading.RLock()
        #: Pairs rescored on the CPU (overflowing components) since creation.
        self.rescored_pairs = 0
        #: True once :meth:`warm_up` ran.
        self.warmed_up = False

    # -- Backend API --------------------------------------------------------------
    @property
    def device(self) -> str:
        """The GPU's name."""
        return self._name

    def score_batch(self, queries: PreparedSpectra, library: PreparedSpectra, batch: Batch,
                    params: SearchParameters) -> HitTable:
        """Hits of one batch, filtered and top-N'd on the GPU (see :class:`Backend`)."""
        for _, hits in self.run_batches(queries, library, [batch], params):
            return hits
        return HitTable.empty()

    def run_batches(self, queries: PreparedSpectra, library: PreparedSpectra,
                    batches: Iterable[Batch], params: SearchParameters,
                    ) -> Iterator[tuple[Batch, HitTable]]:
        """Score batches with two tiles in flight; yield each batch's hits in order."""
        with self._lock:
            try:
                yield from self._run(queries, library, batches, params)
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

    def dense(self, queries: PreparedSpectra, library: PreparedSpectra,
              params: SearchParameters) -> tuple[np.ndarray, np.ndarray]:
        """Full ``(scores float64[nq, nl], matches int32[nq, nl])`` of a block."""
        with self._lock:
            rows = max(1, min(65535, (1 << 30) // max(1, 12 * len(library))))
            while True:
                try:
                    return self._dense(queries, library, params, rows)
                except CudaError:
                    raise
                except Exception as exc:
                    if _is_oom(exc) and rows > 16:
                        rows //= 4
                        self._free_slots()
                        log.warning("GPU out of memory in dense(); retrying with %d rows", rows)
                        continue
                    if _is_oom(exc):
                        raise CudaError(f"GPU out of memory: {exc}") from exc
                    raise CudaError(f"CUDA failure: {type(exc).__name__}: {exc}") from exc

    def close(self) -> None:
        """Drop resident spectra and tile buffers."""
        with self._lock:
            self._resident.clear()
            self._by_id.clear()
            self._free_slots()

    def warm_up(self) -> None:
        """Compile (or load from numba's cache) every kernel on tiny inputs."""
        mz = np.array([100.0, 100.05, 150.0, 100.0, 100.02, 150.01, 200.0])
        w = np.array([1.0, 0.5, 0.2, 0.9, 0.6, 0.3, 0.1])
        spectra = PreparedSpectra(
            mz=mz, weight=w, offsets=np.array([0, 3, 7], np.int64),
            norm=np.array([np.sqrt(np.sum(w[:3] ** 2)), np.sqrt(np.sum(w[3:] ** 2))]),
            precursor_mz=np.array([300.0, 310.0]), mz_power=0.0, intensity_power=1.0)
        params = SearchParameters(top_n=1)
        self.score_batch(spectra, spectra, Batch(0, 2, 0, 2), params)
        # threshold > 0 compiles the pruning precomputation too
        self.score_batch(spectra, spectra, Batch(0, 2, 0, 2),
                         SearchParameters(top_n=1, threshold=0.5))
        self.dense(spectra, spectra, params)
        rescore_pairs(spectra, spectra, np.array([0]), np.array([1]), 0.1, False)
        self.warmed_up = True

    # -- residency ----------------------------------------------------------------
    def _upload(self, spectra: PreparedSpectra) -> _Resident:
        """Device copy of ``spectra``: by identity, then by content, else uploaded."""
        hit = self._by_id.get(id(spectra))
        if hit is not None and hit[0]() is spectra and hit[1] in self._resident:
            self._resident.move_to_end(hit[1])
            return self._resident[hit[1]]
        key = _content_key(spectra)
        res = self._resident.get(key)
        if res is None:
            cuda = self._cuda
            offsets = np.asarray(spectra.offsets)
            if offsets[-1] >= 2**31:
                raise CudaError("more than 2**31 peaks in one spectrum set")
            arrays = {
                "mz": np.ascontiguousarray(spectra.mz, np.float64),
                "weight": np.ascontiguousarray(spectra.weight, np.float64),
                "offsets": np.ascontiguousarray(offsets, np.int32),
                "norm": np.ascontiguousarray(spectra.norm, np.float64),
                "precursor_mz": np.ascontiguousarray(spectra.precursor_mz, np.float64),
            }
            nbytes = sum(a.nbytes for a in arrays.values())
            dev = {k: cuda.to_device(a) for k, a in arrays.items()}
            res = _Resident(**dev, counts=np.diff(offsets).astype(np.int64), nbytes=nbytes,
                            host=spectra)
            self._resident[key] = res
            while len(self._resident) > self.max_resident:
                self._resident.popitem(last=False)
        self._resident.move_to_end(key)
        self._by_id = {i: v for i, v in self._by_id.items() if v[0]() is not None}
        self._by_id[id(spectra)] = (weakref.ref(spectra), key)
        return res

    def _dummy_heavy(self) -> tuple[Any, Any]:
        if getattr(self, "_dummy", None) is None:
            self._dummy = (self._cuda.to_device(np.full((1, HEAVY_MAX), np.nan)),
                           self._cuda.to_device(np.full(1, -1, np.int32)))
        return self._dummy

    def _free_slots(self) -> None:
        self._slots = []

    def _get_slots(self, rows: int, cols: int) -> list[_Slot]:
        if not self._slots or self._slots[0].rows < rows or self._slots[0].cols < cols:
            self._slots = []
            self._slots = [_Slot(self._cuda, rows, cols) for _ in range(2)]
        return self._slots

    # -- search -------------------------------------------------------------------
    def _run(self, queries: PreparedSpectra, library: PreparedSpectra, batches: Iterable[Batch],
             params: SearchParameters) -> Iterator[tuple[Batch, HitTable]]:
        batches = list(batches)
        if not batches:
            return
        k = self._k
        dq = self._upload(queries)
        dl = self._upload(library)
        tiles: list[_Tile] = []
        for b, batch in enumerate(batches):
            for q0 in range(batch.q_start, batch.q_stop, self.max_rows):
                for l0 in range(batch.l_start, batch.l_stop, k.SORT_MAX):
                    tiles.append(_Tile(b, q0, min(q0 + self.max_rows, batch.q_stop),
                                       l0, min(l0 + k.SORT_MAX, batch.l_stop)))
        rows = max(t.q1 - t.q0 for t in tiles)
        cols = max(t.l1 - t.l0 for t in tiles)
        slots = self._get_slots(rows, cols)
        per_batch: dict[int, list[HitTable]] = {}
        left = {b: 0 for b in range(len(batches))}
        for t in tiles:
            left[t.batch_no] += 1
        pending: deque[tuple[_Tile, _Slot]] = deque()
        next_batch = 0
        for n, tile in enumerate(tiles):
            slot = slots[n % 2]
            if len(pending) == 2:
                done, dslot = pending.popleft()
                per_batch.setdefault(done.batch_no, []).append(
                    self._finish(done, dslot, queries, library, params))
                left[done.batch_no] -= 1
            self._launch(tile, slot, dq, dl, params)
            pending.append((tile, slot))
            while next_batch < len(batches) and left[next_batch] == 0:
                yield batches[next_batch], self._merge(per_batch.pop(next_batch, []), params)
                next_batch += 1
        while pending:
            done, dslot = pending.popleft()
            per_batch.setdefault(done.batch_no, []).append(
                self._finish(done, dslot, queries, library, params))
            left[done.batch_no] -= 1
            while next_batch < len(batches) and left[next_batch] == 0:
                yield batches[next_batch], self._merge(per_batch.pop(next_batch, []), params)
                next_batch += 1

    def _launch(self, tile: _Tile, slot: _Slot, dq: _Resident, dl: _Resident,
                params: SearchParameters) -> None:
        k = self._k
        nrows, ncols = tile.q1 - tile.q0, tile.l1 - tile.l0
        prune = params.threshold > 0
        if prune:
            heavy, hcnt = dl.heavy_for(self._cuda, float(params.threshold))
        else:
            heavy, hcnt = self._dummy_heavy()
        s = slot.stream
        slot.stream.synchronize()  # the pinned buffers of this slot are free again
        order = np.argsort(dl.counts[tile.l0:tile.l1], kind="stable")
        slot.cols_host[:ncols] = order + tile.l0
        slot.cols_dev[:ncols].copy_to_device(slot.cols_host[:ncols], stream=s)
        slot.counts.copy_to_device(slot.zeros_host, stream=s)
        out_s = slot.out_s[: nrows * ncols].reshape(nrows, ncols)
        out_m = slot.out_m[: nrows * ncols].reshape(nrows, ncols)
        grid = ((ncols + self.threads - 1) // self.threads, nrows)
        k.score_kernel[grid, self.threads, s](
            dq.mz, dq.weight, dq.offsets, dq.norm, dq.precursor_mz,
            dl.mz, dl.weight, dl.offsets, dl.norm, dl.precursor_mz,
            int(tile.q0), slot.cols_dev[:ncols], int(tile.l0), float(params.tolerance),
            bool(params.modified), float(params.precursor_tolerance or 0.0),
            bool(params.precursor_unit == "ppm"), bool(prune), float(params.threshold),
            heavy, hcnt, out_s, out_m, slot.ovf_r, slot.ovf_c, slot.counts[1:])
        k.select_kernel[nrows, self.select_threads, s](
            out_s, out_m, int(ncols), int(max(1, params.min_matches)), float(params.threshold),
            int(params.top_n), slot.hit_r, slot.hit_c, slot.hit_s, slot.hit_m, slot.counts[:1])
        slot.counts.copy_to_host(slot.counts_host, stream=s)

    def _finish(self, tile: _Tile, slot: _Slot, queries: PreparedSpectra,
                library: PreparedSpectra, params: SearchParameters) -> HitTable:
        s = slot.stream
        s.synchronize()
        n_hits, n_ovf = int(slot.counts_host[0]), int(slot.counts_host[1])
        parts = []
        if n_hits:
            r = slot.hit_r[:n_hits].copy_to_host(stream=s)
            c = slot.hit_c[:n_hits].copy_to_host(stream=s)
            sc = slot.hit_s[:n_hits].copy_to_host(stream=s)
            m = slot.hit_m[:n_hits].copy_to_host(stream=s)
            s.synchronize()
            parts.append(HitTable.from_arrays(r.astype(np.int64) + tile.q0,
                                              c.astype(np.int64) + tile.l0, sc, m))
        if n_ovf:
            r = slot.ovf_r[:n_ovf].copy_to_host(stream=s).astype(np.int64) + tile.q0
            c = slot.ovf_c[:n_ovf].copy_to_host(stream=s).astype(np.int64) + tile.l0
            s.synchronize()
            sc, m = rescore_pairs(queries, library, r, c, params.tolerance, params.modified)
            self.rescored_pairs += n_ovf
            keep = (m >= max(1, params.min_matches)) & (sc >= params.threshold)
            parts.append(HitTable.from_arrays(r[keep], c[keep], sc[keep], m[keep]))
        if not parts:
            return HitTable.empty()
        hits = HitTable.concat(parts)
        return hits.top_per_query(params.top_n) if n_ovf else hits

    def _merge(self, parts: list[HitTable], params: SearchParameters) -> HitTable:
        if not parts:
            return HitTable.empty()
        if len(parts) == 1:
            return parts[0]
        return HitTable.concat(parts).top_per_query(params.top_n)

    # -- dense --------------------------------------------------------------------
    def _dense(self, queries: PreparedSpectra, library: PreparedSpectra,
               params: SearchParameters, rows: int) -> tuple[np.ndarray, np.ndarray]:
        cuda, k = self._cuda, self._k
        nq, nl = len(queries), len(library)
        scores = np.empty((nq, nl), dtype=np.float64)
        matches = np.empty((nq, nl), dtype=np.int32)
        if nq == 0 or nl == 0:
            return scores, matches
        dq = self._upload(queries)
        dl = self._upload(library)
        rows = min(rows, nq)
        self._free_slots()
        cols = cuda.to_device(np.argsort(dl.counts, kind="stable").astype(np.int32))
        out_s = cuda.device_array((rows, nl), dtype=np.float64)
        out_m = cuda.device_array((rows, nl), dtype=np.int32)
        counts = cuda.device_array(1, dtype=np.int32)
        cap = min(rows * nl, 1 << 20)
        ovf_r = cuda.device_array(cap, dtype=np.int32)
        ovf_c = cuda.device_array(cap, dtype=np.int32)
        heavy, hcnt = self._dummy_heavy()
        stream = cuda.stream()
        for q0 in range(0, nq, rows):
            n = min(rows, nq - q0)
            counts.copy_to_device(np.zeros(1, np.int32), stream=stream)
            grid = ((nl + self.threads - 1) // self.threads, n)
            k.score_kernel[grid, self.threads, stream](
                dq.mz, dq.weight, dq.offsets, dq.norm, dq.precursor_mz,
                dl.mz, dl.weight, dl.offsets, dl.norm, dl.precursor_mz,
                int(q0), cols, 0, float(params.tolerance), bool(params.modified), 0.0, False,
                False, 0.0, heavy, hcnt, out_s, out_m, ovf_r, ovf_c, counts)
            out_s[:n].copy_to_host(scores[q0:q0 + n], stream=stream)
            out_m[:n].copy_to_host(matches[q0:q0 + n], stream=stream)
            n_ovf = int(counts.copy_to_host(stream=stream)[0])
            stream.synchronize()
            if n_ovf:
                if n_ovf <= cap:
                    r = ovf_r[:n_ovf].copy_to_host().astype(np.int64)
                    c = ovf_c[:n_ovf].copy_to_host().astype(np.int64)
                else:
                    r, c = np.nonzero(matches[q0:q0 + n] < 0)
                sc, m = rescore_pairs(queries, library, r + q0, c, params.tolerance,
                                      params.modified)
                scores[r + q0, c] = sc
                matches[r + q0, c] = m
                self.rescored_pairs += len(r)
        return scores, matches


def _content_key(spectra: PreparedSpectra) -> str:
    """Hash of everything the kernels read (so an equal library is not re-uploaded)."""
    h = hashlib.blake2b(digest_size=16)
    for a in (spectra.offsets, spectra.mz, spectra.weight, spectra.norm, spectra.precursor_mz):
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype, a.shape)).encode())
        h.update(memoryview(a).cast("B"))
    return h.hexdigest()
