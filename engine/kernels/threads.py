"""Parallel kernels called from several threads at once.

numba runs ``parallel=True`` kernels on one of three threading layers.  TBB and
OpenMP accept parallel regions launched from several Python threads at once;
the fallback, *workqueue*, aborts the whole process when that happens.  The
application does that by design (the warm-up thread, the window's search worker
and a notebook's search may all run kernels together), and numba falls back to
workqueue wherever neither TBB nor OpenMP's ``libgomp.so.1`` can be loaded (a
bare Debian/Ubuntu without ``libgomp1``).  There every parallel kernel call goes
through one process-wide lock: searches then take turns chunk by chunk instead
of crashing.  With TBB or OpenMP the lock is never taken.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
from collections.abc import Callable, Iterator

__all__ = ["for_each_span", "parallel_region", "threadsafe_layer"]

_log = logging.getLogger(__name__)
_LOCK = threading.RLock()
_decided: bool | None = None


def threadsafe_layer() -> bool:
    """Whether numba's threading layer accepts parallel kernels from several threads.

    Starts numba's thread pool on the first call (as the first parallel kernel
    would) and asks it which layer it chose.  Anything that cannot be decided
    counts as not threadsafe.
    """
    global _decided
    if _decided is None:
        with _LOCK:
            if _decided is None:
                _decided = _ask_numba()
    return _decided


def _ask_numba() -> bool:
    try:
        import numba
        from numba.np.ufunc import parallel

        parallel._launch_threads()
        layer = numba.threading_layer()
    except Exception as exc:  # noqa: BLE001 - any failure: serialise, never crash
        _log.info("numba threading layer unknown (%s): parallel kernels take turns", exc)
        return False
    if layer == "workqueue":
        _log.info(
            "numba threading layer: workqueue (not threadsafe; install libgomp1 or tbb "
            "for concurrent searches): parallel kernels take turns"
        )
        return False
    return True


@contextlib.contextmanager
def parallel_region() -> Iterator[None]:
    """Hold the process-wide kernel lock while a parallel kernel runs, where needed.

    Re-entrant, so a kernel wrapper may call another.  A no-op on TBB and OpenMP.
    """
    if threadsafe_layer():
        yield
        return
    with _LOCK:
        yield


#: ``max_span`` for kernels whose row is one spectrum (a few dozen peaks).
SPECTRA_PER_SPAN = 2048


def for_each_span(
    kernel: Callable, n: int, *args, threads: int | None = None, max_span: int = 64
) -> None:
    """Call ``kernel(start, stop, *args)`` over spans covering ``[0, n)``, on several threads.

    The parallel kernels of a search are plain ``nogil`` numba functions over a
    span of rows, run here by Python threads that take the next span as they
    finish one (a shared counter), instead of ``parallel=True`` loops: numba's
    parfor lowering costs many seconds of compilation per kernel on a fresh
    install, and a thread per core balances uneven rows as well.  The calling
    thread works too.

    Parameters
    ----------
    kernel : callable
        A ``nogil`` numba function writing its results for rows ``[start, stop)``
        into arrays among ``args``.
    n : int
        Number of rows.
    threads : int, optional
        Threads to use (default: numba's setting for the calling thread, which
        the CPU backend sets per search).
    max_span : int, default 64
        Most rows per call.  Each call takes the GIL to start; rows as light as
        one spectrum's peaks need longer spans, or the threads queue on the GIL.
    """
    if n <= 0:
        return
    if threads is None:
        import numba

        threads = numba.get_num_threads()
    threads = max(1, min(int(threads), n))
    if threads == 1:
        kernel(0, n, *args)
        return
    span = max(1, min(max_span, n // (threads * 8)))
    starts = itertools.count(0, span)  # next() is atomic under the GIL
    failures: list[BaseException] = []

    def work() -> None:
        try:
            for start in starts:
                if start >= n or failures:
                    return
                kernel(start, min(n, start + span), *args)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            failures.append(exc)

    helpers = [threading.Thread(target=work, daemon=True) for _ in range(threads - 1)]
    for helper in helpers:
        helper.start()
    work()
    for helper in helpers:
        helper.join()
    if failures:
        raise failures[0]
