"""Compile the kernels ahead of the first search.

numba compiles each kernel on its first call (about a minute on a 2-core laptop
the very first time; later runs load the compiled code from numba's on-disk
cache in about a second).  Calling :func:`warm_up` when an application starts
keeps that wait out of the first search a user makes.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from engine.api import score_matrix, search
from engine.library import SpectrumLibrary
from engine.params import SearchParameters

__all__ = ["warm_up", "warm_up_in_background"]

_started = threading.Lock()
_thread: threading.Thread | None = None


def _tiny_library() -> SpectrumLibrary:
    mz = [np.array([50.0, 80.0, 80.05, 120.0]), np.array([50.02, 80.01, 130.0]), np.array([60.0])]
    intensity = [np.array([1.0, 2.0, 2.0, 3.0]), np.array([1.0, 4.0, 2.0]), np.array([1.0])]
    return SpectrumLibrary.from_peak_lists(mz, intensity, precursor_mz=[150.0, 160.0, 100.0])


def warm_up(backend: str = "cpu") -> float:
    """Run every search kernel once on three tiny spectra.

    Parameters
    ----------
    backend : {"cpu", "cuda", "auto"}
        Which backend's kernels to compile (the CPU's are always compiled, as
        every backend falls back to them).

    Returns
    -------
    float
        Seconds it took (about a second when numba's cache is warm).
    """
    start = time.perf_counter()
    lib = _tiny_library()
    variants = [
        SearchParameters(),  # identity: entropy, precursor window, ion mode
        SearchParameters(mode="analog", min_matches=1, threshold=0.0),
        SearchParameters(mode="custom", top_n=1),
        SearchParameters(mode="custom", top_n=0, threshold=0.1),
        SearchParameters(mode="custom", top_n=2, score="modified_cosine"),
        SearchParameters(mode="custom", top_n=0, score="modified_cosine"),
        SearchParameters(mode="custom", top_n=1, precursor_tolerance=20.0),
    ]
    backends = ["cpu"] if backend == "cpu" else ["cpu", backend]
    for name in backends:
        for params in variants:
            search(lib, lib, params, backend=name)
        score_matrix(lib, lib, backend=name)
        for score in ("modified_cosine", "entropy"):
            score_matrix(lib, lib, SearchParameters(mode="custom", score=score), backend=name)
    return time.perf_counter() - start


def warm_up_in_background(backend: str = "cpu") -> threading.Thread:
    """Start :func:`warm_up` in a daemon thread, once per process, and return the thread."""
    global _thread
    with _started:
        if _thread is None:
            _thread = threading.Thread(
                target=_quiet_warm_up, args=(backend,), name="simms-warm-up", daemon=True
            )
            _thread.start()
    return _thread


def _quiet_warm_up(backend: str) -> None:
    try:
        warm_up(backend)
    except Exception:  # a failed warm-up only means the first search compiles instead
        pass
