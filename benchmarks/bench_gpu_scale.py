"""The seed's workload on one GPU: 100,000 queries × the 1.5 M-spectrum scale library.

The library is the scale benchmark's (:func:`bench_scale.replicate`: 28 copies of
MassBank, all but the first with m/z jitter and intensity noise, 1,522,920
spectra); the queries are ``--queries / 1000`` jittered copies of the 1,000
MassBank queries.  One search, cosine, tolerance 0.1 Da, threshold 0.7, top 100,
no precursor window (every pair is a candidate, as in the seed's benchmark),
streamed through :class:`~engine.search.SearchJob` on the CUDA backend with the
library already resident (an untimed search of 16 queries uploads it and builds
its device peak indexes).  Exactness: the hits of ``--check`` random queries,
taken from the timed run, equal those of the CPU backend searching the same
queries against the whole library (same pairs, scores within 1e-9, same match
counts).

Run from the repository root on a machine with an NVIDIA GPU::

    python benchmarks/bench_gpu_scale.py --data DIR [--queries 100000] [--json out.json]
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
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_gpu_prune import same_hits  # noqa: E402
from bench_scale import replicate  # noqa: E402

from engine.backends import CpuBackend  # noqa: E402
from engine.hits import HitTable  # noqa: E402
from engine.io import read_library  # noqa: E402
from engine.params import SearchParameters  # noqa: E402
from engine.search import SearchJob, make_resident  # noqa: E402


def diagnose(queries, library, params, be, path: Path) -> None:
    """One more search: seconds per kernel (summed over tiles) and a host profile."""
    import cProfile
    import io
    import pstats

    be.kernel_events = {}
    prof = cProfile.Profile()
    t = time.perf_counter()
    prof.enable()
    SearchJob(queries, library, params, backend=be).run()
    prof.disable()
    wall = time.perf_counter() - t
    ev, be.kernel_events = be.kernel_events, None
    spans = {}
    for a, b in (("start", "bound"), ("bound", "score"), ("score", "select")):
        spans[b] = sum(x.elapsed_time(y) for x, y in zip(ev[a], ev[b], strict=True)) / 1e3
    listed = sum(ev.get("listed", []))
    print(
        f"diagnosis ({len(ev['start'])} tiles run one at a time, {wall:.2f} s under the "
        "profiler): kernel seconds "
        + ", ".join(f"{k} {v:.2f}" for k, v in spans.items())
        + f"; pairs listed for scoring {listed:,} "
        f"({listed / (len(queries) * len(library)):.3%})",
        flush=True,
    )
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(25)
    path.write_text(buf.getvalue())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--replicas", type=int, default=28)
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--check", type=int, default=48, help="queries checked against the CPU")
    ap.add_argument("--tolerance", type=float, default=0.1)
    ap.add_argument("--threshold", type=float, default=0.7)
    ap.add_argument("--top", type=int, default=100)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--diagnose",
        type=Path,
        default=None,
        help="also time each kernel (CUDA events) and profile the host (cProfile) in one "
        "more search; the profile goes to this file",
    )
    ap.add_argument(
        "--work-max",
        default="",
        help="comma-separated CudaBackend.pair_work_max values to time first (e.g. 0,65536)",
    )
    ap.add_argument(
        "--gpu-pairs",
        action="store_true",
        help="first time one search with the flagged pairs scored on the GPU (CudaBackend."
        "pairs_on_gpu, v8) beside the default (the host's rescoring)",
    )
    ap.add_argument(
        "--repeat", type=int, default=1,
        help="time the search this many times (the first after warm_up against the next)",
    )  # fmt: skip
    args = ap.parse_args()

    from engine.backends import gpu_status
    from engine.backends.cuda import CudaBackend

    ok, dev = gpu_status()
    print("GPU:", ok, dev, flush=True)
    if not ok:
        raise SystemExit(1)
    t = time.perf_counter()
    base = read_library(args.data / "massbank_ms2.mgf.gz")
    base_q = read_library(args.data / "massbank_ms2_queries.mgf.gz")
    library = replicate(base, args.replicas, 0.002, seed=1)
    queries = replicate(base_q, max(1, args.queries // len(base_q)), 0.002, seed=2)
    print(
        f"library {len(library):,} spectra ({library.offsets[-1]:,} peaks), "
        f"queries {len(queries):,}; built in {time.perf_counter() - t:.1f} s",
        flush=True,
    )
    params = SearchParameters(
        mode="custom", tolerance=args.tolerance, threshold=args.threshold, top_n=args.top
    )
    be = CudaBackend()
    t = time.perf_counter()
    be.warm_up()  # every kernel compiled (or loaded from numba's cache), as the app does
    print(f"kernels compiled or loaded: {time.perf_counter() - t:.1f} s", flush=True)
    t = time.perf_counter()
    warm = SearchJob(queries.subset(np.arange(16)), library, params, backend=be)
    warm.run()
    if warm.messages:
        raise SystemExit(f"the GPU search did not run on the GPU alone: {warm.messages}")
    print(f"untimed warm-up search (upload, peak indexes): {time.perf_counter() - t:.1f} s")

    default_work = be.pair_work_max
    for value in [int(v) for v in args.work_max.split(",") if v.strip()]:
        be.pair_work_max, before = value, be.rescored_pairs
        t = time.perf_counter()
        n = sum(len(c) for c in SearchJob(queries, library, params, backend=be))
        print(
            f"pair_work_max {value}: {time.perf_counter() - t:.2f} s, {n:,} hits, "
            f"rescored on the host {be.rescored_pairs - before:,}",
            flush=True,
        )
    be.pair_work_max, be.rescored_pairs = default_work, 0
    if args.gpu_pairs:
        be.pairs_on_gpu, be.gpu_scored_pairs = True, 0
        t, cpu = time.perf_counter(), time.process_time()
        n = sum(len(c) for c in SearchJob(queries, library, params, backend=be))
        print(
            f"flagged pairs on the GPU (v8): {time.perf_counter() - t:.2f} s, {n:,} hits, "
            f"scored on the GPU {be.gpu_scored_pairs:,}, rescored on the host "
            f"{be.rescored_pairs:,}, host CPU {time.process_time() - cpu:.1f} s",
            flush=True,
        )
        be.pairs_on_gpu, be.rescored_pairs = False, 0
    for repeat in range(args.repeat):  # the first one: the first large search after warm_up
        be.gpu_scored_pairs = be.floored_pairs = be.rescored_pairs = 0
        t, cpu = time.perf_counter(), time.process_time()
        job = SearchJob(queries, library, params, backend=be)
        chunks, first = [], None
        for chunk in job:
            if first is None and len(chunk):
                first = time.perf_counter() - t
            chunks.append(chunk)
        seconds = time.perf_counter() - t
        cpu_s = time.process_time() - cpu
        if args.repeat > 1:
            print(f"search {repeat + 1} of {args.repeat}: {seconds:.2f} s", flush=True)
    hits = HitTable.concat(chunks)
    pairs = len(queries) * len(library)
    print(
        f"search: {seconds:.2f} s, {pairs / seconds:.3e} pairs/s, first hits {first:.2f} s, "
        f"{len(hits):,} hits, rescored pairs {be.rescored_pairs:,}, flagged on the GPU "
        f"{be.gpu_scored_pairs:,}, bounded by a top-N floor {be.floored_pairs:,}, host CPU "
        f"{cpu_s:.1f} s, "
        f"messages {job.messages}",
        flush=True,
    )
    if job.messages:
        raise SystemExit("the GPU search did not run on the GPU alone")

    rng = np.random.default_rng(7)
    pick = np.sort(rng.choice(len(queries), args.check, replace=False))
    t = time.perf_counter()
    cpu = SearchJob(queries.subset(pick), library, params, backend=CpuBackend()).run()
    cpu_s = time.perf_counter() - t
    mine = hits.take(np.isin(hits.query_index, pick))
    mine = HitTable.from_arrays(
        np.searchsorted(pick, mine.query_index), mine.library_index, mine.score, mine.matches
    )
    same, diff, mism = same_hits(mine, cpu)
    print(
        f"check {args.check} queries vs CPU ({cpu_s:.1f} s): {len(cpu)} hits, same {same}, "
        f"max|diff| {diff:.2e}, match mismatches {mism}",
        flush=True,
    )
    # the identity search of bench_scale.py: 100 queries against the resident library
    identity = SearchParameters(top_n=10)
    t = time.perf_counter()
    make_resident(library, identity, backend=be)  # as an app does once the library is loaded
    print(f"library made resident for identity searches: {time.perf_counter() - t:.3f} s")
    for n, label in enumerate(("first search", "second search", "third search")):
        # new queries each time (their precursor windows' peak indexes are built in each)
        q100 = base_q.subset(np.arange(100 * n, 100 * (n + 1)))
        t = time.perf_counter()
        first_id, n_id = None, 0
        for chunk in SearchJob(q100, library, identity, backend=be):
            if first_id is None and len(chunk):
                first_id = time.perf_counter() - t
            n_id += len(chunk)
        print(
            f"100 queries, identity, {label}: {time.perf_counter() - t:.3f} s, first hits "
            f"{first_id if first_id is not None else float('nan'):.3f} s, {n_id} hits",
            flush=True,
        )
    if args.diagnose:
        diagnose(queries, library, params, be, args.diagnose)
    print("\nrun                                 pairs   seconds    pairs/s  first hits       hits")
    label = f"{len(queries):,} x {len(library):,}"
    print(f"{label:30s} {pairs:10.3e} {seconds:9.2f} {pairs / seconds:10.3e} {first:10.2f} "
          f"{len(hits):10d}")  # fmt: skip
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "device": dev,
                    "queries": len(queries),
                    "library": len(library),
                    "seconds": seconds,
                    "first_hits_s": first,
                    "hits": len(hits),
                    "check": {
                        "queries": args.check,
                        "same": same,
                        "max_diff": diff,
                        "mismatches": mism,
                    },
                },  # fmt: skip
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
