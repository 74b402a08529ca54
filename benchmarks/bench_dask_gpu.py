"""Dask scale-out benchmark: the all-vs-all search on 1 GPU vs N GPUs, one worker per GPU.

Starts a scheduler in this process (``LocalCluster(n_workers=0)``) and one
``dask worker`` subprocess per GPU with ``CUDA_VISIBLE_DEVICES=<i>`` (so each
worker really sees only its own GPU; dask-cuda is not needed), then for
``n = 1, 2, ...`` workers:

1. starts worker ``n - 1`` (cluster start, timed apart);
2. compiles or loads the kernels on it (``warm_up``, timed apart) and reports
   which GPU each worker holds (``CUDA_VISIBLE_DEVICES``, PCI bus id, UUID, and
   ``nvidia-smi --query-compute-apps`` by worker pid);
3. runs a small untimed search (64 queries × the whole library) so the shards
   are loaded from the library file and uploaded to the GPUs;
4. times the full search (``DaskSearchJob``, library read by the workers from
   ``<cache>/massbank_ms2.npz``) and checks its hits column by column against
   a single-process ``SearchJob`` on the same backend, run first in this
   process (its time is reported too).

Prints one table: workers (GPUs), seconds, pairs/s, speed-up and efficiency
against one worker, hits, identical?.  Run from the repository root::

    python3 benchmarks/bench_dask_gpu.py --cache .ext --gpus 2
    python3 benchmarks/bench_dask_gpu.py --cache .ext --backend cpu --gpus 2 --queries 500 \
        --library-every 20            # a CPU check of the logic, no GPU needed
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

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


def worker_info(backend: str) -> dict:
    """On a worker: warm the backend up and tell which device it uses."""
    import os
    import time

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
        info["numba_device_id"] = d.id
        try:
            info["pci"] = f"{d.PCI_DOMAIN_ID:08x}:{d.PCI_BUS_ID:02x}:{d.PCI_DEVICE_ID:02x}.0"
        except Exception as exc:  # noqa: BLE001
            info["pci"] = f"? ({exc})"
        info["uuid"] = str(getattr(d, "uuid", "?"))
    return info


def start_worker(address: str, i: int, args, threads: int, log_dir: Path) -> subprocess.Popen:
    """One ``dask worker`` process (1 task thread) that sees only GPU ``i``."""
    env = dict(os.environ)
    env["CUDA_VISIBLE_DEVICES"] = str(i)
    env["NUMBA_NUM_THREADS"] = str(threads)
    env["OMP_NUM_THREADS"] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    env["PYTHONUNBUFFERED"] = "1"
    cmd = [
        sys.executable, "-m", "distributed.cli.dask_worker", address,
        "--nworkers", "1", "--nthreads", "1", "--name", f"gpu{i}",
        "--memory-limit", "0", "--no-dashboard", "--death-timeout", "120",
    ]  # fmt: skip
    log = open(log_dir / f"worker{i}.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(cmd, env=env, cwd=str(ROOT), stdout=log, stderr=subprocess.STDOUT)


def identical(a, b) -> bool:
    return len(a) == len(b) and all(
        np.array_equal(getattr(a, c), getattr(b, c)) for c in a.columns()
    )


def score_task_one_merge(shard, block, params, backend):
    """``engine.distributed.shards.score_task`` with one top-N merge per task.

    The committed task merges its running top-N with each library batch's hits
    (``concat`` + ``top_per_query`` once per batch: ~27 growing merges per task on
    the all-vs-all); this variant maps all batches' hits and merges them once, as
    ``SearchJob._emit`` does.  Same hits (top-N of the union); only for ``--one-merge``.
    """
    import dataclasses

    from engine.backends import Batch, CpuBackend
    from engine.distributed import shards as d
    from engine.hits import HitTable
    from engine.search import library_window

    library, queries = shard.spectra, block.spectra
    if params.precursor_tolerance is None:
        l_lo, l_hi = 0, len(library)
        kernel_params = params
    else:
        l_lo, l_hi = library_window(queries.precursor_mz, library.precursor_mz, params)
        kernel_params = dataclasses.replace(params, top_n=0)
    size = params.batch_size
    batches = [Batch(0, len(queries), l0, min(l0 + size, l_hi)) for l0 in range(l_lo, l_hi, size)]
    engine_backend, notes = d.worker_backend(backend)
    notes = list(notes)
    with d.KERNEL_LOCK:
        try:
            items = list(engine_backend.run_batches(queries, library, batches, kernel_params))
        except Exception as exc:
            if isinstance(engine_backend, CpuBackend):
                raise
            notes.append(f"{engine_backend.name} backend failed on a worker ({exc})")
            cpu = CpuBackend()
            items = [(b, cpu.score_batch(queries, library, b, kernel_params)) for b in batches]
    mapped = [
        HitTable(
            block.global_index[h.query_index],
            shard.global_index[h.library_index],
            h.score,
            h.matches,
        )
        for _, h in items
    ]
    return HitTable.concat(mapped).top_per_query(params.top_n), shard.source, notes


def set_score_task(variant: str) -> str:
    """On a worker (and here): use the committed task or the one-merge variant."""
    from engine.distributed import job as d

    if not hasattr(d, "score_task_committed"):
        d.score_task_committed = d.score_task
    d.score_task = d.score_task_committed if variant == "as-is" else score_task_one_merge
    return d.score_task.__name__


def timed_runs(
    client, queries, lib, params, npz, args, pairs, t_start, variant, DaskSearchJob, distributed
):
    """``args.repeats`` timed searches (fewer past the deadline): times, last hits, first-hit s."""
    times, hits, first = [], None, None
    for r in range(args.repeats):
        if r and time.perf_counter() - t_start > args.deadline:
            say("  deadline reached: no more repeats")
            break
        t = time.perf_counter()
        with distributed.get_task_stream(client) as ts:
            job = DaskSearchJob(
                queries, lib, params, client=client, backend=args.backend, library_path=npz
            )
            first = None
            for _chunk in job:
                if first is None:
                    first = time.perf_counter() - t
            hits = job.hits
        sec = time.perf_counter() - t
        times.append(sec)
        per_worker: dict[str, list[float]] = {}
        for task in ts.data:
            if "simms-score" not in str(task.get("key")):
                continue
            busy = sum(
                s["stop"] - s["start"] for s in task["startstops"] if s["action"] == "compute"
            )
            per_worker.setdefault(task["worker"], []).append(busy)
        load = {k: (len(v), round(sum(v), 2)) for k, v in sorted(per_worker.items())}
        say(
            f"  {variant} run {r + 1}: {sec:.2f} s, {pairs / sec:.3e} pairs/s, first hits "
            f"{first:.2f} s, {len(hits)} hits, tasks {job.tasks_done}, (tasks, compute s) "
            f"per worker {load}, messages {job.messages}"
        )
    return times, hits, first


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=ROOT / ".ext")
    ap.add_argument("--gpus", type=int, default=2, help="largest number of workers (GPUs)")
    ap.add_argument("--backend", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument(
        "--queries",
        type=int,
        default=0,
        help="first N library spectra as queries (0: all, i.e. all-vs-all)",
    )
    ap.add_argument(
        "--library-every", type=int, default=1, help="use every k-th library spectrum (CPU checks)"
    )
    ap.add_argument("--repeats", type=int, default=1, help="timed runs per worker count")
    ap.add_argument("--threshold", type=float, default=0.7)
    ap.add_argument("--top", type=int, default=100)
    ap.add_argument("--tolerance", type=float, default=0.1)
    ap.add_argument(
        "--deadline",
        type=float,
        default=1e9,
        help="seconds after which no further repeat or variant is started",
    )
    ap.add_argument(
        "--one-merge",
        action="store_true",
        help="also time a variant of the worker task with one top-N merge per task "
        "(patched in memory; engine/distributed/ is not changed)",
    )
    ap.add_argument("--log-dir", type=Path, default=Path(os.environ.get("OUT", "/tmp")))
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    t_start = time.perf_counter()
    args.log_dir.mkdir(parents=True, exist_ok=True)

    import distributed

    logging.getLogger("distributed").setLevel(logging.ERROR)
    from engine.distributed import DaskSearchJob

    say("nvidia-smi -L:\n" + sh(["nvidia-smi", "-L"]))
    say(
        f"python {sys.version.split()[0]}, distributed {distributed.__version__}, "
        f"numpy {np.__version__}"
    )

    # ------------------------------------------------------------------ data
    npz = (args.cache / "massbank_ms2.npz").resolve()
    lib = SpectrumLibrary.load(npz)
    if args.library_every > 1:
        lib = lib.subset(np.arange(0, len(lib), args.library_every))
        npz = args.log_dir.resolve() / "library_subset.npz"
        lib.save(npz)
        lib = SpectrumLibrary.load(npz)
    queries = lib if args.queries <= 0 else lib.subset(np.arange(min(args.queries, len(lib))))
    params = SearchParameters(
        mode="custom", tolerance=args.tolerance, threshold=args.threshold, top_n=args.top
    )
    pairs = len(queries) * len(lib)
    say(
        f"library {len(lib)} spectra ({npz}), queries {len(queries)}, pairs {pairs:.4e}, "
        f"{params.to_dict()}"
    )
    report: dict = {"pairs": pairs, "queries": len(queries), "library": len(lib)}

    # ------------------------------------------------ single-process reference
    from engine.backends import get_backend

    t = time.perf_counter()
    be = get_backend(args.backend)
    if hasattr(be, "warm_up"):
        be.warm_up()
    # a small search compiles what warm_up() does not (the host-side top-N merge,
    # engine/hits.py): without it the first full search pays that JIT
    SearchJob(queries.subset(np.arange(min(64, len(queries)))), lib, params, backend=be).run()
    report["reference_warm_up_s"] = time.perf_counter() - t
    say(f"single process: {be.name} on {be.device}, warm-up {report['reference_warm_up_s']:.1f} s")
    t = time.perf_counter()
    job = SearchJob(queries, lib, params, backend=be)
    reference = job.run()
    t_ref = time.perf_counter() - t
    say(
        f"single process {args.backend}: {t_ref:.2f} s, {pairs / t_ref:.3e} pairs/s, "
        f"{len(reference)} hits, messages {job.messages}"
    )
    report["single_process_s"] = t_ref
    report["single_process_hits"] = len(reference)
    if hasattr(be, "close"):
        be.close()  # the workers have the GPUs to themselves from here
    del be

    # ---------------------------------------------------------------- cluster
    cores = os.cpu_count() or 1
    threads = max(1, cores // args.gpus)
    t = time.perf_counter()
    cluster = distributed.LocalCluster(
        n_workers=0, processes=True, dashboard_address=None, silence_logs=logging.ERROR
    )
    client = distributed.Client(cluster, set_as_default=False)
    report["scheduler_start_s"] = time.perf_counter() - t
    say(
        f"scheduler {cluster.scheduler_address} started in {report['scheduler_start_s']:.1f} s; "
        f"{threads} numba threads per worker"
    )
    procs: list[subprocess.Popen] = []
    rows = []
    results = {}
    try:
        for n in range(1, args.gpus + 1):
            t = time.perf_counter()
            procs.append(
                start_worker(cluster.scheduler_address, n - 1, args, threads, args.log_dir)
            )
            client.wait_for_workers(n, timeout=180)
            start_s = time.perf_counter() - t
            t = time.perf_counter()
            infos = client.run(worker_info, args.backend)
            warm_s = time.perf_counter() - t
            say(
                f"\n== {n} worker(s): worker {n - 1} up in {start_s:.1f} s; "
                f"warm-up on all workers {warm_s:.1f} s"
            )
            for addr, info in sorted(infos.items()):
                say(f"  {addr}: {info}")
            if args.backend == "cuda" and n > 1:
                seen = {i.get("pci") for i in infos.values()} | {
                    i.get("uuid") for i in infos.values()
                }
                if len({i.get("pci") for i in infos.values()}) != n:
                    say(f"  WARNING: workers do not see {n} different GPUs: {seen}")
            # shards loaded from the library file and uploaded: untimed
            t = time.perf_counter()
            w = DaskSearchJob(
                queries.subset(np.arange(min(64, len(queries)))),
                lib,
                params,
                client=client,
                backend=args.backend,
                library_path=npz,
            )
            w.run()
            load_s = time.perf_counter() - t
            say(
                f"  shard load + upload (64-query search): {load_s:.1f} s, "
                f"sources {w.shard_sources}, messages {w.messages}"
            )
            apps = (
                sh(
                    [
                        "nvidia-smi",
                        "--query-compute-apps=pid,gpu_bus_id,used_memory",
                        "--format=csv,noheader",
                    ]
                )
                if args.backend == "cuda"
                else ""
            )
            if apps:
                say(
                    "  nvidia-smi compute apps (pid, bus, memory):\n    "
                    + apps.replace("\n", "\n    ")
                )
            variants = ["as-is"] + (["one-merge"] if args.one_merge else [])
            for variant in variants:
                if variant != "as-is" and time.perf_counter() - t_start > args.deadline:
                    say(f"  deadline reached: variant {variant} skipped")
                    continue
                client.run(set_score_task, variant)
                set_score_task(variant)
                times, hits, first = timed_runs(
                    client,
                    queries,
                    lib,
                    params,
                    npz,
                    args,
                    pairs,
                    t_start,
                    variant,
                    DaskSearchJob,
                    distributed,
                )
                client.run(set_score_task, "as-is")
                set_score_task("as-is")
                same = identical(hits, reference)
                results[(variant, n)] = hits
                same_1 = identical(hits, results[(variant, 1)])
                say(
                    f"  {variant}, {n} worker(s): identical to the single-process hits: {same}; "
                    f"to the 1-worker Dask hits: {same_1}"
                )
                rows.append(
                    {
                        "variant": variant,
                        "workers": n,
                        "seconds": min(times),
                        "all_seconds": times,
                        "first_hits_s": first,
                        "hits": len(hits),
                        "identical_to_single_process": same,
                        "identical_to_1_worker": same_1,
                        "worker_start_s": start_s,
                        "warm_up_s": warm_s,
                        "shard_load_s": load_s,
                        "workers_info": list(infos.values()),
                        "gpu_apps": apps,
                    }
                )
    finally:
        try:
            client.close()
            cluster.close()
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()

    # ------------------------------------------------------------------ table
    report["rows"] = rows
    say("")
    say(
        f"search {len(queries):,} x {len(lib):,} = {pairs:.4e} pairs, threshold "
        f"{params.threshold}, top {params.top_n}, tolerance {params.tolerance}, "
        f"backend {args.backend}"
    )
    say(
        f"single process SearchJob: {t_ref:.2f} s, {pairs / t_ref:.3e} pairs/s, "
        f"{len(reference)} hits (reference)"
    )
    say(
        f"{'worker task':12s} {'GPUs':>4s} {'seconds':>8s} {'pairs/s':>10s} {'speed-up':>8s} "
        f"{'efficiency':>10s} {'vs 1 proc':>9s} {'hits':>9s} {'identical?':>10s}"
    )
    for row in rows:
        base = next(
            r["seconds"] for r in rows if r["variant"] == row["variant"] and r["workers"] == 1
        )
        sp = base / row["seconds"]
        ok = row["identical_to_single_process"] and row["identical_to_1_worker"]
        say(
            f"{row['variant']:12s} {row['workers']:4d} {row['seconds']:8.2f} "
            f"{pairs / row['seconds']:10.3e} {sp:8.2f} {sp / row['workers']:10.0%} "
            f"{t_ref / row['seconds']:9.2f} {row['hits']:9d} {str(ok):>10s}"
        )
    say(
        f"(not timed: scheduler start {report['scheduler_start_s']:.1f} s; per worker count: "
        + "; ".join(
            f"{r['workers']}: worker start {r['worker_start_s']:.1f} s, warm-up "
            f"{r['warm_up_s']:.1f} s, shard load {r['shard_load_s']:.1f} s"
            for r in rows
            if r["variant"] == "as-is"
        )
        + ")"
    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
