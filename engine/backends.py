"""Compute backends: where the greedy-cosine batches run.

A backend scores batches of (query block × library block) and returns the sparse
hits of each batch.  The search job (:mod:`engine.search`) plans the batches,
merges top-N across library blocks, reports progress and honours cancellation;
backends only compute.  ``cpu`` runs numba kernels parallel over the cores;
``cuda`` (:mod:`engine.kernels.cuda`) keeps the library resident on an NVIDIA GPU.
"""

from __future__ import annotations

import logging
import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters

__all__ = [
    "Backend",
    "Batch",
    "CpuBackend",
    "PreparedSpectra",
    "available_backends",
    "get_backend",
    "gpu_status",
    "interactive_threads",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class PreparedSpectra:
    """Spectra reduced to what the kernels read: CSR peaks, weights, norms, precursors.

    Attributes
    ----------
    mz : ndarray of float64
    weight : ndarray of float64
        ``mz**mz_power * intensity**intensity_power`` per peak.
    offsets : ndarray of int64
    norm : ndarray of float64
        Euclidean norm of each spectrum's weights.
    precursor_mz : ndarray of float64
    mz_power, intensity_power : float
        The powers the weights were made with.
    """

    mz: np.ndarray
    weight: np.ndarray
    offsets: np.ndarray
    norm: np.ndarray
    precursor_mz: np.ndarray
    mz_power: float
    intensity_power: float

    @classmethod
    def from_library(
        cls, library: SpectrumLibrary, *, mz_power: float = 0.0, intensity_power: float = 1.0
    ) -> PreparedSpectra:
        """Compute weights and norms of ``library``'s peaks."""
        from engine.kernels.cpu import prepare_weights

        weight, norm = prepare_weights(
            library.mz, library.intensity, library.offsets, mz_power, intensity_power
        )
        return cls(
            mz=np.ascontiguousarray(library.mz, dtype=np.float64),
            weight=weight,
            offsets=np.ascontiguousarray(library.offsets, dtype=np.int64),
            norm=norm,
            precursor_mz=np.ascontiguousarray(library.precursor_mz, dtype=np.float64),
            mz_power=mz_power,
            intensity_power=intensity_power,
        )

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def reordered(self, order: np.ndarray) -> PreparedSpectra:
        """The same spectra in the order ``order`` (a permutation)."""
        counts = np.diff(self.offsets)[order]
        offsets = np.zeros(len(order) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        take = np.repeat(self.offsets[:-1][order] - offsets[:-1], counts) + np.arange(offsets[-1])
        return PreparedSpectra(
            mz=self.mz[take],
            weight=self.weight[take],
            offsets=offsets,
            norm=self.norm[order],
            precursor_mz=self.precursor_mz[order],
            mz_power=self.mz_power,
            intensity_power=self.intensity_power,
        )


@dataclass(frozen=True)
class Batch:
    """One block of work: queries ``[q_start, q_stop)`` × library ``[l_start, l_stop)``."""

    q_start: int
    q_stop: int
    l_start: int
    l_stop: int

    @property
    def pairs(self) -> int:
        """Number of spectrum pairs in the batch."""
        return (self.q_stop - self.q_start) * (self.l_stop - self.l_start)


class Backend(ABC):
    """Where batches are scored.

    Subclasses implement :meth:`score_batch` and :meth:`dense`; a backend that can
    overlap transfers and compute overrides :meth:`run_batches`.
    """

    #: Short name: ``"cpu"`` or ``"cuda"``.
    name: str = ""

    @property
    @abstractmethod
    def device(self) -> str:
        """The device in words, e.g. ``"CPU, 2 threads"`` or ``"NVIDIA H100 80GB HBM3"``."""

    @abstractmethod
    def score_batch(
        self,
        queries: PreparedSpectra,
        library: PreparedSpectra,
        batch: Batch,
        params: SearchParameters,
    ) -> HitTable:
        """Hits of one batch: matches >= max(1, min_matches), score >= threshold,
        each query's ``top_n`` best when ``top_n > 0``.  Indexes refer to
        ``queries`` and ``library`` as given."""

    @abstractmethod
    def dense(
        self, queries: PreparedSpectra, library: PreparedSpectra, params: SearchParameters
    ) -> tuple[np.ndarray, np.ndarray]:
        """Full ``(scores, matches)`` matrices of a small block (heatmaps)."""

    def block_shape(self, batch_size: int) -> tuple[int, int]:
        """Queries and library spectra per batch for a requested ``batch_size``.

        GPUs take square ``batch_size`` × ``batch_size`` tiles.
        """
        return batch_size, batch_size

    def run_batches(
        self,
        queries: PreparedSpectra,
        library: PreparedSpectra,
        batches: Iterable[Batch],
        params: SearchParameters,
    ) -> Iterator[tuple[Batch, HitTable]]:
        """Score batches in order, yielding each with its hits.

        The caller may stop iterating at any time (cancellation).
        """
        for batch in batches:
            yield batch, self.score_batch(queries, library, batch, params)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release device resources (resident libraries, streams)."""


class CpuBackend(Backend):
    """numba kernels, parallel over queries on all CPU cores."""

    name = "cpu"

    def block_shape(self, batch_size: int) -> tuple[int, int]:
        """Fewer queries and more library spectra than a GPU tile.

        The CPU kernel prunes pairs by an upper bound against each query's
        running top-N, which pays off over long library stretches; short query
        blocks keep a batch (and so a Stop) well under a second.
        """
        return min(batch_size, 256), batch_size * 8

    @property
    def device(self) -> str:
        import numba

        return f"CPU, {self.threads or numba.config.NUMBA_NUM_THREADS} threads"

    def __init__(self, threads: int | None = None) -> None:
        """
        Parameters
        ----------
        threads : int, optional
            numba threads for this backend's kernels (default: all cores).  An
            interactive application leaves one core to its GUI thread
            (:func:`interactive_threads`).
        """
        self.threads = threads
        #: Cancellation flag polled by the kernels (``SearchJob`` binds its token's).
        self.stop: np.ndarray | None = None
        # peak indexes of the library blocks of the current library (pruned search)
        self._indexes: dict[tuple[int, int], tuple] = {}
        self._indexed: weakref.ref | None = None

    @contextmanager
    def _threads(self):
        """Run numba kernels with :attr:`threads` threads (numba's setting is per thread)."""
        if self.threads is None:
            yield
            return
        import numba

        before = numba.get_num_threads()
        numba.set_num_threads(max(1, min(self.threads, numba.config.NUMBA_NUM_THREADS)))
        try:
            yield
        finally:
            numba.set_num_threads(before)

    def _library_index(self, library: PreparedSpectra, batch: Batch):
        from engine.kernels.cpu import library_peak_index

        if self._indexed is None or self._indexed() is not library:
            self._indexes.clear()
            self._indexed = weakref.ref(library)
        key = (batch.l_start, batch.l_stop)
        if key not in self._indexes:
            self._indexes[key] = library_peak_index(
                library.mz, library.weight, library.offsets, batch.l_start, batch.l_stop
            )
        return self._indexes[key]

    def score_batch(self, queries, library, batch, params) -> HitTable:
        from engine.kernels.cpu import search_block

        q, l = queries, library
        index = None if params.modified else self._library_index(library, batch)
        with self._threads():
            found = search_block(
                q.mz, q.weight, q.offsets, q.norm, q.precursor_mz,
                l.mz, l.weight, l.offsets, l.norm, l.precursor_mz,
                batch.q_start, batch.q_stop, batch.l_start, batch.l_stop,
                params.tolerance, params.modified,
                params.precursor_tolerance or 0.0, params.precursor_unit == "ppm",
                params.min_matches, params.threshold, params.top_n,
                library_index=index, stop=self.stop,
            )  # fmt: skip
        return HitTable.from_arrays(*found)

    def dense(self, queries, library, params) -> tuple[np.ndarray, np.ndarray]:
        from engine.kernels.cpu import dense_block

        q, l = queries, library
        with self._threads():
            return dense_block(
                q.mz, q.weight, q.offsets, q.norm, q.precursor_mz,
                l.mz, l.weight, l.offsets, l.norm, l.precursor_mz,
                0, len(q), 0, len(l), params.tolerance, params.modified,
            )  # fmt: skip


def gpu_status() -> tuple[bool, str]:
    """Whether a usable CUDA GPU is present, and the device name or the reason not."""
    try:
        from engine.kernels import cuda as cuda_kernels
    except Exception as exc:  # an import error of numba-cuda is a reason, not a crash
        return False, f"CUDA backend unavailable: {exc}"
    return cuda_kernels.gpu_status()


def available_backends() -> dict[str, str]:
    """Backends usable here, name → device description."""
    out = {"cpu": CpuBackend().device}
    ok, what = gpu_status()
    if ok:
        out["cuda"] = what
    return out


def interactive_threads() -> int:
    """CPU threads for searches started from a GUI: all cores but one (at least one).

    numba's threads would otherwise compete with the GUI thread for every core,
    and on a 2-core laptop the window would stutter for a few hundred ms.
    """
    import numba

    return max(1, numba.config.NUMBA_NUM_THREADS - 1)


def get_backend(name: str = "auto", *, on_message=None, cpu_threads: int | None = None) -> Backend:
    """Make a backend by name.

    Parameters
    ----------
    name : {"auto", "cpu", "cuda"}
        ``auto`` takes CUDA when a usable GPU is present, else the CPU.
    on_message : callable, optional
        Receives a one-line message when the request cannot be honoured
        (e.g. ``cuda`` asked for but no GPU): the CPU is used instead.
    cpu_threads : int, optional
        Threads of the CPU backend (default: all cores).
    """
    if name not in ("auto", "cpu", "cuda"):
        raise ValueError(f"backend must be 'auto', 'cpu' or 'cuda', not {name!r}")
    if name == "cpu":
        return CpuBackend(cpu_threads)
    ok, what = gpu_status()
    if ok:
        from engine.kernels.cuda import CudaBackend

        try:
            return CudaBackend()
        except Exception as exc:  # driver present but unusable
            ok, what = False, f"CUDA backend failed to start: {exc}"
    if name == "cuda":
        message = f"{what}; using the CPU instead"
        log.warning(message)
        if on_message is not None:
            on_message(message)
    return CpuBackend(cpu_threads)


def cpu_fallback(
    backend: Backend,
    error: Exception,
    then: str = "continuing on the CPU",
    *,
    where: str = "",
    threads: int | None = None,
) -> tuple[CpuBackend, str]:
    """The CPU backend that takes over from a failed GPU backend, and the one-line notice.

    Parameters
    ----------
    backend : Backend
        The backend that failed.
    error : Exception
        Its error; raised again when ``backend`` is already the CPU.
    then : str
        What happens next, the end of the notice.
    where : str
        Where it failed, e.g. ``" on a worker"``.
    threads : int, optional
        Threads of the new CPU backend.

    Returns
    -------
    CpuBackend, str
    """
    if isinstance(backend, CpuBackend):
        raise error
    notice = f"{backend.name} backend failed{where} ({type(error).__name__}: {error}); {then}"
    return CpuBackend(threads), notice
