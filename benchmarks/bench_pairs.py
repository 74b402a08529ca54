"""Exact pair scoring on the CPU: microseconds per pair of the greedy cores.

Times :func:`engine.kernels.dense.score_listed_pairs` (one thread, the host
rescoring's and the CPU backend's pair core) on MassBank pair sets, cosine and
modified cosine at 0.1 Da, and prints one table with a checksum of the scores
and matches (equal checksums across versions: the same scores).  The long pairs
are where the GPU backend hands its flagged pairs to the host.  Usage::

    python benchmarks/bench_pairs.py [--data ../shared/data] [--pairs 100000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    """Build the pair sets, time each kind on each, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--pairs", type=int, default=100_000, help="random pairs")
    ap.add_argument("--long-pairs", type=int, default=5_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from engine.backends import PreparedSpectra
    from engine.io import read_library
    from engine.kernels.dense import score_listed_pairs

    lib = PreparedSpectra.from_library(read_library(args.data / "massbank_ms2.mgf.gz"))
    spectra = lib.spectrum_set
    counts = np.diff(lib.offsets)
    rng = np.random.default_rng(5)
    longs = np.flatnonzero(counts >= 200)
    sets = {
        "random MassBank pairs": (
            rng.integers(0, len(lib), args.pairs),
            rng.integers(0, len(lib), args.pairs),
        ),
        "pairs of spectra >= 200 peaks": (
            rng.choice(longs, args.long_pairs),
            rng.choice(longs, args.long_pairs),
        ),
    }
    q, l = rng.choice(longs, 50 * args.long_pairs), rng.choice(longs, 50 * args.long_pairs)
    s, _ = score_listed_pairs(q, l, spectra, spectra, 0.1, 0, np.zeros(len(q)))
    similar = np.flatnonzero(s >= 0.6)
    sets["similar long pairs (cosine >= 0.6)"] = (q[similar], l[similar])

    print(f"library {len(lib)} spectra, {len(longs)} with >= 200 peaks", flush=True)
    print(f"\n{'pairs':36s} {'n':>7s} {'score':9s} {'us/pair':>8s}  checksum (scores, matches)")
    for name, (q, l) in sets.items():
        for kind, label in ((0, "cosine"), (1, "modified")):
            score_listed_pairs(q[:10], l[:10], spectra, spectra, 0.1, kind, np.zeros(10))
            best = np.inf
            for _ in range(args.repeats):
                t = time.perf_counter()
                s, m = score_listed_pairs(q, l, spectra, spectra, 0.1, kind, np.zeros(len(q)))
                best = min(best, time.perf_counter() - t)
            print(
                f"{name:36s} {len(q):7d} {label:9s} {best / len(q) * 1e6:8.2f}  "
                f"{s.sum():.12f} {int(m.sum())}",
                flush=True,
            )


if __name__ == "__main__":
    main()
