"""Clustering a whole library: time of each stage, clusters, singletons, purity, reduction.

Clusters the 54,390-spectrum MassBank library (default) or ``--library`` (any
spectrum file, or a ``.npz`` library such as the 1.5 M-spectrum one that
``benchmarks/bench_scale.py --work DIR`` saves as ``DIR/library.npz``; or build
that one here with ``--scale-replicas 28 --work DIR``, cached in ``DIR``) and
prints one table: seconds to load, preprocess, find the linked pairs (the exact
all-against-all search within the precursor window) and link them; the number
of clusters, singletons and the largest cluster; the reduction factor
(spectra / representatives); and the cluster purity by InChIKey first block:
the share of spectra whose cluster's most common compound is their own
(spectra without an InChIKey are left out of it and counted).

Run from the repository root::

    python benchmarks/bench_cluster.py [--backend cpu|cuda] [--threshold 0.9]
    python benchmarks/bench_cluster.py --scale-replicas 28 --work WORK_DIR --backend cuda
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import engine  # noqa: E402
from engine.library import SpectrumLibrary  # noqa: E402


def load(args: argparse.Namespace) -> tuple[SpectrumLibrary, str]:
    """The spectra to cluster and where they came from."""
    if args.scale_replicas:
        if args.work is None:
            raise SystemExit("--scale-replicas needs --work DIR (the built library is kept there)")
        cached = args.work / f"library-{args.scale_replicas}.npz"
        if not cached.exists():
            from bench_scale import replicate

            args.work.mkdir(parents=True, exist_ok=True)
            massbank = engine.read_library(args.data / "massbank_ms2.mgf.gz")
            replicate(massbank, args.scale_replicas, 0.002, seed=1).save(cached)
        return SpectrumLibrary.load(cached), f"{cached.name} (bench_scale replicas)"
    path = args.library or args.data / "massbank_ms2.mgf.gz"
    if Path(path).suffix == ".npz":
        return SpectrumLibrary.load(path), Path(path).name
    return engine.load_library(path), Path(path).name


def purity(labels: np.ndarray, inchikeys: np.ndarray) -> tuple[float, float, int]:
    """Purity of spectra with an InChIKey, of those in clusters of 2+; spectra without one."""
    import pandas as pd

    block = np.array([str(k)[:14] for k in inchikeys], dtype=object)
    known = block != ""
    codes, _ = pd.factorize(block[known])
    lab = labels[known]
    sizes = np.bincount(labels)[lab]
    key = lab.astype(np.int64) * (int(codes.max(initial=0)) + 1) + codes
    uniq, counts = np.unique(key, return_counts=True)
    cluster_of = uniq // (int(codes.max(initial=0)) + 1)
    best = np.zeros(int(labels.max()) + 1, dtype=np.int64)
    np.maximum.at(best, cluster_of, counts)
    pure_all = best.sum() / max(len(lab), 1)
    clustered = np.unique(lab[sizes > 1])
    in_clusters = int(np.count_nonzero(sizes > 1))
    pure_clustered = best[clustered].sum() / max(in_clusters, 1)
    return float(pure_all), float(pure_clustered), int(np.count_nonzero(~known))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--library", type=Path, help="spectrum file or .npz library [MassBank]")
    ap.add_argument("--scale-replicas", type=int, help="build bench_scale's library of N copies")
    ap.add_argument("--work", type=Path, help="folder that keeps the built scale library")
    ap.add_argument("--backend", default="cpu", help="cpu, cuda or auto [cpu]")
    ap.add_argument("--score", default="cosine")
    ap.add_argument("--threshold", type=float, default=0.9)
    ap.add_argument("--tolerance", type=float, default=0.02)
    ap.add_argument("--precursor-tolerance", type=float, default=20.0, help="ppm [20]")
    ap.add_argument("--linkage", default="complete")
    ap.add_argument("--preprocess", default="msas")
    ap.add_argument("--repeat", type=int, default=1, help="cluster N times (the first compiles)")
    args = ap.parse_args()

    t = time.perf_counter()
    spectra, name = load(args)
    load_s = time.perf_counter() - t
    params = engine.ClusterParameters(
        score=args.score, threshold=args.threshold, tolerance=args.tolerance,
        precursor_tolerance=args.precursor_tolerance, precursor_unit="ppm",
        linkage=args.linkage, preprocess=args.preprocess,
    )  # fmt: skip
    runs = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        result = engine.cluster_spectra(spectra, params, backend=args.backend)
        runs.append((time.perf_counter() - t, result))
    total, result = runs[-1]
    pure_all, pure_clustered, no_key = purity(result.labels, spectra.metadata["inchikey"])
    sizes = result.sizes
    rows = [
        ("spectra", f"{len(spectra):,} ({name})"),
        ("parameters", f"{params.score}, {params.tolerance} Da, {params.precursor_tolerance} ppm, "
                       f"similarity >= {params.threshold}, {params.linkage}, {params.preprocess}"),
        ("device", result.device),
        ("load", f"{load_s:.2f} s"),
        ("preprocess", f"{result.timings['preprocess']:.2f} s"),
        ("pairs (search within the window)",
         f"{result.timings['pairs']:.2f} s, {result.pairs.scored:.4g} pairs in window blocks, "
         f"{len(result.pairs):,} linked"),
        ("linkage + medoids", f"{result.timings['linkage']:.2f} s"),
        ("cluster_spectra total", f"{total:.2f} s" + (
            f" (runs: {', '.join(f'{r[0]:.2f}' for r in runs)})" if len(runs) > 1 else "")),
        ("clusters", f"{result.n_clusters:,} (largest {int(sizes.max()):,})"),
        ("singletons", f"{result.n_singletons:,}"),
        ("spectra in clusters of 2+", f"{int(np.sum(sizes[sizes > 1])):,}"),
        ("reduction factor", f"{result.reduction_factor:.3f}"),
        ("purity (InChIKey block), all spectra", f"{100 * pure_all:.2f} %"),
        ("purity, spectra in clusters of 2+", f"{100 * pure_clustered:.2f} %"),
        ("spectra without InChIKey (left out)", f"{no_key:,}"),
        ("peak RSS", f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB"),
    ]  # fmt: skip
    print(f"\n| {'what':38s} | result |\n|---|---|")
    for what, value in rows:
        print(f"| {what:38s} | {value} |")


if __name__ == "__main__":
    main()
