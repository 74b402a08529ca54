"""The GPU's exact upper-bound pruning: hits equal to the CPU backend's, and the speed-up.

For each run the hits of the bound-pruned GPU search (``CudaBackend()``: the
bound kernel lists the pairs that pass, only they are scored), of its variant
that leaves the bounds in the score buffer (``list_survivors = False``: the
score kernel visits every pair), of the unpruned GPU search
(``CudaBackend(bound_prune=False)``, the heavy-peak prefilter only, as v3b) and
of the CPU backend are compared (same (query, library) pairs, same match
counts, scores within 1e-9), then the three GPU paths are timed
(best of ``--repeat`` runs after one warm-up run that also builds the device
peak indexes) and one table is printed: seconds, pairs/s, and how many pairs
passed the bound (counted in a separate, untimed run).

Runs (cosine, tolerance 0.1, threshold 0.7, top 100, through ``SearchJob``):

a. all-vs-all of the MassBank library (54,390²);
b. the 1,000 MassBank queries against the library.

Run from the repository root on a machine with an NVIDIA GPU::

    python benchmarks/bench_gpu_prune.py --data DIR [--json out.json]

``DIR`` holds ``massbank_ms2.mgf.gz`` and ``massbank_ms2_queries.mgf.gz`` (read
with :func:`engine.io.read_library`, which needs pyteomics).  ``--smoke`` runs
the same code on 40 spectra (for the CUDA simulator:
``NUMBA_ENABLE_CUDASIM=1 python benchmarks/bench_gpu_prune.py --smoke``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.backends import CpuBackend  # noqa: E402
from engine.hits import HitTable  # noqa: E402
from engine.io import read_library  # noqa: E402
from engine.library import SpectrumLibrary  # noqa: E402
from engine.params import SearchParameters  # noqa: E402
from engine.search import SearchJob  # noqa: E402


def same_hits(a: HitTable, b: HitTable) -> tuple[bool, float, int]:
    """Same (query, library) pairs?, max |score difference|, match-count mismatches."""
    a, b = a.sorted(), b.sorted()
    ka = np.lexsort((a.library_index, a.query_index))
    kb = np.lexsort((b.library_index, b.query_index))
    if len(a) != len(b):
        return False, float("nan"), -1
    pairs = np.array_equal(a.query_index[ka], b.query_index[kb]) and np.array_equal(
        a.library_index[ka], b.library_index[kb]
    )
    if not pairs:
        return False, float("nan"), -1
    diff = float(np.abs(a.score[ka] - b.score[kb]).max(initial=0.0))
    return diff <= 1e-9, diff, int(np.count_nonzero(a.matches[ka] != b.matches[kb]))


def gpu_run(queries, library, params, backend) -> HitTable:
    """One search on ``backend``; stops the benchmark if it fell back to the CPU."""
    job = SearchJob(queries, library, params, backend=backend)
    hits = job.run()
    if job.backend is not backend:
        raise SystemExit(f"the GPU search fell back to the CPU: {job.messages}")
    return hits


def timed_search(
    queries: SpectrumLibrary, library: SpectrumLibrary, params: SearchParameters, backend, n: int
) -> tuple[HitTable, list[float]]:
    """Hits of one run and the seconds of ``n`` more (after that warm-up run)."""
    hits = gpu_run(queries, library, params, backend)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        gpu_run(queries, library, params, backend)
        times.append(time.perf_counter() - t)
    return hits, times


def survivors(queries, library, params, backend) -> int:
    """Pairs that pass the bound (one more, untimed run with counting on)."""
    backend.count_bound_survivors = True
    backend.reset_bound_survivors()
    try:
        gpu_run(queries, library, params, backend)
        return backend.bound_survivors
    finally:
        backend.count_bound_survivors = False


def run(
    label: str, queries, library, params, backends: dict, cpu_check: bool, repeat: int
) -> tuple[list[tuple], list[tuple]]:
    """Check and time one run; returns (table rows, exactness rows)."""
    pairs = len(queries) * len(library)
    results = {}
    for name, be in backends.items():
        hits, times = timed_search(queries, library, params, be, repeat)
        results[name] = (hits, times)
        print(f"{label} {name}: {[round(t, 3) for t in times]} s, {len(hits)} hits", flush=True)
    checks = []
    pruned_hits = results["pruned"][0]
    others = [("unpruned GPU", results["unpruned"][0]), ("buffer GPU", results["buffer"][0])]
    if cpu_check:
        t = time.perf_counter()
        cpu_hits = SearchJob(queries, library, params, backend=CpuBackend()).run()
        print(f"{label} cpu: {time.perf_counter() - t:.1f} s, {len(cpu_hits)} hits", flush=True)
        others.append(("CPU", cpu_hits))
    for other, hits in others:
        ok, diff, mism = same_hits(pruned_hits, hits)
        checks.append((f"{label}: pruned GPU vs {other}", len(hits), ok and mism == 0, diff, mism))
    passed = survivors(queries, library, params, backends["pruned"])
    rows = []
    for name, (hits, times) in results.items():
        best = min(times)
        kept = pairs if name == "unpruned" else passed
        rows.append((label, name, pairs, best, pairs / best, kept, len(hits)))
    return rows, checks


def main() -> None:
    """Check, time and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per path (best is shown)")
    ap.add_argument("--smoke", action="store_true", help="40 spectra (CUDA simulator)")
    ap.add_argument("--skip-a", action="store_true", help="skip the all-vs-all run")
    ap.add_argument(
        "--skip-cpu-a", action="store_true", help="no CPU reference for the all-vs-all run"
    )
    args = ap.parse_args()

    from engine.backends import gpu_status
    from engine.backends.cuda import CudaBackend

    ok, dev = gpu_status()
    print("GPU:", ok, dev, flush=True)
    if not ok:
        raise SystemExit(1)
    small = {"threads": 32, "select_threads": 32} if args.smoke else {}
    backends = {
        "pruned": CudaBackend(**small),  # surviving pairs listed, only they are scored
        "buffer": CudaBackend(**small),  # bounds in the score buffer, every pair visited
        "unpruned": CudaBackend(bound_prune=False, **small),
    }
    backends["buffer"].list_survivors = False
    if args.smoke:
        for be in backends.values():
            be.bound_threads = 32
    t = time.perf_counter()
    for be in backends.values():
        be.warm_up()
    print(f"warm_up (compile or cache load): {time.perf_counter() - t:.1f} s", flush=True)

    t = time.perf_counter()
    if args.smoke:
        lib = read_library(args.data / "massbank_ms2_queries.mgf.gz").subset(np.arange(40))
        qry = lib.subset(np.arange(0, 40, 4))
        args.repeat = 1
    else:
        lib = read_library(args.data / "massbank_ms2.mgf.gz")
        qry = read_library(args.data / "massbank_ms2_queries.mgf.gz")
    print(f"loaded {len(lib)} + {len(qry)} spectra in {time.perf_counter() - t:.1f} s")
    params = SearchParameters(mode="custom", tolerance=0.1, threshold=0.7, top_n=100)
    rows: list[tuple] = []
    checks: list[tuple] = []
    if not args.skip_a:
        r, c = run("a all-vs-all", lib, lib, params, backends, not args.skip_cpu_a, args.repeat)
        rows += r
        checks += c
    r, c = run("b queries x library", qry, lib, params, backends, True, args.repeat)
    rows += r
    checks += c

    print()
    print(f"device: {dev}; cosine, tolerance 0.1, threshold 0.7, top 100")
    head = f"{'run':22s} {'GPU path':9s} {'pairs':>10s} {'seconds':>8s} {'pairs/s':>10s}"
    print(f"{head} {'passed bound':>13s} {'share':>7s} {'hits':>9s}")
    for label, name, pairs, sec, rate, kept, nh in rows:
        print(
            f"{label:22s} {name:9s} {pairs:10.3e} {sec:8.3f} {rate:10.3e} {kept:13d} "
            f"{kept / pairs:7.2%} {nh:9d}"
        )
    print()
    print(f"{'exactness check':48s} {'hits':>9s} {'same':>5s} {'max|diff|':>10s} {'mism.':>6s}")
    for label, nh, same, diff, mism in checks:
        print(f"{label:48s} {nh:9d} {'yes' if same else 'NO':>5s} {diff:10.2e} {mism:6d}")
    if args.json:
        args.json.write_text(
            json.dumps({"device": dev, "rows": rows, "checks": checks}, indent=1, default=str)
        )
    if not all(same for _, _, same, _, _ in checks):
        raise SystemExit("GPU hits differ")


if __name__ == "__main__":
    main()
