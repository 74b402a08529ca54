"""GPU tile settings side by side: the scale library searched with several backend settings.

The library and queries are those of ``bench_gpu_scale.py`` (``--replicas`` jittered
copies of MassBank; ``--queries`` jittered copies of the 1,000 MassBank queries);
cosine, tolerance 0.1, threshold 0.7, top 100, no precursor window.  Each setting
gets a fresh :class:`~engine.backends.cuda.CudaBackend`, an untimed 16-query search
(upload, device peak indexes) and ``reps`` timed searches; the hits of every
setting must equal those of the first (same pairs, scores within 1e-9, same match
counts).  ``diag=1`` adds one search with the tiles run one at a time and timed
per kernel (CUDA events).

Settings are ``;``-separated lists of ``key=value``: ``rows``, ``cols`` (tile shape),
``depth`` (tiles in flight), ``work`` (``pair_work_max``), ``bthreads`` (bound-kernel
threads), ``reps``, ``diag``.  Run from the repository root on a machine with an
NVIDIA GPU::

    python benchmarks/bench_gpu_tiles.py --data DIR --queries 100000 \\
        --settings "reps=2;rows=4096,cols=32768,reps=2;rows=2048,cols=16384,reps=2"
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_gpu_prune import same_hits  # noqa: E402
from bench_scale import replicate  # noqa: E402

from engine.io import read_library  # noqa: E402
from engine.params import SearchParameters  # noqa: E402
from engine.search import SearchJob  # noqa: E402


def backend_for(setting: dict[str, str]):
    """A fresh CUDA backend with the setting's attributes."""
    from engine.backends.cuda import CudaBackend

    be = CudaBackend(
        depth=int(setting.get("depth", 3)),
        max_rows=int(setting["rows"]) if "rows" in setting else None,
        max_cols=int(setting["cols"]) if "cols" in setting else None,
    )
    if "work" in setting:
        be.pair_work_max = int(setting["work"])
    if "bthreads" in setting:
        be.bound_threads = int(setting["bthreads"])
    return be


def kernel_seconds(be, queries, library, params) -> str:
    """One more search, tiles one at a time: seconds per kernel, summed over tiles."""
    be.kernel_events = {}
    t = time.perf_counter()
    SearchJob(queries, library, params, backend=be).run()
    wall = time.perf_counter() - t
    ev, be.kernel_events = be.kernel_events, None
    spans = {
        b: sum(x.elapsed_time(y) for x, y in zip(ev[a], ev[b], strict=True)) / 1e3
        for a, b in (("start", "bound"), ("bound", "score"), ("score", "select"))
    }
    listed = sum(ev.get("listed", []))
    return (
        f"{len(ev['start'])} tiles one at a time {wall:.2f} s: "
        + ", ".join(f"{k} {v:.2f} s" for k, v in spans.items())
        + f", pairs listed {listed:,}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--replicas", type=int, default=28)
    ap.add_argument("--queries", type=int, default=20_000)
    ap.add_argument("--settings", default="reps=2")
    args = ap.parse_args()

    t = time.perf_counter()
    base = read_library(args.data / "massbank_ms2.mgf.gz")
    base_q = read_library(args.data / "massbank_ms2_queries.mgf.gz")
    library = replicate(base, args.replicas, 0.002, seed=1)
    copies = max(1, -(-args.queries // len(base_q)))
    queries = replicate(base_q, copies, 0.002, seed=2).subset(np.arange(args.queries))
    print(f"{len(queries):,} x {len(library):,} built in {time.perf_counter() - t:.1f} s")
    params = SearchParameters(mode="custom", tolerance=0.1, threshold=0.7, top_n=100)
    pairs = len(queries) * len(library)
    reference = None
    rows = []
    for text in args.settings.split(";"):
        setting = dict(kv.split("=") for kv in text.split(",") if kv)
        be = backend_for(setting)
        SearchJob(queries.subset(np.arange(16)), library, params, backend=be).run()
        times = []
        for _ in range(int(setting.get("reps", 1))):
            be.rescored_pairs = 0
            t = time.perf_counter()
            hits = SearchJob(queries, library, params, backend=be).run()
            times.append(time.perf_counter() - t)
        same = "reference" if reference is None else str(same_hits(hits, reference))
        reference = hits if reference is None else reference
        shape = f"{be.max_rows}x{be.max_cols}, depth {be.depth}, bound threads {be.bound_threads}"
        rows.append((text, shape, min(times), len(hits), be.rescored_pairs, same))
        print(
            f"{text:32s} {shape}: " + ", ".join(f"{s:.2f}" for s in times) + f" s, {len(hits):,} "
            f"hits, host-rescored {be.rescored_pairs:,}, same hits {same}",
            flush=True,
        )
        if setting.get("diag"):
            print("   " + kernel_seconds(be, queries, library, params), flush=True)
        del be
    print(f"\n{'setting':32s} {'tile, depth, threads':40s} {'best s':>7s} {'pairs/s':>10s}  same")
    for text, shape, sec, _, _, same in rows:
        print(f"{text:32s} {shape:40s} {sec:7.2f} {pairs / sec:10.3e}  {same}")


if __name__ == "__main__":
    main()
