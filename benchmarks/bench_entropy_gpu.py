"""Entropy similarity on the GPU: exactness against the CPU kernel, then speed next to cosine.

Checks first (any difference fails the run):

* dense 2,048 × 2,048 MassBank block (the largest spectra included), entropy and
  unweighted entropy, GPU vs CPU;
* search hits of the 1,000 queries against the library, GPU vs CPU: identity
  mode (the defaults) and entropy without a precursor window (top 10).

Then times, on the same workload and the same settings, entropy against cosine
(tolerance 0.02 Da, top 10, no threshold, no precursor window): the 1,000
queries against the whole library, and a dense 8,192 × 8,192 block.  Prints one
table.  Run from the repository root::

    python benchmarks/bench_entropy_gpu.py [--data ../shared/data] [--cache .ext]

Libraries come from ``<cache>/<name>.npz`` (``SpectrumLibrary.save``) when present.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.backends import CpuBackend, PreparedSpectra  # noqa: E402
from engine.backends.cuda import CudaBackend  # noqa: E402
from engine.library import SpectrumLibrary  # noqa: E402
from engine.params import SearchParameters  # noqa: E402
from engine.search import SearchJob  # noqa: E402


def load(name: str, data: Path, cache: Path) -> SpectrumLibrary:
    npz = cache / f"{name}.npz"
    if npz.exists():
        return SpectrumLibrary.load(npz)
    from engine.io import read_library

    return read_library(data / f"{name}.mgf.gz")


def same_hits(a, b) -> tuple[bool, float]:
    a, b = a.sorted(), b.sorted()
    same = (
        len(a) == len(b)
        and np.array_equal(a.query_index, b.query_index)
        and np.array_equal(a.library_index, b.library_index)
        and np.array_equal(a.matches, b.matches)
    )
    return same, float(np.abs(a.score - b.score).max(initial=0.0)) if same else float("nan")


def timed_search(queries, library, params, backend) -> tuple[float, object]:
    SearchJob(queries.subset(np.arange(8)), library, params, backend=backend).run()  # warm
    start = time.perf_counter()
    hits = SearchJob(queries, library, params, backend=backend).run()
    return time.perf_counter() - start, hits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--cache", type=Path, default=ROOT / ".ext")
    ap.add_argument("--dense-n", type=int, default=8192)
    a = ap.parse_args()
    lib = load("massbank_ms2", a.data, a.cache)
    qry = load("massbank_ms2_queries", a.data, a.cache)
    gpu, cpu = CudaBackend(), CpuBackend()
    print(f"device: {gpu.device}; library {len(lib)} spectra, {len(qry)} queries")
    rows: list[tuple[str, str]] = []
    ok = True

    # -- exactness ---------------------------------------------------------------------
    counts = lib.peak_counts
    block = np.r_[np.argsort(counts)[-16:], np.random.default_rng(1).choice(len(lib), 2032)]
    sub = lib.subset(block)
    for score in ("entropy", "unweighted_entropy"):
        p = SearchParameters(mode="custom", score=score, tolerance=0.02)
        s = PreparedSpectra.for_search(sub, p)
        gs, gm = gpu.dense(s, s, p)
        cs, cm = cpu.dense(s, s, p)
        diff, bad = float(np.abs(gs - cs).max()), int((gm != cm).sum())
        ok &= diff <= 1e-6 and bad == 0
        rows.append((f"check dense 2048² {score}", f"max |Δ| {diff:.1e}, {bad} match counts off"))
    for label, p in (
        ("identity defaults", SearchParameters()),
        ("entropy, no window, top 10", SearchParameters(precursor_tolerance=None, top_n=10)),
    ):
        g = SearchJob(qry, lib, p, backend=gpu).run()
        c = SearchJob(qry, lib, p, backend=cpu).run()
        same, diff = same_hits(g, c)
        ok &= same and diff <= 1e-6
        rows.append((f"check hits {label}", f"{len(g)} hits, identical {same}, max |Δ| {diff:.1e}"))

    # -- speed: entropy next to cosine, same settings ----------------------------------
    pairs = len(qry) * len(lib)
    for score in ("cosine", "entropy"):
        p = SearchParameters(mode="custom", score=score, tolerance=0.02, top_n=10)
        seconds, hits = timed_search(qry, lib, p, gpu)
        rows.append(
            (
                f"1000 × {len(lib)} {score}, top 10",
                f"{seconds:.2f} s, {pairs / seconds:.3g} pairs/s",
            )
        )
    n = min(a.dense_n, len(lib))
    big = lib.subset(np.arange(n))
    for score in ("cosine", "entropy"):
        p = SearchParameters(mode="custom", score=score, tolerance=0.02)
        s = PreparedSpectra.for_search(big, p)
        gpu.dense(s, s, p, compact=True)  # compile and upload first
        start = time.perf_counter()
        gpu.dense(s, s, p, compact=True)
        seconds = time.perf_counter() - start
        rows.append((f"dense {n}² {score}", f"{seconds:.2f} s, {n * n / seconds:.3g} pairs/s"))
    p = SearchParameters()
    seconds, hits = timed_search(qry, lib, p, gpu)
    rows.append(
        ("identity defaults end to end (1000 queries)", f"{seconds:.2f} s, {len(hits)} hits")
    )

    width = max(len(r[0]) for r in rows)
    print()
    for what, value in rows:
        print(f"{what:{width}s}  {value}")
    print("\nALL CHECKS PASSED" if ok else "\nCHECKS FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
