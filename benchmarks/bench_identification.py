"""Identification benchmark: leave-one-out on MassBank, ours against Flash entropy and matchms.

Each of the 1,000 query spectra is searched against the 54,390-spectrum library
with its own copy (same accession) left out; a best hit is right when its
InChIKey's first block (the skeleton) equals the query's.  Printed for each
method, in one run on the same data:

* recall@1: right best hits / all queries;
* wrong: best hits of another compound / best hits reported (a query without a
  hit reports none), also among best hits scoring at least 0.7;
* seconds (search only; Flash: index building listed apart).

Methods: this engine's cosine with today's defaults and with a precursor window
(CPU); ms_entropy's Flash entropy identity search with its own defaults
(precursor 0.01 Da, fragments 0.02 Da); matchms ``CosineGreedy`` with GNPS-like
settings (tolerance 0.02, precursor window 0.02 Da, at least 6 matched peaks,
square-root intensities, GNPS-style cleaning) on the same candidates.  Usage::

    python benchmarks/bench_identification.py [--queries 1000] [--skip-matchms]
    python benchmarks/bench_identification.py --sample 2000 --seed 1   # another query set

Needs ``ms_entropy`` (``pip install ms_entropy``) and matchms (the test extra).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))

import engine  # noqa: E402


@dataclass
class Outcome:
    """Best non-self hit of each query: library index (-1: none) and score."""

    method: str
    best: np.ndarray
    score: np.ndarray
    seconds: float
    note: str = ""


def skeleton(inchikeys: np.ndarray) -> np.ndarray:
    """First InChIKey block of each key ("" when missing)."""
    return np.array([str(k).split("-")[0] for k in inchikeys], dtype=object)


def best_non_self(hits: engine.HitTable, query_ids, library_ids, n_queries: int):
    """Best hit of each query whose library accession differs from the query's."""
    best = np.full(n_queries, -1, dtype=np.int64)
    score = np.zeros(n_queries)
    for q, l, s in zip(hits.query_index, hits.library_index, hits.score, strict=True):
        if best[q] < 0 and library_ids[l] != query_ids[q]:
            best[q], score[q] = l, s
    return best, score


def ours(queries, library, params: engine.SearchParameters, label: str) -> Outcome:
    start = time.perf_counter()
    hits = engine.search(queries, library, params, backend="cpu")
    seconds = time.perf_counter() - start
    best, score = best_non_self(hits, queries.metadata["id"], library.metadata["id"], len(queries))
    return Outcome(label, best, score, seconds)


def flash_entropy(queries, library) -> Outcome:
    from ms_entropy import FlashEntropySearch

    spectra = [
        {"precursor_mz": float(library.precursor_mz[i]), "peaks": _peaks(library, i), "row": i}
        for i in range(len(library))
        if np.isfinite(library.precursor_mz[i])
    ]
    start = time.perf_counter()
    search = FlashEntropySearch()
    ordered = search.build_index(spectra)
    built = time.perf_counter() - start
    rows = np.array([s["row"] for s in ordered], dtype=np.int64)
    lib_ids = library.metadata["id"]
    best = np.full(len(queries), -1, dtype=np.int64)
    score = np.zeros(len(queries))
    start = time.perf_counter()
    for q in range(len(queries)):
        precursor = float(queries.precursor_mz[q])
        peaks = search.clean_spectrum_for_search(precursor, _peaks(queries, q))
        scores = search.identity_search(
            precursor_mz=precursor,
            peaks=peaks,
            ms1_tolerance_in_da=0.01,
            ms2_tolerance_in_da=0.02,
        )
        for k in np.argsort(-scores, kind="stable"):
            if scores[k] <= 0:
                break
            if lib_ids[rows[k]] != queries.metadata["id"][q]:
                best[q], score[q] = rows[k], scores[k]
                break
    seconds = time.perf_counter() - start
    return Outcome(
        "Flash entropy identity (ms_entropy)", best, score, seconds, f"index {built:.1f} s"
    )


def matchms_gnps_like(queries, library) -> Outcome:
    from matchms import Spectrum
    from matchms.filtering import default_filters, normalize_intensities
    from matchms.similarity import CosineGreedy

    def spectrum(lib, i):
        mz, intensity = lib.peaks(i)
        s = Spectrum(
            mz=mz, intensities=np.sqrt(intensity),
            metadata={"precursor_mz": float(lib.precursor_mz[i])},
            metadata_harmonization=False,
        )  # fmt: skip
        return normalize_intensities(default_filters(s))

    score_fn = CosineGreedy(tolerance=0.02)
    order = np.argsort(library.precursor_mz, kind="stable")
    sorted_prec = library.precursor_mz[order]
    cache: dict[int, object] = {}
    best = np.full(len(queries), -1, dtype=np.int64)
    score = np.zeros(len(queries))
    start = time.perf_counter()
    for q in range(len(queries)):
        query = spectrum(queries, q)
        p = queries.precursor_mz[q]
        lo = np.searchsorted(sorted_prec, p - 0.02, side="left")
        hi = np.searchsorted(sorted_prec, p + 0.02, side="right")
        found = []
        for l in order[lo:hi]:
            if library.metadata["id"][l] == queries.metadata["id"][q]:
                continue
            if l not in cache:
                cache[l] = spectrum(library, l)
            r = score_fn.pair(cache[l], query)
            if r["matches"] >= 6:
                found.append((-float(r["score"]), int(l)))
        if found:
            s, l = min(found)
            best[q], score[q] = l, -s
    seconds = time.perf_counter() - start
    return Outcome("matchms CosineGreedy, GNPS-like", best, score, seconds)


def _peaks(lib, i) -> np.ndarray:
    mz, intensity = lib.peaks(i)
    return np.column_stack([mz, intensity]).astype(np.float32)


def report(outcomes: list[Outcome], query_keys, library_keys) -> None:
    print()
    print(f"{'method':58s} {'recall@1':>9s} {'wrong':>7s} {'wrong>=0.7':>10s} {'s':>8s}  note")
    for o in outcomes:
        has = o.best >= 0
        right = has & (library_keys[np.maximum(o.best, 0)] == query_keys)
        wrong = has & ~right
        strong = has & (o.score >= 0.7)
        print(
            f"{o.method:58s} {right.mean():9.1%} {wrong.sum() / max(has.sum(), 1):7.1%} "
            f"{(wrong & strong).sum() / max(strong.sum(), 1):10.1%} {o.seconds:8.1f}  {o.note}"
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--skip-matchms", action="store_true")
    ap.add_argument("--skip-flash", action="store_true")
    ap.add_argument("--quick", action="store_true", help="only our defaults (and the references)")
    ap.add_argument(
        "--sample",
        type=int,
        default=0,
        help="instead of the query file, draw this many queries from the library at random "
        "(a second query set the defaults were never chosen on)",
    )
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    library = engine.load_library(DATA / "massbank_ms2.mgf.gz")
    if a.sample:
        rng = np.random.default_rng(a.seed)
        queries = library.subset(np.sort(rng.choice(len(library), a.sample, replace=False)))
    else:
        queries = engine.load_library(DATA / "massbank_ms2_queries.mgf.gz")
        queries = queries.subset(np.arange(min(a.queries, len(queries))))
    query_keys = skeleton(queries.metadata["inchikey"])
    library_keys = skeleton(library.metadata["inchikey"])
    engine.warm_up("cpu")
    P = engine.SearchParameters  # noqa: N806
    variants = [
        (P(), "ours: defaults (identity mode)"),
        (P(min_matches=2), "ours: identity, >= 2 matches"),
        (P(min_matches=3), "ours: identity, >= 3 matches"),
        (P(match_ion_mode=False), "ours: identity, either ion mode"),
        (P(score="unweighted_entropy"), "ours: identity, unweighted entropy"),
        (P(score="cosine"), "ours: identity settings, cosine"),
        (P(mode="analog"), "ours: analog mode (modified cosine, shift <= 100 Da)"),
        (P(mode="custom"), "ours: custom mode (the former defaults)"),
        (
            P(mode="custom", tolerance=0.02, precursor_tolerance=0.01, min_matches=3),
            "ours: cosine 0.02 Da, precursor 0.01 Da, >= 3 matches",
        ),
    ]
    if a.quick:
        variants = variants[:1]
    outcomes = [ours(queries, library, p, label) for p, label in variants]
    if not a.skip_flash:
        outcomes.append(flash_entropy(queries, library))
    if not a.skip_matchms:
        outcomes.append(matchms_gnps_like(queries, library))
    source = f"drawn from the library (seed {a.seed})" if a.sample else "from the query file"
    print(f"{len(queries)} queries {source}, leave-one-out against {len(library)} spectra (CPU)")
    report(outcomes, query_keys, library_keys)


if __name__ == "__main__":
    main()
