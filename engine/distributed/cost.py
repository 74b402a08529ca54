"""How large a Dask search task should be: a fixed cost per task against a cost per pair.

The model
---------
A task of ``p`` spectrum pairs keeps its worker busy for ``a + b·p`` seconds:

* ``b`` (:attr:`TaskCost.pair_s`), seconds per pair on the worker's device;
* ``a`` (:attr:`TaskCost.fixed_s`), what every task costs whatever its size: on
  the worker the query block's unpacking, preparation and upload, the drain of
  the GPU tile pipeline at the task's end, the top-N merge; around it the
  scheduler's dispatch, the transfer of the block and of the hits, the client's
  merge.

A search of ``P`` pairs in ``T`` tasks spread over ``W`` workers then takes about
``(T·a + b·P) / W`` plus what the client does after the last task: merge the
last block's hits, ``c`` seconds per hit row (:attr:`TaskCost.hit_s`; the
earlier blocks' merges overlap with the workers' next block; fetching a task's
hits counts in ``a``).  With ``k``
blocks after a small first one (hits come early) and ``h`` hit rows per pair
(:attr:`TaskCost.hits_per_pair`), ``k·a + c·h·P/k`` is least at
``k = sqrt(c·h·P / a)`` (:meth:`TaskCost.blocks`; where shards have copies on
several workers, a multiple of the copies, so each runs as many tasks); more blocks where a task
would run over :data:`MAX_TASK_S` (a running task cannot be stopped: that is
how long a Stop or a lost worker may cost).  With a precursor window, merging
two neighbouring blocks saves one ``a`` and costs ``b`` per extra pair scored,
so blocks grow while they waste fewer than ``a / b`` pairs
(:meth:`TaskCost.overhead_pairs`, the ``overhead_pairs`` of
:func:`engine.search.window.windowed_query_blocks`), and are split where a task
would run over :data:`MAX_TASK_S`.

Measured, not guessed: every task reports its seconds on the worker and the
client times its merge of the hits; after a search :func:`record`
fits ``worker seconds = a_w + b·pairs`` over its tasks (least squares when their
sizes differ enough, else ``b`` alone with the last ``a_w``), adds the dispatch
cost the workers saw as idle time between tasks (``(W·span − Σ worker seconds)
/ T``), and takes ``c`` and ``h``.  Later searches on the same scheduler and
backend are planned with that measurement (averaged with the ones before,
weighted by their pairs); the
first uses :data:`DEFAULTS` (from the measurements in ``benchmarks/RESULTS.md``),
which count as :data:`PRIOR_SECONDS` of measured work, so a small first search
moves them only a little.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DEFAULTS",
    "MAX_TASK_S",
    "PRIOR_SECONDS",
    "TaskCost",
    "record",
    "task_cost",
]

#: Longest a task should run (a Stop or a lost worker waits for at most this).
MAX_TASK_S = 2.0


@dataclass(frozen=True)
class TaskCost:
    """A task's cost: ``fixed_s + pair_s · pairs`` seconds of its worker's time."""

    #: Seconds every task costs (worker side plus dispatch).
    fixed_s: float
    #: Seconds per spectrum pair on one worker.
    pair_s: float
    #: The part of ``fixed_s`` spent on the worker.
    worker_fixed_s: float = 0.0
    #: Seconds the client spends on one hit row of the merge.
    hit_s: float = 0.0
    #: Hits a scored pair yields (the merge's rows: ``hits_per_pair · pairs``).
    hits_per_pair: float = 0.0
    #: False for the defaults, True once a search measured it.
    measured: bool = False
    #: Pairs of the tasks measured so far, and the defaults' weight (a new search's
    #: measurement is averaged in with its share of the pairs: large searches dominate).
    pairs_seen: float = 0.0

    def overhead_pairs(self) -> int:
        """Pairs whose scoring costs as much as one task's fixed cost."""
        return int(min(self.fixed_s / self.pair_s, 1 << 40))

    def max_task_pairs(self) -> float:
        """Most pairs a task should have (:data:`MAX_TASK_S` of work)."""
        return MAX_TASK_S / self.pair_s

    def blocks(self, pairs: float, shards: int, workers: int | None = None) -> int:
        """Blocks to cut a search of ``pairs`` pairs over ``shards`` shards into.

        Each block is one task per shard.  With a shard per worker or more, ``k``
        blocks cost ``k·a`` in fixed costs against the client's merge of the last
        block, ``c·h·P/k``: least at ``k = sqrt(c·h·P / a)``.  Where each shard
        has copies on ``n = W / S`` workers that share out its blocks, ``k = m·n``
        (every copy runs the same number of tasks, so none waits for a last odd
        one): ``m·a + c·h·P/(m·n)`` is least at ``m = sqrt(c·h·P / (n·a))``.
        Always at least one block per copy, and enough that no task runs over
        :data:`MAX_TASK_S`.

        Parameters
        ----------
        pairs : float
            Pairs of the search.
        shards : int
            Library shards (tasks per block).
        workers : int, optional
            Workers sharing the shards (default: one per shard).
        """
        shards = max(1, shards)
        copies = max(1, (workers or shards) // shards)
        tail = self.hit_s * self.hits_per_pair * pairs
        per_task = math.ceil(pairs / shards / self.max_task_pairs())  # blocks, at least
        if copies == 1:
            best = round(math.sqrt(tail / self.fixed_s)) if tail > 0 else 1
            return max(1, best, per_task)
        rounds = round(math.sqrt(tail / (copies * self.fixed_s))) if tail > 0 else 1
        return copies * max(1, rounds, math.ceil(per_task / copies))

    def describe(self) -> str:
        """One line, e.g. for a benchmark."""
        kind = "measured" if self.measured else "default"
        return (
            f"{kind}: {self.fixed_s * 1e3:.1f} ms per task "
            f"({self.worker_fixed_s * 1e3:.1f} ms on the worker), "
            f"{1 / self.pair_s:.3g} pairs/s per worker, {self.hits_per_pair:.2g} hits per pair, "
            f"{self.hit_s * 1e9:.0f} ns per hit on the client"
        )


#: What the defaults weigh against a search's measurement: as many pairs as one
#: worker scores in this many seconds.  A small first search (a warm-up, a few
#: queries, whose tasks also pay one-time costs such as GPU buffers growing) then
#: moves them by its small share of pairs, and cannot make the next large search
#: plan a hundred tasks where five do.
PRIOR_SECONDS = 4.0


def _default(fixed_s: float, pairs_per_s: float, worker_fixed_s: float) -> TaskCost:
    """A default model, weighing as :data:`PRIOR_SECONDS` of one worker's pairs."""
    return TaskCost(
        fixed_s=fixed_s, pair_s=1 / pairs_per_s, worker_fixed_s=worker_fixed_s, hit_s=1e-7,
        pairs_seen=PRIOR_SECONDS * pairs_per_s,
    )  # fmt: skip


#: Before any measurement (no hits expected: one block after the first, split only
#: by :data:`MAX_TASK_S`): LocalCluster processes on a CPU (1 numba thread each),
#: and one worker per GPU (RESULTS.md, eighth version: 0.18-0.31 s per task, of it
#: 0.18-0.25 s on the worker, and 1.8e10-2.3e10 pairs/s per H200 worker in the
#: 100,000 x 1.5 M search with a threshold; 1.8e10 pairs/s on one H100 in one process).
DEFAULTS = {"cpu": _default(0.02, 3e7, 0.005), "cuda": _default(0.24, 1.8e10, 0.2)}

_MEASURED: dict[tuple[str, str], TaskCost] = {}
_LOCK = threading.Lock()


def task_cost(address: str, backend: str) -> TaskCost:
    """The cost model of tasks on ``backend`` (``"cpu"`` or ``"cuda"``) at ``address``."""
    with _LOCK:
        return _MEASURED.get((address, backend), DEFAULTS[backend])


def record(
    address: str,
    backend: str,
    pairs: Sequence[int],
    seconds: Sequence[float],
    *,
    span: float,
    workers: int,
    hits: int = 0,
    client_s: float = 0.0,
) -> TaskCost:
    """Fit the model to one search's tasks and keep it for later searches.

    Parameters
    ----------
    address, backend : str
        Where the tasks ran (the model is kept per scheduler and backend).
    pairs, seconds : sequence
        Each task's pairs and seconds on its worker.
    span : float
        Seconds from the first task's submission to the last result.
    workers : int
        Workers that ran them.
    hits, client_s : int, float
        Hit rows the tasks returned, and the client's seconds merging them.

    Returns
    -------
    TaskCost
        The new model (unchanged when there was nothing to learn from).
    """
    p_all = np.asarray(pairs, dtype=np.float64)
    s_all = np.asarray(seconds, dtype=np.float64)
    keep = (p_all > 0) & np.isfinite(s_all)  # NaN: a worker's first task (one-time costs)
    p, s = p_all[keep], s_all[keep]
    previous = task_cost(address, backend)
    if len(p) == 0 or s.sum() <= 0:
        return previous
    a_w = previous.worker_fixed_s
    if len(p) >= 3 and p.max() >= 4 * p.min():
        slope, intercept = np.polyfit(p, s, 1)
        if slope > 0:  # a task takes at least its fixed cost: noise cannot push it above
            a_w = float(np.clip(intercept, 0.0, s.min()))
    b = max(float((s - a_w).clip(min=0).sum() / p.sum()), 1e-13)
    # idle time between tasks; a first task counts as long as the model says
    busy = np.where(np.isfinite(s_all), s_all, a_w + b * p_all).sum()
    dispatch = max(0.0, (max(1, workers) * span - float(busy)) / len(p_all))
    fixed = max(a_w + min(dispatch, 1.0), 1e-4)
    h, c = hits / float(p.sum()), (client_s / hits if hits else previous.hit_s)
    seen = float(p.sum())
    # average with what was known (the defaults' weight is PRIOR_SECONDS of work),
    # weighted by the pairs measured
    w = seen / (seen + previous.pairs_seen) if seen + previous.pairs_seen > 0 else 1.0
    fixed = w * fixed + (1 - w) * previous.fixed_s
    b = w * b + (1 - w) * previous.pair_s
    a_w = w * a_w + (1 - w) * previous.worker_fixed_s
    if previous.measured:  # hits and the client's merge: the defaults know neither
        h = w * h + (1 - w) * previous.hits_per_pair
        c = w * c + (1 - w) * previous.hit_s
    seen += previous.pairs_seen
    cost = TaskCost(
        fixed_s=fixed, pair_s=b, worker_fixed_s=a_w, hit_s=c, hits_per_pair=h, measured=True,
        pairs_seen=seen,
    )  # fmt: skip
    with _LOCK:
        _MEASURED[(address, backend)] = cost
    return cost
