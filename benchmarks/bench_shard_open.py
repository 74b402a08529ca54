"""Opening a repository shard for a search: its stored peaks widened and prepared.

What a search (or a Dask worker taking over a lost worker's shards) pays once per
shard before scoring: :meth:`Shard.library` (float32 m/z and uint16 intensity
codes widened to float64) and :meth:`PreparedSpectra.for_search` (cleaning and
entropy weights), timed ``--repeat`` times in one process after one untimed
opening (compilation), for each thread count of ``--threads``.  The shard is one
SYNTHETIC shard of ``--spectra`` jittered MassBank copies, built in ``--path``
or reused::

    python benchmarks/bench_shard_open.py --spectra 1000000 --threads 1 2

Every line it prints says SYNTHETIC.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numba  # noqa: E402

import engine  # noqa: E402
from engine.backends import PreparedSpectra  # noqa: E402
from engine.repository import Repository  # noqa: E402
from engine.repository.synthetic import build_synthetic  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
SEARCHES = {
    "entropy identity": engine.SearchParameters(),
    "entropy open": engine.SearchParameters(precursor_tolerance=None),
}


def _opened(shard, params) -> tuple[float, float]:
    """Seconds to widen the shard's peaks and to prepare them."""
    t0 = time.perf_counter()
    library = shard.library()
    t1 = time.perf_counter()
    PreparedSpectra.for_search(library, params)
    return t1 - t0, time.perf_counter() - t1


def main() -> None:
    """Build or reuse the SYNTHETIC shard, time its openings, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spectra", type=int, default=1_000_000)
    ap.add_argument(
        "--path", type=Path, default=Path(tempfile.gettempdir()) / "simms-bench-shard",
        help="folder of the SYNTHETIC shard (built once, reused) [the temporary folder's]",
    )  # fmt: skip
    ap.add_argument("--threads", type=int, nargs="+", default=[numba.config.NUMBA_NUM_THREADS])
    ap.add_argument("--repeat", type=int, default=4)
    ap.add_argument("--data", type=Path, default=DATA, help="folder of the MassBank MGF file")
    a = ap.parse_args()
    path = a.path / f"syn{a.spectra}"
    if not path.exists():
        base = engine.load_library(a.data / "massbank_ms2.mgf.gz")
        build_synthetic(path, base, a.spectra, shard_spectra=a.spectra)
    shard = Repository(path).shards[0]
    print(f"SYNTHETIC shard: {len(shard):,} spectra, {shard.manifest['peaks']:,} peaks")
    print("| SYNTHETIC search | threads | widen s (median) | prepare s (median) | all runs s |")
    print("|---|---|---|---|---|")
    for label, params in SEARCHES.items():
        for threads in a.threads:
            numba.set_num_threads(threads)
            _opened(shard, params)
            runs = [_opened(shard, params) for _ in range(a.repeat)]
            widen = statistics.median(r[0] for r in runs)
            prepare = statistics.median(r[1] for r in runs)
            every = " ".join(f"{w + p:.2f}" for w, p in runs)
            print(f"| {label} | {threads} | {widen:.3f} | {prepare:.3f} | {every} |", flush=True)


if __name__ == "__main__":
    main()
