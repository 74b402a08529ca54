"""``simms repo``: build, append to, describe and search an on-disk spectrum repository.

Examples
--------
``simms repo build runs.simmsrepo run1.mzML run2.mgf --dataset 2024``
``simms repo add runs.simmsrepo run3.mzML``
``simms repo compact runs.simmsrepo``
``simms repo prepare runs.simmsrepo --mode identity``
``simms repo info runs.simmsrepo``
``simms repo search queries.mgf runs.simmsrepo -o hits.tsv --summary files.tsv``
"""

from __future__ import annotations

import argparse
import sys
import time

from engine.atomic import atomic_path
from engine.cli_progress import add_command, add_dask_options, dask_client
from engine.io import load_library
from engine.params import SearchParameters
from engine.repository import DEFAULT_SHARD_SPECTRA, Repository

__all__ = ["add_repo_parser", "run_repo"]

#: ``simms repo``: the help line, then the description.
_ABOUT = """build, append to, describe and search an on-disk spectrum repository

A repository holds the spectra of many files in memory-mappable shards (m/z stored as
float32, intensities as uint16 scaled per spectrum; scores are computed from what is
stored), sorted by precursor m/z within each ion mode."""


def add_repo_parser(sub) -> None:
    """Add the ``repo`` subcommand (``build``, ``add``, ``compact``, ``prepare``, ``info``,
    ``search``) to ``simms``."""
    r = add_command(sub, "repo", _ABOUT)
    actions = r.add_subparsers(dest="repo_command", required=True)
    b = actions.add_parser("build", help="create a repository from spectrum files")
    b.add_argument("repository", help="the repository folder (new or empty)")
    b.add_argument("files", nargs="+", help="spectrum files (MGF, MSP, mzML, mzXML, JSON; .gz)")
    b.add_argument("--dataset", help="dataset name of the files [each file's folder name]")
    b.add_argument(
        "--shard-spectra", type=int, default=DEFAULT_SHARD_SPECTRA,
        help=f"spectra per shard [{DEFAULT_SHARD_SPECTRA:,}]",
    )  # fmt: skip
    a = actions.add_parser("add", help="append spectrum files to a repository")
    a.add_argument("repository")
    a.add_argument("files", nargs="+")
    a.add_argument("--dataset", help="dataset name of the files [each file's folder name]")
    c = actions.add_parser(
        "compact", help="rewrite the shards into disjoint precursor ranges (faster windowed "
        "searches; repository indexes change)",
    )  # fmt: skip
    c.add_argument("repository")
    p = actions.add_parser(
        "prepare", help="store the shards' spectra prepared for a search mode (cold searches "
        "then read them instead of preparing every peak)",
    )  # fmt: skip
    p.add_argument("repository")
    p.add_argument(
        "--mode", choices=["identity", "analog", "custom", "open"], default="identity",
        help="the search mode to prepare for [identity: also entropy open searches, "
        "--no-precursor-window]",
    )  # fmt: skip
    p.add_argument("--processes", type=int, default=1, help="shards prepared at once [1]")
    p.add_argument(
        "--open-index", action="store_true",
        help="also store the CPU peak indexes of open searches (cold open searches on the "
        "CPU then build none; about 12 bytes a prepared peak)",
    )  # fmt: skip
    i = actions.add_parser("info", help="describe a repository")
    i.add_argument("repository")
    i.add_argument("--files", action="store_true", help="also list the files")
    s = actions.add_parser("search", help="search query spectra against a repository")
    s.add_argument("queries", help="query spectra")
    s.add_argument("repository")
    s.add_argument("-o", "--output", help="hits as TSV (default: stdout)")
    s.add_argument("--summary", help="also write the per-file summary (TSV)")
    s.add_argument("--by", choices=["file", "dataset"], default="file", help="summary rows [file]")
    s.add_argument("--mode", choices=["identity", "analog", "custom", "open"], default="identity")
    s.add_argument(
        "--no-precursor-window", action="store_true",
        help="score every library spectrum (entropy open search in identity mode)",
    )  # fmt: skip
    s.add_argument("--top", type=int, default=10, help="hits per query, 0 for all [10]")
    s.add_argument("--threshold", type=float, help="minimum score [the mode's]")
    s.add_argument("--backend", choices=["auto", "cpu", "cuda"], default="cpu")
    s.add_argument("--via", choices=["tasks", "job"], default="tasks", help="Dask path [tasks]")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    add_dask_options(s)


def run_repo(args: argparse.Namespace) -> int:
    """Run ``simms repo ...``; the exit status."""
    say = (lambda m: None) if getattr(args, "quiet", False) else _say
    if args.repo_command == "build":
        start = time.perf_counter()
        repo = Repository.build(
            args.repository, args.files, dataset=args.dataset,
            shard_spectra=args.shard_spectra, on_message=say,
        )  # fmt: skip
        say(f"built {repo} in {time.perf_counter() - start:.1f} s")
        return 0
    repo = Repository(args.repository)
    if args.repo_command == "add":
        start = time.perf_counter()
        shards = repo.add(args.files, dataset=args.dataset, on_message=say)
        say(f"added {len(shards)} shards in {time.perf_counter() - start:.1f} s: {repo}")
        return 0
    if args.repo_command == "compact":
        start = time.perf_counter()
        shards = repo.compact(on_message=say)
        say(f"compacted into {len(shards)} shards in {time.perf_counter() - start:.1f} s")
        return 0
    if args.repo_command == "prepare":
        start = time.perf_counter()
        folders = repo.prepare(
            mode=args.mode, processes=args.processes, on_message=say, open_index=args.open_index
        )
        say(f"prepared {len(folders)} shards for {args.mode} searches "
            f"in {time.perf_counter() - start:.1f} s")  # fmt: skip
        return 0
    if args.repo_command == "info":
        print(repo.info())
        if args.files:
            print(repo.files().to_csv(sep="\t", index=False), end="")
        return 0
    return _search(repo, args, say)


def _search(repo: Repository, args: argparse.Namespace, say) -> int:
    overrides: dict[str, object] = {"mode": args.mode, "top_n": args.top}
    if args.no_precursor_window:
        overrides["precursor_tolerance"] = None
    if args.threshold is not None:
        overrides["threshold"] = args.threshold
    params = SearchParameters(**overrides)
    queries = load_library(args.queries)
    if repo.synthetic:
        say("SYNTHETIC repository: generated spectra, for benchmarks and tests only")
    start = time.perf_counter()
    with dask_client(args) as client:
        job = repo.search(
            queries, params, backend=args.backend, client=client, via=args.via, on_message=say
        )
        for _ in job:
            p = job.progress
            say(f"shards {p.shards_done}/{p.shards_total}, queries done {p.queries_done:,}")
    hits = job.hits
    say(f"{len(hits):,} hits in {time.perf_counter() - start:.2f} s")
    _write(repo.hits_frame(hits, queries), args.output)
    if args.summary:
        _write(repo.summary(hits, queries, by=args.by), args.summary)
    return 0


def _write(frame, path: str | None) -> None:
    if path is None:
        frame.to_csv(sys.stdout, sep="\t", index=False)
        return
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, sep="\t", index=False)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
