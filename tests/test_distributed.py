"""Search on a Dask cluster: identical hits to one process, worker loss, cancel, errors."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from engine import SearchJob, SearchParameters, search

pytest.importorskip("distributed")

from engine.distributed import ClusterError, DaskSearchJob, connect  # noqa: E402

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


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
        env={"NUMBA_NUM_THREADS": "1"},
    ) as cluster, Client(cluster, set_as_default=False) as client:  # fmt: skip
        yield cluster, client


def single_process(queries, library, params):
    job = SearchJob(queries, library, params, backend="cpu")
    return job.run(), job.progress.pairs_total


PARAMS = {
    "top10": SearchParameters(top_n=10),
    "precursor-da": SearchParameters(top_n=5, precursor_tolerance=5.0),
    "precursor-ppm": SearchParameters(top_n=3, precursor_tolerance=20.0, precursor_unit="ppm"),
    "all-hits": SearchParameters(top_n=0, threshold=0.6, min_matches=3, tolerance=0.02),
}


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
    assert seen[-1] == (pairs_total, pairs_total)
    assert job.duplicates_ignored == 0
    assert job.backend.name == "dask" and "2 workers" in job.backend.device


def test_ties_broken_by_library_index(cluster, data):
    """The top-N is the canonical one: among equal scores the lowest library index."""
    _, client = cluster
    queries, library = data
    params = SearchParameters(top_n=2, precursor_tolerance=0.5)
    everything = search(queries, library, SearchParameters(precursor_tolerance=0.5, top_n=0))
    job = DaskSearchJob(queries, library, params, client=client, backend="cpu", n_shards=2)
    assert_identical(job.run(), everything.top_per_query(2))


def test_shards_load_from_the_library_file(cluster, data, tmp_path):
    _, client = cluster
    queries, library = data
    path = tmp_path / "library.npz"
    library.save(path)
    params = SearchParameters(top_n=5, precursor_tolerance=10.0, batch_size=64)
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


def test_worker_killed_mid_search(cluster, data):
    lc, client = cluster
    queries, library = data
    params = SearchParameters(top_n=10, batch_size=16)
    expected, pairs_total = single_process(queries, library, params)
    before = sorted(client.nthreads())
    pid = client.run(os.getpid, workers=[before[0]])[before[0]]
    killed = []

    def kill_once(progress):
        if not killed and progress.pairs_done < progress.pairs_total:
            killed.append(before[0])  # it holds shard 0; its nanny starts a new one
            os.kill(pid, signal.SIGKILL)

    job = DaskSearchJob(
        queries, library, params, client=client, backend="cpu", on_progress=kill_once
    )
    hits = job.run()
    assert killed, "the search ended before a worker could be killed"
    assert_identical(hits, expected)
    assert_no_duplicates(hits)
    assert job.progress.pairs_done == pairs_total
    assert job.tasks_done == job.tasks_total  # each (shard, block) counted once
    client.wait_for_workers(2, timeout=60)
    assert before[0] not in client.nthreads(), "the killed worker came back as a new process"


def test_cancel_keeps_finished_blocks(cluster, data):
    _, client = cluster
    queries, library = data
    params = SearchParameters(top_n=5, batch_size=16)
    expected = search(queries, library, params, backend="cpu")
    job = DaskSearchJob(queries, library, params, client=client, backend="cpu")
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
    status = main(["search", path, path, "--dask", "127.0.0.1:1", "--dask-timeout", "1", "-q"])
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
    assert main(["search", path, path, "-o", str(one), *common]) == 0
    dask = ["--dask", lc.scheduler_address]
    assert main(["search", path, path, "-o", str(many), *common, *dask]) == 0
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


def test_every_worker_killed_and_restarted_gives_identical_hits(data):
    """Before: with every worker killed, tasks pinned to the dead workers stayed in
    Dask's "no-worker" state for ever, though the nannies had started new workers."""
    from distributed import Client, LocalCluster

    queries, library = data
    params = SearchParameters(top_n=10, batch_size=16)
    expected, _ = single_process(queries, library, params)
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
        env={"NUMBA_NUM_THREADS": "1"},
    ) as lc, Client(lc, set_as_default=False) as client:  # fmt: skip
        pids = list(client.run(os.getpid).values())
        killed = []

        def kill_all(progress):
            if not killed and progress.pairs_done < progress.pairs_total:
                killed.append(True)
                for pid in pids:
                    os.kill(pid, signal.SIGKILL)

        job = DaskSearchJob(
            queries, library, params, client=client, backend="cpu", on_progress=kill_all
        )
        hits = job.run()
    assert killed
    assert_identical(hits, expected)
    assert any("were replaced" in m for m in job.messages)


def test_all_workers_lost_for_good_raises_and_keeps_hits(data):
    """Before: a cluster left without workers hung the search for ever."""
    from distributed import Client, LocalCluster

    queries, library = data
    params = SearchParameters(top_n=5, batch_size=16)
    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as lc, Client(lc, set_as_default=False) as client:  # fmt: skip
        chunks = []
        job = DaskSearchJob(
            queries, library, params, client=client, backend="cpu", worker_timeout=2.0
        )
        with pytest.raises(ClusterError, match="were lost and none came back within 2 s"):
            for chunk in job:
                chunks.append(chunk)
                if len(chunks) == 1:
                    client.retire_workers(close_workers=True)
                    lc.scale(0)
    assert chunks and len(job.hits) == sum(len(c) for c in chunks) > 0
    assert job.tasks_done < job.tasks_total
