"""Peak-index build time and size on the 1.5 M-spectrum scale library (CPU).

The library is the scale benchmark's (:func:`bench_scale.replicate`: 28 copies of
MassBank, all but the first with m/z jitter and intensity noise).  For the
entropy open search and analog mode, prints the seconds and bytes of the peak
indexes over every library block of a CPU search (as
``bench_cpu_vs_flash.index_stats``), beside the bytes of the prepared peak arrays
(m/z and weights) they index::

    python benchmarks/bench_index_scale.py [--replicas 28]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_cpu_vs_flash import DATA, P, index_stats  # noqa: E402
from bench_scale import replicate  # noqa: E402

import engine  # noqa: E402
from engine.backends.base import PreparedSpectra  # noqa: E402


def main() -> None:
    """Build the scale library, then time and size its peak indexes."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicas", type=int, default=28)
    a = ap.parse_args()
    t = time.perf_counter()
    library = replicate(engine.load_library(DATA / "massbank_ms2.mgf.gz"), a.replicas, 0.002, 1)
    print(f"library {len(library):,} spectra, built in {time.perf_counter() - t:.1f} s")
    print("| index | build s | index MiB | peak arrays MiB | index / peaks |")
    print("|---|---|---|---|---|")
    for label, params in (("entropy", P(precursor_tolerance=None)), ("analog", P(mode="analog"))):
        index_stats(library.subset(range(100)), params)  # compiled before timing
        prepared = PreparedSpectra.for_search(library, params)
        peaks = prepared.spectrum_set.mz.nbytes + prepared.spectrum_set.weight.nbytes
        seconds, size = index_stats(library, params)
        print(
            f"| {label} | {seconds:.2f} | {size / 2**20:.0f} | {peaks / 2**20:.0f} | "
            f"{size / peaks:.2f} |"
        )


if __name__ == "__main__":
    main()
