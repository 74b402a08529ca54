"""The kernels a search needs, made ready before it starts, so the wait is said and not timed.

numba compiles each kernel on its first call (tens of seconds the very first
time on a laptop; later runs load it from numba's on-disk cache in about a
second).  A search first runs itself on three tiny spectra with the same
parameters: that compiles (or loads) exactly the kernels of its mode, score,
preprocessing and backend, says so when it takes a while, and keeps that time
out of the search's rate and time left.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np

from engine.kernels.compile_note import SAY_AFTER, said_if_slow
from engine.library import SpectrumLibrary

__all__ = [
    "COMPILING",
    "COMPILING_MORE",
    "on_kernels_ready",
    "prepare_kernels",
    "tiny_large_library",
    "tiny_library",
]

#: What a search says when its kernels take a while to be ready.
COMPILING = "compiling the search kernels for these settings (first run only)…"
#: Said when kernels that these spectra need compile in the middle of a search (the
#: matcher of large peak groups, the rows of profile-like spectra).
COMPILING_MORE = "compiling search kernels for these spectra (first run only)…"

_ready: set[object] = set()
#: Keys being made ready: the thread doing it and the event it sets when done.
_preparing: dict[object, tuple[int, threading.Event]] = {}
_lock = threading.Lock()
_listeners: list[Callable[[], None]] = []


def on_kernels_ready(listener: Callable[[], None]) -> None:
    """Call ``listener()`` each time a search has its kernels ready (compiled or loaded)."""
    _listeners.append(listener)


def tiny_library() -> SpectrumLibrary:
    """Three tiny spectra that reach every branch of the search kernels."""
    mz = [np.array([50.0, 80.0, 80.05, 120.0]), np.array([50.02, 80.01, 130.0]), np.array([60.0])]
    intensity = [np.array([1.0, 2.0, 2.0, 3.0]), np.array([1.0, 4.0, 2.0]), np.array([1.0])]
    return SpectrumLibrary.from_peak_lists(mz, intensity, precursor_mz=[150.0, 160.0, 100.0])


def tiny_large_library() -> SpectrumLibrary:
    """Three spectra of 70 peaks within 0.07 Da: one component of 4,900 candidates, too
    large for the greedy cores' scratch, so a search defers them
    (:mod:`~engine.kernels.deferred`); the precursors give the modified cosine a shift."""
    mz = [80.0 + np.arange(70) * 1e-3 + k * 1e-4 for k in range(3)]
    intensity = [np.linspace(1.0, 2.0, 70) + k for k in range(3)]
    return SpectrumLibrary.from_peak_lists(mz, intensity, precursor_mz=[150.0, 160.0, 150.01])


def prepare_kernels(
    key: object, run_tiny: Callable[[SpectrumLibrary], object], say: Callable[[str], None]
) -> float:
    """Run ``run_tiny(tiny_library())`` once per ``key`` in this process.

    A search that finds another thread (the window's background warm-up) making
    the same kernels ready waits for it, and counts the wait as its own: else it
    would time the compile as search, or compile the same kernels beside it.

    Parameters
    ----------
    key : hashable
        What decides the kernels (the search parameters and backend kind).
    run_tiny : callable
        Runs the search on the tiny library it is given.
    say : callable
        Gets :data:`COMPILING` when the kernels are not ready after
        :data:`SAY_AFTER` seconds, and how long they took once they are.

    Returns
    -------
    float
        Seconds spent (0 when ``key`` was ready already).
    """
    me = threading.get_ident()
    with _lock:
        if key in _ready:
            return 0.0
        owner, done = _preparing.get(key, (me, None))
        if owner == me and done is not None:
            return 0.0  # the tiny search itself: already being prepared here
        if done is None:
            done = threading.Event()
            _preparing[key] = (me, done)
    start = time.perf_counter()
    with said_if_slow(lambda: say(COMPILING)):
        if owner != me:
            done.wait()  # another thread compiles them
        else:
            try:
                run_tiny(tiny_library())
                with _lock:
                    _ready.add(key)
            finally:
                with _lock:
                    _preparing.pop(key, None)
                done.set()
    with _lock:
        failed = key not in _ready
    if failed:  # the thread that prepared them failed: this one tries (and says so) itself
        return time.perf_counter() - start + prepare_kernels(key, run_tiny, say)
    for listener in list(_listeners):
        listener()
    seconds = time.perf_counter() - start
    if seconds > SAY_AFTER:
        say(f"search kernels ready in {seconds:.0f} s (compiled once, cached for later runs)")
    return seconds
