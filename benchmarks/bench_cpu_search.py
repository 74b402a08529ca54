"""CPU search through ``SearchJob`` (exact bound pruning): seconds and hits, across trees.

Queries are every ``--every``-th MassBank library spectrum, searched against the
whole library (cosine, top 100) at two settings; each time is the best of
``--repeats``.  ``--save DIR`` writes each setting's hits, ``--compare DIR``
checks them against those saved by another tree (e.g. before a kernel change)::

    python benchmarks/bench_cpu_search.py --save BEFORE_DIR      # on the old tree
    python benchmarks/bench_cpu_search.py --compare BEFORE_DIR   # on the new one
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.io import read_library  # noqa: E402
from engine.params import SearchParameters  # noqa: E402
from engine.search import SearchJob  # noqa: E402

SETTINGS = {"thr 0.7, tol 0.1": (0.7, 0.1), "thr 0.5, tol 0.5": (0.5, 0.5)}
COLUMNS = ("query_index", "library_index", "score", "matches")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--save", type=Path, default=None)
    ap.add_argument("--compare", type=Path, default=None)
    args = ap.parse_args()
    library = read_library(args.data / "massbank_ms2.mgf.gz")
    queries = library.subset(np.arange(0, len(library), args.every))
    rows = []
    for name, (threshold, tolerance) in SETTINGS.items():
        params = SearchParameters(
            mode="custom", tolerance=tolerance, threshold=threshold, top_n=100
        )
        SearchJob(queries.subset(np.arange(20)), library, params, backend="cpu").run()
        best, hits = float("inf"), None
        for _ in range(args.repeats):
            t = time.perf_counter()
            hits = SearchJob(queries, library, params, backend="cpu").run()
            best = min(best, time.perf_counter() - t)
        file = name.replace(" ", "").replace(",", "_") + ".npz"
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            np.savez(args.save / file, **{c: getattr(hits, c) for c in COLUMNS})
        same = "-"
        if args.compare:
            with np.load(args.compare / file) as saved:
                same = str(all(np.array_equal(saved[c], getattr(hits, c)) for c in COLUMNS))
        rows.append((name, best, len(hits), same))
    pairs = len(queries) * len(library)
    print(f"{len(queries):,} queries x {len(library):,} spectra, top 100, CPU backend")
    print(f"{'setting':18s} {'seconds':>8s} {'pairs/s':>10s} {'hits':>8s} same as saved")
    for name, sec, n, same in rows:
        print(f"{name:18s} {sec:8.2f} {pairs / sec:10.3e} {n:8d} {same}")


if __name__ == "__main__":
    main()
