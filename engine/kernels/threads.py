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
import logging
import threading
from collections.abc import Iterator

__all__ = ["parallel_region", "threadsafe_layer"]

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
