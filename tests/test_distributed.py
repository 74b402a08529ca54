"""Search on a Dask cluster: identical hits to one process, worker loss, cancel, errors."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from engine import SearchJob, SearchParameters, search
from engine.hits import HitTable

pytest.importorskip("distributed")
import dask  # noqa: E402

from engine.distributed import (  # noqa: E402
    ClusterError,
    ClusterLostError,
    DaskSearchJob,
    connect,
)

ROOT = Path(__file__).resolve().parents[1]


def assert_identical(got, expected):
    assert len(got) == len(expected)
    for column in got.columns():
        np.testing.assert_array_equal(getattr(got, column), getattr(expected, column))


def assert_no_duplicates(hits):
    pairs = hits.query_index * (1 << 32) + hits.library_index
    assert len(np.unique(pairs)) == len(pairs)


@pytest.fixture(scope="module")
def data(massbank_library, massbank_queries):
    """Every 20th MassBank spectrum as library (2,720), 100 real queries."""
    library = massbank_library.subset(range(0, len(massbank_library), 20))
    return massbank_queries.subset(range(100)), library


def single_process(queries, library, params):
    job = SearchJob(queries, library, params, backend="cpu")
    return job.run(), job.progress.pairs_total


PARAMS = {
    "top10": SearchParameters(mode="custom", top_n=10),
    "precursor-da": SearchParameters(mode="custom", top_n=5, precursor_tolerance=5.0),
    "precursor-ppm": SearchParameters(
        mode="custom", top_n=3, precursor_tolerance=20.0, precursor_unit="ppm"
    ),
    "all-hits": SearchParameters(
        mode="custom", top_n=0, threshold=0.6, min_matches=3, tolerance=0.02
    ),
    "identity": SearchParameters(top_n=5),
    "entropy-wide-window": SearchParameters(top_n=5, precursor_tolerance=50.0),
    "modified-cosine": SearchParameters(
        mode="custom", score="modified_cosine", top_n=5, threshold=0.3, precursor_tolerance=100.0
    ),
    "entropy-no-window": SearchParameters(mode="custom", score="entropy", top_n=5, threshold=0.5),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PARAMS))
def test_identical_to_single_process(cluster, data, name):
    _, client = cluster
    queries, library = data
    params = PARAMS[name]
    expected, pairs_total = single_process(queries, library, params)
    seen = []
    job = DaskSearchJob(
        queries, library, params, client=client, backend="cpu", n_shards=3,
        on_progress=lambda p: seen.append((p.pairs_done, p.pairs_total)),
    )  # fmt: skip
    chunks = list(job)
    assert job.finished and not job.cancelled
    assert_identical(job.hits, expected)
    assert len(chunks) > 1, "hits should stream out as query blocks finish"
    assert seen[-1][0] == seen[-1][1]  # progress reaches its total
    if params.precursor_tolerance is None:
        assert seen[-1] == (pairs_total, pairs_total)
    else:  # both group queries by their windows, by their own cost of a block
        assert 0 < seen[-1][1] <= len(queries) * len(library)
    assert job.duplicates_ignored == 0
    assert job.backend.name == "dask" and "2 workers" in job.backend.device


def worker_stats(client):
    """Shard preparations, transfers, file reads and reuses, summed over the workers."""
    from engine.distributed.shards import shard_stats

    stats = client.run(shard_stats)
    return {k: sum(s[k] for s in stats.values()) for k in next(iter(stats.values()))}


def test_resident_shards_are_reused(cluster, massbank_library, massbank_queries):
    """A second search of the same library sends and prepares nothing: its shards stay."""
    _, client = cluster
    library = massbank_library.subset(range(7, len(massbank_library), 25))  # no other test's
    first, second = massbank_queries.subset(range(40)), massbank_queries.subset(range(40, 90))
    params = SearchParameters(mode="custom", top_n=5, tolerance=0.1)
    before = worker_stats(client)
    job = DaskSearchJob(first, library, params, client=client, backend="cpu", n_shards=2)
    assert_identical(job.run(), single_process(first, library, params)[0])
    after_first = worker_stats(client)
    assert after_first["prepared"] - before["prepared"] == 2
    assert after_first["received"] - before["received"] == 2  # one transfer per shard
    assert set(job.shard_sources.values()) == {"data"}
    # other queries, another fragment tolerance (the cosine's peaks do not depend on it)
    params = SearchParameters(mode="custom", top_n=5, tolerance=0.05, threshold=0.2)
    job = DaskSearchJob(second, library, params, client=client, backend="cpu", n_shards=2)
    assert_identical(job.run(), single_process(second, library, params)[0])
    after_second = worker_stats(client)
    for what in ("prepared", "received", "read"):
        assert after_second[what] == after_first[what], what
    assert after_second["reused"] - after_first["reused"] == 2
    assert set(job.shard_sources.values()) == {"resident"}
    # another preprocessing is another shard: prepared (and sent) again
    params = SearchParameters(mode="custom", top_n=5, mz_power=1.0)
    job = DaskSearchJob(second, library, params, client=client, backend="cpu", n_shards=2)
    assert_identical(job.run(), single_process(second, library, params)[0])
    assert worker_stats(client)["prepared"] - after_second["prepared"] == 2


def test_library_that_fits_is_copied_on_every_worker(cluster, massbank_library, massbank_queries):
    """By default one shard, a copy on each worker, which share out the query blocks."""
    from engine.distributed.shards import shard_stats

    _, client = cluster
    library = massbank_library.subset(range(11, len(massbank_library), 25))  # no other test's
    queries = massbank_queries.subset(range(150))
    params = SearchParameters(mode="custom", top_n=5)
    before = client.run(shard_stats)
    job = DaskSearchJob(
        queries, library, params, client=client, backend="cpu", max_block_queries=16
    )
    assert_identical(job.run(), single_process(queries, library, params)[0])
    after = client.run(shard_stats)
    assert {w: after[w]["prepared"] - before[w]["prepared"] for w in after} == dict.fromkeys(
        after, 1
    )  # each worker prepared one copy, so each ran tasks
    assert set(job.shard_sources) == {"shard 0"}
    assert job.tasks_total == job.tasks_done >= 10  # one task per block
    # with a precursor window too: blocks grouped by their windows, shared out
    params = SearchParameters(mode="custom", top_n=5, precursor_tolerance=5.0)
    job = DaskSearchJob(queries, library, params, client=client, backend="cpu")
    assert_identical(job.run(), single_process(queries, library, params)[0])
    assert set(job.shard_sources) == {"shard 0"} and job.tasks_done >= 2
    assert len({r.worker for r in job.task_log}) == 2  # both copies took blocks


def test_query_blocks_follow_the_task_cost_model():
    """Blocks cover every query once; costlier merges make more, costlier tasks fewer."""
    from engine.distributed.cost import MAX_TASK_S, TaskCost
    from engine.distributed.plan import query_block_bounds

    params = SearchParameters(mode="custom")
    queries, library = np.zeros(50_000), np.zeros(50_000)

    def blocks(**cost):
        found = query_block_bounds(queries, library, params, 2, TaskCost(**cost))
        assert found[0] == (0, 64) and found[-1][1] == len(queries)
        assert all(a[1] == b[0] for a, b in zip(found, found[1:], strict=False))
        return len(found)

    gpu = {"pair_s": 1 / 1.7e9, "hits_per_pair": 1.2e-3}
    cheap, dear = blocks(fixed_s=0.06, hit_s=5e-8, **gpu), blocks(fixed_s=0.06, hit_s=5e-7, **gpu)
    assert 2 <= cheap < dear
    assert blocks(fixed_s=0.5, hit_s=5e-7, **gpu) < dear
    # no hits to merge: one block after the first, unless a task would run too long
    assert blocks(fixed_s=0.06, pair_s=1 / 1.7e9) == 2
    slow = 1 / 1e6  # 1.25e9 pairs per worker at 1e6 pairs/s: tasks of MAX_TASK_S at most
    cost = TaskCost(fixed_s=0.06, pair_s=slow)
    found = query_block_bounds(queries, library, params, 2, cost)
    longest = max(q1 - q0 for q0, q1 in found) * len(library) / 2 * slow
    assert MAX_TASK_S * 0.9 < longest <= MAX_TASK_S * 1.01  # a query more or less


def test_the_last_block_is_lighter_by_the_first_blocks_task():
    """Shard copies pull blocks in order, so the worker of the (small, early) first
    block also runs the last one: that one is lighter by the first task's cost."""
    from engine.distributed.cost import TaskCost
    from engine.distributed.plan import query_block_bounds

    params = SearchParameters(mode="custom", top_n=100)
    queries, library = np.zeros(100_000), np.zeros(1_522_920)
    cost = TaskCost(fixed_s=0.3, pair_s=1 / 2.1e10, worker_fixed_s=0.27, hits_per_pair=6e-5)
    shared = query_block_bounds(queries, library, params, 1, cost, workers=4)
    sizes = [q1 - q0 for q0, q1 in shared]
    assert shared[0] == (0, 64) and shared[-1][1] == len(queries)
    assert all(a[1] == b[0] for a, b in zip(shared, shared[1:], strict=False))
    first_task = 64 + 0.27 / (cost.pair_s * len(library))  # in queries of a block's task
    assert max(sizes[1:-1]) - min(sizes[1:-1]) <= 2  # the others equal
    assert abs(sizes[1] - (sizes[-1] + first_task)) <= 2  # its worker ends with the rest
    alone = query_block_bounds(queries, library, params, 1, cost, workers=1)
    assert len({q1 - q0 for q0, q1 in alone[1:]}) == 1  # no copies: equal blocks
    for n_q in (1, 65, 66, 90, 200, 1_000):  # small searches: every query once
        for workers in (2, 3, 8):
            found = query_block_bounds(np.zeros(n_q), library[:5_000], params, 1, cost, workers)
            assert found[0][0] == 0 and found[-1][1] == n_q
            assert all(q1 > q0 for q0, q1 in found)
            assert all(a[1] == b[0] for a, b in zip(found, found[1:], strict=False))


def test_task_cost_is_measured(cluster, data):
    """After a search the model of its cluster is measured, and the next plan uses it."""
    _, client = cluster
    queries, library = data
    params = SearchParameters(mode="custom", top_n=5)
    DaskSearchJob(queries, library, params, client=client, backend="cpu").run()
    job = DaskSearchJob(queries, library, params, client=client, backend="cpu")
    assert job.task_cost.measured and job.task_cost.pair_s > 0 and job.task_cost.fixed_s > 0
    assert job.task_cost.hits_per_pair > 0


def test_ties_broken_by_library_index(cluster, data):
    """The top-N is the canonical one: among equal scores the lowest library index."""
    _, client = cluster
    queries, library = data
    params = SearchParameters(mode="custom", top_n=2, precursor_tolerance=0.5)
    everything = search(
        queries, library, SearchParameters(mode="custom", precursor_tolerance=0.5, top_n=0)
    )
    job = DaskSearchJob(queries, library, params, client=client, backend="cpu", n_shards=2)
    assert_identical(job.run(), everything.top_per_query(2))


def test_shards_load_from_the_library_file(cluster, data, tmp_path):
    _, client = cluster
    queries, library = data
    path = tmp_path / "library.npz"
    library.save(path)
    params = SearchParameters(mode="custom", top_n=5, precursor_tolerance=10.0, batch_size=64)
    job = DaskSearchJob(  # shards no other test loads (those stay resident on the workers)
        queries, library, params, client=client, backend="cpu", library_path=path, n_shards=4
    )
    assert_identical(job.run(), search(queries, library, params, backend="cpu"))
    assert set(job.shard_sources.values()) == {"file"}
    # a file holding other spectra is refused: the shards' spectra are sent instead
    other = tmp_path / "other.npz"
    library.subset(range(100)).save(other)
    job = DaskSearchJob(
        queries, library, params, client=client, backend="cpu", library_path=other, n_shards=5
    )  # other shards than above, which stay resident on the workers
    assert_identical(job.run(), search(queries, library, params, backend="cpu"))
    assert set(job.shard_sources.values()) == {"data"}
    assert any("does not hold this library" in m for m in job.messages)


def test_a_library_file_the_workers_cannot_read_is_resent_as_spectra(
    cluster, data, tmp_path, monkeypatch
):
    """The client reads the file, the workers cannot (not on their machines): each copy
    of a shard that failed to load from it is sent again as spectra, its tasks redone."""
    from engine.distributed import sources

    _, client = cluster
    queries, library = data
    absent = tmp_path / "only-on-the-client.npz"
    fingerprint = sources.library_fingerprint(library)
    monkeypatch.setattr(sources, "file_fingerprint", lambda path: fingerprint)
    params = SearchParameters(mode="custom", top_n=5, precursor_tolerance=10.0, batch_size=64)
    job = DaskSearchJob(  # 6 shards: none resident from the other tests
        queries, library, params, client=client, backend="cpu", library_path=absent, n_shards=6
    )
    assert_identical(job.run(), search(queries, library, params, backend="cpu"))
    assert set(job.shard_sources.values()) == {"data"}
    assert any("a worker cannot use the library file" in m for m in job.messages)
    assert job.tasks_done == job.tasks_total and job.duplicates_ignored == 0


def test_worker_killed_mid_search(cluster, data):
    lc, client = cluster
    queries, library = data
    params = SearchParameters(mode="custom", top_n=10, batch_size=16)
    expected, pairs_total = single_process(queries, library, params)
    before = sorted(client.nthreads())
    pid = client.run(os.getpid, workers=[before[0]])[before[0]]
    killed = []

    def kill_once(progress):
        if not killed and progress.pairs_done < progress.pairs_total:
            killed.append(before[0])  # it holds shard 0; its nanny starts a new one
            os.kill(pid, signal.SIGKILL)

    job = DaskSearchJob(
        queries, library, params, client=client, backend="cpu", on_progress=kill_once,
        max_block_queries=16,
    )  # fmt: skip
    hits = job.run()
    assert killed, "the search ended before a worker could be killed"
    assert_identical(hits, expected)
    assert_no_duplicates(hits)
    assert job.progress.pairs_done == pairs_total
    assert job.tasks_done == job.tasks_total  # each (shard, block) counted once
    client.wait_for_workers(2, timeout=60)
    assert before[0] not in client.nthreads(), "the killed worker came back as a new process"


@pytest.mark.slow
def test_frozen_worker_is_treated_as_lost(cluster, data):
    """A worker stopped mid-search (SIGSTOP) stalls nothing: its tasks are redone by the other."""
    _, client = cluster
    queries, library = data
    params = SearchParameters(mode="custom", top_n=10, batch_size=16)
    expected, pairs_total = single_process(queries, library, params)
    victim = sorted(client.nthreads())[0]
    pid = client.run(os.getpid, workers=[victim])[victim]
    stopped, resumed = [], []  # (time, the victim's tasks counted by then), the same

    def victim_tasks() -> int:
        return sum(r.worker == victim for r in job.task_log)

    def stop_once(progress):
        if not stopped and progress.pairs_done < progress.pairs_total:
            stopped.append((time.monotonic(), victim_tasks()))
            os.kill(pid, signal.SIGSTOP)

    def resume_once_lost(message):  # it comes back while the search goes on
        if stopped and not resumed and victim in message:
            resumed.append((time.monotonic(), victim_tasks()))
            os.kill(pid, signal.SIGCONT)

    job = DaskSearchJob(
        queries, library, params, client=client, backend="cpu", on_progress=stop_once,
        on_message=resume_once_lost, max_block_queries=10, stall_timeout=3,
    )  # fmt: skip
    try:
        hits = job.run()
    finally:
        os.kill(pid, signal.SIGCONT)
    assert stopped, "the search ended before a worker could be stopped"
    assert resumed, job.messages
    assert resumed[0][0] - stopped[0][0] < 10  # 3 s after its last heartbeat, and a check
    assert_identical(hits, expected)
    assert_no_duplicates(hits)
    assert job.progress.pairs_done == pairs_total
    assert job.tasks_done == job.tasks_total
    # results already on their way when the signal landed count; nothing after the loss does
    assert stopped[0][1] <= resumed[0][1]
    assert victim_tasks() == resumed[0][1]
    # and the busy worker left was never taken for frozen
    named = [m for m in job.messages if "has not answered" in m]
    assert named == [
        f"Dask worker {victim} has not answered for 3 s; treated as lost, its tasks are "
        "redone on others"
    ]


@pytest.mark.slow
def test_worker_frozen_before_the_search_is_left_out(cluster, data):
    """A worker already stopped (SIGSTOP) when a search starts is left out of it, not waited on."""
    from engine.distributed.shards import worker_device

    _, client = cluster
    queries, library = data
    params = SearchParameters(mode="custom", top_n=10)
    expected, _ = single_process(queries, library, params)
    victim, other = sorted(client.nthreads())
    pid = client.run(os.getpid, workers=[victim])[victim]
    client.run(worker_device, "cpu")  # both have answered once: the other answers at once
    os.kill(pid, signal.SIGSTOP)
    try:
        start = time.monotonic()
        job = DaskSearchJob(queries, library, params, client=client, backend="cpu", stall_timeout=3)
        hits = job.run()
        seconds = time.monotonic() - start
    finally:
        os.kill(pid, signal.SIGCONT)
    assert_identical(hits, expected)
    assert job.silent_workers == {victim}
    assert {r.worker for r in job.task_log} == {other}
    assert job.tasks_done == job.tasks_total
    assert [m for m in job.messages if victim in m] == [
        f"Dask worker {victim} has not answered for 3 s; treated as lost, the search goes on "
        "without it"
    ]
    assert seconds < 3 + 4, seconds  # one wait of 3 s, not one per question
    job = DaskSearchJob(queries, library, params, client=client, backend="cpu", stall_timeout=3)
    assert not job.silent_workers  # resumed, it answers again


def test_watch_tells_a_frozen_worker_from_a_busy_one(monkeypatch):
    """Heartbeats timed on the client's clock: one that stops changing is a stalled worker."""
    from types import SimpleNamespace

    from engine.distributed import watch as watch_module
    from engine.distributed.watch import ClusterWatch

    beats = {"tcp://a:1": 100.0, "tcp://b:1": 7.0}  # the scheduler's clock need not be ours
    scheduler = SimpleNamespace(
        identity=lambda n_workers: {"workers": {w: {"last_seen": t} for w, t in beats.items()}}
    )
    client = SimpleNamespace(
        status="running", scheduler=scheduler, sync=lambda f, callback_timeout, **kw: f(**kw)
    )
    clock = [0.0]
    monkeypatch.setattr(watch_module.time, "monotonic", lambda: clock[0])
    said, rescued = [], []
    watch = ClusterWatch(set(beats), 2, 0.0, stall_timeout=5)
    for t in range(1, 13):  # b heartbeats every second, a stops after 2 s
        clock[0] = float(t)
        beats["tcp://b:1"] += 1
        if t <= 2:
            beats["tcp://a:1"] += 1
        watch.check(client, 60, said.append, rescued.append)
    assert said == [
        "Dask worker tcp://a:1 has not answered for 5 s; treated as lost, its tasks are "
        "redone on others"
    ]
    assert rescued == [{"tcp://b:1"}] and watch.live == {"tcp://b:1"}
    beats["tcp://a:1"] += 1  # back: it counts as a worker that joins
    watch.check(client, 60, said.append, rescued.append)
    assert said[-1] == "Dask worker tcp://a:1 answers again"
    assert watch.live == set(beats) and rescued[-1] == set(beats)


#: A program that imports numba before it starts a local cluster, as ``simms`` does:
#: each worker process imports it again (Dask spawns them) before its nanny sets
#: ``NUMBA_NUM_THREADS``.  Asking numba for its thread count launches its threads (the
#: CPU backend does); the next compile re-reads numba's configuration.
WORKER_COMPILE = """
import os
import numba
from engine.distributed.cluster import local_cluster, shutdown

def launch_threads_then_compile():
    launched = numba.get_num_threads()
    plus_one = numba.njit(lambda x: x + 1)
    assert plus_one(1) == 2
    return os.environ["NUMBA_NUM_THREADS"], launched, numba.config.NUMBA_NUM_THREADS

if __name__ == "__main__":
    client = local_cluster(2, gpu=False)
    try:
        print(sorted(client.run(launch_threads_then_compile).values()))
    finally:
        shutdown(client)
"""


@pytest.mark.slow
def test_local_cluster_workers_compile_with_their_thread_count(tmp_path):
    """A fresh install compiles in the workers of ``--dask-local``: each worker's numba
    takes the thread count the cluster gives it.  Before ``worker_start``, a worker
    whose threads were launched failed every compile ("Cannot set NUMBA_NUM_THREADS
    to a different value once the threads have been launched")."""
    script = tmp_path / "worker_compile.py"
    script.write_text(WORKER_COMPILE)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    threads = str(max(1, (os.cpu_count() or 1) // 2))
    assert proc.stdout.strip().splitlines()[-1] == str([(threads, int(threads), int(threads))] * 2)


def test_closing_kills_stopped_worker_processes():
    """A stopped worker process must not hold up closing its local cluster."""
    from types import SimpleNamespace

    import psutil

    from engine.distributed.cluster import kill_stopped_workers

    procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in "ab"]
    told = []
    nannies = {
        i: SimpleNamespace(
            process=SimpleNamespace(process=SimpleNamespace(pid=p.pid)),
            close_gracefully=lambda reason, i=i: told.append(i),
        )
        for i, p in enumerate(procs)
    }
    try:
        os.kill(procs[0].pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while psutil.Process(procs[0].pid).status() != psutil.STATUS_STOPPED:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert kill_stopped_workers(SimpleNamespace(workers=nannies)) == [procs[0].pid]
        assert procs[0].wait(timeout=10) == -signal.SIGKILL and told == [0]
        assert procs[1].poll() is None  # a running one is left to close itself
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_cancel_keeps_finished_blocks(cluster, data):
    _, client = cluster
    queries, library = data
    params = SearchParameters(mode="custom", top_n=5, batch_size=16)
    expected = search(queries, library, params, backend="cpu")
    job = DaskSearchJob(
        queries, library, params, client=client, backend="cpu", max_block_queries=16
    )
    for _chunk in job:
        job.cancel()
    assert job.cancelled and not job.finished
    hits = job.hits
    assert 0 < len(hits) < len(expected)
    # every kept hit is a final hit of the full search
    full = set(zip(expected.query_index, expected.library_index, expected.score, strict=True))
    assert set(zip(hits.query_index, hits.library_index, hits.score, strict=True)) <= full
    assert any("cancelled" in m for m in job.messages)
    assert job.tasks_done < job.tasks_total
    assert len(job.incomplete_queries) == 0  # a cut block's hits are dropped whole


@contextmanager
def own_cluster(n_workers):
    """A cluster of its own for a test that kills its workers or its scheduler."""
    from distributed import Client, LocalCluster

    with LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None,
        env={"NUMBA_NUM_THREADS": "1"},
    ) as lc, Client(lc, set_as_default=False) as client:  # fmt: skip
        yield lc, client


def kill_all_workers(lc, client, *, restart):
    """SIGKILL every worker process; with ``restart=False`` no nanny starts a new one."""
    pids = client.run(os.getpid)
    if not restart:
        for nanny in lc.workers.values():
            nanny.close_gracefully()  # a nanny closing gracefully restarts nothing
    for pid in pids.values():
        os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_lost_task_is_redone_in_pieces_by_the_workers_left(data):
    """A worker lost once every block is out: the workers left redo its task together."""
    queries, library = data
    params = SearchParameters(mode="custom", top_n=10, batch_size=16)
    expected, pairs_total = single_process(queries, library, params)
    with own_cluster(3) as (_, client):
        victim = sorted(client.nthreads())[1]
        pid = client.run(os.getpid, workers=[victim])[victim]
        # its one task thread sleeps: the search's task sent there waits until the kill
        blocker = client.submit(time.sleep, 120, workers=[victim], pure=False)
        killed = []

        def kill_once(progress):
            if not killed and progress.pairs_done:
                killed.append(victim)
                os.kill(pid, signal.SIGKILL)

        job = DaskSearchJob(
            queries, library, params, client=client, backend="cpu", on_progress=kill_once
        )
        hits = job.run()
        del blocker
    assert killed, "the search ended before a worker could be killed"
    assert_identical(hits, expected)
    assert_no_duplicates(hits)
    assert job.progress.pairs_done == pairs_total
    assert job.tasks_done == job.tasks_total
    assert any("cut into 2 pieces" in m for m in job.messages), job.messages
    assert victim not in {r.worker for r in job.task_log}


@pytest.mark.slow
def test_all_workers_lost_raises_and_keeps_hits(data):
    queries, library = data
    params = SearchParameters(mode="custom", top_n=10, batch_size=16)
    expected, _ = single_process(queries, library, params)
    with own_cluster(2) as (lc, client):
        job = DaskSearchJob(
            queries, library, params, client=client, backend="cpu", grace_period=1,
            max_block_queries=16,
        )  # fmt: skip
        chunks = []
        with pytest.raises(ClusterLostError) as info:
            for chunk in job:  # the final hits of a query block
                chunks.append(chunk)
                if len(chunks) == 1:
                    kill_all_workers(lc, client, restart=False)
                    while client.nthreads():  # the scheduler has seen them go
                        time.sleep(0.05)
    err = info.value
    message = str(err)
    assert message_is_one_line(err)
    assert message.startswith(f"all 2 Dask workers of {lc.scheduler_address} were lost")
    assert isinstance(err, RuntimeError) and isinstance(err, ClusterError)
    assert err.address == lc.scheduler_address and err.workers_lost == 2
    assert not err.scheduler_lost and not job.finished
    assert (err.tasks_done, err.tasks_total) == (job.tasks_done, job.tasks_total)
    assert f"{err.tasks_total - err.tasks_done} of {err.tasks_total} tasks not done" in message
    # the chunks streamed before the loss stay valid: the final hits of their queries
    hits = job.hits
    assert_identical(hits, HitTable.concat(chunks).sorted())
    assert_identical(err.hits, hits)
    assert 0 < len(err.unfinished_queries) < len(queries)
    np.testing.assert_array_equal(job.unfinished_queries, err.unfinished_queries)
    assert not np.isin(hits.query_index, err.unfinished_queries).any()
    finished = ~np.isin(expected.query_index, err.unfinished_queries)
    assert_identical(hits, expected.take(np.flatnonzero(finished)))
    assert len(err.incomplete_queries) == 0  # top_n > 0: a cut block's hits are dropped whole


@pytest.mark.slow
def test_all_workers_lost_lists_queries_with_part_of_their_hits(data, massbank_library):
    queries, _ = data
    # the whole library and the modified cosine, every hit: tasks of tens of ms, so the
    # worker is killed while the first block still has shards to do
    library = massbank_library
    params = SearchParameters(
        mode="custom", score="modified_cosine", top_n=0, threshold=0.6, min_matches=3
    )
    expected, _ = single_process(queries, library, params)
    with own_cluster(1) as (lc, client):
        job = DaskSearchJob(
            queries, library, params, client=client, backend="cpu", n_shards=3, grace_period=1,
            max_block_queries=16,
        )  # fmt: skip
        with pytest.raises(ClusterLostError) as info:
            for _chunk in job:  # top_n=0: a chunk per (shard, block); its block is cut
                if job.tasks_done < job.tasks_total:
                    kill_all_workers(lc, client, restart=False)
                    while client.nthreads():
                        time.sleep(0.05)
    err = info.value
    assert message_is_one_line(err)
    assert str(err).startswith(f"the only Dask worker of {lc.scheduler_address} was lost")
    hits = job.hits
    full = set(zip(expected.query_index, expected.library_index, expected.score, strict=True))
    assert 0 < len(hits)
    assert set(zip(hits.query_index, hits.library_index, hits.score, strict=True)) <= full
    # the queries of a cut block: hits of some shards streamed (for some queries none)
    with_hits = np.intersect1d(hits.query_index, err.unfinished_queries)
    assert len(with_hits) > 0
    assert set(with_hits) <= set(err.incomplete_queries) <= set(err.unfinished_queries)
    np.testing.assert_array_equal(job.incomplete_queries, err.incomplete_queries)


def message_is_one_line(err):
    return "\n" not in str(err) and str(err).strip() == str(err)


@pytest.mark.slow
def test_search_finishes_when_the_only_worker_restarts(data):
    """Dask strands a pinned shard rescheduled while no worker is left; it is resubmitted."""
    queries, library = data
    params = SearchParameters(mode="custom", top_n=10, batch_size=16)
    expected, pairs_total = single_process(queries, library, params)
    with own_cluster(1) as (lc, client):
        job = DaskSearchJob(
            queries, library, params, client=client, backend="cpu", max_block_queries=16
        )
        killed = []
        for _chunk in job:
            if not killed:  # the shard is resident on the worker: it goes with it
                killed.append(True)
                kill_all_workers(lc, client, restart=True)
    assert killed and job.finished
    assert_identical(job.hits, expected)
    assert job.progress.pairs_done == pairs_total
    assert any("stranded" in m for m in job.messages)


@pytest.mark.slow
def test_search_waits_for_a_worker_to_join(data):
    """No worker at the start: the shards go to the first that joins, hits identical."""
    import threading

    queries, library = data
    params = SearchParameters(mode="custom", top_n=5)
    expected, _ = single_process(queries, library, params)
    with own_cluster(0) as (lc, client):
        job = DaskSearchJob(queries, library, params, client=client, backend="cpu")
        result = {}
        runner = threading.Thread(target=lambda: result.setdefault("hits", job.run()))
        runner.start()
        time.sleep(1.5)
        assert runner.is_alive() and job.tasks_done == 0
        lc.scale(1)
        runner.join(timeout=120)
        assert not runner.is_alive(), "the search did not finish once a worker joined"
    assert job.finished
    assert_identical(result["hits"], expected)


def test_no_worker_at_all_raises_after_the_grace_period(data):
    queries, library = data
    with own_cluster(0) as (lc, client):
        job = DaskSearchJob(queries, library, client=client, backend="cpu", grace_period=0.5)
        with pytest.raises(ClusterLostError) as info:
            job.run()
    err = info.value
    assert message_is_one_line(err)
    assert str(err).startswith(f"no Dask worker joined {lc.scheduler_address} within 0.5 s")
    assert err.tasks_done == 0 and len(err.unfinished_queries) == len(queries)
    assert len(job.hits) == 0


@pytest.mark.slow
def test_lost_scheduler_raises(data):
    queries, library = data
    params = SearchParameters(mode="custom", top_n=10, batch_size=16)
    with own_cluster(1) as (lc, client):
        job = DaskSearchJob(
            queries, library, params, client=client, backend="cpu", max_block_queries=16
        )
        chunks = []
        try:
            with pytest.raises(ClusterLostError) as info:
                for chunk in job:
                    chunks.append(chunk)
                    if len(chunks) == 1:
                        lc.sync(lc.scheduler.close)
        finally:  # closing a cluster whose scheduler is gone waits out connection timeouts
            with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
                lc.close()
    err = info.value
    assert message_is_one_line(err) and err.scheduler_lost
    assert str(err).startswith(
        f"lost the connection to the Dask scheduler at {lc.scheduler_address}"
    )
    assert_identical(job.hits, HitTable.concat(chunks).sorted())
    assert len(err.unfinished_queries) > 0


def test_grace_period_is_checked(cluster, data):
    _, client = cluster
    queries, library = data
    with pytest.raises(ValueError, match="grace_period"):
        DaskSearchJob(queries, library, client=client, grace_period=-1)
    with pytest.raises(ValueError, match="stall_timeout"):
        DaskSearchJob(queries, library, client=client, stall_timeout=0)


def test_unreachable_cluster_is_a_clear_error():
    start = time.monotonic()
    with pytest.raises(ClusterError) as info:
        connect("tcp://127.0.0.1:1", timeout=1)
    message = str(info.value)
    assert "tcp://127.0.0.1:1" in message and "\n" not in message
    assert time.monotonic() - start < 20


def test_cli_unreachable_cluster_exits_2(data_dir, capsys):
    from engine.cli import main

    path = str(data_dir / "pesticides.mgf")
    status = main(
        [
            "search",
            "--mode",
            "custom",
            path,
            path,
            "--dask",
            "127.0.0.1:1",
            "--dask-timeout",
            "1",
            "-q",
        ]
    )
    assert status == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("simms: error: cannot reach the Dask scheduler")


def test_cli_search_on_a_cluster(cluster, data_dir, tmp_path):
    from engine.cli import main
    from engine.export import read_hits

    lc, _ = cluster
    path = str(data_dir / "pesticides.mgf")
    one, many = tmp_path / "one.tsv", tmp_path / "dask.tsv"
    common = ["--top", "3", "-q", "--no-cache", "--backend", "cpu", "--batch-size", "16"]
    assert main(["search", "--mode", "custom", path, path, "-o", str(one), *common]) == 0
    dask = ["--dask", lc.scheduler_address]
    assert main(["search", "--mode", "custom", path, path, "-o", str(many), *common, *dask]) == 0
    a, _ = read_hits(one)
    b, provenance = read_hits(many)
    for column in a:
        np.testing.assert_array_equal(a[column], b[column])
    assert any("Dask cluster" in line for line in provenance)


def test_engine_imports_without_dask():
    code = "import sys, engine, engine.cli, engine.distributed; print('dask' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_cluster_network_and_qc_on_a_cluster_equal_one_process(cluster, data):
    """Clustering, networking and the library check run through the same Dask job machinery."""
    from engine import cluster_spectra, library_qc, network

    _, client = cluster
    library = data[1].subset(range(800))
    common = {"backend": "cpu", "cpu_threads": 1}

    local = cluster_spectra(library, **common)
    remote = cluster_spectra(library, client=client, **common)
    np.testing.assert_array_equal(local.labels, remote.labels)
    np.testing.assert_array_equal(local.representatives, remote.representatives)
    assert len(np.unique(local.labels)) < len(library)  # some spectra were linked

    net_local = network(library, preprocess="none", **common)
    net_remote = network(library, preprocess="none", client=client, **common)
    np.testing.assert_array_equal(net_local.edges, net_remote.edges)
    np.testing.assert_allclose(net_local.score, net_remote.score, rtol=0, atol=1e-12)
    assert len(net_local.edges) > 0

    qc_local = library_qc(library, **common)
    qc_remote = library_qc(library, client=client, **common)
    np.testing.assert_array_equal(qc_local.pairs, qc_remote.pairs)
    np.testing.assert_array_equal(qc_local.kind, qc_remote.kind)
    assert len(qc_local.pairs) > 0


def test_cli_cluster_and_network_on_a_cluster(cluster, data_dir, tmp_path):
    import pandas as pd

    from engine.cli import main

    lc, _ = cluster
    path = str(data_dir / "pesticides.mgf")
    dask = ["--dask", lc.scheduler_address]
    common = ["-q", "--no-cache", "--backend", "cpu"]
    for command, out, extra in (
        ("cluster", "clusters", ["--threshold", "0.7"]),
        ("network", "edges", ["--tolerance", "0.1", "--threshold", "0.6", "--min-matches", "3"]),
    ):
        one, many = tmp_path / f"{out}-one.tsv", tmp_path / f"{out}-dask.tsv"
        flag = "-o" if command == "cluster" else "--edges"
        assert main([command, path, flag, str(one), *common, *extra]) == 0
        assert main([command, path, flag, str(many), *common, *extra, *dask]) == 0
        a, b = pd.read_csv(one, sep="\t"), pd.read_csv(many, sep="\t")
        assert len(a) > 0
        pd.testing.assert_frame_equal(a, b)


def test_cli_dask_stall_timeout_reaches_every_dask_job(monkeypatch, data_dir, tmp_path):
    """``--dask-stall-timeout`` of search, cluster, network and qc reaches each Dask job."""
    from contextlib import nullcontext

    import engine.api
    import engine.cli
    import engine.cli_progress
    from engine.cli import main

    seen = []

    class Recorder(SearchJob):  # a local job that stands for the Dask one
        def __init__(self, queries, library, params=None, *, client, stall_timeout, **kwargs):
            assert client == "client"
            seen.append(stall_timeout)
            callbacks = ("on_progress", "on_message", "cancel_token")
            super().__init__(queries, library, params, **{k: kwargs[k] for k in callbacks})

    monkeypatch.setattr(engine.api, "DaskSearchJob", Recorder)
    monkeypatch.setattr(engine.cli, "open_client", lambda *a, **k: "client")
    monkeypatch.setattr(engine.cli, "shutdown", lambda client: None)
    monkeypatch.setattr(engine.cli_progress, "dask_client", lambda args: nullcontext("client"))
    path = str(data_dir / "pesticides.mgf")
    common = ["-q", "--no-cache", "--backend", "cpu", "--dask", "x:1", "--dask-stall-timeout"]
    commands = {
        "search": (["search", path, path, "-o", str(tmp_path / "h.tsv")], 1),
        "cluster": (["cluster", path, "-o", str(tmp_path / "c.tsv"), "--library", path,
                     "--hits", str(tmp_path / "ch.tsv")], 2),  # linking, then the search
        "network": (["network", path, "--edges", str(tmp_path / "e.tsv")], 1),
        "qc": (["qc", path, "-o", str(tmp_path / "q.tsv")], 1),
    }  # fmt: skip
    for n, (name, (args, jobs)) in enumerate(commands.items()):
        seen.clear()
        assert main([*args, *common, f"{n + 2.5}"]) == 0, name
        assert seen == [n + 2.5] * jobs, name
    with pytest.raises(SystemExit):
        main(["qc", path, "--dask", "x:1", "--dask-stall-timeout", "0"])


@pytest.mark.slow
def test_task_cost_skips_first_tasks_and_weighs_searches_by_pairs():
    """A worker's first task (NaN seconds) is left out; a large search outweighs a small
    one, and a small first search (a warm-up) hardly moves the defaults."""
    from engine.distributed.cost import DEFAULTS, PRIOR_SECONDS, record

    address = "tcp://cost-model-test:1"
    default = DEFAULTS["cuda"]
    assert default.pairs_seen == pytest.approx(PRIOR_SECONDS / default.pair_s)
    # a warm-up whose one measured task ran at 1e9 pairs/s, 18 times under the default
    small = record(address, "cuda", [1e9, 1e9], [float("nan"), 1.2], span=1.3, workers=1)
    assert small.measured
    assert 0.8 * default.pair_s < small.pair_s < 1.25 * default.pair_s
    # three tasks of 1e11 pairs at 8e9 pairs/s: they outweigh the defaults
    large = record(address, "cuda", [1e11] * 3, [0.2 + 1e11 / 8e9] * 3, span=37.7, workers=1)
    assert 7e9 < 1 / large.pair_s < 1e10
    assert large.pairs_seen == pytest.approx(3.01e11 + default.pairs_seen)
