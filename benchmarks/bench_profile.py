"""Profile-mode (not centroided) spectra: seconds per search, exact, bounded.

Three spectra of N points 1.7e-5 Da apart (what a profile export looks like)
searched against themselves in each mode, one process, the numba cache warm
(one untimed search first); the self-hits' matched points and the checksum of
all scores show the result is the same across versions.  Usage::

    python benchmarks/bench_profile.py [--points 3000 30000] [--repeats 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODES = {
    "custom (cosine 0.1 Da)": {"mode": "custom"},
    "custom, modified cosine": {"mode": "custom", "score": "modified-cosine"},
    "analog": {"mode": "analog"},
    "identity (entropy)": {"mode": "identity"},
}


def profile_mgf(path: Path, n: int) -> Path:
    """Three profile spectra of ``n`` points, precursors 14.016 Da apart."""
    x = np.arange(n)
    with open(path, "w") as fh:
        for s in range(3):
            mz = 100.0 + s * 3.1e-6 + x * 1.7e-5
            intensity = 1000 * (1.2 + np.sin(x / 50.0 + s)) + (x * 7919 % 101) / 100
            fh.write(f"BEGIN IONS\nTITLE=profile {s}\nPEPMASS={500 + 14.016 * s}\nCHARGE=1+\n")
            fh.writelines(f"{m:.6f} {i:.2f}\n" for m, i in zip(mz, intensity, strict=True))
            fh.write("END IONS\n")
    return path


def main() -> None:
    """Time each mode on each size, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, nargs="+", default=[3000, 30000])
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()

    from engine import read_library, search

    print("| points | mode | seconds (best) | hits | self-hit matches | score checksum |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as work:
        for n in args.points:
            lib = read_library(profile_mgf(Path(work) / f"p{n}.mgf", n))
            for label, options in MODES.items():
                search(lib, lib, backend="cpu", **options)  # compile / warm
                best = np.inf
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    hits = search(lib, lib, backend="cpu", **options)
                    best = min(best, time.perf_counter() - start)
                own = hits.query_index == hits.library_index
                print(
                    f"| {n:,} | {label} | {best:.3f} | {len(hits)} | "
                    f"{sorted(set(hits.matches[own].tolist()))} | {hits.score.sum():.12f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
