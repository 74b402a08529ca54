"""Which worker runs which task of a Dask search: shard copies, the pull queue, lost workers."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from engine.distributed.cost import TaskCost
from engine.distributed.dispatch import (
    DEPTH,
    BlockLedger,
    Dispatch,
    balanced_shards,
    place_shards,
    shards_for_memory,
)
from engine.distributed.plan import Task

WORKERS = ["tcp://a", "tcp://b", "tcp://c", "tcp://d"]


def test_fewer_shards_than_workers_are_copied_evenly():
    homes = place_shards(1, WORKERS, {})
    assert homes == {0: WORKERS}
    homes = place_shards(2, WORKERS, {})
    assert sorted(len(ws) for ws in homes.values()) == [2, 2]
    assert sorted(w for ws in homes.values() for w in ws) == WORKERS  # each worker one shard


def test_more_shards_than_workers_are_spread_one_home_each():
    homes = place_shards(8, WORKERS[:2], {})
    assert all(len(ws) == 1 for ws in homes.values())
    per_worker = [sum(w in ws for ws in homes.values()) for w in WORKERS[:2]]
    assert per_worker == [4, 4]


def test_resident_copies_are_kept():
    homes = place_shards(2, WORKERS[:2], {1: {"tcp://a"}})
    assert homes == {0: ["tcp://b"], 1: ["tcp://a"]}
    # a copy held by every worker: each keeps one shard, the other shard still gets a home
    homes = place_shards(2, WORKERS[:2], {0: set(WORKERS[:2])})
    assert sorted(len(ws) for ws in homes.values()) == [1, 1]
    assert "tcp://a" in homes[0] or "tcp://b" in homes[0]


def test_shard_counts_spread_evenly_over_the_workers():
    assert [balanced_shards(n, 4) for n in (1, 2, 3, 4, 5, 9)] == [1, 2, 4, 4, 8, 12]
    assert [balanced_shards(n, 3) for n in (1, 2, 4)] == [1, 3, 6]
    assert balanced_shards(0, 0) == 1


def test_shards_sized_from_the_tightest_worker():
    gib = float(1 << 30)
    # 1.5 M spectra of 30 peaks: about 3 GB, fits a quarter of 80 GB
    assert shards_for_memory(1_500_000, 45_000_000, [80 * gib, 78 * gib]) == 1
    assert shards_for_memory(1_500_000, 45_000_000, [80 * gib, 4 * gib]) == 3
    assert shards_for_memory(1_500_000, 45_000_000, [float("inf")]) == 1
    assert shards_for_memory(1_500_000, 45_000_000, []) == 1


@dataclass
class FakeFuture:
    key: str


def dispatcher(homes, n_blocks):
    sent = []
    serial = itertools.count()

    def submit(task, worker):
        sent.append((task, worker))
        return FakeFuture(f"k{next(serial)}"), f"shard-{task.shard}-{worker}"

    tasks = [Task(s, b, 1000, (10 * b, 10 * b + 10)) for b in range(n_blocks) for s in homes]
    return Dispatch(homes, tasks, submit), sent


def test_a_faster_worker_takes_more_blocks():
    dispatch, sent = dispatcher({0: ["tcp://a", "tcp://b"]}, 20)
    dispatch.fill()
    assert len(sent) == 2 * DEPTH
    assert [w for _, w in sent[:2]] == ["tcp://a", "tcp://b"]  # a task each before seconds
    while not dispatch.idle:  # a finishes three tasks for each of b's
        for _ in range(3):
            a = [k for k, sub in dispatch.in_flight.items() if sub.worker == "tcp://a"]
            if a:
                dispatch.finished(a[0])
                dispatch.fill()
        b = [k for k, sub in dispatch.in_flight.items() if sub.worker == "tcp://b"]
        if b:
            dispatch.finished(b[0])
        dispatch.fill()
    blocks = sorted(task.block for task, _ in sent)
    assert blocks == list(range(20))  # each block once
    on_a = sum(w == "tcp://a" for _, w in sent)
    assert on_a >= 13  # about three quarters
    # blocks go out in order
    assert [task.block for task, _ in sent] == list(range(20))


def test_lost_worker_tasks_go_back_to_their_queue():
    dispatch, sent = dispatcher({0: ["tcp://a", "tcp://b"], 1: ["tcp://c"]}, 6)
    dispatch.fill()
    on_a = [sub.task.block for sub in dispatch.in_flight.values() if sub.worker == "tcp://a"]
    assert on_a == [0, 2]  # breadth first: a, b, then a and b again
    futures, stranded, cut = dispatch.drop_workers({"tcp://a", "tcp://c"})
    assert len(futures) == 2 * DEPTH and stranded == [1]
    assert cut == []  # b has shard 0's later blocks queued anyway: nothing to cut
    assert dispatch.homes == {0: ["tcp://b"], 1: []}
    assert dispatch.add_home(1, ["tcp://b"]) == "tcp://b"
    n = len(sent)
    while not dispatch.idle:
        dispatch.finished(next(iter(dispatch.in_flight)))
        dispatch.fill()
    redone = [t.block for t, w in sent[n:] if t.shard == 0]
    assert redone == [0, 2, 4, 5]  # a's blocks first, then the shard's later ones
    assert all(w == "tcp://b" for _, w in sent[n:])
    assert sorted(t.block for t, _ in sent[n:] if t.shard == 1) == list(range(6))


def test_task_split_into_query_ranges():
    task = Task(0, 3, 12 * 2720, (100, 112))
    pieces = task.split(5)
    assert [p.queries for p in pieces] == [(100, 102), (102, 105), (105, 107), (107, 110),
                                           (110, 112)]  # fmt: skip
    assert sum(p.pairs for p in pieces) == task.pairs
    assert all(p.pairs == 2720 * (p.queries[1] - p.queries[0]) for p in pieces)
    assert {(p.shard, p.block) for p in pieces} == {(0, 3)}
    assert task.split(1) == [task] and task.split(0) == [task]
    assert len(task.split(50)) == 12  # at most one piece per query


def test_lost_task_is_cut_for_the_copies_that_would_idle():
    """The last blocks are out when a worker is lost: its block is redone in pieces."""
    dispatch, sent = dispatcher({0: WORKERS}, 5)
    dispatch.fill()
    assert not dispatch.queues[0]  # a: blocks 0 and 4, b, c, d one block each
    futures, stranded, cut = dispatch.drop_workers({"tcp://d"})
    assert len(futures) == 1 and stranded == []
    [(lost, pieces)] = cut
    assert lost.block == 3 and len(pieces) == 3  # one for each copy left
    assert [t.queries for t in pieces] == [(30, 33), (33, 37), (37, 40)]
    n = len(sent)
    dispatch.fill()  # b and c take one each at once, a (two in flight) the last later
    assert sorted(w for _, w in sent[n:]) == ["tcp://b", "tcp://c"]
    while not dispatch.idle:
        dispatch.finished(next(iter(dispatch.in_flight)))
        dispatch.fill()
    assert sorted(t.queries for t, _ in sent[n:]) == [(30, 33), (33, 37), (37, 40)]
    # with blocks still queued, a lost task goes back whole
    dispatch, sent = dispatcher({0: WORKERS[:2]}, 6)
    dispatch.fill()
    _, _, cut = dispatch.drop_workers({"tcp://b"})
    assert cut == []


def test_block_ledger_counts_pieces_of_cut_tasks():
    """A cut block is done after its last piece; a block with a piece done is partial."""
    ledger = BlockLedger({0: 1, 1: 2}, {0: np.array([5, 3]), 1: np.array([4, 9])})
    block_1 = Task(0, 1, 20, (2, 4))
    assert ledger.add_pieces([(block_1, block_1.split(2))]) == 1
    assert ledger.finish(0)  # block 0: its one task
    assert not ledger.finish(1) and not ledger.finish(1)  # two of its three tasks
    assert ledger.unfinished().tolist() == [4, 9]
    assert ledger.partial().tolist() == [4, 9]
    assert ledger.finish(1)
    assert ledger.unfinished().tolist() == [] and ledger.partial().tolist() == []


def test_copies_share_out_more_blocks():
    """Copies on several workers: more, smaller blocks (the last one ends the search)."""
    cost = TaskCost(fixed_s=0.06, pair_s=1 / 8e9, hit_s=1e-7, hits_per_pair=6e-5)
    pairs = 1e5 * 1.5e6
    one_shard_each = cost.blocks(pairs, 4, 4)
    copies = cost.blocks(pairs, 1, 4)
    assert copies > one_shard_each >= 1
    assert cost.blocks(1e3, 1, 4) == 4  # at least a block per copy
