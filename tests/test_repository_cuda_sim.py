"""A repository searched through the CUDA backend (numba's simulator) equals the CPU search.

The repository path hands each shard to the engine's search with a backend
instance; this runs that path with the CUDA backend under
``NUMBA_ENABLE_CUDASIM=1`` on small real files (in a subprocess, see
:mod:`tests.simulator`), entropy identity and open search, shards kept resident,
and on a GPU too small for more than one set (every shard spills to disk); the
queries' sets are not kept with the shards.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest

from tests.simulator import simulated_report

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def _run_checks() -> dict[str, object]:  # pragma: no cover - runs in the subprocess
    import numpy as np

    sys.path.insert(0, str(ROOT))
    import engine
    from engine.backends.cuda import CudaBackend
    from engine.repository import Repository

    folder = Path(tempfile.mkdtemp()) / "repo"
    repo = Repository.build(folder, [DATA / "sample.msp"], shard_spectra=3)
    repo.add([DATA / "sample.mzML"])
    queries = engine.read_library(DATA / "sample.mzML").subset(np.arange(4))
    backend = CudaBackend(threads=32, select_threads=32)
    # a GPU that holds one spectrum set at a time and no host cache: every shard
    # spills to disk and is read, prepared and uploaded again each search
    spilling = CudaBackend(threads=32, select_threads=32)
    spilling.sets.budget = 1.0
    out: dict[str, object] = {"shards": len(repo.shards), "cases": []}
    searched = set()
    for label, params in (
        ("identity", engine.SearchParameters(top_n=3)),
        ("open", engine.SearchParameters(precursor_tolerance=None, top_n=3)),
    ):
        job = repo.search(queries, params, backend=backend, resident_bytes=1 << 30)
        searched |= {shard.name for shard, _ in job.plan()}
        gpu = job.run()
        again = repo.search(queries, params, backend=backend, resident_bytes=1 << 30).run()
        spilled = [repo.search(queries, params, backend=spilling).run() for _ in range(2)]
        cpu = repo.search(queries, params, backend="cpu").run()
        same = all(
            np.array_equal(getattr(g, c), getattr(cpu, c))
            for g in (gpu, again, *spilled)
            for c in ("query_index", "library_index", "matches")
        )
        diff = max(
            float(np.abs(g.score - cpu.score).max()) if len(cpu) == len(g) else 1.0
            for g in (gpu, *spilled)
        )
        out["cases"].append({"label": label, "hits": len(cpu), "same": same, "diff": diff})
    out["spilling_resident_sets"] = len(spilling.sets.libraries)
    # the queries' sets (one per shard searched) are not kept with the shards
    out["resident_sets"], out["query_sets"] = len(backend.sets.libraries), len(backend.sets.queries)
    out["searched_shards"] = len(searched)
    return out


@pytest.mark.slow
@pytest.mark.skipif(not (DATA / "sample.mzML").exists(), reason="shared data not present")
def test_repository_search_on_cuda_equals_cpu_under_simulator() -> None:
    report = simulated_report(__file__)
    assert report["shards"] >= 3
    assert report["spilling_resident_sets"] == 1  # the rest spilled
    assert report["resident_sets"] == report["searched_shards"]  # each kept, no query set
    assert report["query_sets"] <= 2
    for case in report["cases"]:
        assert case["hits"] > 0 and case["same"], case
        assert case["diff"] <= 1e-6, case


if __name__ == "__main__":  # pragma: no cover - the simulator process
    print(json.dumps(_run_checks()))
