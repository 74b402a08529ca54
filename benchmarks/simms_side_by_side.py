"""SimMS ``CudaCosineGreedy`` beside our exact CUDA backend, on the same GPU and data.

Usage (repository root, on a machine with an NVIDIA GPU)::

    python benchmarks/simms_side_by_side.py /path/to/SimMS-checkout [--n 16384]

SimMS (https://github.com/PangeAI/SimMS) is imported from the given checkout
and never copied into this project.  Its matchms and sparsestack imports are
satisfied with small stand-ins when those packages are missing (its cosine
kernel needs neither), so only numba CUDA and torch are required.  Both
implementations score the same ``n`` MassBank spectra all-vs-all (tolerance
0.1, dense output); the script prints pairs/s of each and SimMS's score errors
against our exact scores (equal to matchms ``CosineGreedy``).
"""

from __future__ import annotations

import argparse
import sys
import time
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _stub_missing_modules() -> None:
    """Stand-ins for matchms / sparsestack names SimMS imports but its kernel never uses."""

    class _Anything(types.ModuleType):
        def __getattr__(self, name: str):
            if name.startswith("__"):
                raise AttributeError(name)
            return type(name, (), {"__init__": lambda self, *a, **k: None})

    stubs = {
        "matchms": [
            "matchms",
            "matchms.filtering",
            "matchms.filtering.metadata_processing",
            "matchms.filtering.metadata_processing.add_precursor_mz",
            "matchms.similarity",
            "matchms.similarity.BaseSimilarity",
        ],
        "sparsestack": ["sparsestack"],
    }
    for top, names in stubs.items():
        try:
            __import__(top)
        except ImportError:
            for name in names:
                sys.modules[name] = _Anything(name)


class _Peaks:
    def __init__(self, mz: np.ndarray, intensities: np.ndarray) -> None:
        self.mz = mz
        self.intensities = intensities

    def __len__(self) -> int:
        return len(self.mz)


class _Spectrum:
    """The two attributes SimMS reads from a matchms Spectrum."""

    def __init__(self, mz: np.ndarray, intensities: np.ndarray) -> None:
        self._peaks = _Peaks(mz, intensities)
        self.peaks = self._peaks


def main() -> None:
    """Run both and print the comparison."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("simms", type=Path, help="path of a SimMS checkout (holds simms/)")
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--cache", type=Path, default=ROOT / ".ext")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    args = ap.parse_args()

    from benchmarks.bench_gpu import load  # noqa: PLC0415
    from engine.backends import PreparedSpectra
    from engine.backends.cuda import CudaBackend
    from engine.params import SearchParameters

    be = CudaBackend()  # applies the numpy row_stack shim before numba.cuda loads
    lib = load("massbank_ms2", args.data, args.cache)
    n = min(args.n, len(lib))
    sel = np.sort(np.random.default_rng(0).choice(len(lib), n, replace=False))
    sub = lib.subset(sel)
    P = PreparedSpectra.from_library(sub)
    params = SearchParameters(mode="custom", tolerance=0.1)
    be.warm_up()
    be.dense(P.reordered(np.arange(256)), P.reordered(np.arange(256)), params)
    t = time.perf_counter()
    ours, our_m = be.dense(P, P, params)
    t_ours = time.perf_counter() - t
    print(f"ours: {n}x{n} in {t_ours:.2f} s = {n * n / t_ours:.3e} pairs/s", flush=True)

    _stub_missing_modules()
    sys.path.insert(0, str(args.simms))
    from simms.similarity import CudaCosineGreedy  # noqa: PLC0415

    spectra = [_Spectrum(*sub.peaks(i)) for i in range(n)]
    sim = CudaCosineGreedy(tolerance=0.1, batch_size=2048)
    sim.matrix(spectra[:2048], spectra[:2048])  # compile
    t = time.perf_counter()
    res = sim.matrix(spectra, spectra)
    t_sim = time.perf_counter() - t
    print(f"SimMS: {n}x{n} in {t_sim:.2f} s = {n * n / t_sim:.3e} pairs/s", flush=True)
    # SimMS: [reference, query]; ours: [query, library=reference]
    s_sim = np.asarray(res["score"], dtype=np.float64).T
    m_sim = np.asarray(res["matches"]).T
    err = np.abs(s_sim - ours)
    print()
    print(f"{'implementation':28s} {'seconds':>8s} {'pairs/s':>10s} {'speed-up':>9s}")
    print(f"{'SimMS CudaCosineGreedy':28s} {t_sim:8.2f} {n * n / t_sim:10.3e} {1.0:9.1f}")
    print(f"{'ours (exact, CUDA)':28s} {t_ours:8.2f} {n * n / t_ours:10.3e} {t_sim / t_ours:9.1f}")
    print()
    print(
        f"SimMS vs exact over all {n * n:,} pairs: max |diff| {err.max():.3e}, "
        f"pairs off > 1e-6: {np.mean(err > 1e-6):.3%}, > 1e-4: {np.mean(err > 1e-4):.3%} "
        f"({int(np.sum(err > 1e-4))}), > 1e-2: {int(np.sum(err > 1e-2))}, "
        f"match count differs: {np.mean(m_sim != our_m):.3%}"
    )


if __name__ == "__main__":
    main()
