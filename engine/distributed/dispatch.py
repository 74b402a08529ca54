"""Which worker runs which task: shard copies (replicas) and a pull queue per shard.

A library that fits one worker's memory is not cut: every worker holds a copy
(a *replica*) and the query blocks are shared out among them, so each query's
top-N is final where it was found (no merge across shards on the client) and a
pruned search keeps its full per-query bounds.  A larger library is cut into
more shards than workers, each held by one worker (and several shards per
worker), as before.  :func:`place_shards` decides; :func:`shards_for_memory`
sizes the shards from the workers' free memory.

:class:`Dispatch` then hands tasks out the way a pull queue does: each shard has
the queue of its tasks in block order, and a worker gets the next task of one
of its shards whenever it has fewer than :data:`DEPTH` in flight (one running,
one waiting, so no worker idles for a round trip).  A fast worker takes more
blocks than a slow one, and the search ends at most one task after its last
worker frees up.  A lost worker's tasks go back to the front of their queues
(cut into pieces for the shard's other copies when their queues run dry), its
replicas are dropped, and a shard left with none gets a new home.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from engine.distributed.plan import Task

__all__ = [
    "DEPTH",
    "BlockLedger",
    "Dispatch",
    "Submitted",
    "TaskRecord",
    "balanced_shards",
    "place_shards",
    "shards_for_memory",
]

#: Tasks in flight per worker: one running, the next already sent.
DEPTH = 2

#: Bytes of a resident shard per peak and per spectrum (prepared m/z and weights
#: on the host and the device, the peak index, norms, precursors, global indexes),
#: measured from above so that a shard never crowds a worker.
SHARD_BYTES_PER_PEAK = 64
SHARD_BYTES_PER_SPECTRUM = 128

#: Share of a worker's free memory one search's shards may take.
MEMORY_SHARE = 0.25


def shards_for_memory(n_spectra: int, n_peaks: int, free_bytes: Sequence[float]) -> int:
    """Fewest shards such that each fits :data:`MEMORY_SHARE` of the tightest worker.

    ``free_bytes`` are the workers' free memory (:func:`.shards.worker_memory`);
    unknown or infinite values do not limit.  At least one shard.
    """
    size = n_peaks * SHARD_BYTES_PER_PEAK + n_spectra * SHARD_BYTES_PER_SPECTRUM
    known = [float(f) for f in free_bytes if f is not None and math.isfinite(float(f)) and f > 0]
    if not known or size <= 0:
        return 1
    return max(1, math.ceil(size / (MEMORY_SHARE * min(known))))


def balanced_shards(needed: int, n_workers: int) -> int:
    """The shard count nearest above ``needed`` that spreads evenly over the workers.

    A divisor of ``n_workers`` when at most that many are needed (each shard then
    has the same number of copies), else a multiple of it (each worker holds the
    same number of shards).
    """
    needed, n_workers = max(1, int(needed)), max(1, int(n_workers))
    if needed <= n_workers:
        return next(d for d in range(needed, n_workers + 1) if n_workers % d == 0)
    return math.ceil(needed / n_workers) * n_workers


def place_shards(
    n_shards: int, workers: Sequence[str], held: Mapping[int, set[str]]
) -> dict[int, list[str]]:
    """The workers (homes) of each shard.

    With fewer shards than workers every worker holds exactly one shard and the
    shards' copies are spread evenly (their counts differ by at most one); else
    each shard has one home and the workers' shard counts differ by at most one.
    Copies the workers already hold (``held``: shard -> workers) are kept where
    that allows.

    Parameters
    ----------
    n_shards : int
    workers : sequence of str
        Live worker addresses (sorted: the same placement for the same cluster).
    held : mapping
        Shard -> workers holding it resident.
    """
    workers = list(workers)
    homes: dict[int, list[str]] = {s: [] for s in range(n_shards)}
    if not workers:
        return homes
    per_worker = 1 if n_shards < len(workers) else math.ceil(n_shards / len(workers))
    per_shard = math.ceil(len(workers) / n_shards) if n_shards < len(workers) else 1
    load: Counter = Counter()
    for s in range(n_shards):  # resident copies first
        for w in sorted(held.get(s, ())):
            if w in workers and len(homes[s]) < per_shard and load[w] < per_worker:
                homes[s].append(w)
                load[w] += 1
    for s in range(n_shards):  # every shard one home: the least loaded worker
        if not homes[s]:
            w = min(workers, key=lambda w: (load[w], (workers.index(w) - s) % len(workers)))
            homes[s].append(w)
            load[w] += 1
    for w in workers:  # with fewer shards than workers: idle workers take a copy
        if n_shards < len(workers) and load[w] == 0:
            s = min(homes, key=lambda s: (len(homes[s]), s))
            homes[s].append(w)
            load[w] += 1
    return homes


@dataclass
class Submitted:
    """A task in flight: on which worker, with which copy of its shard."""

    future: object
    task: Task
    worker: str
    shard_key: str
    sent: float = field(default_factory=time.perf_counter)


@dataclass(frozen=True)
class TaskRecord:
    """When and where one task ran, as the client saw it (seconds from the job's start)."""

    worker: str
    shard: int
    block: int
    pairs: int
    seconds: float  # on the worker (NaN: its first task, which paid one-time costs)
    sent: float
    done: float


@dataclass
class Dispatch:
    """Tasks of a plan to the workers holding their shard, :data:`DEPTH` at a time.

    Parameters
    ----------
    homes : dict
        Shard -> workers holding a copy (:func:`place_shards`).
    tasks : sequence of Task
        In the order they should run (block by block).
    submit : callable
        ``submit(task, worker) -> (future, shard key)``: sends one task to run on
        ``worker`` with its copy of the task's shard.
    depth : int
        Most tasks in flight per worker.
    """

    homes: dict[int, list[str]]
    tasks: Sequence[Task]
    submit: Callable[[Task, str], tuple[object, str]]
    depth: int = DEPTH
    queues: dict[int, list[Task]] = field(default_factory=dict)
    in_flight: dict[str, Submitted] = field(default_factory=dict)  # future key -> what

    def __post_init__(self) -> None:
        self.queues = {s: [] for s in self.homes}
        for task in self.tasks:
            self.queues[task.shard].append(task)
        for queue in self.queues.values():
            queue.reverse()  # popped from the end: the first block first

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing in flight."""
        return not self.in_flight and not any(self.queues.values())

    def fill(self) -> int:
        """Send tasks until every worker has ``depth`` in flight or its queues are empty.

        Breadth first: every worker gets a task before any gets a second.
        """
        busy = Counter(sub.worker for sub in self.in_flight.values())
        workers = sorted({w for ws in self.homes.values() for w in ws})
        own = {w: [s for s, ws in self.homes.items() if w in ws] for w in workers}
        sent = 0
        for level in range(1, self.depth + 1):
            for w in workers:
                ready = [s for s in own[w] if self.queues[s]]
                if busy[w] >= level or not ready:
                    continue
                s = min(ready, key=lambda s: self.queues[s][-1].block)
                task = self.queues[s].pop()
                future, shard_key = self.submit(task, w)
                self.in_flight[future.key] = Submitted(future, task, w, shard_key)
                busy[w] += 1
                sent += 1
        return sent

    def finished(self, key: str) -> Submitted | None:
        """The task of a future that came back (None: not one of ours any more)."""
        return self.in_flight.pop(key, None)

    def requeue(self, task: Task) -> None:
        """Run ``task`` again, before the later blocks of its shard."""
        queue = self.queues[task.shard]
        queue.append(task)
        queue.sort(key=lambda t: (-t.block, -t.queries[0]))

    def drop_workers(
        self, lost: set[str]
    ) -> tuple[list[object], list[int], list[tuple[Task, list[Task]]]]:
        """Forget ``lost`` workers: their tasks are queued again.

        A lost task whose shard has more live copies than queued tasks is cut
        into pieces (:meth:`Task.split`), one for each copy that would otherwise
        run out of work, so the survivors redo it together rather than one of
        them alone at the end of the search.

        Returns
        -------
        futures : list
            The lost tasks' futures (to cancel).
        stranded : list of int
            Shards left without a home (give each one with :meth:`add_home`).
        cut : list of (Task, list of Task)
            The lost tasks that were cut, with their pieces (queued in their place).
        """
        for ws in self.homes.values():
            ws[:] = [w for w in ws if w not in lost]
        gone = [k for k, sub in self.in_flight.items() if sub.worker in lost]
        futures, cut = [], []
        for k in sorted(gone, key=lambda k: self.in_flight[k].task.block):
            sub = self.in_flight.pop(k)
            futures.append(sub.future)
            task = sub.task
            idle_copies = len(self.homes[task.shard]) - len(self.queues[task.shard])
            parts = task.split(idle_copies)
            if len(parts) > 1:
                cut.append((task, parts))
            for part in parts:
                self.requeue(part)
        stranded = [s for s, ws in self.homes.items() if not ws]
        return futures, stranded, cut

    def add_home(self, shard: int, live: Sequence[str]) -> str | None:
        """Give a stranded shard the least loaded live worker; None if there is none."""
        if not live:
            return None
        load = Counter(w for ws in self.homes.values() for w in ws)
        worker = min(sorted(live), key=lambda w: load[w])
        self.homes[shard].append(worker)
        return worker


@dataclass
class BlockLedger:
    """Tasks left and done of each query block of a search (a cut task adds pieces).

    Parameters
    ----------
    left : dict
        Block -> tasks not done yet.
    queries : dict
        Block -> its queries' original indexes.
    """

    left: dict[int, int] = field(default_factory=dict)
    queries: dict[int, np.ndarray] = field(default_factory=dict)
    done: Counter = field(default_factory=Counter)

    def add_pieces(self, cut: Sequence[tuple[Task, list[Task]]]) -> int:
        """Count the pieces of cut tasks (:meth:`Dispatch.drop_workers`); the tasks added."""
        added = 0
        for task, pieces in cut:
            self.left[task.block] += len(pieces) - 1
            added += len(pieces) - 1
        return added

    def finish(self, block: int) -> bool:
        """Count a task of ``block`` done; True when it was the block's last."""
        self.left[block] -= 1
        self.done[block] += 1
        return self.left[block] == 0

    def unfinished(self) -> np.ndarray:
        """Queries (sorted) of the blocks with tasks left."""
        return _sorted([self.queries[b] for b, n in self.left.items() if n > 0])

    def partial(self) -> np.ndarray:
        """Queries (sorted) of the blocks with tasks left and tasks (or pieces) done."""
        return _sorted([self.queries[b] for b, n in self.left.items() if n > 0 and self.done[b]])


def _sorted(parts: list[np.ndarray]) -> np.ndarray:
    return np.sort(np.concatenate([np.empty(0, dtype=np.int64), *parts])).astype(np.int64)
