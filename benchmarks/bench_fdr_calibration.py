"""Calibration of the q-values: estimated FDR against the true wrong rate, per scheme.

Queries: the 1,000 spectra of ``massbank_ms2_queries.mgf.gz`` and ``--sample`` more
drawn from the library (seeded), those with an InChIKey.  A best hit is right when
its InChIKey first block equals the query's (DESIGN.md, "Identification quality
and confidence").  Two splits of the 54,390-spectrum MassBank library:

* ``leave-one-out``: every query's own record removed from the library (all
  queries' records at once: a query may still find other spectra of its compound);
* ``held-out``: for a seeded half of the query compounds, every spectrum of the
  compound removed too; those queries are unknowns and any hit for them is wrong,
  the other half still has its compound in the library;
* ``all-unknown``: every query compound removed (a stress test: every hit is
  wrong, so an honest estimate accepts next to nothing).

For each split and scheme the search runs once, in identity mode, with
``fdr=1.0`` (every hit kept with its q-value), on the CPU.  Printed: at q <= 0.01,
0.05, 0.10, the best hits accepted, the estimated FDR (the largest q-value among
them) and the true wrong rate among them.  Then the cost: ``--timing-queries``
library spectra searched against the whole library, plain and with q-values (the
first search of the library, which builds and prepares the decoys, then the best
of five more, the methods in turn) and the spectrum pairs each scored.  Usage::

    python benchmarks/bench_fdr_calibration.py [--sample 2000] [--seed 1] [--schemes ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SIMMS_DATA", ROOT.parent / "shared" / "data"))
sys.path.insert(0, str(ROOT))

import engine  # noqa: E402
from engine.api import search_job  # noqa: E402
from engine.params import DECOY_SCHEMES  # noqa: E402

LEVELS = (0.01, 0.05, 0.10)


def skeleton(inchikeys: np.ndarray) -> np.ndarray:
    """First InChIKey block of each key ("" when missing)."""
    return np.array([str(k).split("-")[0].strip().upper() for k in inchikeys], dtype=object)


def queries_and_keys(library: engine.SpectrumLibrary, sample: int, seed: int):
    """The query spectra (query file + a library sample, with InChIKeys) and their keys."""
    from engine.collection import combine_libraries

    listed = engine.load_library(DATA / "massbank_ms2_queries.mgf.gz")
    taken = set(listed.metadata["id"])
    rng = np.random.default_rng(seed)
    pool = np.flatnonzero([i not in taken for i in library.metadata["id"]])
    drawn = library.subset(np.sort(rng.choice(pool, sample, replace=False)))
    queries = combine_libraries([listed, drawn]) if sample else listed
    keys = skeleton(queries.metadata["inchikey"])
    keep = np.flatnonzero(keys != "")
    return queries.subset(keep), keys[keep]


def splits(library, queries, query_keys, seed: int):
    """``(name, library, unknown)`` of each split; ``unknown[q]``: no spectrum of the
    query's compound left in that library."""
    lib_keys = skeleton(library.metadata["inchikey"])
    own = np.isin(library.metadata["id"], queries.metadata["id"])
    loo = library.subset(np.flatnonzero(~own))
    rng = np.random.default_rng(seed + 1)
    compounds = np.unique(query_keys)
    held = rng.choice(compounds, len(compounds) // 2, replace=False)
    gone = own | np.isin(lib_keys, held)
    held_lib = library.subset(np.flatnonzero(~gone))
    none_lib = library.subset(np.flatnonzero(~(own | np.isin(lib_keys, compounds))))
    out = []
    splits = (("leave-one-out", loo), ("held-out", held_lib), ("all-unknown", none_lib))
    for name, lib in splits:
        present = set(skeleton(lib.metadata["inchikey"]))
        unknown = np.array([k not in present for k in query_keys])
        out.append((name, lib, unknown))
    return out


def run(queries, library, params, repeat: int = 4, backend: str = "cpu"):
    """The job of the last of ``repeat`` searches, and each search's seconds."""
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        job = search_job(queries, library, params, backend=backend)
        hits = job.run()
        seconds.append(time.perf_counter() - start)
    return job, hits, seconds


def calibration(hits, estimate, query_keys, library) -> list[tuple]:
    """Rows ``(level, accepted, estimated FDR, true wrong rate)``."""
    best = hits.best_per_query()
    q = estimate.hit_q_values(best)
    lib_keys = skeleton(library.metadata["inchikey"])
    wrong = lib_keys[best.library_index] != query_keys[best.query_index]
    rows = []
    for level in LEVELS:
        accepted = q <= level
        n = int(accepted.sum())
        est = float(q[accepted].max()) if n else 0.0
        true = float(wrong[accepted].mean()) if n else 0.0
        rows.append((level, n, est, true))
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sample", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--schemes", nargs="+", default=list(DECOY_SCHEMES))
    ap.add_argument(
        "--timing-queries", type=int, default=10000, help="queries of the cost table (0: none)"
    )
    ap.add_argument("--backend", default="cpu", help="backend of the cost table")
    a = ap.parse_args(argv)
    library = engine.load_library(DATA / "massbank_ms2.mgf.gz")
    queries, query_keys = queries_and_keys(library, a.sample, a.seed)
    engine.warm_up(a.backend)
    plain = engine.SearchParameters()
    print(f"{len(queries)} queries with an InChIKey; library {len(library)} spectra; CPU")
    table = []
    for name, lib, unknown in splits(library, queries, query_keys, a.seed):
        _, plain_hits, _ = run(queries, lib, plain, repeat=1)
        best = plain_hits.best_per_query()
        wrong = (
            skeleton(lib.metadata["inchikey"])[best.library_index] != query_keys[best.query_index]
        )
        same = (
            lib.metadata["formula"][best.library_index]
            == queries.metadata["formula"][best.query_index]
        )
        print(
            f"\n{name}: library {len(lib)} spectra; {unknown.sum()} of {len(queries)} queries "
            f"unknown (compound absent); {len(best)} queries with a hit, {wrong.sum()} wrong, "
            f"{(wrong & same).sum()} of them an isomer (same formula)"
        )
        for scheme in a.schemes:
            params = engine.SearchParameters(fdr=1.0, decoys=scheme)
            job, hits, _ = run(queries, lib, params, repeat=1)
            for level, n, est, true in calibration(hits, job.estimate, query_keys, lib):
                ratio = f"{true / est:.2f}" if est > 0 else "-"
                table.append((name, scheme, level, n, est, true, ratio))
    print("\n| split | scheme | q <= | accepted | estimated FDR | true wrong rate | true / est |")
    print("|---|---|---|---|---|---|---|")
    for name, scheme, level, n, est, true, ratio in table:
        print(f"| {name} | {scheme} | {level:.2f} | {n} | {est:.4f} | {true:.4f} | {ratio} |")
    if a.timing_queries:
        cost(library, a.timing_queries, a.seed, a.schemes, a.backend)


def cost(library, n: int, seed: int, schemes: list[str], backend: str, rounds: int = 5) -> None:
    """Seconds of ``n`` library spectra searched against the whole library, plain and with
    q-values of each scheme: the first search of the library (decoys built and prepared),
    then the best of ``rounds`` more, taken in turn (a load on the machine that comes and
    goes hits every method alike); and the spectrum pairs each scored."""
    rng = np.random.default_rng(seed + 2)
    queries = library.subset(np.sort(rng.choice(len(library), n, replace=False)))
    methods = ["plain", *schemes]
    params = {
        m: engine.SearchParameters(fdr=None if m == "plain" else 1.0, decoys=m)
        if m != "plain"
        else engine.SearchParameters()
        for m in methods
    }
    first, pairs, seconds = {}, {}, {m: [] for m in methods}
    for m in methods:
        job, _, (first[m],) = run(queries, library, params[m], repeat=1, backend=backend)
        pairs[m] = job.progress.pairs_done
    for _ in range(rounds):
        for m in methods:
            seconds[m].extend(run(queries, library, params[m], repeat=1, backend=backend)[2])
    print(f"\n{n} library spectra against all {len(library)} ({backend}):")
    print(f"| search | first s | best of {rounds} s | cost | pairs scored |")
    print("|---|---|---|---|---|")
    base = min(seconds["plain"])
    for m in methods:
        best = min(seconds[m])
        print(f"| {m} | {first[m]:.2f} | {best:.2f} | {best / base:.2f}× | {pairs[m]:,} |")


if __name__ == "__main__":
    main()
