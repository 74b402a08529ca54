"""What the client of a Dask search sees of its cluster: workers that come and go, or freeze.

A worker that stops answering (a process stopped with SIGSTOP, stuck in swap, on a
dead NFS mount or in a hung driver call) stays on the scheduler's list for its
``worker-ttl`` (5 minutes by default) while the tasks sent to it never end.  The
watch reads each worker's last heartbeat as the scheduler saw it, in the same
one round trip that lists the workers, and treats a worker whose heartbeat has
not changed for ``stall_timeout`` seconds (timed on this client's clock, so the
two machines' clocks need not agree) as lost: the search redoes its tasks on the
others, exactly as for a worker that died, and never waits on it again.  If it
comes back, its late results are ignored (its tasks are no longer in flight) and
it counts as a worker that joined (which takes a shard only when one has no home).

A worker frozen before the search starts would hang the questions the search
asks every worker first (its device, free memory, resident shards):
:func:`ask_workers` waits for each answer at most :func:`ask_timeout` seconds,
and the search leaves a worker that does not answer out from the start, as a
stalled one (:class:`ClusterWatch` ``stalled``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from engine.distributed.cluster import CHECK_TIMEOUT, ClusterLostError

__all__ = [
    "ASK_TIMEOUT",
    "CHECK_EVERY",
    "STALL_TIMEOUT",
    "ClusterGone",
    "ClusterWatch",
    "ask_timeout",
    "ask_workers",
    "check_timeouts",
    "lost_error",
    "lost_message",
    "silent_message",
]

#: Seconds between a search's checks of its workers: a lost worker's tasks wait
#: at most this long (after the scheduler saw it go) to be sent to others.  A
#: check is one round trip to the scheduler.
CHECK_EVERY = 0.25

#: Seconds without a heartbeat (as the scheduler saw it) after which a search treats
#: a worker as lost and redoes its tasks on the others.  Dask workers heartbeat every
#: 0.5 s (up to 10 workers) to ``n / 200 + 1`` s (over 200) from their event loop,
#: which the search kernels (numba, ``nogil``) leave free while they run.
STALL_TIMEOUT = 60.0

#: Most seconds a search waits for a worker's answer to one of its first questions
#: (less when ``stall_timeout`` is less).  A worker answers in milliseconds, or in
#: a second or two the first time (it imports the engine and starts its backend).
ASK_TIMEOUT = 10.0


def check_timeouts(grace_period: float, stall_timeout: float) -> None:
    """Raise ``ValueError`` unless ``grace_period >= 0`` and ``stall_timeout > 0`` seconds."""
    if not grace_period >= 0:
        raise ValueError(f"grace_period must be >= 0 seconds, not {grace_period!r}")
    if not stall_timeout > 0:
        raise ValueError(f"stall_timeout must be > 0 seconds, not {stall_timeout!r}")


def ask_timeout(stall_timeout: float) -> float:
    """Seconds to wait for each worker's answer: ``min(stall_timeout, ASK_TIMEOUT)``."""
    return min(float(stall_timeout), ASK_TIMEOUT)


def ask_workers(
    client, function: Callable, *args: object, workers: Iterable[str], timeout: float
) -> tuple[dict[str, object], list[str]]:
    """``function(*args)`` run on each of ``workers`` (``client.run``), in parallel.

    Each worker's answer is awaited at most ``timeout`` seconds: the call returns
    as soon as every worker answered, or ``timeout`` seconds after it started.

    Parameters
    ----------
    client : distributed.Client
    function : callable
        Run on each worker (as by ``client.run``).
    *args
        Its arguments.
    workers : iterable of str
        Worker addresses to ask.
    timeout : float
        Seconds to wait for each answer.

    Returns
    -------
    answers : dict
        Worker -> what ``function`` returned there, or the exception it raised.
    silent : list of str
        The workers that did not answer within ``timeout`` seconds, sorted.

    Raises
    ------
    OSError
        The scheduler cannot be reached (as ``client.run`` raises it).
    """
    asked = sorted(workers)
    silent = object()

    async def ask(worker: str) -> object:
        try:
            return await client.run(
                function, *args, workers=[worker], on_error="return", asynchronous=True,
                callback_timeout=timeout,
            )  # fmt: skip
        except TimeoutError:
            return silent

    async def ask_all() -> list[object]:
        return await asyncio.gather(*(ask(w) for w in asked))

    replies = client.sync(ask_all) if asked else []
    answers = {
        w: reply[w]
        for w, reply in zip(asked, replies, strict=True)
        if isinstance(reply, dict) and w in reply
    }
    return answers, [w for w, reply in zip(asked, replies, strict=True) if reply is silent]


def silent_message(address: str, seconds: float) -> str:
    """The one-line notice of a worker that did not answer a search's first questions."""
    return (
        f"Dask worker {address} has not answered for {seconds:g} s; treated as lost, "
        "the search goes on without it"
    )


class ClusterGone(Exception):
    """Raised by :meth:`ClusterWatch.check` when the search has lost its cluster.

    Attributes
    ----------
    scheduler : str or None
        Why the scheduler is lost, or None when every worker is.
    """

    def __init__(self, scheduler: str | None = None) -> None:
        super().__init__(scheduler or "every worker was lost")
        self.scheduler = scheduler


@dataclass
class ClusterWatch:
    """What the client last saw of the cluster, and the check that updates it.

    Attributes
    ----------
    live : set of str
        Worker addresses at the last check.
    peak : int
        Most workers seen at one time.
    checked : float
        ``time.monotonic()`` of the last check.
    no_worker_since, silent_since : float or None
        Since when no worker was left, and since when the scheduler has not answered.
    stall_timeout : float
        Seconds without a heartbeat after which a worker is treated as lost.
    stalled : set of str
        Workers treated as lost because they stopped answering; out of ``live``
        until they heartbeat again (then they count as workers that joined: the
        tasks they had are redone by others, their late results ignored).  A
        worker given here at the start is back once its heartbeat changes.
    beats : dict
        Worker -> (its last heartbeat on the scheduler's clock, ``time.monotonic()``
        here when that value was first seen).
    """

    live: set[str]
    peak: int
    checked: float
    no_worker_since: float | None = None
    silent_since: float | None = None
    stall_timeout: float = STALL_TIMEOUT
    stalled: set[str] = field(default_factory=set)
    beats: dict[str, tuple[object, float]] = field(default_factory=dict)

    def check(
        self,
        client,
        grace_period: float,
        say: Callable[[str], None],
        rescue: Callable[[set[str]], None],
    ) -> None:
        """Tell about lost workers, rescue stranded shards, raise when the cluster is gone.

        One round trip to the scheduler (its ``identity``: the workers and their last
        heartbeats), waiting at most :data:`CHECK_TIMEOUT` seconds.  A worker whose
        heartbeat has not changed for ``stall_timeout`` seconds joins ``stalled``
        and is left out of ``live`` (``rescue`` then redoes its tasks).

        Raises
        ------
        ClusterGone
            The client is closed, the scheduler has not answered for ``grace_period``
            seconds, or no worker has been left for ``grace_period`` seconds.
        """
        now = self.checked = time.monotonic()
        if client.status != "running":
            raise ClusterGone(f"the client is {client.status}")
        try:
            info = client.sync(
                client.scheduler.identity, n_workers=-1, callback_timeout=CHECK_TIMEOUT
            )
        except Exception as exc:  # noqa: BLE001 - no answer: the scheduler may be gone
            reason = " ".join(str(exc).split()) or type(exc).__name__
            self.silent_since = self.silent_since or now
            if client.status != "running" or now - self.silent_since > grace_period:
                raise ClusterGone(f"no answer: {reason}") from None
            return
        self.silent_since = None
        live = self._answering(info.get("workers") or {}, now, say)
        gone = len(self.live - live - self.stalled)
        if gone and live:
            say(f"{gone} Dask worker(s) left; their shards are redone on others")
        elif gone:
            say(f"all Dask workers left; waiting up to {grace_period:g} s for one")
        self.peak = max(self.peak, len(live))
        if not live:
            self.no_worker_since = self.no_worker_since or now
            if now - self.no_worker_since > grace_period:
                raise ClusterGone()
        else:
            self.no_worker_since = None
            if live != self.live:
                try:
                    rescue(live)
                except (OSError, TimeoutError):  # the scheduler did not answer: next check
                    return
        self.live = live

    def _answering(self, workers: dict, now: float, say: Callable[[str], None]) -> set[str]:
        """The workers (addresses) of the scheduler's ``workers`` that still heartbeat."""
        for address in set(self.beats) - set(workers):
            del self.beats[address]
        for address, info in workers.items():
            seen = info.get("last_seen") if isinstance(info, dict) else None
            before = self.beats.get(address)
            if before is None or before[0] != seen or seen is None:
                self.beats[address] = (seen, now)
                if address in self.stalled and before is not None:  # back: as one that joins,
                    self.stalled.discard(address)  # it takes only work given from now on
                    say(f"Dask worker {address} answers again")
            elif now - before[1] > self.stall_timeout and address not in self.stalled:
                self.stalled.add(address)
                say(
                    f"Dask worker {address} has not answered for {self.stall_timeout:g} s; "
                    "treated as lost, its tasks are redone on others"
                )
        return set(workers) - self.stalled


def lost_message(address: str, peak: int, grace_period: float, scheduler: str | None) -> str:
    """What was lost, in words: the scheduler (and why), or how many workers."""
    grace = f"{grace_period:g} s"
    if scheduler is not None:
        return f"lost the connection to the Dask scheduler at {address} ({scheduler})"
    if peak == 0:
        return f"no Dask worker joined {address} within {grace}"
    if peak == 1:
        return f"the only Dask worker of {address} was lost (none back within {grace})"
    return f"all {peak} Dask workers of {address} were lost (none back within {grace})"


def lost_error(job, watch: ClusterWatch, scheduler: str | None = None) -> ClusterLostError:
    """The error of a Dask search ``job`` whose workers (or scheduler) are gone.

    ``job`` (a :class:`~engine.distributed.DaskSearchJob`) has its unfinished and
    incomplete queries set already; its hits so far go with the error.
    """
    hits = job.hits
    message = (
        f"{lost_message(job.address, watch.peak, job.grace_period, scheduler)}; "
        f"{job.tasks_total - job.tasks_done} of {job.tasks_total} tasks not done, "
        f"{len(job.unfinished_queries)} of {len(job.queries)} queries unfinished; "
        f"the {len(hits)} hits found before are kept"
    )
    return ClusterLostError(
        message, address=job.address, scheduler_lost=scheduler is not None,
        workers_lost=watch.peak, tasks_done=job.tasks_done, tasks_total=job.tasks_total,
        unfinished_queries=job.unfinished_queries,
        incomplete_queries=job.incomplete_queries, hits=hits,
    )  # fmt: skip
