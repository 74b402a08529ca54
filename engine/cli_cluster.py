"""``simms cluster``: group redundant spectra, write clusters and representatives, search them.

Examples
--------
``simms cluster spectra.mgf -o clusters.tsv --representatives reps.mgf``
``simms cluster spectra.mgf -o clusters.tsv --library massbank.mgf --hits hits.tsv``
"""

from __future__ import annotations

import argparse
import sys
import time

from engine.analyses import (
    AnalysisCancelled,
    ClusterParameters,
    RunOptions,
    check_writable,
    cluster_spectra,
    search_clusters,
)
from engine.cli_progress import (
    add_command,
    add_run_options,
    read_spectra,
    run_in_thread,
    run_options,
    teller,
)
from engine.params import SearchParameters

__all__ = ["add_cluster_parser", "run_cluster"]

#: ``simms cluster``: the help line, then the description.
_ABOUT = """cluster redundant spectra; write clusters, representatives, and their library hits

Cluster a spectrum set by exact similarity within a precursor window (falcon-style complete
linkage by default), pick each cluster's medoid as its representative, and optionally search
only the representatives against a library."""


def add_cluster_parser(sub) -> None:
    """Add the ``cluster`` subcommand to ``simms``' subparsers."""
    c = add_command(sub, "cluster", _ABOUT)
    c.add_argument("spectra", help="spectra to cluster (MGF, MSP, mzML, mzXML, JSON, .gz)")
    c.add_argument("-o", "--output", required=True, help="cluster table, one row per spectrum "
                   "(.tsv, or .csv)")  # fmt: skip
    c.add_argument("--representatives", metavar="MGF", help="write the representatives as MGF")
    c.add_argument(
        "--consensus",
        action="store_true",
        help="the representatives MGF holds each cluster's consensus spectrum, not its medoid",
    )
    c.add_argument(
        "--score",
        choices=["cosine", "modified-cosine", "entropy", "unweighted-entropy"],
        default="cosine",
        help="similarity [cosine]",
    )
    c.add_argument(
        "--tolerance", type=float, default=0.02, help="fragment m/z tolerance, Da [0.02]"
    )
    c.add_argument(
        "--precursor-tolerance",
        type=float,
        help="precursor window in Da, or ppm with --ppm [20 ppm when left out]",
    )
    c.add_argument("--ppm", action="store_true", help="precursor tolerance is in ppm")
    c.add_argument(
        "--no-precursor-window", action="store_true", help="every pair is a candidate (slow)"
    )
    c.add_argument(
        "--threshold", type=float, default=0.9, help="similarity cut (distance 1 - cut) [0.9]"
    )
    c.add_argument("--linkage", choices=["complete", "single"], default="complete")
    c.add_argument(
        "--min-matches", type=int, default=0, help="matched peaks a link needs (one always) [0]"
    )
    c.add_argument(
        "--preprocess",
        metavar="SPEC",
        default="msas",
        help="preset (none, gnps, msas) or JSON pipeline, or @FILE.json [msas]",
    )
    c.add_argument(
        "--no-match-charge", action="store_true", help="link spectra of different known charges"
    )
    s = c.add_argument_group("searching the clusters (representatives only)")
    s.add_argument("--library", metavar="LIB", help="search the representatives against LIB")
    s.add_argument("--hits", metavar="TSV", help="hits of every spectrum: its representative's")
    s.add_argument(
        "--search-mode",
        choices=["identity", "analog", "custom"],
        default="identity",
        help="search mode of the library search [identity]",
    )
    s.add_argument("--top", type=int, default=10, help="hits per representative, 0 = all [10]")
    add_run_options(c)


def _parameters(args: argparse.Namespace) -> ClusterParameters:
    if args.ppm and args.precursor_tolerance is None:
        raise ValueError("--ppm needs --precursor-tolerance")
    window: dict[str, object] = {}
    if args.no_precursor_window:
        window = {"precursor_tolerance": None}
    elif args.precursor_tolerance is not None:
        unit = "ppm" if args.ppm else "Da"
        window = {"precursor_tolerance": args.precursor_tolerance, "precursor_unit": unit}
    preprocess = args.preprocess
    if preprocess.startswith("@"):
        with open(preprocess[1:], encoding="utf-8") as fh:
            preprocess = fh.read()
    return ClusterParameters(
        score=args.score, tolerance=args.tolerance, threshold=args.threshold,
        linkage=args.linkage, min_matches=args.min_matches, preprocess=preprocess,
        match_charge=not args.no_match_charge, **window,
    )  # fmt: skip


def run_cluster(args: argparse.Namespace) -> int:
    """Run ``simms cluster``; 0 done, 2 unusable input, 130 interrupted (nothing written)."""
    params = _parameters(args)
    if bool(args.library) != bool(args.hits):
        raise ValueError("--library and --hits go together")
    search = SearchParameters(mode=args.search_mode, top_n=args.top) if args.library else None
    for path in (args.output, args.representatives, args.hits):
        if path:
            check_writable(path)  # before any work: a bad path never costs a clustering
    if args.consensus and not args.representatives:
        raise ValueError("--consensus needs --representatives")
    say = teller(args.quiet)
    spectra = read_spectra(args.spectra, args, say)
    library = read_spectra(args.library, args, say) if args.library else None
    start = time.perf_counter()
    try:
        with run_options(args, say, what="linking", hits=False) as run:
            result, hits = _cluster_and_search(args, params, spectra, library, search, run)
    except AnalysisCancelled:
        print("simms: cancelled; nothing written", file=sys.stderr)
        return 130
    result.write_table(args.output)
    written = [args.output]
    if args.representatives:
        result.write_representatives(args.representatives, consensus=args.consensus)
        written.append(args.representatives)
    if hits is not None:
        hits.write(args.hits)
        written.append(args.hits)
    say(f"{result.summary()} in {time.perf_counter() - start:.2f} s -> {', '.join(written)}")
    return 0


def _cluster_and_search(args, params, spectra, library, search, run: RunOptions) -> tuple:
    """The clusters, and the hits of their representatives when a library is given."""
    progress = run.on_progress
    result = run_in_thread(
        lambda: cluster_spectra(spectra, params, consensus=args.consensus, run=run)
    )
    progress.done()
    if library is None:
        return result, None
    run.say(
        f"searching {result.n_clusters:,} representatives of {len(spectra):,} spectra "
        f"against {len(library):,} (reduction factor {result.reduction_factor:.2f})"
    )
    progress.what = "searching"
    hits = run_in_thread(lambda: search_clusters(result, library, search, run=run))
    progress.done()
    return result, hits
