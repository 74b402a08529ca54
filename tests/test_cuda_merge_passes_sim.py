"""A wide tile's running top-N is merged in several passes (numba's CUDA simulator).

One query against a whole library is one tile of many selection segments; the
merge kernel takes them in passes of at most ``MAX_SEGMENTS``.  Under the
simulator the segments are made short (``SORT_MAX`` 16) and a pass takes two of
them, so a few real MassBank spectra give tiles of many segments and many
passes; the device top-N must equal the CPU's, ties ranked by library index.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.simulator import simulated_report, small_backend

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
QUERIES = DATA / "massbank_ms2_queries.mgf.gz"


def _run_checks() -> dict[str, object]:  # pragma: no cover - runs in the subprocess
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from engine.backends import Batch, CpuBackend, PreparedSpectra
    from engine.hits import HitTable
    from engine.io import read_library
    from engine.kernels import cuda_kernels, cuda_select, cuda_topn
    from engine.params import SearchParameters

    cuda_select.SORT_MAX = cuda_kernels.SORT_MAX = 16  # short segments: many per tile
    cuda_topn.MAX_SEGMENTS = 2  # two segments a merge pass
    lib = read_library(QUERIES)
    counts = np.diff(lib.offsets)
    small = lib.subset(np.flatnonzero(counts <= 30)[:80])
    gpu, cpu = small_backend(), CpuBackend()
    out: dict[str, object] = {"cases": []}
    for label, kw in (
        ("entropy open, top 3", {"score": "entropy", "tolerance": 0.02, "top_n": 3}),
        ("cosine thr 0.1, top 5", {"tolerance": 0.1, "threshold": 0.1, "top_n": 5}),
    ):
        p = SearchParameters(mode="custom", **kw)
        spectra = PreparedSpectra.for_search(small, p)
        n, nq = len(spectra), 3
        batches = [Batch(0, nq, l0, min(l0 + 20, n)) for l0 in range(0, n, 20)]
        tiles = gpu.pipeline.tiles(batches, p, True)
        got = [h for _, h in gpu.run_batches(spectra, spectra, batches, p, across_batches=True)]
        merged = HitTable.concat(got).top_per_query(p.top_n, library_rank=spectra.ranks)
        ref = cpu.score_batch(spectra, spectra, Batch(0, nq, 0, n), p)
        ref = ref.top_per_query(p.top_n, library_rank=spectra.ranks)
        same = len(merged) == len(ref) and all(
            np.array_equal(getattr(merged.sorted(), c), getattr(ref.sorted(), c))
            for c in ("query_index", "library_index", "matches")
        )
        diff = float(np.abs(merged.sorted().score - ref.sorted().score).max()) if same else 1.0
        out["cases"].append({
            "label": label, "tiles": len(tiles), "segments": max(len(t.segs) for t in tiles),
            "hits": len(ref), "same": same, "diff": diff,
        })  # fmt: skip
    return out


@pytest.mark.slow
@pytest.mark.skipif(not QUERIES.exists(), reason="shared data not present")
def test_running_top_n_merged_in_passes_equals_cpu_under_simulator() -> None:
    report = simulated_report(__file__)
    for case in report["cases"]:
        assert case["tiles"] == 1 and case["segments"] >= 8, case  # one tile, >= 4 passes
        assert case["hits"] > 0 and case["same"], case
        assert case["diff"] <= 1e-12, case


if __name__ == "__main__":  # pragma: no cover - the simulator process
    print(json.dumps(_run_checks()))
