"""Progress and cancellation of a search, shared by local and Dask jobs."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from engine.kernels.cancel import new_flag

__all__ = ["FIRST_QUERY_BLOCK", "CancelToken", "SearchProgress", "query_blocks"]

#: Query blocks start this small so the first hits arrive quickly, then double.
FIRST_QUERY_BLOCK = 64


class CancelToken:
    """Thread-safe cancellation flag shared by a job and whoever may stop it.

    Safe to call from a signal handler.  Besides the event, the token holds
    :attr:`flag`, a one-byte array the CPU kernels poll between pairs, so a
    cancellation reaches a batch in flight, not only the next batch.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        #: ``flag[0]`` becomes 1 on :meth:`cancel` (read by the numba kernels).
        self.flag = new_flag()

    def cancel(self) -> None:
        """Ask the job to stop; the batch in flight returns what it has scored."""
        self.flag[0] = 1
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._event.is_set()


@dataclass
class SearchProgress:
    """Where a search stands.

    Attributes
    ----------
    pairs_done, pairs_total : int
        Spectrum pairs scored so far, and to score in all (pairs outside a
        precursor window are never planned, so they do not count).
    hits : int
        Hits streamed out so far.
    elapsed : float
        Seconds since the job started.
    """

    pairs_done: int = 0
    pairs_total: int = 0
    hits: int = 0
    elapsed: float = 0.0

    @property
    def fraction(self) -> float:
        """Done fraction in [0, 1]."""
        return 1.0 if self.pairs_total == 0 else self.pairs_done / self.pairs_total

    @property
    def pairs_per_second(self) -> float:
        """Average rate so far."""
        return self.pairs_done / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def seconds_left(self) -> float:
        """Estimated time to finish at the current rate (inf before the first batch)."""
        rate = self.pairs_per_second
        return (self.pairs_total - self.pairs_done) / rate if rate > 0 else float("inf")


def query_blocks(n: int, size: int) -> list[tuple[int, int]]:
    """Split ``range(n)`` into blocks that start small and double up to ``size``."""
    blocks, start, step = [], 0, min(FIRST_QUERY_BLOCK, size)
    while start < n:
        stop = min(start + step, n)
        blocks.append((start, stop))
        start, step = stop, min(step * 2, size)
    return blocks
