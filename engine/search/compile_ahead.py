"""Kernels compiled ahead, in another process, while this one does something else.

A fresh install compiles each kernel family on its first call.  Kernels a run
will likely need later (the other search modes of the window) are compiled
meanwhile by a child process on another core: numba writes what it compiles
to its on-disk cache, and this process loads it from there when it gets to
them.  A marker file per job and environment records that the job has run
once, so later runs start no child.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import subprocess
import sys
import threading
from pathlib import Path

__all__ = ["JOBS", "compile_ahead"]

#: What a child can compile: each job's name and the function it runs (by name, so
#: this module stays below the layers whose kernels it compiles).
JOBS = {"warm-up": "engine.warmup:warm_up"}

_children: dict[str, subprocess.Popen] = {}
_lock = threading.Lock()


def _marker(job: str) -> Path:
    import numba

    from engine.io.cache import default_cache_dir
    from engine.version import __version__

    where = os.environ.get("NUMBA_CACHE_DIR", "") + "|" + str(Path(__file__).resolve().parent)
    tag = f"{job}|{__version__}|{numba.__version__}|{sys.version_info[:2]}|{where}"
    digest = hashlib.sha256(tag.encode()).hexdigest()[:16]
    return default_cache_dir() / "kernels" / f"{job}-{digest}.done"


def compile_ahead(job: str) -> bool:
    """Start compiling ``job``'s kernels in a child process, unless done before.

    Returns whether a child was started.  Never raises: without a child, the
    kernels are compiled when first needed, as always.  No child in a frozen
    application or with ``SIMMS_NO_COMPILE_AHEAD`` set (the test suite).
    """
    if job not in JOBS:
        raise ValueError(f"unknown compile job {job!r}; one of {tuple(JOBS)}")
    if getattr(sys, "frozen", False) or os.environ.get("SIMMS_NO_COMPILE_AHEAD"):
        return False  # a frozen app has no "python -m"; tests compile in their own process
    try:
        if _marker(job).exists():
            return False
        with _lock:
            if job in _children:
                return False
            _children[job] = subprocess.Popen(
                [sys.executable, "-m", "engine.search.compile_ahead", job],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        return True
    except Exception:  # noqa: BLE001 - an optimisation only
        return False


def _run(job: str) -> None:
    module, _, function = JOBS[job].partition(":")
    getattr(importlib.import_module(module), function)()
    marker = _marker(job)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()


if __name__ == "__main__":  # pragma: no cover - run as a child
    _run(sys.argv[1])
