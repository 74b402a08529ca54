"""The GPU's pair kernel vs the CPU backend, under numba's CUDA simulator.

The score kernel flags long pairs (peak counts multiplying to more than
``pair_work_max``) and pairs whose components overflow its on-chip scratch; they
are queued for :func:`~engine.kernels.cuda_kernels.pair_list_kernel`
(:mod:`engine.backends.cuda_pairs`), which resolves components of up to
``big_peaks`` peaks a side in a global scratch (rounds of locally dominant
candidates) and leaves larger ones to the host.  Here every listed pair is long
(``pair_work_max = 1``), on MassBank's densest and longest spectra and pairs near
the threshold, at tolerances that make components of hundreds of candidates.
Checked for cosine and modified cosine: the hits equal the CPU backend's (same
pairs, same match counts, scores within 1e-9) with a scratch that holds the
components and with one so small that the host rescores many pairs; and the
host's rescoring of every listed pair bounded by each query's running top-N
floor.  Runs in a fresh interpreter with ``NUMBA_ENABLE_CUDASIM=1``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.simulator import simulated_report, small_backend

ROOT = Path(__file__).resolve().parents[1]
QUERIES = ROOT.parent / "shared" / "data" / "massbank_ms2_queries.mgf.gz"

#: (score, tolerance, threshold, top_n) of the compared searches.
CASES = [
    ("cosine", 0.1, 0.3, 0),
    ("cosine", 1.0, 0.2, 5),
    ("modified_cosine", 0.5, 0.2, 0),
]
#: Scratch sizes (peaks a side of a component): roomy; so small that most big ones do not fit.
SCRATCH = (2048, 8)


def _run_checks() -> dict[str, object]:  # pragma: no cover - runs in the subprocess
    import numpy as np

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    from test_cuda_bound_sim import _same, densest, similar_groups

    from engine.backends import Batch, CpuBackend, PreparedSpectra
    from engine.hits import HitTable
    from engine.io import read_library
    from engine.params import SearchParameters

    mb = read_library(QUERIES)
    counts = np.diff(mb.offsets)
    big = [int(i) for i in np.argsort(counts, kind="stable")[-3:]]
    dense = [i for i in densest(mb.offsets, mb.mz, 6) if i not in big][:3]
    pick = list(dict.fromkeys(big + dense + similar_groups(mb, 4, 2)))
    lib = mb.subset(pick)
    nq = 6  # the long and dense spectra are the queries
    cpu = CpuBackend()
    out: dict[str, object] = {"cases": [], "peaks": int(counts[big].max())}
    for size in SCRATCH:
        # the bound kernel's columns in one piece (the default): each of its blocks
        # runs over all its query's peaks (1,700 for the longest), so pieces
        # multiply the simulated work (test_cuda_bound_sim.py cuts them in pieces)
        gpu = small_backend()
        gpu.list_survivors = True
        gpu.pair_work_max = 1  # every listed pair goes to the pair kernel
        gpu.pair_rows = 64
        gpu.pairs_on_gpu = True  # opt-in
        gpu.pair_gpu_min = 0  # every flush on the GPU (16,384 pairs on a GPU)
        gpu.big_peaks = size
        for score, tol, thr, top_n in CASES:
            p = SearchParameters(
                mode="custom", score=score, tolerance=tol, threshold=thr, top_n=top_n
            )
            spectra = PreparedSpectra.for_search(lib, p)
            batch = Batch(0, nq, 0, len(spectra))
            long0, host0 = gpu.gpu_scored_pairs, gpu.rescored_pairs
            g = gpu.score_batch(spectra, spectra, batch, p)
            same, diff = _same(g, cpu.score_batch(spectra, spectra, batch, p))
            out["cases"].append(
                {
                    "scratch": size, "score": score, "tolerance": tol, "hits": len(g),
                    "same_hits": same, "max_diff": diff, "long": gpu.gpu_scored_pairs - long0,
                    "host": gpu.rescored_pairs - host0,
                }
            )  # fmt: skip
    # the host's rescoring of every listed pair with a device top-N across batches,
    # each pair bounded by its query's running floor (the N-th best so far).  The
    # queries' own spectra come first, so their floors reach 1; the device's listing
    # then prunes what a floor would, so this checks the path, and
    # test_pair_bound.py checks the per-pair bound itself.
    gpu = small_backend()
    gpu.list_survivors = True
    gpu.pair_work_max = 1
    out["floors"] = []
    for top_n in (1, 3):
        p = SearchParameters(mode="custom", tolerance=0.1, threshold=0.2, top_n=top_n)
        spectra = PreparedSpectra.for_search(lib, p)
        n = len(spectra)
        cuts = [0, nq, nq + (n - nq) // 2, n]  # out of column order: a tile each
        split = [Batch(0, nq, cuts[i], cuts[i + 1]) for i in (0, 2, 1)]
        host0, floored0 = gpu.rescored_pairs, gpu.floored_pairs
        got = [h for _, h in gpu.run_batches(spectra, spectra, split, p, across_batches=True)]
        merged = HitTable.concat(got).top_per_query(top_n, library_rank=spectra.ranks)
        same, diff = _same(merged, cpu.score_batch(spectra, spectra, Batch(0, nq, 0, n), p))
        out["floors"].append(
            {
                "top_n": top_n, "hits": len(merged), "same_hits": same, "max_diff": diff,
                "host": gpu.rescored_pairs - host0, "floored": gpu.floored_pairs - floored0,
            }
        )  # fmt: skip
    return out


@pytest.mark.slow
@pytest.mark.skipif(not QUERIES.exists(), reason="shared test data not present")
def test_pair_kernel_equals_cpu_under_simulator() -> None:
    """Long pairs and big components scored on the GPU equal the CPU backend's hits."""
    report = simulated_report(__file__)
    assert report["peaks"] > 1024
    for case in report["cases"]:
        assert case["same_hits"], case
        assert case["max_diff"] <= 1e-9, case
        assert case["hits"] > 0 and case["long"] > 0, case
    roomy = [c for c in report["cases"] if c["scratch"] == SCRATCH[0]]
    tight = [c for c in report["cases"] if c["scratch"] == SCRATCH[1]]
    # big components resolved on the GPU, or left to the host where the scratch is small
    assert all(c["host"] == 0 for c in roomy if c["score"] == "cosine"), roomy
    assert sum(c["host"] for c in roomy) < sum(c["host"] for c in tight), report["cases"]
    for case in report["floors"]:  # host rescoring bounded by the queries' running floors
        assert case["same_hits"] and case["max_diff"] <= 1e-9, case
        assert case["hits"] > 0 and case["host"] > 0, case


if __name__ == "__main__":  # pragma: no cover - the simulator process
    print(json.dumps(_run_checks()))
