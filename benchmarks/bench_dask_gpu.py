"""Dask scale-out benchmark: one search on 1, 2, 4 GPUs (one worker per GPU) against one process.

Starts a scheduler in this process (``LocalCluster(n_workers=0)``) and one
``dask worker`` subprocess per GPU with ``CUDA_VISIBLE_DEVICES=<i>`` (each
worker sees only its own GPU; dask-cuda is not needed).  For each worker count
of ``--gpus`` (workers are added, never restarted):

1. the new workers compile or load the kernels (``warm_up``, untimed) and say
   which GPU they hold;
2. an untimed search of the first 1,024 queries loads the shards (read by the
   workers from the library's ``.npz``), uploads them to the GPUs and measures
   the task cost model (:mod:`engine.distributed.cost`);
3. ``--repeats`` timed searches of all queries (``DaskSearchJob``; the shards
   are resident: nothing is sent or prepared), each checked column by column
   against the single-process ``SearchJob`` of the same backend, run first in
   this process on GPU 0 (its time is printed too).

Prints one table: GPUs, seconds, pairs/s, speed-up vs 1 GPU through the same
Dask path, efficiency, speed-up vs one process on one GPU, tasks, hits, identical?

Libraries (``--library``): ``massbank`` (the 54,390 spectra; ``--queries 0`` =
all-vs-all), ``scale`` (``--replicas`` jittered copies of MassBank as in
``benchmarks/bench_scale.py``: 28 = 1,522,920 spectra; default 100,000 queries:
jittered copies of the 1,000 MassBank queries), or a path to an ``.npz``
(``SpectrumLibrary.save``).  ``--backend cpu`` runs the same on CPU workers
(numba threads: cores // most workers), e.g. on a laptop.

``--profile`` instead measures the cost of a task on a LocalCluster of 2 CPU
worker processes (fixed cost per task on the worker and around it, cost per
pair, transfer of a query block and of the hits, the client's merge per hit)
and predicts the 1/2/4-GPU times of the all-vs-all MassBank search from those
costs and the single-GPU figures of ``benchmarks/RESULTS.md`` (``--gpu-*``).

GPU run, from the repository root of a machine with 1, 2 or 4 GPUs (Python 3.12
with numba and numba-cuda; dask, distributed and their dependencies installed
from wheels: ``pip install --no-index .whl/*.whl``, the cp312 wheels of dask
2026.8.0, distributed 2026.8.0, click, cloudpickle, fsspec, importlib_metadata,
jinja2, lazy_importer, locket, markupsafe, msgpack, packaging, partd, psutil,
pyyaml, sortedcontainers, tblib, toolz, tornado, zict, zipp; pyteomics), with the
MassBank files in ``DATA`` (``massbank_ms2.mgf.gz``, ``massbank_ms2_queries.mgf.gz``)
or the library in ``.ext/massbank_ms2.npz``::

    python3 benchmarks/bench_dask_gpu.py --library massbank --queries 0 --gpus 1,2,4 \\
        --cache .ext --data DATA --repeats 2 --json $OUT/dask_massbank.json
    python3 benchmarks/bench_dask_gpu.py --library scale --queries 100000 --gpus 1,2,4 \\
        --cache .ext --data DATA --deadline 500 --kill-after 4 --json $OUT/dask_scale.json

On this CPU machine::

    python benchmarks/bench_dask_gpu.py --backend cpu --library massbank --queries 1000 --gpus 1,2
    python benchmarks/bench_dask_gpu.py --profile
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from engine.library import SpectrumLibrary  # noqa: E402
from engine.params import SearchParameters  # noqa: E402
from engine.search import SearchJob  # noqa: E402


def say(*args) -> None:
    print(*args, flush=True)


def sh(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return (out.stdout + out.stderr).strip()
    except Exception as exc:  # noqa: BLE001 - informational only
        return f"({cmd[0]} failed: {exc})"


def identical(a, b) -> bool:
    return len(a) == len(b) and all(
        np.array_equal(getattr(a, c), getattr(b, c)) for c in a.columns()
    )


# -- data ---------------------------------------------------------------------------
def load_data(args) -> tuple[SpectrumLibrary, Path, SpectrumLibrary]:
    """The library, an ``.npz`` holding exactly it (the workers read it), the queries."""
    from engine.io import read_library

    work = args.work or Path(tempfile.mkdtemp(prefix="simms-dask-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    query_file = None
    if args.library in ("massbank", "scale"):
        cached = args.cache / "massbank_ms2.npz" if args.cache else None
        if cached is not None and cached.is_file():
            massbank = SpectrumLibrary.load(cached)
        else:
            massbank = read_library(args.data / "massbank_ms2.mgf.gz")
        if args.library == "scale":
            from bench_scale import replicate

            library = replicate(massbank, args.replicas, args.jitter, seed=1)
        else:
            library = massbank
        npz = work / f"library_{args.library}.npz"
        library.save(npz)  # the file the workers read their shards from
    else:
        npz = Path(args.library).resolve()
    library = SpectrumLibrary.load(npz)
    n = args.queries if args.queries is not None else (100_000 if args.library == "scale" else 0)
    if n <= 0:
        return library, npz, library
    query_file = read_library(args.data / "massbank_ms2_queries.mgf.gz")
    if n > len(query_file):
        from bench_scale import replicate

        query_file = replicate(query_file, -(-n // len(query_file)), args.jitter, seed=2)
    return library, npz, query_file.subset(np.arange(n))


# -- workers ------------------------------------------------------------------------
def worker_info(backend: str) -> dict:
    """On a worker: warm the backend up and tell which device it uses."""
    from engine.distributed.shards import worker_backend

    t = time.perf_counter()
    be, notes = worker_backend(backend)
    if hasattr(be, "warm_up"):
        be.warm_up()
    info = {
        "pid": os.getpid(),
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "NUMBA_NUM_THREADS": os.environ.get("NUMBA_NUM_THREADS"),
        "backend": f"{be.name}: {be.device}",
        "warm_up_s": round(time.perf_counter() - t, 2),
        "notes": list(notes),
    }
    if be.name == "cuda":
        from numba import cuda

        d = cuda.get_current_device()
        try:
            info["pci"] = f"{d.PCI_DOMAIN_ID:08x}:{d.PCI_BUS_ID:02x}:{d.PCI_DEVICE_ID:02x}.0"
        except Exception as exc:  # noqa: BLE001
            info["pci"] = f"? ({exc})"
    return info


def start_worker(
    address: str,
    i: int,
    threads: int,
    log_dir: Path,
    task_threads: int = 2,
    gpu: int | None = None,
) -> subprocess.Popen:
    """One ``dask worker`` process, ``gpu<i>``, that sees only GPU ``gpu`` (``i`` if None).

    ``task_threads`` tasks may run at once: one on the GPU (a process launches one
    at a time), the other merging its hits on the host meanwhile.
    """
    env = dict(os.environ)
    env.update(
        CUDA_VISIBLE_DEVICES=str(i if gpu is None else gpu),
        NUMBA_NUM_THREADS=str(threads),
        OMP_NUM_THREADS=str(threads),
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join(
            [str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
        ),
    )
    cmd = [
        sys.executable,
        "-m",
        "distributed.cli.dask_worker",
        address,
        "--nworkers",
        "1",
        "--nthreads",
        str(task_threads),
        "--name",
        f"gpu{i}",
        "--memory-limit",
        "0",
        "--no-dashboard",
        "--death-timeout",
        "120",
    ]
    log = open(log_dir / f"worker{i}.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(cmd, env=env, cwd=str(ROOT), stdout=log, stderr=subprocess.STDOUT)


def timed_search(client, queries, library, params, npz, backend):
    """One DaskSearchJob: seconds, first-hit seconds, the job."""
    from engine.distributed import DaskSearchJob

    t = time.perf_counter()
    job = DaskSearchJob(queries, library, params, client=client, backend=backend, library_path=npz)
    first = None
    for _chunk in job:
        if first is None:
            first = time.perf_counter() - t
    job.hits  # noqa: B018 - all hits in one table, as run() returns them: part of the time
    return time.perf_counter() - t, first or float("nan"), job


def single_process(queries, library, params, backend, threads):
    """The reference: a warm ``SearchJob`` in this process; (seconds, hits, device)."""
    from engine.backends import get_backend

    be = get_backend(backend, cpu_threads=threads)
    if hasattr(be, "warm_up"):
        be.warm_up()
    # a small search prepares the library and compiles the host-side merge
    SearchJob(queries.subset(np.arange(min(64, len(queries)))), library, params, backend=be).run()
    import numba

    before = numba.get_num_threads()
    if backend == "cpu":  # the host-side merges too run on the threads of one worker
        numba.set_num_threads(threads)
    try:
        t, cpu = time.perf_counter(), time.process_time()
        hits = SearchJob(queries, library, params, backend=be).run()
        sec = time.perf_counter() - t
        say(
            f"  (one process: {sec:.2f} s, {time.process_time() - cpu:.1f} s of CPU time, "
            f"{getattr(be, 'rescored_pairs', 0):,} pairs rescored on the host so far)"
        )
    finally:
        numba.set_num_threads(before)
    device = be.device
    if hasattr(be, "close"):
        be.close()  # the workers have the GPUs to themselves from here
    return sec, hits, device


def timeline(job, seconds: float) -> str:
    """Where a Dask search's time went: the plan, each worker's tasks, the tail."""
    import math

    log = job.task_log
    if not log:
        return "no tasks"
    parts = [f"planned at {job.planned_s:.2f} s"]
    for w in sorted({r.worker for r in log}):
        mine = [r for r in log if r.worker == w]
        busy = sum(r.seconds for r in mine if math.isfinite(r.seconds))
        sent, back = min(r.sent for r in mine), max(r.done for r in mine)
        parts.append(
            f"{w.rsplit(':', 1)[-1]}: {len(mine)} tasks, {busy:.2f} s busy, "
            f"first sent {sent:.2f} s, last back {back:.2f} s"
        )
    parts.append(f"last task back at {max(r.done for r in log):.2f} s of {seconds:.2f} s")
    return "; ".join(parts)


def with_last_worker_killed(client, procs, after: float, run):
    """``run()`` while the last worker (``gpu<N-1>``) and its nanny are killed ``after``
    seconds in: ``(run's result, worker name, its pid, seconds at the kill or nan)``."""
    import signal
    import threading

    victim = procs[-1]
    name = f"gpu{len(procs) - 1}"
    workers = client.scheduler_info()["workers"]
    address = next(a for a, w in workers.items() if w.get("name") == name)
    pid = client.run(os.getpid, workers=[address])[address]
    killed: list[float] = []
    t = time.perf_counter()

    def kill() -> None:  # the nanny first (it would restart the worker), then the worker
        victim.kill()
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        killed.append(time.perf_counter() - t)

    timer = threading.Timer(after, kill)
    timer.start()
    try:
        result = run()
    finally:
        timer.cancel()
    return result, name, pid, (killed[0] if killed else float("nan"))


def kill_one_worker(args, client, procs, queries, library, params, npz, ref_hits) -> dict:
    """One more timed search in which the last worker's process is killed after
    ``args.kill_after`` seconds: the hits must stay identical; prints the recovery."""
    (sec, first, job), name, pid, at = with_last_worker_killed(
        client, procs, args.kill_after,
        lambda: timed_search(client, queries, library, params, npz, args.backend),
    )  # fmt: skip
    victim = procs[-1]
    same = identical(job.hits, ref_hits)
    say(
        f"\n== worker killed mid-search: worker {name} (pid {pid}, nanny {victim.pid}) killed at "
        f"{at:.2f} s; the search finished at {sec:.2f} s ({sec - at:.2f} s after the kill) "
        f"on the {len(procs) - 1} left, {len(job.task_times)} tasks, identical {same}; "
        f"messages: {job.messages}"
    )
    return {
        "gpus": f"{len(procs)} (one killed)",
        "killed_at_s": at,
        "seconds": sec,
        "after_kill_s": sec - at,
        "identical": same,
        "hits": len(job.hits),
        "tasks": len(job.task_times),
        "messages": list(job.messages),
    }


def scaling(args) -> None:
    import distributed

    from engine.distributed.shards import shard_stats

    logging.getLogger("distributed").setLevel(logging.ERROR)
    counts = sorted({int(g) for g in args.gpus.split(",")})
    listing = sh(["nvidia-smi", "-L"])
    say("nvidia-smi -L:\n" + listing)
    if args.backend == "cuda":
        gpus = sum(line.startswith("GPU ") for line in listing.splitlines())
        if any(n > gpus for n in counts):
            say(f"only {gpus} GPUs: worker counts above that are left out")
            counts = [n for n in counts if n <= gpus]
    say(f"python {sys.version.split()[0]}, distributed {distributed.__version__}")
    library, npz, queries = load_data(args)
    params = SearchParameters(
        mode="custom", tolerance=args.tolerance, threshold=args.threshold, top_n=args.top
    )
    pairs = len(queries) * len(library)
    say(f"library {len(library):,} spectra ({npz}), queries {len(queries):,}, pairs {pairs:.4e}")
    cores = os.cpu_count() or 1
    threads = max(1, cores // max(counts))
    refs = {}
    for t in [threads] if args.backend == "cuda" else sorted({threads, cores}):
        runs = [single_process(queries, library, params, args.backend, t) for _ in range(2)]
        sec, ref_hits, device = min(runs, key=lambda r: r[0])
        refs[t] = sec
        say(
            f"one process, {args.backend} ({device}): {sec:.2f} s (best of "
            f"{', '.join(f'{r[0]:.2f}' for r in runs)}), {pairs / sec:.3e} pairs/s, "
            f"{len(ref_hits)} hits"
        )
    t_ref = refs[threads]
    t0 = time.perf_counter()
    cluster = distributed.LocalCluster(
        n_workers=0, processes=True, dashboard_address=None, silence_logs=logging.ERROR
    )
    client = distributed.Client(cluster, set_as_default=False)
    procs: list[subprocess.Popen] = []
    rows: list[dict] = []
    log_dir = args.log_dir
    log_dir.mkdir(parents=True, exist_ok=True)
    try:
        for n in counts:
            if time.perf_counter() - t0 > args.deadline:
                say(f"deadline reached: {n} workers not run")
                break
            while len(procs) < n:
                procs.append(
                    start_worker(
                        cluster.scheduler_address, len(procs), threads, log_dir, args.task_threads
                    )
                )
            client.wait_for_workers(n, timeout=180)
            infos = client.run(worker_info, args.backend)
            say(f"\n== {n} worker(s), {threads} numba threads each")
            for addr, info in sorted(infos.items()):
                say(f"  {addr}: {info}")
            t = time.perf_counter()
            warm = queries.subset(np.arange(min(1024, len(queries))))
            _, _, job = timed_search(client, warm, library, params, npz, args.backend)
            say(
                f"  untimed search of {len(warm)} queries (loads the shards): "
                f"{time.perf_counter() - t:.1f} s, sources {job.shard_sources}"
            )
            for r in range(args.repeats):
                stats = client.run(shard_stats)
                sec, first, job = timed_search(client, queries, library, params, npz, args.backend)
                after = client.run(shard_stats)
                sent = {
                    k: sum(after[w][k] - stats[w][k] for w in after if w in stats)
                    for k in ("prepared", "received", "read")
                }
                same = identical(job.hits, ref_hits)
                per_worker = len(job.task_times) / n
                say(
                    f"  run {r + 1}: {sec:.2f} s, first hits {first:.2f} s, "
                    f"{len(job.task_times)} tasks ({per_worker:.1f} per worker), "
                    f"shard work during the run {sent}, identical {same}; "
                    f"cost model used: {job.task_cost.describe()}"
                )
                say(f"    timeline: {timeline(job, sec)}")
                rows.append(
                    {
                        "gpus": n,
                        "seconds": sec,
                        "first_s": first,
                        "tasks": len(job.task_times),
                        "hits": len(job.hits),
                        "identical": same,
                        "shard_work": sent,
                        "model": job.task_cost.describe(),
                    }
                )
        if args.kill_after > 0 and len(procs) >= 2:
            kill = kill_one_worker(args, client, procs, queries, library, params, npz, ref_hits)
            kill["best_without_s"] = min(
                (r["seconds"] for r in rows if r["gpus"] == len(procs)), default=float("nan")
            )
            rows.append(kill)
    finally:
        client.close()
        cluster.close()
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
    best = {}
    for row in rows:
        if not isinstance(row["gpus"], int):
            continue
        if row["gpus"] not in best or row["seconds"] < best[row["gpus"]]["seconds"]:
            best[row["gpus"]] = row
    unit = "GPUs" if args.backend == "cuda" else "workers"
    say(
        f"\n{len(queries):,} x {len(library):,} = {pairs:.4e} pairs, threshold {args.threshold}, "
        f"top {args.top}, tolerance {args.tolerance}, backend {args.backend}; one process "
        + ", ".join(f"{t} threads {s:.2f} s" for t, s in refs.items())
    )
    say(
        f"{unit:>7s} {'seconds':>8s} {'pairs/s':>10s} {'vs 1':>6s} {'effic.':>6s} "
        f"{'vs 1 proc':>9s} {'tasks':>5s} {'hits':>9s} identical?"
    )
    base = best[min(best)]["seconds"] if best else float("nan")
    for n, row in sorted(best.items()):
        sp = base / row["seconds"]
        say(
            f"{n:7d} {row['seconds']:8.2f} {pairs / row['seconds']:10.3e} {sp:6.2f} "
            f"{sp / n:6.0%} {t_ref / row['seconds']:9.2f} {row['tasks']:5d} {row['hits']:9d} "
            f"{row['identical']}"
        )
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "one_process": refs}, indent=1))


if __name__ == "__main__":
    from bench_dask_profile import main as profile_main

    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--library", default="massbank", help="massbank, scale or an .npz path")
    ap.add_argument(
        "--queries",
        type=int,
        default=None,
        help="queries (0: the library itself, all-vs-all); default: 0 for massbank, "
        "100,000 for scale; beyond 1,000: jittered copies of the MassBank queries",
    )
    ap.add_argument("--replicas", type=int, default=28, help="MassBank copies of --library scale")
    ap.add_argument("--jitter", type=float, default=0.002)
    ap.add_argument("--gpus", default="1,2,4", help="worker counts, e.g. 1,2,4")
    ap.add_argument("--backend", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--repeats", type=int, default=1, help="timed runs per worker count")
    ap.add_argument(
        "--task-threads", type=int, default=2, help="Dask task threads per worker (--nthreads)"
    )
    ap.add_argument("--threshold", type=float, default=0.7)
    ap.add_argument("--top", type=int, default=100)
    ap.add_argument("--tolerance", type=float, default=0.1)
    ap.add_argument(
        "--deadline", type=float, default=1e9, help="seconds; no new worker count after"
    )
    ap.add_argument(
        "--kill-after",
        type=float,
        default=0.0,
        help="seconds: with 2+ workers, one more search in which the last worker's "
        "process is killed this long after the start (hits must stay identical)",
    )
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--cache", type=Path, default=None, help="folder with massbank_ms2.npz")
    ap.add_argument("--work", type=Path, default=None, help="folder for the library file")
    ap.add_argument(
        "--log-dir", type=Path, default=Path(os.environ.get("OUT", "/tmp")), help="worker logs"
    )
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--profile",
        action="store_true",
        help="measure task costs on 2 CPU worker processes and predict the GPU runs",
    )
    ap.add_argument(
        "--gpu-one-process",
        type=float,
        default=1.61,
        help="--profile: one process on one GPU, all-vs-all MassBank (s; RESULTS.md)",
    )
    ap.add_argument(
        "--gpu-task-fixed",
        type=float,
        default=0.062,
        help="--profile: fixed seconds per task on a GPU worker (RESULTS.md: "
        "(2.29 - 1.61) s / 11 tasks)",
    )
    cli = ap.parse_args()
    if cli.profile:
        profile_main(cli)
    else:
        scaling(cli)
