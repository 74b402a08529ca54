"""Profile-mode spectra on the GPU path, under numba's CUDA simulator.

A component (or a modified-cosine pair) of more than
:data:`~engine.kernels.cuda_pair.DENSE_CANDIDATES` candidates goes to the host at
once, bounded by its norms, instead of one GPU thread enumerating ~10⁹ of them.
Here the limit is lowered so that three profile spectra of 150 points reach it;
the hits of the CUDA backend equal the CPU backend's, for the cosine and the
modified cosine, and the pairs were rescored on the host.  Runs in a fresh
interpreter with ``NUMBA_ENABLE_CUDASIM=1``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest

from tests.simulator import simulated_report, small_backend

ROOT = Path(__file__).resolve().parents[1]


def _run_checks() -> dict[str, object]:  # pragma: no cover - runs in the subprocess
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    from test_cuda_bound_sim import _same
    from test_profile_spectra import profile_mgf

    import engine.kernels.cuda_pair as cuda_pair
    from engine.backends import Batch, CpuBackend, PreparedSpectra
    from engine.io import read_library
    from engine.params import SearchParameters

    cuda_pair.DENSE_CANDIDATES = 4000  # read when the simulated device code runs
    with tempfile.TemporaryDirectory() as work:
        path = profile_mgf(Path(work) / "p.mgf", 150, precursors=(500.0, 514.016, 500.0))
        lib = read_library(path)
    out: dict[str, object] = {"cases": []}
    for score in ("cosine", "modified_cosine"):
        p = SearchParameters(mode="custom", score=score, tolerance=0.1, top_n=0)
        spectra = PreparedSpectra.for_search(lib, p)
        batch = Batch(0, len(spectra), 0, len(spectra))
        gpu = small_backend()
        g = gpu.score_batch(spectra, spectra, batch, p)
        same, diff = _same(g, CpuBackend().score_batch(spectra, spectra, batch, p))
        out["cases"].append(
            {"score": score, "hits": len(g), "same_hits": same, "max_diff": diff,
             "host": gpu.rescored_pairs}
        )  # fmt: skip
    return out


@pytest.mark.slow
def test_profile_pairs_go_to_the_host_and_equal_the_cpu() -> None:
    report = simulated_report(__file__)
    for case in report["cases"]:
        assert case["same_hits"] and case["max_diff"] <= 1e-9, case
        assert case["hits"] == 9 and case["host"] > 0, case


if __name__ == "__main__":  # pragma: no cover - the simulator process
    print(json.dumps(_run_checks()))
