"""After the warm-ups a GPU search of real spectra compiles nothing (CUDA simulator).

A library's arrays are read-only, and numba compiles a host kernel per array
type: a warm-up on writable arrays alone left the host rescoring kernel to be
compiled inside the first search (seconds on a fresh machine, with the first
hits waiting for it).  The check runs in a fresh interpreter with
``NUMBA_ENABLE_CUDASIM=1`` (numba reads it on first import of ``numba.cuda``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.simulator import run_simulated

ROOT = Path(__file__).resolve().parents[1]
QUERIES = ROOT.parent / "shared" / "data" / "massbank_ms2_queries.mgf.gz"

SCRIPT = r"""
import gc, json, sys
import numpy as np
from numba.core.registry import CPUDispatcher
from engine.io import read_library
from engine.params import SearchParameters
from engine.search import SearchJob

from engine.warmup import warm_up

spectra = read_library(sys.argv[1]).subset(np.arange(12))
warm_up("cpu")  # what the application warms up at start, then the GPU backend's own
from tests.simulator import small_backend
be = small_backend()  # small blocks: the simulator runs a Python thread per GPU thread
be.warm_up()
be.pair_work_max = 1  # every listed pair is a long pair, for the host's rescoring

def signatures():
    return {
        f"{d.py_func.__module__}.{d.__qualname__}": len(d.signatures)
        for d in gc.get_objects()
        if isinstance(d, CPUDispatcher) and d.py_func.__module__.startswith("engine")
    }

before = signatures()
hits = {}
for name, params in {
    "cosine": SearchParameters(mode="custom", tolerance=0.1, threshold=0.3, top_n=5),
    "modified": SearchParameters(
        mode="custom", score="modified_cosine", tolerance=0.1, threshold=0.3, top_n=5
    ),
}.items():
    job = SearchJob(spectra.subset(np.arange(4)), spectra, params, backend=be)
    hits[name] = len(job.run())
compiled = {k: n for k, n in signatures().items() if n > before.get(k, 0)}
print(json.dumps({"compiled": compiled, "rescored": be.rescored_pairs, "hits": hits}))
"""


@pytest.mark.slow
def test_warm_up_leaves_nothing_to_compile_for_a_search():
    out = run_simulated("-c", SCRIPT, str(QUERIES))
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["rescored"] > 0, "the search should rescore pairs on the host"
    assert all(n > 0 for n in report["hits"].values())
    assert report["compiled"] == {}, f"compiled inside the search: {report['compiled']}"
