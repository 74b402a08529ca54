"""Clustering on the CUDA backend (numba's simulator, in a fresh interpreter) equals the CPU's."""

from __future__ import annotations

import pytest

from tests.simulator import run_simulated

SCRIPT = """
import sys
import numpy as np, engine
from tests.simulator import small_backend
spectra = engine.read_library(sys.argv[1]).subset(range(0, 76, 2))
cpu = engine.cluster_spectra(spectra, threshold=0.7, backend="cpu")
# small blocks: several per row of the 38-column self-search (the simulator runs a
# Python thread per GPU thread)
gpu = engine.cluster_spectra(spectra, threshold=0.7, backend=small_backend())
assert "CPU" not in gpu.device, gpu.device
assert np.array_equal(cpu.pairs.first, gpu.pairs.first)
assert np.array_equal(cpu.pairs.second, gpu.pairs.second)
assert np.abs(cpu.pairs.score - gpu.pairs.score).max(initial=0) <= 1e-9
assert np.array_equal(cpu.labels, gpu.labels)
assert np.array_equal(cpu.representatives, gpu.representatives)
print("ok", len(cpu.pairs), cpu.n_clusters)
"""


@pytest.mark.slow  # the simulator's start-up: seconds on 2 cores
def test_cuda_clusters_equal_cpu_clusters(data_dir):
    out = run_simulated("-c", SCRIPT, str(data_dir / "pesticides.mgf"), timeout=600)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-3000:]
