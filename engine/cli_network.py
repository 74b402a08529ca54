"""``simms network`` and ``simms qc``: molecular networks and library checks from the shell.

Examples
--------
``simms network spectra.mgf -o net.graphml --edges edges.tsv --library massbank.mgf``
``simms qc library.mgf -o qc.tsv --deduplicated clean.mgf`` prints the counts of
duplicates and conflicts, and writes the library without its redundant copies.
"""

from __future__ import annotations

import argparse
import sys

from engine import cli_progress as cli
from engine.analyses import (
    AnalysisCancelled,
    NetworkSettings,
    RunOptions,
    check_writable,
    library_qc,
    network,
    write_edges,
    write_graphml,
    write_qc_report,
)
from engine.analyses.files import TABLE_SUFFIXES
from engine.analyses.networking import LABEL_FLOOR
from engine.analyses.networking.export import GRAPHML_SUFFIXES
from engine.io.mgf_writer import write_mgf

__all__ = ["NETWORK_COMMANDS", "add_network_commands", "run_network_command"]

#: The subcommands this module adds to ``simms``.
NETWORK_COMMANDS = ("network", "qc")

#: Each command's help line, then its description.
_NETWORK = """molecular network of a spectrum set (GraphML for Cytoscape, edge list)

Link every pair of spectra scoring at least --threshold with at least --min-matches matched
peaks, keeping each spectrum's best links (matchms SimilarityNetwork rules); components
larger than --max-component-size lose their weakest edges (GNPS)."""
_QC = """library check: near-duplicate and conflicting entries

Find pairs of near-identical library spectra (same precursor, same ion mode, high
similarity): duplicates of one compound, grouped, and conflicts (different InChIKey first
blocks)."""


def _score_options(p: argparse.ArgumentParser, defaults: str) -> None:
    """Options that set the score (unset: ``defaults`` says which values apply)."""
    g = p.add_argument_group(f"score (unset options: {defaults})")
    g.add_argument("--mode", choices=["identity", "analog", "custom", "open"])
    g.add_argument(
        "--score", choices=["cosine", "modified-cosine", "entropy", "unweighted-entropy"]
    )
    g.add_argument("--tolerance", type=float, help="peak m/z tolerance in Da")
    g.add_argument("--mz-power", type=float)
    g.add_argument("--intensity-power", type=float)
    g.add_argument("--precursor-tolerance", type=float, help="precursor window (Da, or --ppm)")
    g.add_argument("--ppm", action="store_true", help="precursor tolerance is in ppm")
    g.add_argument("--no-precursor-window", action="store_true", help="score every pair")
    g.add_argument("--match-ion-mode", action=argparse.BooleanOptionalAction, default=None)
    g.add_argument("--min-matches", type=int, help="minimum matched peaks")
    g.add_argument("--threshold", type=float, help="minimum score")
    g.add_argument("--preprocess", metavar="SPEC", help="preset (none, gnps, msas) or JSON")
    cli.add_run_options(p)


def add_network_commands(sub) -> None:
    """Add ``network`` and ``qc`` to the ``simms`` subcommands ``sub``."""
    n = cli.add_command(sub, "network", _NETWORK)
    n.add_argument("spectra", help="spectra (MGF, MSP, mzML, mzXML, JSON, optionally .gz)")
    n.add_argument("-o", "--output", help="network as GraphML (.graphml)")
    n.add_argument("--edges", help="edge list as TSV (.tsv) or CSV (.csv)")
    n.add_argument("--top-n", type=int, default=10, help="each spectrum's top list, 0 = all [10]")
    n.add_argument("--max-links", type=int, default=10, help="links each spectrum proposes [10]")
    n.add_argument("--link-method", choices=["single", "mutual"], default="single")
    n.add_argument(
        "--max-component-size", type=int, default=100, help="break larger components, 0 = off [100]"
    )
    n.add_argument("--library", help="label nodes with their best hit in this library")
    n.add_argument(
        "--label-floor",
        nargs=2,
        type=float,
        metavar=("SCORE", "PEAKS"),
        default=list(LABEL_FLOOR),
        help="a best hit labels its node from this score and matched peaks [0.7 6, GNPS]",
    )
    _score_options(n, "analog mode: modified cosine, GNPS peaks, 0.7, 6 peaks; no precursor window")
    q = cli.add_command(sub, "qc", _QC)
    q.add_argument("library", help="library spectra")
    q.add_argument("-o", "--output", help="report: one row per near-identical pair (.tsv/.csv)")
    q.add_argument(
        "--deduplicated",
        metavar="OUT.mgf",
        help="write the library with one spectrum per duplicate group (conflicts kept) as MGF",
    )
    _score_options(q, "cosine >= 0.95, >= 3 peaks, fragments 0.02 Da, precursors 0.01 Da")


#: Options of :func:`_score_options` that are :class:`SearchParameters` fields of one name.
_SCORE_OPTIONS = (
    "mode", "score", "tolerance", "mz_power", "intensity_power", "precursor_tolerance",
    "match_ion_mode", "min_matches", "threshold", "preprocess",
)  # fmt: skip


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    """The score options given on the command line, as SearchParameters fields."""
    if args.ppm and args.precursor_tolerance is None:
        raise ValueError("--ppm needs --precursor-tolerance")
    kwargs = {name: getattr(args, name) for name in _SCORE_OPTIONS}
    kwargs = {name: value for name, value in kwargs.items() if value is not None}
    if args.no_precursor_window:
        kwargs["precursor_tolerance"] = None
    if args.ppm:
        kwargs["precursor_unit"] = "ppm"
    return kwargs


def run_network_command(args: argparse.Namespace) -> int:
    """Run ``simms network`` or ``simms qc``; 0 done, 130 cancelled by Ctrl-C."""
    try:
        with cli.run_options(args, cli.teller(args.quiet)) as run:
            if args.command == "network":
                return _network(args, run)
            return _qc(args, run)
    except AnalysisCancelled:
        print("simms: interrupted; nothing written", file=sys.stderr)
        return 130


def _network(args: argparse.Namespace, run: RunOptions) -> int:
    if not args.output and not args.edges:
        raise ValueError("give -o NET.graphml and/or --edges EDGES.tsv")
    if args.output:
        check_writable(args.output, GRAPHML_SUFFIXES)
    if args.edges:
        check_writable(args.edges, TABLE_SUFFIXES)
    settings = NetworkSettings(
        args.top_n, args.max_links, args.link_method, args.max_component_size
    )
    overrides = _overrides(args)
    spectra = cli.read_spectra(args.spectra, args, run.say)
    library = cli.read_spectra(args.library, args, run.say) if args.library else None
    run.say(f"scoring {len(spectra)} × {len(spectra)} spectra")
    label_floor = (args.label_floor[0], int(args.label_floor[1]))
    net = cli.run_in_thread(
        lambda: network(
            spectra,
            settings=settings,
            library=library,
            label_floor=label_floor,
            run=run,
            **overrides,
        )  # fmt: skip
    )
    run.on_progress.done()
    written = [str(write_graphml(net, args.output))] if args.output else []
    if args.edges:
        written.append(str(write_edges(net, args.edges)))
    sizes = net.component_size
    in_components = int((sizes > 1).sum())
    n_components = len(set(net.component[sizes > 1].tolist()))
    run.say(
        f"{len(net)} spectra, {net.n_edges} edges ({net.params.score_label} >= "
        f"{net.params.threshold:g}, >= {net.params.min_matches} matched peaks), "
        f"{n_components} components of 2 or more holding {in_components} spectra "
        f"(largest {int(sizes.max()) if len(sizes) else 0}), "
        f"{net.removed_edges} edges removed by the component size limit -> {', '.join(written)}"
    )
    return 0


def _qc(args: argparse.Namespace, run: RunOptions) -> int:
    if args.output:
        check_writable(args.output, TABLE_SUFFIXES)
    if args.deduplicated:
        check_writable(args.deduplicated, (".mgf",))
    overrides = _overrides(args)
    library = cli.read_spectra(args.library, args, run.say)
    qc = cli.run_in_thread(lambda: library_qc(library, run=run, **overrides))
    run.on_progress.done()
    if args.output:
        write_qc_report(qc, args.output)
    p = qc.params
    print(
        f"near-identical: {p.score_label} >= {p.threshold:g}, >= {p.min_matches} matched peaks, "
        f"fragments {p.tolerance:g} Da, precursors within {p.precursor_tolerance} "
        f"{p.precursor_unit}" + (", same ion mode" if p.match_ion_mode else "")
    )
    for name, count in qc.counts().items():
        print(f"{name.replace('_', ' ')}\t{count}")
    if args.output:
        run.say(f"report -> {args.output}")
    if args.deduplicated:
        kept = qc.deduplicated()
        write_mgf(kept, args.deduplicated)
        run.say(f"{len(kept)} of {len(library)} spectra kept -> {args.deduplicated}")
    return 0
