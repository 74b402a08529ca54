"""Kernel calls that compile in the middle of a search, said while they do.

The kernels a search needs for its settings are compiled before it starts
(``engine.search.prepare``), but some depend on the spectra: the matcher of large
greedy components (:mod:`~engine.kernels.deferred`) and the row kernel's variant for
profile-like rows (:func:`~engine.kernels.index_bounds.dense_rows`) compile on the
first search that needs them.  :func:`call_noted` compiles such a call's signature
first, apart from running it, and when that has taken :data:`SAY_AFTER` seconds
(a load from numba's cache is quicker) tells the listeners of :func:`on_compile`,
then tells them how long it took: a front end says so and keeps the wait out of
its rates.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["SAY_AFTER", "call_noted", "on_compile", "said_if_slow"]

#: Seconds a compile (or load from numba's cache) may take before it is said.
SAY_AFTER = 1.0
_listeners: list[Callable[[float | None], None]] = []
_compiling = threading.Lock()
_settled: set = set()  # (kernel, key) whose argument types have a compiled signature


def on_compile(listener: Callable[[float | None], None]) -> Callable[[], None]:
    """Call ``listener(None)`` when a kernel has been compiling for :data:`SAY_AFTER`
    seconds in the middle of a search, and ``listener(seconds)`` once it is done.

    Returns
    -------
    callable
        Removes the listener.
    """
    _listeners.append(listener)
    return lambda: _listeners.remove(listener) if listener in _listeners else None


def call_noted(kernel: Any, *args: Any, key: Any = None) -> Any:
    """``kernel(*args)``, its compile (when these argument types have none yet) said.

    ``key``: what varies the argument types between calls (the score kind's marker,
    the dense-rows marker); the types are worked out once per ``(kernel, key)``, not
    on every call (numba's ``typeof`` of spectrum sets costs ~0.3 ms, and a search
    makes hundreds of calls).  Anything in the kernel's place that is not a numba
    dispatcher (a test's spy) is just called.
    """
    if (kernel, key) not in _settled:
        types = _argument_types(kernel, args)
        if types is not None and types not in kernel.overloads:
            with _compiling:  # one compile said at a time; other threads wait here
                if types not in kernel.overloads:
                    _compile_said(kernel, types)
        _settled.add((kernel, key))
    return kernel(*args)


def _argument_types(kernel: Any, args: tuple) -> tuple | None:
    if not hasattr(kernel, "overloads") or not hasattr(kernel, "typeof_pyval"):
        return None
    return tuple(kernel.typeof_pyval(a) for a in args)


@contextmanager
def said_if_slow(say: Callable[[], None]) -> Iterator[threading.Event]:
    """Run the block; call ``say()`` (from a timer thread) once it has taken
    :data:`SAY_AFTER` seconds.  Yields an event set when it was said."""
    said = threading.Event()

    def note() -> None:
        said.set()
        say()

    timer = threading.Timer(SAY_AFTER, note)
    timer.daemon = True
    timer.start()
    try:
        yield said
    finally:
        timer.cancel()
        timer.join()  # a note already under way is out before what follows


def _compile_said(kernel: Any, types: tuple) -> None:
    def say() -> None:
        for listener in list(_listeners):
            listener(None)

    start = time.perf_counter()
    with said_if_slow(say) as said:
        kernel.compile(types)
    if said.is_set():
        took = time.perf_counter() - start
        for listener in list(_listeners):
            listener(took)
