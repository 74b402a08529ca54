"""Opening a repository shard for a search: its stored peaks widened, prepared, indexed.

What a search (or a Dask worker taking over a lost worker's shards) pays once per
shard before scoring: :meth:`Shard.library` (float32 m/z and uint16 intensity
codes widened to float64), :meth:`PreparedSpectra.for_search` (cleaning and
entropy weights), and, for a search without a precursor window, the peak index
of its bound: the CPU backend's (one per library block of a search, as
:class:`~engine.backends.cpu.CpuBackend` builds them) and the host side of the GPU's
(pieces of 2,048 columns, as the CUDA backend builds it; no GPU needed).  Each is
timed ``--repeat`` times in one process after one untimed opening (compilation),
for each thread count of ``--threads``.  The shard is one SYNTHETIC shard of
``--spectra`` jittered MassBank copies, built in ``--path`` or reused::

    python benchmarks/bench_shard_open.py --spectra 1000000 --threads 1 2

Every line it prints says SYNTHETIC.
"""

from __future__ import annotations

import argparse
import math
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
from engine.backends.base import score_kind  # noqa: E402
from engine.backends.cpu import CpuBackend  # noqa: E402
from engine.backends.cuda_index import host_peak_index  # noqa: E402
from engine.kernels.peak_index import library_peak_index  # noqa: E402
from engine.repository import Repository  # noqa: E402
from engine.repository.synthetic import build_synthetic  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
SEARCHES = {
    "entropy identity": engine.SearchParameters(),
    "entropy open": engine.SearchParameters(precursor_tolerance=None),
}


#: Columns per piece of the GPU's peak index (``CUDABackend.bound_chunk``).
GPU_PIECE = 2048


def _opened(shard, params) -> tuple[float, ...]:
    """Seconds to widen the shard's peaks, to prepare them and to index them
    (open search only: the CPU's block indexes, the GPU's host index; else NaN)."""
    t0 = time.perf_counter()
    library = shard.library()
    t1 = time.perf_counter()
    prepared = PreparedSpectra.for_search(library, params)
    t2 = time.perf_counter()
    if params.precursor_tolerance is not None:
        return t1 - t0, t2 - t1, math.nan, math.nan
    n, kind = len(prepared.norm), score_kind(params)
    block = CpuBackend().block_shape(params.batch_size, params.top_n)[1]
    for l0 in range(0, n, block):
        library_peak_index(prepared.spectrum_set, l0, min(l0 + block, n), kind)
    t3 = time.perf_counter()
    p = prepared
    host_peak_index(p.mz, p.weight, p.offsets, p.precursor_mz, 0, n, False, GPU_PIECE)
    return t1 - t0, t2 - t1, t3 - t2, time.perf_counter() - t3


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
    print(
        "| SYNTHETIC search | threads | widen s | prepare s | CPU peak index s "
        "| GPU host peak index s | all runs s |"
    )
    print("|---|---|---|---|---|---|---|")
    for label, params in SEARCHES.items():
        for threads in a.threads:
            numba.set_num_threads(threads)
            _opened(shard, params)
            runs = [_opened(shard, params) for _ in range(a.repeat)]
            medians = " | ".join(
                "-" if math.isnan(m := statistics.median(r[i] for r in runs)) else f"{m:.3f}"
                for i in range(4)
            )
            every = " ".join(f"{math.fsum(x for x in r if x == x):.2f}" for r in runs)
            print(f"| {label} | {threads} | {medians} | {every} |", flush=True)
    print("(medians of the runs; '-': not built by that search)")


if __name__ == "__main__":
    main()
