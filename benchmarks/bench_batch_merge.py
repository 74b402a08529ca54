"""Host merge of a GPU batch: the device's final top-N with the host-rescored pairs.

A batch shaped like the all-vs-all MassBank search on the GPU (54,390 queries, each
with up to 100 device hits, about 2.95 M rows, plus 54,546 host-rescored pairs over
random queries; synthetic values, the merge reads only indexes and scores) is merged
by ``merge_batch_hits`` (only the queries over their top-N selected again) and by
one full selection of all rows (what it did before); both must give the same hits.

Run from the repository root::

    python benchmarks/bench_batch_merge.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.backends.rescore import merge_batch_hits  # noqa: E402
from engine.hits import HitTable  # noqa: E402
from engine.params import SearchParameters  # noqa: E402


def batch(seed: int = 0, n_queries: int = 54_390, rescored: int = 54_546, top_n: int = 100):
    """The device's finals (at most ``top_n`` a query) and the rescored pairs' hits."""
    rng = np.random.default_rng(seed)
    per = np.minimum(rng.geometric(1 / 70, n_queries), top_n)
    q = np.repeat(np.arange(n_queries), per)
    device = HitTable.from_arrays(
        q, rng.integers(0, n_queries, len(q)), rng.uniform(0.7, 1, len(q)),
        rng.integers(1, 50, len(q)),
    )  # fmt: skip
    extra = HitTable.from_arrays(
        rng.integers(0, n_queries, rescored), rng.integers(0, n_queries, rescored),
        rng.uniform(0.7, 1, rescored), rng.integers(1, 50, rescored),
    )  # fmt: skip
    return [device, extra]


def best(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    parts = batch()
    params = SearchParameters(mode="custom", threshold=0.7, top_n=100)
    ranks = np.arange(54_390)
    got = merge_batch_hits(parts, params, False, ranks)
    full = HitTable.concat(parts).top_per_query(params.top_n, library_rank=ranks)
    same = all(
        np.array_equal(getattr(got.sorted(), c), getattr(full.sorted(), c))
        for c in HitTable.columns()
    )
    rows = sum(len(p) for p in parts)
    t_new = best(lambda: merge_batch_hits(parts, params, False, ranks), args.repeat)
    t_full = best(
        lambda: HitTable.concat(parts).top_per_query(params.top_n, library_rank=ranks),
        args.repeat,
    )
    print(f"{rows:,} rows in, {len(got):,} hits out, same hits: {same}")
    print(f"| merge | seconds (best of {args.repeat}) |")
    print("|---|---|")
    print(f"| one full selection (before) | {t_full:.4f} |")
    print(f"| only the queries over their top-N (`merge_batch_hits`) | {t_new:.4f} |")


if __name__ == "__main__":
    main()
