"""Compile the kernels ahead of the first search.

numba compiles each kernel on its first call (about a minute on a 2-core laptop
the very first time; later runs load the compiled code from numba's on-disk
cache in about a second).  Calling :func:`warm_up` when an application starts
keeps that wait out of the first search a user makes.

The background warm-up stops between two kernels when asked, and the process
asks at exit (``atexit``): a daemon thread still inside numba's compiler while
the interpreter finalises can crash the process (a segfault that also loses
whatever it had printed), which is what a quick script or smoke test that ends
before the warm-up does would otherwise risk.
"""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Callable

from engine.api import score_matrix, search
from engine.hits import compile_large_order
from engine.params import SearchParameters
from engine.search.prepare import on_kernels_ready, tiny_large_library, tiny_library

__all__ = ["stop_warm_up", "warm_up", "warm_up_in_background", "warming_up"]

_started = threading.Lock()
_thread: threading.Thread | None = None
_stop = threading.Event()
#: Set once the kernels of a default search are ready (the rest follow quietly), or
#: once any search has readied its own: the window's "compiling" note ends there.
_first_ready = threading.Event()
on_kernels_ready(_first_ready.set)


def warm_up(
    backend: str = "cpu", stop: Callable[[], bool] | None = None, *, first_only: bool = False
) -> float:
    """Run every search kernel once on three tiny spectra.

    Parameters
    ----------
    backend : {"cpu", "cuda", "auto"}
        Which backend's kernels to compile (the CPU's are always compiled, as
        every backend falls back to them).
    stop : callable, optional
        Asked before each kernel; when it returns True the warm-up ends there.
    first_only : bool
        Only the default search's kernels (what a first Search needs).

    Returns
    -------
    float
        Seconds it took (about a second when numba's cache is warm).
    """
    start = time.perf_counter()
    lib = tiny_library()
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
    steps = []
    for name in backends:
        steps += [lambda p=p, b=name: search(lib, lib, p, backend=b) for p in variants]
        steps += [
            lambda s=score, b=name: score_matrix(
                lib, lib, SearchParameters(mode="custom", score=s), backend=b
            )
            for score in ("cosine", "modified_cosine", "entropy")
        ]
    large = tiny_large_library()  # the scoring of pairs with a large greedy component
    steps += [
        lambda s=score: search(large, large, SearchParameters(mode="custom", score=s))
        for score in ("cosine", "modified_cosine")
    ]
    steps.append(compile_large_order)
    for number, step in enumerate(steps):
        if stop is not None and stop():
            break
        step()
        if number == 0:  # the default search's kernels: what a first Search needs
            _first_ready.set()
            if first_only:
                break
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


def warming_up() -> bool:
    """Whether the background warm-up is still making the default search's kernels ready.

    The kernels of the other modes follow in the same thread without a word: a
    search that needs them first compiles them itself, and says so.
    """
    thread = _thread
    return thread is not None and thread.is_alive() and not _first_ready.is_set()


def _quiet_warm_up(backend: str) -> None:
    """The default search's kernels here; the rest in a child process on another core.

    Compiling in this process holds the GIL for most of a minute on a fresh
    install, which a window's first search would feel; a child does not.
    """
    from engine.search.compile_ahead import compile_ahead

    try:
        warm_up(backend, stop=_stop.is_set, first_only=backend == "cpu")
        if backend == "cpu" and not _stop.is_set():
            compile_ahead("warm-up")
    except Exception:  # a failed warm-up only means the first search compiles instead
        pass


@atexit.register
def stop_warm_up(timeout: float | None = None) -> None:
    """Stop the background warm-up after its current kernel and wait for it.

    Registered with :mod:`atexit`, so a process never finalises while the
    warm-up thread is inside numba's compiler.
    """
    _stop.set()
    thread = _thread
    if thread is not None and thread is not threading.current_thread():
        thread.join(timeout)
