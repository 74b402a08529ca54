"""Molecular networks against matchms, and the library check on MassBank.

1. The network of the 1,000 MassBank queries (modified cosine, tolerance 0.1,
   peaks as stored, score >= 0.7, >= 6 matched peaks, top 10, 10 links, no
   component-size limit) with ``engine.network`` and with matchms
   (``calculate_scores`` with ``ModifiedCosineGreedy``, pairs with < 6 matches
   removed, then ``SimilarityNetwork``), for both link methods: edge counts,
   identical edge sets yes/no, seconds.
2. ``engine.library_qc`` on the 54,390-spectrum MassBank library (defaults):
   seconds, counts, and how many duplicate pairs differ in recorded collision
   energy.
3. ``--png-dir DIR``: mirror plots of three conflicting pairs (different
   compounds, near-identical spectra) as PNGs in DIR.

Usage::

    python benchmarks/bench_network.py [--data DIR] [--png-dir DIR] [--skip-matchms]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))

SCORE = {"mode": "custom", "score": "modified_cosine", "tolerance": 0.1, "threshold": 0.7}


def matchms_networks(spectra, top_n: int, max_links: int) -> tuple[dict, float, float]:
    """matchms edge sets per link method, seconds for the scores, seconds per network."""
    from matchms import Spectrum, calculate_scores
    from matchms.networking import SimilarityNetwork
    from matchms.similarity import ModifiedCosineGreedy

    objects = [
        Spectrum(
            mz=spectra.peaks(i)[0].copy(), intensities=spectra.peaks(i)[1].copy(),
            metadata={"precursor_mz": float(spectra.precursor_mz[i]), "spectrum_id": str(i)},
            metadata_harmonization=False,
        )
        for i in range(len(spectra))
    ]  # fmt: skip
    start = time.perf_counter()
    scores = calculate_scores(
        objects, objects, ModifiedCosineGreedy(tolerance=0.1), is_symmetric=True
    )
    scores.filter_by_range(name="ModifiedCosineGreedy_matches", low=6, above_operator=">=")
    scoring = time.perf_counter() - start
    edges, linking = {}, 0.0
    for method in ("single", "mutual"):
        start = time.perf_counter()
        net = SimilarityNetwork(
            identifier_key="spectrum_id", top_n=top_n, max_links=max_links, score_cutoff=0.7,
            link_method=method,
        )  # fmt: skip
        net.create_network(scores, score_name="ModifiedCosineGreedy_score")
        linking = max(linking, time.perf_counter() - start)
        edges[method] = {tuple(sorted((int(a), int(b)))) for a, b in net.graph.edges()}
    return edges, scoring, linking


def network_table(queries, skip_matchms: bool) -> None:
    import engine

    engine.network(queries.subset(range(50)), backend="cpu", min_matches=6, **SCORE)  # compile
    ours = {}
    for method in ("single", "mutual"):
        start = time.perf_counter()
        net = engine.network(
            queries, top_n=10, max_links=10, link_method=method, max_component_size=0,
            min_matches=6, backend="cpu", **SCORE,
        )  # fmt: skip
        ours[method] = (net, time.perf_counter() - start)
    reference, scoring, linking = ({}, float("nan"), float("nan"))
    if not skip_matchms:
        reference, scoring, linking = matchms_networks(queries, 10, 10)
    print(f"\n### Network of {len(queries):,} MassBank queries (modified cosine 0.1 Da, >= 0.7, "
          ">= 6 peaks, top 10, 10 links)\n")  # fmt: skip
    print("| link method | edges (ours) | edges (matchms) | identical | ours, s | "
          "matchms scores + network, s |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for method, (net, seconds) in ours.items():
        got = {(int(a), int(b)) for a, b in net.edges}
        ref = reference.get(method)
        same = "-" if ref is None else ("yes" if got == ref else f"no ({len(got ^ ref)} differ)")
        print(f"| {method} | {len(got)} | {'-' if ref is None else len(ref)} | {same} | "
              f"{seconds:.2f} | {scoring:.1f} + {linking:.2f} |")  # fmt: skip
    net = ours["single"][0]
    limited = engine.network(queries, min_matches=6, backend="cpu", **SCORE)
    print(
        f"\nWith the GNPS component limit (100): {limited.n_edges} edges, "
        f"{limited.removed_edges} removed; largest component "
        f"{int(limited.component_size.max())} (without: {int(net.component_size.max())})."
    )


#: Conflicts drawn as mirror plots: an unrelated pair (one record must be mislabelled),
#: two isomers of one formula with identical spectra, and positional isomers.
EXAMPLES = (
    "MSBNK-LCSB-LU103904:MSBNK-LCSB-LU116804",
    "MSBNK-Athens_Univ-AU282606:MSBNK-Athens_Univ-AU283506",
    "MSBNK-Antwerp_Univ-AN117511:MSBNK-Antwerp_Univ-AN117809",
)


def qc_table(library, png_dir: Path | None, examples: tuple[str, ...]) -> None:
    import engine
    from engine.analyses.qc import pairs_frame

    engine.library_qc(library.subset(range(2000)), backend="cpu")  # compile
    start = time.perf_counter()
    qc = engine.library_qc(library, backend="cpu")
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    raw = engine.library_qc(library, backend="cpu", preprocess="none")
    raw_seconds = time.perf_counter() - start
    print(f"\n### Library check of {len(library):,} MassBank spectra (defaults: cosine >= 0.95 "
          "on fragments (peaks > 1.6 Da from the precursor), >= 3 matched peaks, fragments "
          "0.02 Da, precursors 0.01 Da, same ion mode)\n")  # fmt: skip
    print('| what | defaults | all peaks (`preprocess="none"`) |\n|---|---|---|')
    print(f"| seconds | {seconds:.2f} | {raw_seconds:.2f} |")
    for (name, count), other in zip(qc.counts().items(), raw.counts().values(), strict=True):
        print(f"| {name.replace('_', ' ')} | {count:,} | {other:,} |")
    frame = pairs_frame(qc)
    dup = frame[frame.kind == "duplicate"]
    ce = library.metadata["collision_energy"]
    a, b = dup.index_a.to_numpy(), dup.index_b.to_numpy()
    print(f"\nDuplicate pairs whose recorded collision energy differs: "
          f"{(ce[a] != ce[b]).mean():.1%}; whose score is 1 (to 1e-9): "
          f"{(dup.score >= 1 - 1e-9).mean():.1%}.")  # fmt: skip
    conflicts = frame[frame.kind == "conflict"].sort_values(["matches", "score"], ascending=False)
    contributor = conflicts.id_a.str.rsplit("-", n=1).str[0]
    top = conflicts[~contributor.duplicated()].head(10)
    print("\nConflicting pairs, the one with most matched peaks of each of 10 contributors:\n")
    _conflict_rows(top)
    wanted = [tuple(e.split(":")) for e in examples]
    ids = list(zip(frame.id_a, frame.id_b, strict=True))
    chosen = frame.iloc[[ids.index(w) for w in wanted if w in ids]]
    print("\nDrawn as mirror plots:\n")
    _conflict_rows(chosen)
    if png_dir is not None:
        write_mirror_pngs(library, qc.params, list(chosen.itertuples()), png_dir)


def _conflict_rows(frame) -> None:
    print("| id a | id b | score | matches | name a | name b | InChIKey a | InChIKey b |")
    print("|---|---|---|---|---|---|---|---|")
    for r in frame.itertuples():
        print(f"| {r.id_a} | {r.id_b} | {r.score:.4f} | {r.matches} | {r.name_a[:40]} | "
              f"{r.name_b[:40]} | {r.inchikey_a} | {r.inchikey_b} |")  # fmt: skip


def write_mirror_pngs(library, params, rows, png_dir: Path) -> None:
    """Mirror plots of ``rows`` (pairs) as PNGs, drawn by the application's own widget."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PyQt6.QtWidgets import QApplication

    from simms_gui._qt.mirror_plot import MirrorPlotWidget
    from simms_gui.pairs import compute_pair

    app = QApplication.instance() or QApplication([])
    png_dir.mkdir(parents=True, exist_ok=True)
    for r in rows:
        pair = compute_pair(library, int(r.index_a), library, int(r.index_b), params)
        widget = MirrorPlotWidget()
        widget.resize(1400, 800)
        widget.set_pair(
            pair.query_mz, pair.query_intensity, pair.library_mz, pair.library_intensity,
            pair.matches, title="conflicting entries", query_label=pair.query_label,
            library_label=pair.library_label, score_name=params.score_label,
        )  # fmt: skip
        widget.show()
        app.processEvents()
        path = png_dir / f"conflict_{r.id_a}_{r.id_b}_{r.score:.4f}.png"
        widget.export_image(path)
        widget.close()
        print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--png-dir", type=Path, help="write mirror plots of 3 conflicts here")
    ap.add_argument("--skip-matchms", action="store_true", help="no matchms reference (faster)")
    ap.add_argument("--skip-qc", action="store_true")
    ap.add_argument("--examples", nargs="*", default=EXAMPLES, help="ID_A:ID_B conflicts to draw")
    args = ap.parse_args(argv)
    import engine

    queries = engine.load_library(args.data / "massbank_ms2_queries.mgf.gz")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    network_table(queries, args.skip_matchms)
    if not args.skip_qc:
        library = engine.load_library(args.data / "massbank_ms2.mgf.gz")
        qc_table(library, args.png_dir, tuple(args.examples))
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
