"""The ``simms`` command: the engine, headless, for batch work.

Examples
--------
``simms search queries.mgf library.mgf -o hits.tsv --tolerance 0.02 --top 5``
``simms info library.msp`` prints the import report of a file.
``simms backends`` lists the compute backends usable here.
``simms cluster spectra.mgf -o clusters.tsv`` clusters redundant spectra (:mod:`.cli_cluster`).
``simms repo build|add|info|search`` an on-disk repository (:mod:`.cli_repository`).
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence

import numpy as np

from engine.analyses.qc import IsomerCheck, complete_ties, isomer_parameters
from engine.api import search_job
from engine.backends import available_backends
from engine.cli_cluster import add_cluster_parser, run_cluster
from engine.cli_network import NETWORK_COMMANDS, add_network_commands, run_network_command
from engine.cli_progress import ProgressPrinter as _ProgressPrinter
from engine.cli_progress import add_run_options, teller
from engine.cli_progress import cancel_on_interrupt as _cancel_on_interrupt
from engine.cli_repository import add_repo_parser, run_repo
from engine.collection import combine_libraries, filter_library
from engine.distributed import open_client, shutdown
from engine.export import check_output, open_writer
from engine.io import LoadCancelled, load_library
from engine.params import DECOY_SCHEMES, SearchParameters
from engine.report import SpectrumFileError
from engine.search import CancelToken, query_status, status_summary
from engine.version import __version__

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``simms`` (also used to document the CLI)."""
    parser = argparse.ArgumentParser(
        prog="simms",
        description="Identify MS/MS spectra by exact library search (MGF, MSP, mzML, mzXML, JSON): "
        "spectral entropy, greedy cosine and modified cosine.",
    )
    parser.add_argument("--version", action="version", version=f"simms {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    s = sub.add_parser("search", help="search query spectra against a library")
    s.add_argument(
        "queries", help="query spectra (MGF, MSP, mzML, mzXML or GNPS/MoNA JSON, optionally .gz)"
    )
    s.add_argument(
        "library",
        nargs="+",
        help="library spectra (same formats); several files are "
        "searched as one library and each hit names its file (column library_file)",
    )
    s.add_argument(
        "-o",
        "--output",
        help="hit list: .tsv, .csv, .parquet or .mztab (mzTab-M 2.0); a file also gets "
        "NAME.queries.tsv (every query's status) beside it (default: TSV on stdout)",
    )
    s.add_argument(
        "--format",
        choices=["tsv", "csv", "parquet", "mztab", "gnps"],
        help="output format [from the suffix]; gnps: GNPS library-search TSV columns",
    )
    s.add_argument(
        "--isomer-check",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="flag hits whose library spectrum is near-identical to another compound's of "
        "the same formula (column isomers; the library check's definition) [yes]",
    )
    s.add_argument(
        "--mode",
        choices=["identity", "analog", "custom", "open"],
        default="identity",
        help="identity: which compound is it (entropy similarity, precursor 0.01 Da, same ion "
        "mode); analog: related compounds (modified cosine, precursor shift up to "
        "--max-shift); custom/open: classic greedy cosine, every option as given [identity]",
    )
    s.add_argument("--tolerance", type=float, help="peak m/z tolerance in Da [mode's]")
    s.add_argument("--mz-power", type=float, help="m/z exponent of cosine peak weights [0]")
    s.add_argument("--intensity-power", type=float, help="intensity exponent [mode's]")
    s.add_argument(
        "--score",
        choices=["cosine", "modified-cosine", "entropy", "unweighted-entropy"],
        help="similarity score [identity: entropy, analog: modified-cosine, custom: cosine]",
    )
    s.add_argument(
        "--precursor-tolerance", type=float, help="precursor window (Da, or ppm with --ppm)"
    )
    s.add_argument(
        "--max-shift", type=float, help="analog mode: largest precursor m/z shift in Da [100]"
    )
    s.add_argument("--no-precursor-window", action="store_true", help="score every pair")
    s.add_argument("--ppm", action="store_true", help="precursor tolerance is in ppm")
    s.add_argument(
        "--match-ion-mode",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="skip library spectra of the opposite ion mode [identity, analog: yes]",
    )
    s.add_argument("--min-matches", type=int, help="minimum matched peaks [mode's]")
    s.add_argument("--threshold", type=float, help="minimum score [mode's]")
    s.add_argument("--top", type=int, default=10, help="hits per query, 0 = all [10]")
    s.add_argument(
        "--fdr",
        type=float,
        metavar="Q",
        help="estimate a q-value per hit (column q_value) and keep hits with q_value <= Q, "
        "e.g. 0.05 (1 keeps all); decoys are searched in the same pass",
    )
    s.add_argument(
        "--decoys",
        choices=list(DECOY_SCHEMES),
        default=DECOY_SCHEMES[0],
        help="how --fdr estimates q-values: second, each query's best hit of another "
        "compound as its decoy; fragments or shifted, decoy spectra (library fragments, or "
        f"shifted precursors) searched in the same pass [{DECOY_SCHEMES[0]}]",
    )
    s.add_argument(
        "--preprocess",
        metavar="SPEC",
        help="preset (none, gnps, msas), a JSON pipeline spec, or @FILE.json holding one "
        "[analog: gnps, else none]",
    )
    f = s.add_argument_group("library filters (search only the library spectra that pass)")
    f.add_argument("--library-ion-mode", choices=["positive", "negative"])
    f.add_argument(
        "--instrument-type",
        action="append",
        metavar="TEXT",
        help="instrument type contains TEXT, any case (repeatable: any of them)",
    )
    f.add_argument(
        "--license",
        action="append",
        metavar="LICENSE",
        help="licence is exactly LICENSE (repeatable: any of them)",
    )
    f.add_argument("--has-structure", action="store_true", help="spectra with SMILES/InChI(Key)")
    s.add_argument("--batch-size", type=int, default=2048, help="spectra per batch side [2048]")
    add_run_options(s)

    i = sub.add_parser("info", help="read spectrum files and print their import reports")
    i.add_argument("files", nargs="+")
    i.add_argument("--all", action="store_true", help="list every issue, not the first 20")

    sub.add_parser("backends", help="list the compute backends usable here")
    add_network_commands(sub)
    add_cluster_parser(sub)
    add_repo_parser(sub)
    return parser


def _preprocess_spec(value: str) -> str:
    """``--preprocess``: a preset name or JSON as given, ``@path`` read from the file."""
    if value.startswith("@"):
        with open(value[1:], encoding="utf-8") as fh:
            return fh.read()
    return value


def search_parameters(args: argparse.Namespace) -> SearchParameters:
    """The :class:`SearchParameters` of ``simms search`` options (unset ones: the mode's)."""
    if args.ppm and args.precursor_tolerance is None:
        raise ValueError("--ppm needs --precursor-tolerance")
    if args.max_shift is not None and args.precursor_tolerance is not None:
        raise ValueError("--max-shift and --precursor-tolerance are the same window: give one")
    given = {
        "tolerance": args.tolerance,
        "mz_power": args.mz_power,
        "intensity_power": args.intensity_power,
        "score": args.score,
        "precursor_tolerance": args.precursor_tolerance
        if args.max_shift is None
        else args.max_shift,
        "match_ion_mode": args.match_ion_mode,
        "min_matches": args.min_matches,
        "threshold": args.threshold,
        "preprocess": None if args.preprocess is None else _preprocess_spec(args.preprocess),
    }
    kwargs = {k: v for k, v in given.items() if v is not None}
    if args.no_precursor_window:
        kwargs["precursor_tolerance"] = None
    if args.ppm:
        kwargs["precursor_unit"] = "ppm"
    return SearchParameters(
        mode=args.mode, top_n=args.top, batch_size=args.batch_size, fdr=args.fdr,
        decoys=args.decoys, **kwargs,
    )  # fmt: skip


def _load_inputs(args: argparse.Namespace, say, token: CancelToken) -> tuple:
    """The queries and the libraries of ``simms search``; LoadCancelled once ``token`` is."""

    def progress(done: int, total: int) -> bool:
        return not token.cancelled

    say(f"reading {args.queries}")
    queries = load_library(args.queries, cache=not args.no_cache, progress=progress)
    libraries = []
    for path in args.library:
        if token.cancelled:
            raise LoadCancelled("cancelled")
        say(f"reading {path}")
        libraries.append(load_library(path, cache=not args.no_cache, progress=progress))
    return queries, libraries


def _search(args: argparse.Namespace) -> int:
    params = search_parameters(args)
    say = teller(args.quiet)
    if args.output:
        # before any loading: a bad path never costs a search
        check_output(args.output, args.format)
    client = None
    if args.dask or args.dask_local:
        client = open_client(args.dask, n_local=args.dask_local, timeout=args.dask_timeout)
    # Ctrl-C while the files load only sets a flag that the readers see between
    # blocks: a KeyboardInterrupt raised at an arbitrary point of the read (say, in
    # a weakref callback run by the garbage collector) can be swallowed there.
    loading = CancelToken()
    stop = "interrupted: stopping; nothing is written"
    try:
        with _cancel_on_interrupt(loading, say, stop):
            queries, libraries = _load_inputs(args, say, loading)
    except LoadCancelled:
        loading.cancel()
    if loading.cancelled:
        if client is not None:
            shutdown(client)
        print("simms: interrupted before the search started; nothing written", file=sys.stderr)
        return 130
    for lib in (queries, *libraries):
        if lib.report is not None and lib.report.issues:
            say(lib.report.summary() + "  (simms info FILE lists them)")
    library = libraries[0] if len(libraries) == 1 else combine_libraries(libraries)
    library, filters = _filtered(library, args, say)
    progress = _ProgressPrinter(args.quiet)
    token = CancelToken()
    job = search_job(
        queries, library, params, client=client, own_client=True, backend=args.backend,
        on_progress=progress, on_message=say, cancel_token=token, keep_hits=False,
        stall_timeout=args.dask_stall_timeout,
    )  # fmt: skip
    backend, device = job.backend.name, job.backend.device
    writer = open_writer(
        args.output or sys.stdout, queries, library, params, format=args.format,
        backend=backend, device=device, extra_provenance=filters,
        q_values=getattr(job, "q_values", None),
        **_ambiguity_options(args, queries, library, params),
    )  # fmt: skip
    say(f"searching {len(queries)} × {len(library)} spectra on {device}")
    seen = np.zeros(len(queries), dtype=bool)  # queries with a hit
    with _cancel_on_interrupt(token, say):
        error = _run_into(job, writer, seen)
        progress.done()
        if isinstance(error, _WriteFailed):
            writer.abort()
            raise error.__cause__
        note = ""
        if error is not None:
            note = f"stopped by an error: {error}"
        elif job.cancelled:
            cut = len(job.incomplete_queries)
            note = f"cancelled: partial hits; {cut} queries scanned only in part"
        status = query_status(queries, library, params, seen, job.incomplete_queries)
        path = writer.close(
            complete=not note, note=note, incomplete=job.incomplete_queries, status=status
        )
    p = job.progress
    say(
        f"{p.hits} hits from {p.pairs_done:.4g} pairs in {p.elapsed:.2f} s "
        f"({p.pairs_per_second:.3g} pairs/s)" + (f" -> {path}" if args.output else "")
    )
    say(f"{len(queries)} queries: {status_summary(status)}")
    if writer.rows > p.hits:
        say(f"{writer.rows} rows written: ties at a query's best score are kept whole past --top")
    if error is not None:
        print(
            f"simms: error: {error}; the hits found before it are in the output, marked incomplete",
            file=sys.stderr,
        )
        return 2
    return 130 if token.cancelled else 0


def _ambiguity_options(args: argparse.Namespace, queries, library, params) -> dict:
    """The writer's ambiguity helpers: ties kept whole past ``--top``, the isomer check."""

    def whole_ties(hits):
        return complete_ties(hits, queries, library, params, backend=args.backend)

    isomers = (
        IsomerCheck(library, isomer_parameters(params), backend=args.backend)
        if args.isomer_check
        else None
    )
    return {"adjust": whole_ties, "isomers": isomers}


class _WriteFailed(Exception):
    """The output could not be written (its cause is the real error)."""


def _filtered(library, args: argparse.Namespace, say):
    """``library`` narrowed by the command line's library filters, and a provenance line."""
    filters = {
        "ion_mode": args.library_ion_mode,
        "instrument_type": args.instrument_type,
        "license": args.license,
        "has_structure": True if args.has_structure else None,
    }
    filters = {k: v for k, v in filters.items() if v is not None}
    if not filters:
        return library, {}
    kept = filter_library(library, **filters)
    say(f"library filters keep {len(kept):,} of {len(library):,} spectra")
    if not len(kept):
        raise SpectrumFileError(
            " + ".join(args.library), "no library spectrum passes the library filters"
        )
    described = " ".join(f"{k}={v}" for k, v in filters.items())
    return kept, {"library filters": f"{described} ({len(kept)} of {len(library)} spectra)"}


def _run_into(job, writer, seen: np.ndarray) -> BaseException | None:
    """Run ``job`` in a worker thread, writing its chunks; returns the error, if any.

    ``seen[q]`` becomes True for each query ``q`` that got a hit.

    The main thread only waits, so a Ctrl-C is handled at once (by the handler of
    :func:`_cancel_on_interrupt`) while numba kernels run in the worker.  An error
    of the search (a lost cluster, a failed backend) leaves the hits written so
    far to be kept; an error of the output comes back as :class:`_WriteFailed`.
    """
    failure: list[BaseException] = []
    # A local job streams its chunks in query order; a Dask job's query blocks finish
    # in any order and it keeps them anyway, so its hits are written sorted at the end.
    streaming = not getattr(job, "keep_hits", True)

    def write(hits) -> None:
        seen[hits.query_index] = True
        try:
            writer.write(hits)
        except BaseException as exc:
            raise _WriteFailed(str(exc)) from exc

    def work() -> None:
        try:
            try:
                for chunk in job:
                    if streaming:
                        write(chunk)
            finally:
                if not streaming:
                    write(job.hits)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            job.cancel()
            failure.append(exc)

    thread = threading.Thread(target=work, name="simms-search", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.2)
    return failure[0] if failure else None


def _info(args: argparse.Namespace) -> int:
    status = 0
    for path in args.files:
        try:
            lib = load_library(path, cache=False)
        except SpectrumFileError as exc:
            print(f"simms: error: {exc}", file=sys.stderr)
            status = 2
            continue
        report = lib.report
        print(report.summary())
        shown = report.issues if args.all else report.issues[:20]
        for issue in shown:
            print(f"  {issue}")
        if len(shown) < len(report.issues):
            print(f"  ... {len(report.issues) - len(shown)} more (--all lists them)")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``simms``; returns the exit status (0 ok, 2 unusable input, 130 interrupted)."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "search":
            return _search(args)
        if args.command == "info":
            return _info(args)
        if args.command in NETWORK_COMMANDS:
            return run_network_command(args)
        if args.command == "cluster":
            return run_cluster(args)
        if args.command == "repo":
            return run_repo(args)
        for name, device in available_backends().items():
            print(f"{name}\t{device}")
        return 0
    except (SpectrumFileError, ValueError, OSError) as exc:
        print(f"simms: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("simms: interrupted before the search started; nothing written", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
