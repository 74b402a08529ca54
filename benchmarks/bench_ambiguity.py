"""Ambiguity on MassBank: ties, few-peak and isomer best hits; identity mode's minimum matches.

Searches MassBank query spectra against the 54,390-spectrum library in identity
mode (top 10, ties kept whole past the top 10, the isomer check on) and counts
the best hits flagged:

* tie: two or more hits share the best score (within 1e-9), and among two or
  more distinct compounds (whole InChIKey, else name);
* few peaks: the best hit matched at most 2 peaks;
* isomer: the best hit's library spectrum is near-identical to another
  compound's of the same formula (the library check's definition).

Twice: with the library as it is (each query's own record is in it and scores
1.0), and leave-one-out (the query's own accession removed: the realistic case).

Then, leave-one-out, identity mode with ``min_matches`` 1, 2, 3: right best hits
(InChIKey first block equal to the query's) over the queries, wrong best hits over
the best hits reported, and the wrong rate among 1-, 2- and >= 3-peak best hits.
Usage::

    python benchmarks/bench_ambiguity.py [--sample 2000 --seed 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))

from engine import SearchParameters, search  # noqa: E402
from engine.analyses.qc import IsomerCheck, complete_ties, isomer_parameters  # noqa: E402
from engine.io import load_library  # noqa: E402
from engine.search import ambiguity_columns, order_ties  # noqa: E402


def first_rows(hits) -> np.ndarray:
    q = hits.query_index
    return np.flatnonzero(np.r_[True, q[1:] != q[:-1]]) if len(q) else np.empty(0, np.int64)


def flagged(queries, library, params, label: str) -> None:
    t = time.perf_counter()
    hits = search(queries, library, params, backend="cpu")
    hits = complete_ties(hits, queries, library, params, backend="cpu")
    hits = order_ties(hits, queries, library, params)
    check = IsomerCheck(library, isomer_parameters(params), backend="cpu")  # as simms search
    flags = ambiguity_columns(hits, library, check)
    seconds = time.perf_counter() - t
    best = first_rows(hits)
    n = len(best)
    ties = int((flags["tied"][best] > 1).sum())
    compounds = int((flags["tied_compounds"][best] != "").sum())
    few = int(flags["few_peaks"][best].sum())
    isomer = int((flags["isomers"][best] != "").sum())
    any_flag = int(((flags["tied_compounds"] != "") | flags["few_peaks"]
                    | (flags["isomers"] != ""))[best].sum())  # fmt: skip
    print(
        f"| {label} | {len(queries)} | {n} | {ties} | {compounds} | {few} | {isomer} | "
        f"{any_flag} | {len(hits)} | {seconds:.1f} |"
    )


def held_out(queries, library) -> tuple:
    """The library without the queries' own accessions."""
    own = np.isin(library.ids, queries.ids)
    return library.subset(np.flatnonzero(~own))


def min_matches_table(queries, library) -> None:
    def blocks(keys: np.ndarray) -> np.ndarray:
        return np.array([str(k).split("-")[0] for k in keys], dtype=object)

    skeleton = blocks(library.metadata["inchikey"])
    q_skeleton = blocks(queries.metadata["inchikey"])
    for m in (1, 2, 3):
        params = SearchParameters(mode="identity", top_n=1, min_matches=m)
        hits = search(queries, library, params, backend="cpu")
        best = first_rows(hits)
        q, lib, matches = hits.query_index[best], hits.library_index[best], hits.matches[best]
        right = (skeleton[lib] == q_skeleton[q]) & (q_skeleton[q] != "")
        cells = []
        for lo, hi in ((1, 1), (2, 2), (3, 10**9)):
            sel = (matches >= lo) & (matches <= hi)
            wrong = (~right[sel]).sum()
            cells.append(f"{wrong}/{sel.sum()} ({100 * wrong / max(sel.sum(), 1):.1f} %)")
        print(
            f"| {m} | {right.sum()} ({100 * right.sum() / len(queries):.1f} %) | "
            f"{(~right).sum()}/{len(best)} ({100 * (~right).sum() / max(len(best), 1):.1f} %) | "
            + " | ".join(cells)
            + " |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sample", type=int, default=0, help="also N library spectra as queries")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    library = load_library(DATA / "massbank_ms2.mgf.gz")
    sets = {"1,000 queries": load_library(DATA / "massbank_ms2_queries.mgf.gz")}
    if args.sample:
        rng = np.random.default_rng(args.seed)
        picked = np.sort(rng.choice(len(library), args.sample, replace=False))
        sets[f"{args.sample:,} sampled (seed {args.seed})"] = library.subset(picked)
    params = SearchParameters(mode="identity", top_n=10)
    print("| library | queries | with hits | best tied | tied among compounds | "
          "<= 2 peaks | isomer | any flag | rows | s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, queries in sets.items():
        flagged(queries, library, params, f"{name}, own record in")
        flagged(queries, held_out(queries, library), params, f"{name}, leave-one-out")
    print()
    print("| min_matches | right best hits | wrong / reported | wrong, 1 peak | "
          "wrong, 2 peaks | wrong, >= 3 peaks |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for name, queries in sets.items():
        print(f"| **{name}, leave-one-out** | | | | | |")
        min_matches_table(queries, held_out(queries, library))


if __name__ == "__main__":
    main()
