"""Clustering on the CUDA backend (numba's simulator, in a fresh interpreter) equals the CPU's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import numpy as np, engine
spectra = engine.read_library({path!r}).subset(range(0, 76, 2))
cpu = engine.cluster_spectra(spectra, threshold=0.7, backend="cpu")
gpu = engine.cluster_spectra(spectra, threshold=0.7, backend="cuda")
assert "CPU" not in gpu.device, gpu.device
assert np.array_equal(cpu.pairs.first, gpu.pairs.first)
assert np.array_equal(cpu.pairs.second, gpu.pairs.second)
assert np.abs(cpu.pairs.score - gpu.pairs.score).max(initial=0) <= 1e-9
assert np.array_equal(cpu.labels, gpu.labels)
assert np.array_equal(cpu.representatives, gpu.representatives)
print("ok", len(cpu.pairs), cpu.n_clusters)
"""


@pytest.mark.slow  # the simulator's start-up: about 20 s on 2 cores
def test_cuda_clusters_equal_cpu_clusters(data_dir):
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    code = SCRIPT.format(path=str(data_dir / "pesticides.mgf"))
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-3000:]
