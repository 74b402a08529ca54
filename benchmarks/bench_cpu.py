"""CPU benchmark: exact brute-force greedy-cosine search vs matchms.

Runs, in one process and on the same data,

* SimMS ``search_block`` (numba, all cores): queries x library, top-n hits;
* matchms 0.33 ``CosineGreedy`` on a random sample of the same pairs (1 core);
* matchms ``FlashSimilarity(score_type="cosine")`` ``.matrix`` on queries x a
  library subset (not the greedy score; shown for speed only),

and prints one table.  Usage::

    python benchmarks/bench_cpu.py [--queries 1000] [--library 54390]
        [--matchms-pairs 20000] [--flash-library 10000] [--tolerance 0.1] [--top-n 10]
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))


def read_mgf_csr(path: Path, limit: int | None = None):
    """Minimal MGF reader -> ``(mz, intensity, offsets, precursor_mz)`` (peaks, PEPMASS)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        text = fh.read()
    tokens, counts, prec = [], [], []
    for block in text.split("BEGIN IONS")[1 : limit + 1 if limit else None]:
        body = block.split("END IONS", 1)[0]
        p = np.nan
        peaks = []
        for line in body.splitlines():
            if line[:1].isdigit():
                peaks.append(line)
            elif line.startswith("PEPMASS="):
                p = float(line[8:].split()[0])
        prec.append(p)
        counts.append(len(peaks))
        tokens.append(" ".join(peaks))
    vals = np.array(" ".join(tokens).split(), dtype=np.float64).reshape(-1, 2)
    off = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=off[1:])
    return vals[:, 0].copy(), vals[:, 1].copy(), off, np.array(prec)


def _spectra(mz, it, off, prec, idx):
    from matchms import Spectrum

    return [
        Spectrum(
            mz=mz[off[i] : off[i + 1]],
            intensities=it[off[i] : off[i + 1]],
            metadata={"precursor_mz": float(prec[i])},
            metadata_harmonization=False,
        )
        for i in idx
    ]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--library", type=int, default=54390)
    ap.add_argument("--matchms-pairs", type=int, default=20000)
    ap.add_argument(
        "--flash-library",
        type=int,
        default=10000,
        help="library spectra for FlashSimilarity (0 = skip)",
    )
    ap.add_argument("--tolerance", type=float, default=0.1)
    ap.add_argument("--top-n", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--skip-brute", action="store_true", help="do not time the unpruned brute-force search"
    )
    a = ap.parse_args(argv)

    import numba

    from engine.kernels import (
        SearchOptions,
        SpectrumSet,
        cosine_greedy_pair,
        prepare_weights,
        search_block,
    )

    print(f"loading data from {DATA} ...", flush=True)
    lmz, lit, loff, lprec = read_mgf_csr(DATA / "massbank_ms2.mgf.gz", a.library)
    qmz, qit, qoff, qprec = read_mgf_csr(DATA / "massbank_ms2_queries.mgf.gz", a.queries)
    nq, nl = len(qoff) - 1, len(loff) - 1

    t0 = time.perf_counter()
    lw, lnorm = prepare_weights(lmz, lit, loff)
    qw, qnorm = prepare_weights(qmz, qit, qoff)
    cosine_greedy_pair([100.0], [1.0], [100.0], [1.0])
    queries = SpectrumSet(qmz, qw, qoff, qnorm, qprec)
    library = SpectrumSet(lmz, lw, loff, lnorm, lprec)
    options = SearchOptions(tolerance=a.tolerance, top_n=a.top_n)
    search_block(queries, library, 0, min(nq, 2), 0, min(nl, 50), options)
    t_warm = time.perf_counter() - t0
    print(
        f"kernel load/compile + warm-up: {t_warm:.2f} s "
        f"(numba threads: {numba.get_num_threads()}, cores: {os.cpu_count()})",
        flush=True,
    )

    rows = []
    sargs = (queries, library, 0, nq, 0, nl, options)
    # --- SimMS exact, bound-pruned (default) ---
    t0 = time.perf_counter()
    hits = search_block(*sargs)
    t_simms = time.perf_counter() - t0
    rows.append(("SimMS search_block, pruned (numba CPU)", nq * nl, t_simms, "yes"))
    print(f"search_block (pruned): {len(hits[0])} hits in {t_simms:.2f} s", flush=True)
    # --- SimMS exact brute force: every pair scored ---
    t_brute = None
    if not a.skip_brute:
        t0 = time.perf_counter()
        brute = search_block(*sargs, prune=False)
        t_brute = time.perf_counter() - t0
        same = all(np.array_equal(x, y) for x, y in zip(hits, brute, strict=True))
        rows.append(("SimMS search_block, brute force (numba CPU)", nq * nl, t_brute, "yes"))
        print(
            f"search_block (brute force): {t_brute:.2f} s; hits identical to pruned: {same}",
            flush=True,
        )

    # --- matchms CosineGreedy on sampled pairs ---
    from matchms.similarity import CosineGreedy, FlashSimilarity

    rng = np.random.default_rng(a.seed)
    npairs = a.matchms_pairs
    pq = rng.integers(0, nq, npairs)
    pl = rng.integers(0, nl, npairs)
    uq, ul = np.unique(pq), np.unique(pl)
    qs = dict(zip(uq.tolist(), _spectra(qmz, qit, qoff, qprec, uq), strict=True))
    ls = dict(zip(ul.tolist(), _spectra(lmz, lit, loff, lprec, ul), strict=True))
    cg = CosineGreedy(tolerance=a.tolerance)
    cg.pair(ls[int(pl[0])], qs[int(pq[0])])  # JIT warm-up
    t0 = time.perf_counter()
    ref = np.empty(npairs)
    refm = np.empty(npairs, dtype=np.int64)
    for k in range(npairs):
        r = cg.pair(ls[int(pl[k])], qs[int(pq[k])])
        ref[k] = r["score"]
        refm[k] = r["matches"]
    t_mm = time.perf_counter() - t0
    mine = [
        cosine_greedy_pair(
            lmz[loff[l] : loff[l + 1]],
            lit[loff[l] : loff[l + 1]],
            qmz[qoff[q] : qoff[q + 1]],
            qit[qoff[q] : qoff[q + 1]],
            tolerance=a.tolerance,
        )
        for q, l in zip(pq, pl, strict=True)
    ]
    diff = np.max(np.abs(ref - np.array([m[0] for m in mine])))
    bad = int(np.count_nonzero(refm != np.array([m[1] for m in mine])))
    print(f"sampled pairs vs matchms: max|diff| = {diff:.2e}, match mismatches = {bad}")
    rows.append(("matchms CosineGreedy (1 core, sampled pairs)", npairs, t_mm, "reference"))

    # --- matchms FlashSimilarity (cosine) ---
    if a.flash_library > 0:
        nfl = min(nl, a.flash_library)
        fl = _spectra(lmz, lit, loff, lprec, range(nfl))
        fq = _spectra(qmz, qit, qoff, qprec, range(nq))
        flash = FlashSimilarity(score_type="cosine", tolerance=a.tolerance)
        t0 = time.perf_counter()
        flash.matrix(fq, fl, n_jobs=-1)  # index built over the library, queries streamed
        t_fl = time.perf_counter() - t0
        rows.append(
            (
                f"matchms FlashSimilarity cosine ({os.cpu_count()} cores, {nq}x{nfl})",
                nq * nfl,
                t_fl,
                "no (different score)",
            )
        )

    print()
    print(
        f"{nq} queries x {nl} library spectra, tolerance {a.tolerance}, top {a.top_n}, threshold 0"
    )
    print(f"| {'implementation':<52} | {'pairs':>11} | {'seconds':>8} | {'pairs/s':>9} | exact? |")
    print(f"|{'-' * 54}|{'-' * 13}|{'-' * 10}|{'-' * 11}|--------|")
    for name, n, t, ex in rows:
        print(f"| {name:<52} | {n:>11,d} | {t:>8.2f} | {n / t:>9.3g} | {ex} |")
    mm_rate = npairs / t_mm
    print()
    for label, t in (("pruned", t_simms), ("brute force", t_brute)):
        if t is None:
            continue
        rate = nq * nl / t
        line = f"SimMS {label}: {rate / mm_rate:.0f}x matchms CosineGreedy"
        if a.flash_library > 0:
            line += f", {rate / (nq * nfl / t_fl):.1f}x matchms FlashSimilarity"
        print(line)


if __name__ == "__main__":
    main()
