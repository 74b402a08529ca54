"""What the client of a Dask search sees of its cluster: workers that come and go."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from engine.distributed.cluster import CHECK_TIMEOUT

__all__ = ["CHECK_EVERY", "ClusterGone", "ClusterWatch", "lost_message"]

#: Seconds between a search's checks of its workers: a lost worker's tasks wait
#: at most this long (after the scheduler saw it go) to be sent to others.  A
#: check is one round trip to the scheduler.
CHECK_EVERY = 0.25


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
    """

    live: set[str]
    peak: int
    checked: float
    no_worker_since: float | None = None
    silent_since: float | None = None

    def check(
        self,
        client,
        grace_period: float,
        say: Callable[[str], None],
        rescue: Callable[[set[str]], None],
    ) -> None:
        """Tell about lost workers, rescue stranded shards, raise when the cluster is gone.

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
            live = set(client.nthreads(callback_timeout=CHECK_TIMEOUT))
        except Exception as exc:  # noqa: BLE001 - no answer: the scheduler may be gone
            reason = " ".join(str(exc).split()) or type(exc).__name__
            self.silent_since = self.silent_since or now
            if client.status != "running" or now - self.silent_since > grace_period:
                raise ClusterGone(f"no answer: {reason}") from None
            return
        self.silent_since = None
        gone = len(self.live - live)
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
