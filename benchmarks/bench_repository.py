"""Repository-scale search: build time, disk size and query times on a SYNTHETIC repository.

Builds (or reuses) a SYNTHETIC repository of ``--spectra`` jittered copies of
MassBank spectra (``engine.repository.synthetic``; real-data correctness is
tested on real files), then searches real MassBank queries against it, entropy
identity search and entropy open search (no precursor window), and prints a
table: build seconds, disk size, one query cold (first search: shards opened and
prepared) and warm (after a batch has opened every shard; shards stay resident up to
``--resident-gb``), first hits and total, and ``--queries`` queries at once
(the first batch, and again warm).  ``--check`` compares every hit of the
first 20 queries with the one-process CPU search over the same shards::

    python benchmarks/bench_repository.py --spectra 1000000 --backend cpu
    python benchmarks/bench_repository.py --spectra 100000000 --backend cuda --processes 16 \\
        --shard-spectra 5000000 --path /scratch/syn1e8 --resident-gb 100 --check
    python benchmarks/bench_repository.py --spectra 1000000 --dask-local 2
    python benchmarks/bench_repository.py --spectra 400000000 --backend cuda --processes 64 \
        --shard-spectra 5000000 --path /scratch/syn4e8 --gpu-workers 4 --kill-after 5

``--gpu-workers N`` starts a Dask scheduler here and N ``dask worker`` processes,
one per GPU (``CUDA_VISIBLE_DEVICES``; ``--gpus K`` puts them on K GPUs, worker
i on GPU i mod K); each opens its shards from the folder
and keeps them resident.  ``--kill-after S`` adds one more open-search batch in
which the last worker (and its nanny) is killed S seconds in: its shards go to
the workers left, and the hits must equal the batch's without the kill.

Every line it prints says SYNTHETIC (the table in its header).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import engine  # noqa: E402
from engine.repository import Repository  # noqa: E402
from engine.repository.synthetic import build_synthetic  # noqa: E402

DATA = next(
    (d for d in (ROOT.parent / "shared" / "data", ROOT / "shared" / "data") if d.is_dir()),
    ROOT.parent / "shared" / "data",
)
P = engine.SearchParameters
SEARCHES = {"entropy identity": P(), "entropy open": P(precursor_tolerance=None)}


def _repository(a: argparse.Namespace, base) -> tuple[Repository, float, float]:
    """The SYNTHETIC repository (reused when ``--path`` holds it); build and compaction s."""
    path = Path(a.path) if a.path else Path(tempfile.mkdtemp(prefix="simms-bench-repo-")) / "r"
    if (path / "repository.json").exists():
        repo = Repository(path)
        if not repo.synthetic or len(repo) != a.spectra:
            raise SystemExit(f"{path}: holds {len(repo):,} spectra, not a synthetic {a.spectra:,}")
        return repo, float("nan"), float("nan")
    start = time.perf_counter()
    repo = build_synthetic(
        path, base, a.spectra, shard_spectra=a.shard_spectra, seed=a.seed, processes=a.processes
    )
    built = time.perf_counter() - start
    start = time.perf_counter()
    if a.compact:
        repo.compact(processes=a.processes)
    return repo, built, (time.perf_counter() - start) if a.compact else float("nan")


def _timed(repo, queries, params, a, client) -> tuple[float, float, engine.HitTable]:
    job = repo.search(
        queries, params, backend=a.backend, client=client, via=a.via,
        resident_bytes=int(a.resident_gb * 2**30), cpu_threads=a.cpu_threads,
    )  # fmt: skip
    start = time.perf_counter()
    first = None
    for _ in job:
        if first is None:
            first = time.perf_counter() - start
    total = time.perf_counter() - start
    return (total if first is None else first), total, job.hits


def _same(a: engine.HitTable, b: engine.HitTable) -> tuple[bool, float]:
    """Same (query, spectrum) pairs and match counts?, and the largest score difference."""
    ka = np.lexsort((a.library_index, a.query_index))
    kb = np.lexsort((b.library_index, b.query_index))
    if len(a) != len(b):
        return False, float("nan")
    same = all(
        np.array_equal(getattr(a, c)[ka], getattr(b, c)[kb])
        for c in ("query_index", "library_index", "matches")
    )
    diff = float(np.max(np.abs(a.score[ka] - b.score[kb]), initial=0.0))
    return same and diff <= 1e-9, diff


def _brute_force(repo, queries, params) -> engine.HitTable:
    """Each query's top N from the dense scores of every spectrum of every shard,
    with the precursor window (Da), ion mode, matches and threshold applied here."""
    rows = []
    for shard in repo.shards:
        library = shard.library()
        scores, matches = engine.score_matrix(queries, library, params, backend="cpu")
        keep = (matches >= max(params.min_matches, 1)) & (scores >= params.threshold)
        mode_q, mode_l = np.sign(queries.ion_mode)[:, None], np.sign(library.ion_mode)[None, :]
        keep &= mode_q * mode_l >= 0
        if params.precursor_tolerance is not None:
            delta = np.abs(queries.precursor_mz[:, None] - library.precursor_mz[None, :])
            keep &= delta <= params.precursor_tolerance
        q, l = np.nonzero(keep)
        rows.append((q, l + shard.start, scores[q, l], matches[q, l]))
    q, l, s, m = (np.concatenate(c) for c in zip(*rows, strict=True))
    order = np.lexsort((l, -s, q))
    q, l, s, m = q[order], l[order], s[order], m[order]
    rank = np.arange(len(q)) - np.searchsorted(q, q, side="left")
    top = rank < params.top_n
    return engine.HitTable.from_arrays(q[top], l[top], s[top], m[top])


def _check_alone(repo, queries, params, a, client, n: int = 5) -> str:
    """The first ``n`` queries searched one at a time (the widest tiles on a GPU)
    against the one-process CPU search of all ``n`` at once."""
    q = queries.subset(np.arange(min(n, len(queries))))
    alone = []
    for k in range(len(q)):
        hits = _timed(repo, q.subset([k]), params, a, client)[2]
        alone.append(
            engine.HitTable.from_arrays(
                np.full(len(hits), k), hits.library_index, hits.score, hits.matches
            )
        )
    same, diff = _same(engine.HitTable.concat(alone), repo.search(q, params, backend="cpu").run())
    return f"{len(q)} queries alone: {'same' if same else 'DIFFERENT'} (max|diff| {diff:.1e})"


def _check(repo, queries, params, hits) -> str:
    """The first 20 queries' hits against the one-process CPU search over the same
    shards (same pairs and match counts, scores within 1e-9) and, with a top N,
    against a brute-force scan of every shard."""
    q = queries.subset(np.arange(min(20, len(queries))))
    mine = hits.take(np.flatnonzero(hits.query_index < len(q)))
    same, diff = _same(mine, repo.search(q, params, backend="cpu").run())
    text = f"CPU: {'same' if same else 'DIFFERENT'} ({len(mine)} hits, max|diff| {diff:.1e})"
    if params.top_n > 0 and params.precursor_unit == "Da":
        same, diff = _same(mine, _brute_force(repo, q, params))
        text += f"; brute force: {'same' if same else 'DIFFERENT'} (max|diff| {diff:.1e})"
    return text


def _gpu_workers(
    n: int, threads: int, tasks: int, gpus: int | None = None
) -> tuple[object, object, list]:
    """A scheduler here and ``n`` worker processes (bench_dask_gpu's), worker ``i`` on GPU
    ``i % gpus`` (one per GPU when ``gpus`` is None), each running ``tasks`` shard tasks
    at once (one on the GPU, the others preparing)."""
    import logging

    import distributed
    from bench_dask_gpu import start_worker

    cluster = distributed.LocalCluster(
        n_workers=0, processes=True, dashboard_address=None, silence_logs=logging.ERROR
    )
    client = distributed.Client(cluster, set_as_default=False)
    log_dir = Path(tempfile.mkdtemp(prefix="simms-repo-workers-"))
    procs = [
        start_worker(cluster.scheduler_address, i, threads, log_dir, tasks, i % (gpus or n))
        for i in range(n)
    ]
    client.wait_for_workers(n, timeout=300)
    return cluster, client, procs


def _killed_run(repo, batch, params, a, client, procs, reference) -> tuple:
    """The batch again with the last worker killed ``a.kill_after`` s in: seconds, check."""
    from bench_dask_gpu import with_last_worker_killed

    (_, total, hits), name, _, at = with_last_worker_killed(
        client, procs, a.kill_after, lambda: _timed(repo, batch, params, a, client)
    )
    same, diff = _same(hits, reference)
    text = f"worker {name} killed at {at:.1f} s: {'identical' if same else 'DIFFERENT'} hits"
    return total, f"{text} ({len(hits)}, max|diff| {diff:.1e})"


def main() -> None:
    """Build or reuse the SYNTHETIC repository, time the searches, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spectra", type=int, default=1_000_000)
    ap.add_argument("--shard-spectra", type=int, default=1_000_000)
    ap.add_argument("--backend", choices=["cpu", "cuda", "auto"], default="cpu")
    ap.add_argument("--path", help="repository folder (reused when it holds --spectra)")
    ap.add_argument("--queries", type=int, default=1000, help="queries of the batch run")
    ap.add_argument("--repeat", type=int, default=3, help="warm one-query runs (median)")
    ap.add_argument("--resident-gb", type=float, default=16.0, help="shards kept opened, GiB")
    ap.add_argument("--cpu-threads", type=int)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", type=Path, default=DATA, help="folder of the MassBank MGF files")
    ap.add_argument("--build-only", action="store_true", help="build (or check) and stop")
    ap.add_argument(
        "--searches", nargs="+", choices=["identity", "open"], default=["identity", "open"],
        help="entropy identity and/or open search (one per run keeps less resident)",
    )  # fmt: skip
    ap.add_argument("--processes", type=int, default=1, help="processes building the repository")
    ap.add_argument(
        "--compact", action=argparse.BooleanOptionalAction, default=True,
        help="rewrite the shards into disjoint precursor ranges after the build [yes]",
    )  # fmt: skip
    ap.add_argument(
        "--prepare", action="store_true",
        help="store the shards' prepared spectra first (Repository.prepare), timed",
    )  # fmt: skip
    ap.add_argument(
        "--open-index", action="store_true",
        help="with --prepare: also store the CPU peak indexes of open searches",
    )  # fmt: skip
    ap.add_argument("--check", action="store_true", help="compare 20 queries with the CPU")
    ap.add_argument("--dask", metavar="ADDRESS")
    ap.add_argument("--dask-local", type=int, metavar="N")
    ap.add_argument("--via", choices=["tasks", "job"], default="tasks")
    ap.add_argument("--gpu-workers", type=int, metavar="N", help="N local workers, one per GPU")
    ap.add_argument(
        "--gpus", type=int, metavar="K",
        help="with --gpu-workers: K GPUs shared by the workers (worker i on GPU i mod K)",
    )  # fmt: skip
    ap.add_argument("--worker-threads", type=int, default=16, help="numba threads per worker")
    ap.add_argument("--worker-tasks", type=int, default=2, help="shard tasks at once per worker")
    ap.add_argument(
        "--kill-after",
        type=float,
        default=0.0,
        metavar="S",
        help="with --gpu-workers: one more open batch, the last worker killed S s in",
    )
    a = ap.parse_args()
    base = engine.load_library(a.data / "massbank_ms2.mgf.gz")
    queries = engine.load_library(a.data / "massbank_ms2_queries.mgf.gz")
    repo, build_s, compact_s = _repository(a, base)
    prepare_s = float("nan")
    if a.prepare:
        start = time.perf_counter()
        # identity and open share one preparation (and its open-search index)
        repo.prepare(SEARCHES["entropy identity"], open_index=a.open_index)
        prepare_s = time.perf_counter() - start
    client = cluster = None
    procs: list = []
    if a.gpu_workers and not a.build_only:
        cluster, client, procs = _gpu_workers(
            a.gpu_workers, a.worker_threads, a.worker_tasks, a.gpus
        )
    elif (a.dask or a.dask_local) and not a.build_only:
        from engine.distributed import open_client

        client = open_client(a.dask, n_local=a.dask_local)
    where = "one process"
    if procs:
        gpus = a.gpus or len(procs)
        where = f"Dask, {len(procs)} worker processes on {gpus} GPU(s) ({a.via})"
    elif client:
        where = f"Dask {a.dask or f'local x{a.dask_local}'} ({a.via})"
    print(f"SYNTHETIC repository benchmark: {repo}")
    print(f"SYNTHETIC benchmark machine: {platform.node()}, {os.cpu_count()} cores, backends "
          f"{engine.available_backends()}, {where}, backend {a.backend}")  # fmt: skip
    print(f"SYNTHETIC build {build_s:.1f} s, compaction {compact_s:.1f} s, {len(repo):,} spectra, "
          f"{repo.n_peaks:,} peaks, {len(repo.shards)} shards, "
          f"{repo.nbytes() / 2**30:.2f} GiB on disk")  # fmt: skip
    if a.prepare:
        stored = "prepared spectra and open-search indexes" if a.open_index else "prepared spectra"
        print(f"SYNTHETIC {stored} stored in {prepare_s:.1f} s (GiB on disk above "
              "includes them)")  # fmt: skip
    if a.build_only:
        return
    # each row as soon as it is measured (a run cut short by its time limit keeps them)
    print("| SYNTHETIC search | 1 q cold first / total s | 1 q warm first / total s | "
          "queries | batch cold total s | batch warm first / total s | vs CPU |")  # fmt: skip
    print("|---|---|---|---|---|---|---|", flush=True)
    for label, params in SEARCHES.items():
        if label.split()[-1] not in a.searches:
            continue
        batch = queries.subset(np.arange(min(a.queries, len(queries))))
        cold = _timed(repo, queries.subset([0]), params, a, client)
        first_batch = _timed(repo, batch, params, a, client)  # every shard opened: warm now
        warm = [
            _timed(repo, queries.subset([k + 1]), params, a, client)[:2] for k in range(a.repeat)
        ]
        batch_first, batch_total, hits = _timed(repo, batch, params, a, client)
        check = "-"
        if a.check:
            alone = _check_alone(repo, queries, params, a, client)
            check = f"{_check(repo, batch, params, hits)}; {alone}"
        wf, wt = statistics.median(w[0] for w in warm), statistics.median(w[1] for w in warm)
        print(f"| {label} | {cold[0]:.3f} / {cold[1]:.3f} | {wf:.3f} / {wt:.3f} | {len(batch):,} "
              f"| {first_batch[1]:.2f} | {batch_first:.2f} / {batch_total:.2f} | {check} |",
              flush=True)  # fmt: skip
        if procs and a.kill_after > 0 and label.endswith("open"):
            killed_s, text = _killed_run(repo, batch, params, a, client, procs, hits)
            print(f"SYNTHETIC {label} batch again in {killed_s:.2f} s, {text}", flush=True)
    if procs:
        client.close()
        cluster.close()
        for p in procs:
            p.kill()
    elif client is not None:
        from engine.distributed import shutdown

        shutdown(client)


if __name__ == "__main__":
    main()
