"""CUDA backend vs CPU kernel under numba's CUDA simulator (no GPU needed).

numba reads ``NUMBA_ENABLE_CUDASIM`` when ``numba.cuda`` is first imported, so
the comparison runs in a fresh interpreter (this file run as a script) with the
variable set; the test only checks what that process reports.  Inputs are a
few real MassBank spectra, including two of over 1,700 peaks, with tolerances
wide enough to overflow the on-chip path (exact host rescoring); searches run
as one batch and as three batches packed into one tile, dense matrices as
float64 and compact (float32 / int16).
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

#: (label, SearchParameters keyword arguments) of the compared searches.
CASES = [
    ("cosine wide tol, top 3", {"tolerance": 2.0, "top_n": 3}),
    ("cosine thr 0.3 (pruned)", {"tolerance": 0.1, "threshold": 0.3, "top_n": 0}),
    (
        "modified thr 0.3 (pruned both ways)",
        {"tolerance": 0.1, "score": "modified_cosine", "threshold": 0.3, "top_n": 5},
    ),
    ("modified all hits", {"tolerance": 0.1, "score": "modified_cosine", "top_n": 0}),
    (
        "modified thr 0.2 ppm window",
        {
            "tolerance": 1.0,
            "score": "modified_cosine",
            "threshold": 0.2,
            "top_n": 2,
            "precursor_tolerance": 1e6,
            "precursor_unit": "ppm",
        },
    ),
    ("entropy all pairs", {"score": "entropy", "tolerance": 0.02, "top_n": 0}),
    ("unweighted entropy top 2", {"score": "unweighted_entropy", "tolerance": 0.05, "top_n": 2}),
    (
        "identity mode, 1000 Da window (ion-mode filter)",
        {"mode": "identity", "precursor_tolerance": 1000.0, "top_n": 0},
    ),
]


def _run_checks() -> dict[str, object]:  # pragma: no cover - runs in the subprocess
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from engine.backends import Batch, CpuBackend, PreparedSpectra
    from engine.io import read_library
    from engine.params import SearchParameters

    lib = read_library(QUERIES)
    counts = np.diff(lib.offsets)
    order = np.argsort(counts, kind="stable")
    polarity = lib.polarity()
    ordinary = order[[100, 300, 500, 700]]
    other = [i for i in order[100:900] if polarity[i] != polarity[ordinary[0]]][:2]
    pick = np.r_[ordinary, other, order[-2:]]  # 6 ordinary of both ion modes + 2 huge
    subset = lib.subset(pick)
    assert len(set(subset.polarity().tolist())) == 2  # both ion modes
    backend = small_backend()
    out: dict[str, object] = {"peaks": np.diff(subset.offsets).tolist(), "cases": []}
    cpu = CpuBackend()
    for label, kw in CASES:
        p = SearchParameters(**{"mode": "custom", **kw})
        spectra = PreparedSpectra.for_search(subset, p)
        batch = Batch(0, 6, 0, len(spectra))
        g = backend.score_batch(spectra, spectra, batch, p).sorted()
        c = cpu.score_batch(spectra, spectra, batch, p).sorted()
        same = (
            len(g) == len(c)
            and np.array_equal(g.query_index, c.query_index)
            and np.array_equal(g.library_index, c.library_index)
            and np.array_equal(g.matches, c.matches)
        )
        diff = float(np.abs(g.score - c.score).max(initial=0.0)) if same else None
        # several batches packed into one tile (segmented selection, hits split per batch)
        split = [Batch(0, 6, 0, 3), Batch(0, 6, 3, 5), Batch(0, 6, 5, len(spectra))]
        per_batch = {b.l_start: h for b, h in backend.run_batches(spectra, spectra, split, p)}
        for b in split:
            h = per_batch[b.l_start]
            same = same and bool(
                np.all((h.library_index >= b.l_start) & (h.library_index < b.l_stop))
            )
            ref = cpu.score_batch(spectra, spectra, b, p).sorted()
            same = same and np.array_equal(h.sorted().library_index, ref.library_index)
        gs, gm = backend.dense(spectra, spectra, p)
        cs, cm = cpu.dense(spectra, spectra, p)
        fs, fm = backend.dense(spectra, spectra, p, compact=True)
        out["cases"].append(
            {
                "label": label,
                "hits": len(c),
                "same_hits": bool(same),
                "max_diff": diff,
                "dense_diff": float(np.abs(gs - cs).max()),
                "dense_matches_equal": bool(np.array_equal(gm, cm)),
                "compact_diff": float(np.abs(fs.astype(np.float64) - cs).max()),
                "compact_matches_equal": bool(np.array_equal(fm, cm)),
                "compact_dtypes": [str(fs.dtype), str(fm.dtype)],
            }
        )
    # row chunks (3 rows each, the last one shorter) reuse the buffers of the larger
    # matrices above: viewed per chunk shape and dtype, not allocated again
    slot = backend.matrices.slots[0]
    backend.dense_chunk_bytes = 3 * len(spectra) * 12
    cs, cm = cpu.dense(spectra, spectra, p)
    gs, gm = backend.dense(spectra, spectra, p)
    fs, fm = backend.dense(spectra.reordered(np.arange(5)), spectra, p, compact=True)
    out["chunked"] = {
        "same_slots": backend.matrices.slots[0] is slot,
        "diff": float(np.abs(gs - cs).max()),
        "matches_equal": bool(np.array_equal(gm, cm)),
        "compact_diff": float(np.abs(fs.astype(np.float64) - cs[:5]).max()),
        "compact_matches_equal": bool(np.array_equal(fm, cm[:5])),
    }
    out["rescored"] = backend.rescored_pairs
    return out


@pytest.mark.slow
@pytest.mark.skipif(not QUERIES.exists(), reason="shared MassBank data not present")
def test_cuda_kernels_equal_cpu_under_simulator() -> None:
    """Search hits and dense matrices of the CUDA backend equal the CPU kernel's."""
    report = simulated_report(__file__)
    assert max(report["peaks"]) > 1024
    assert report["rescored"] > 0  # the overflow path was exercised
    for case in report["cases"]:
        assert case["same_hits"], case
        assert case["max_diff"] <= 1e-6, case
        assert case["dense_diff"] <= 1e-6, case
        assert case["dense_matches_equal"], case
        assert case["compact_diff"] <= 1e-6, case
        assert case["compact_matches_equal"], case
        assert case["compact_dtypes"] == ["float32", "int16"], case
    chunked = report["chunked"]
    assert chunked["same_slots"], chunked
    assert chunked["diff"] <= 1e-6 and chunked["compact_diff"] <= 1e-6, chunked
    assert chunked["matches_equal"] and chunked["compact_matches_equal"], chunked


if __name__ == "__main__":  # pragma: no cover - the simulator process
    print(json.dumps(_run_checks()))
