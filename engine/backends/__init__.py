"""Compute backends: where the greedy-cosine batches run.

A backend scores batches of (query block × library block) and returns the sparse
hits of each batch.  The search job (:mod:`engine.search`) plans the batches,
merges top-N across library blocks, reports progress and honours cancellation;
backends only compute.  ``cpu`` (:mod:`.cpu`) runs numba kernels parallel over
the cores; ``cuda`` (:mod:`.cuda`) keeps the library resident on an NVIDIA GPU.
"""

from __future__ import annotations

import logging

import numba

from engine.backends.base import Backend, Batch, PreparedSpectra
from engine.backends.cpu import CpuBackend
from engine.backends.gpu import cuda_status

__all__ = [
    "Backend",
    "Batch",
    "CpuBackend",
    "PreparedSpectra",
    "available_backends",
    "cpu_fallback",
    "get_backend",
    "gpu_status",
    "interactive_threads",
]

log = logging.getLogger(__name__)


def gpu_status() -> tuple[bool, str]:
    """Whether a usable CUDA GPU is present, and the device name or the reason not."""
    return cuda_status()


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
        from engine.backends.cuda import CudaBackend  # numba-cuda loads only with a GPU

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
