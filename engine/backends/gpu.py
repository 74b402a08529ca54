"""numba-cuda, imported only when asked, and whether a usable GPU is present."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

__all__ = ["CudaError", "cuda_status", "numba_cuda"]

_IMPORT_LOCK = threading.Lock()


class CudaError(RuntimeError):
    """A CUDA failure inside the backend (the search job falls back to the CPU)."""


def numba_cuda() -> Any:
    """Import ``numba.cuda`` (with the numpy 2.5 ``row_stack`` shim) and return it."""
    with _IMPORT_LOCK:
        if not hasattr(np, "row_stack"):  # removed in numpy 2.5; numba-cuda 0.30 still uses it
            np.row_stack = np.vstack  # type: ignore[attr-defined]  # noqa: NPY201
        from numba import cuda

    return cuda


def cuda_status() -> tuple[bool, str]:
    """Whether a usable CUDA GPU is present.

    Returns
    -------
    ok : bool
        True when numba CUDA imports, reports CUDA available and sees a device.
    description : str
        The device name when ``ok``, otherwise the reason.  Never raises.
    """
    try:
        cuda = numba_cuda()
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
