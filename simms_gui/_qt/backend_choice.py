"""Which compute backends the search panel offers, detected once per process."""

from __future__ import annotations

import functools
import importlib.util

from engine import available_backends, gpu_status

__all__ = ["DASK_ADDRESS_TIP", "dask_available", "detected_backends", "gpu_reason"]


@functools.cache
def detected_backends() -> dict[str, str]:
    """``engine.available_backends()``, detected once per process."""
    try:
        return dict(available_backends())
    except Exception:  # detection must never stop the window from opening
        return {"cpu": "CPU"}


@functools.cache
def dask_available() -> bool:
    """True when dask.distributed can be imported (searches on a Dask cluster)."""
    return importlib.util.find_spec("distributed") is not None


#: Tooltip of the Dask address field.
DASK_ADDRESS_TIP = (
    "Address of the Dask scheduler, tcp://HOST:8786 (start one with `dask scheduler` and "
    "`dask worker tcp://HOST:8786` on each machine), or local:N to start N worker "
    "processes on this computer (closed with the window). The connection is kept "
    "between searches while the address stays the same."
)


@functools.cache
def gpu_reason() -> str:
    """Why no GPU backend is offered (``engine.gpu_status``), detected once per process."""
    try:
        ok, what = gpu_status()
    except Exception as exc:  # detection must never stop the window from opening
        return f"GPU detection failed: {exc}"
    return what if not ok else "GPU available"
