"""Run in each worker process of a local cluster as it starts (a Dask ``preload``).

Dask spawns a worker process, which imports the parent's main module (and with it
numba) before the nanny sets the worker's ``NUMBA_NUM_THREADS``.  numba's
configuration then still holds the machine's core count: its threads would be
launched with that many, and the first kernel compiled afterwards re-reads the
environment and refuses the different count ("Cannot set NUMBA_NUM_THREADS to a
different value once the threads have been launched"), so every task that
compiles (a fresh install, an empty cache) failed.  Reading the configuration
again here, before any task launches threads, makes them agree.
"""

from __future__ import annotations


def dask_setup(worker: object) -> None:
    """Re-read numba's configuration from the environment the nanny set."""
    import numba
    from numba.np.ufunc import parallel

    numba.config.reload_config()
    # the size of the pool numba launches, read when numba was imported
    if not getattr(parallel, "_is_initialized", True) and hasattr(parallel, "NUM_THREADS"):
        parallel.NUM_THREADS = numba.config.NUMBA_NUM_THREADS
