"""Connecting to a Dask cluster, and the errors of a cluster that cannot be used.

Dask is optional (``pip install 'simms-desktop[dask]'``); it is imported only when used.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

import numpy as np

from engine.backends import gpu_status
from engine.hits import HitTable

__all__ = [
    "GRACE_PERIOD",
    "ClusterBackend",
    "ClusterError",
    "ClusterLostError",
    "connect",
    "describe",
    "distributed_module",
    "local_cluster",
    "open_client",
    "shutdown",
]


@dataclass(frozen=True)
class ClusterBackend:
    """What the CLI and provenance show as the backend of a Dask search."""

    name: str
    device: str


#: Seconds a search waits, once every worker is lost, for one to (re)join before it
#: raises :class:`ClusterLostError` (a nanny or a supervisor restarts a worker in seconds).
GRACE_PERIOD = 60.0
#: Seconds a check of the cluster may wait for the scheduler's answer.
CHECK_TIMEOUT = 10.0
#: Seconds closing a client, and then its local cluster, may each take.
CLOSE_TIMEOUT = 20.0

INSTALL_HINT = "pip install 'simms-desktop[dask]' (or: pip install dask distributed)"


class ClusterError(ConnectionError):
    """The Dask cluster cannot be used: not installed, unreachable, or gone."""


class ClusterLostError(ClusterError, RuntimeError):
    """A search lost its cluster: every worker (for the grace period), or the scheduler.

    Raised while iterating a :class:`DaskSearchJob`; the chunks it yielded before,
    and ``job.hits``, stay valid final hits.  Also a :class:`ClusterError`, so
    code that catches that shows its one-line message as well.

    Attributes
    ----------
    address : str
        The scheduler's address.
    scheduler_lost : bool
        True when the connection to the scheduler was lost, False when the workers were.
    workers_lost : int
        Workers the search had at most at one time (all of them are gone).
    tasks_done, tasks_total : int
        (shard, query block) tasks finished, and planned.
    unfinished_queries : numpy.ndarray
        Queries (indexes into ``queries``, sorted) whose search did not finish: they
        have no hits, or (``top_n == 0``) only part of them.
    incomplete_queries : numpy.ndarray
        Those of ``unfinished_queries`` with hits streamed, as
        :attr:`engine.search.SearchJob.incomplete_queries`.
    hits : HitTable
        All hits streamed before the loss (``job.hits``).
    """

    def __init__(
        self,
        message: str,
        *,
        address: str,
        scheduler_lost: bool,
        workers_lost: int,
        tasks_done: int,
        tasks_total: int,
        unfinished_queries: np.ndarray,
        incomplete_queries: np.ndarray,
        hits: HitTable,
    ) -> None:
        super().__init__(message)
        self.address, self.scheduler_lost, self.workers_lost = address, scheduler_lost, workers_lost
        self.tasks_done, self.tasks_total = tasks_done, tasks_total
        self.unfinished_queries, self.incomplete_queries = unfinished_queries, incomplete_queries
        self.hits = hits


# -- connecting --------------------------------------------------------------------------
def distributed_module():
    try:
        import distributed
    except ImportError as exc:
        raise ClusterError(f"Dask is not installed ({exc}); {INSTALL_HINT}") from None
    return distributed


def connect(address: str, *, timeout: float = 10.0):
    """A ``distributed.Client`` of the scheduler at ``address``.

    Parameters
    ----------
    address : str
        Scheduler address, e.g. ``"tcp://10.0.0.5:8786"`` (``tcp://`` is implied).
    timeout : float
        Seconds to keep trying to reach the scheduler.

    Raises
    ------
    ClusterError
        Dask is not installed, or the scheduler cannot be reached in time; the
        message is one line, fit for a status bar.
    """
    distributed = distributed_module()
    address = str(address).strip()
    if not address:
        raise ClusterError("no Dask scheduler address given")
    if "://" not in address:
        address = "tcp://" + address
    try:
        return distributed.Client(address, timeout=f"{timeout}s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ClusterError(
            f"cannot reach the Dask scheduler at {address} within {timeout:g} s ({reason}); "
            "is the cluster running and the address right?"
        ) from None


def local_cluster(n_workers: int, *, threads_per_worker: int = 1, gpu: bool | None = None):
    """Start a cluster on this machine and return a client of it.

    One worker per GPU through ``dask_cuda.LocalCUDACluster`` when dask-cuda is
    installed and a usable GPU is present (``gpu=None``: detect; ``False``: never),
    otherwise ``n_workers`` worker processes sharing the CPU cores (numba threads
    per worker: cores // n_workers).  :func:`shutdown` closes client and cluster.
    """
    distributed = distributed_module()
    if n_workers < 1:
        raise ValueError("a local Dask cluster needs at least one worker")
    common = {"dashboard_address": None, "silence_logs": 40}
    cluster = None
    if gpu is not False:
        try:
            import dask_cuda  # noqa: F401
        except ImportError:
            dask_cuda = None
        if dask_cuda is not None:
            if gpu_status()[0]:
                cluster = dask_cuda.LocalCUDACluster(n_workers=n_workers, **common)
        elif gpu:
            raise ClusterError("dask-cuda is not installed: pip install dask-cuda")
    if cluster is None:
        cores = os.cpu_count() or 1
        threads = str(max(1, cores // (n_workers * threads_per_worker)))
        cluster = distributed.LocalCluster(
            n_workers=n_workers,
            threads_per_worker=threads_per_worker,
            processes=True,
            env={"NUMBA_NUM_THREADS": threads, "OMP_NUM_THREADS": threads},
            preload=["engine.distributed.worker_start"],  # numba reads that env again
            **common,
        )
    return distributed.Client(cluster, set_as_default=False)


def open_client(address: str | None = None, *, n_local: int | None = None, timeout: float = 10.0):
    """``connect(address)`` when an address is given, else ``local_cluster(n_local)``."""
    if address:
        return connect(address, timeout=timeout)
    if n_local:
        return local_cluster(n_local)
    raise ValueError("give a Dask scheduler address or a number of local workers")


def shutdown(client) -> None:
    """Close ``client``, and the local cluster when it was started by :func:`local_cluster`.

    Each close waits at most :data:`CLOSE_TIMEOUT` seconds.  Worker processes of
    the local cluster that are stopped (SIGSTOP) are killed first: closing would
    otherwise wait for each until its nanny's timeout.
    """
    cluster = getattr(client, "cluster", None)
    try:
        client.close(timeout=CLOSE_TIMEOUT)
    finally:
        if cluster is not None:
            kill_stopped_workers(cluster)
            cluster.close(timeout=CLOSE_TIMEOUT)


def kill_stopped_workers(cluster) -> list[int]:
    """Kill the stopped (SIGSTOP) worker processes of a local ``cluster``; their ids.

    Their nannies are told first to start no other worker in their place.
    """
    try:
        import psutil  # a dependency of distributed
    except ImportError:
        return []
    killed = []
    for nanny in list(getattr(cluster, "workers", {}).values()):
        pid = getattr(getattr(getattr(nanny, "process", None), "process", None), "pid", None)
        if not isinstance(pid, int) or not hasattr(nanny, "close_gracefully"):
            continue
        try:
            if psutil.Process(pid).status() == psutil.STATUS_STOPPED:
                nanny.close_gracefully(reason="its worker was stopped")
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        except (psutil.Error, OSError):
            continue
    return killed


def describe(client) -> str:
    """One line: the scheduler, its workers and their compute devices."""
    workers = client.nthreads()
    return f"Dask cluster at {client.scheduler.address}: {len(workers)} workers, " + (
        f"{sum(workers.values())} threads"
    )
