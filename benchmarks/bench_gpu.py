"""GPU benchmark of the exact greedy cosine (CUDA backend), for an H100/H200.

Validates the GPU against the CPU kernel first (dense blocks with spectra over
1,024 peaks, cosine and modified cosine, a wide tolerance that overflows the
on-chip path, and search hits end to end), then times

a. all-vs-all of the MassBank library (threshold 0.7, top 100) through SearchJob:
   the first time in the process (which builds what the search keeps: the GPU
   peak indexes of its tiles, host code compiled on first use), then again with
   the library resident (the table's row);
b. the 1,000 queries against the library with the library resident: end-to-end
   seconds and time to first hits;
c. dense 16,384 × 16,384 (tolerance 0.1), as SimMS's own benchmark;

and prints one table.  Run from the repository root::

    python benchmarks/bench_gpu.py [--data ../shared/data] [--cache .ext] [--json out.json]

The library is read from ``<cache>/massbank_ms2.npz`` (written by
``SpectrumLibrary.save``) when present, else parsed from the MGF files.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.backends import Batch, CpuBackend, PreparedSpectra  # noqa: E402
from engine.kernels import SearchOptions, dense_block, search_block  # noqa: E402
from engine.library import SpectrumLibrary  # noqa: E402
from engine.params import SearchParameters  # noqa: E402
from engine.search import SearchJob  # noqa: E402


def load(name: str, data: Path, cache: Path) -> SpectrumLibrary:
    """Library ``name`` from the npz cache, else from ``data/name.mgf.gz``."""
    npz = cache / f"{name}.npz"
    if npz.exists():
        return SpectrumLibrary.load(npz)
    from engine.io import read_library

    return read_library(data / f"{name}.mgf.gz")


def prepared(lib: SpectrumLibrary) -> PreparedSpectra:
    """Weights and norms with the default powers."""
    return PreparedSpectra.from_library(lib)


def compare_dense(
    gpu: tuple[np.ndarray, np.ndarray], cpu: tuple[np.ndarray, np.ndarray]
) -> tuple[float, int]:
    """Max |score difference| and number of match-count mismatches."""
    return float(np.abs(gpu[0] - cpu[0]).max(initial=0.0)), int(np.sum(gpu[1] != cpu[1]))


def compare_hits(g: tuple, c: tuple) -> tuple[bool, float, int]:
    """Same hit set?, max |score diff| on common hits, match mismatches."""
    gk = {(int(q), int(l)): (s, m) for q, l, s, m in zip(*g, strict=True)}
    ck = {(int(q), int(l)): (s, m) for q, l, s, m in zip(*c, strict=True)}
    same = gk.keys() == ck.keys()
    common = gk.keys() & ck.keys()
    diff = max((abs(gk[k][0] - ck[k][0]) for k in common), default=0.0)
    mism = sum(int(gk[k][1] != ck[k][1]) for k in common)
    return same, float(diff), mism


def main() -> None:
    """Validate, time and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--cache", type=Path, default=ROOT / ".ext")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--dense-n", type=int, default=16384)
    ap.add_argument("--skip-a", action="store_true", help="skip the all-vs-all run")
    ap.add_argument("--skip-checks", action="store_true", help="skip the exactness checks")
    ap.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="write a cProfile summary of an extra (untimed) all-vs-all run here",
    )
    ap.add_argument(
        "--diagnose",
        action="store_true",
        help="also time (a) as one backend call and as GPU launches only",
    )
    args = ap.parse_args()

    from engine.backends import gpu_status
    from engine.backends.cuda import CudaBackend

    ok, dev = gpu_status()
    print("GPU:", ok, dev, flush=True)
    if not ok:
        raise SystemExit(1)
    t0 = time.perf_counter()
    be = CudaBackend()
    be.warm_up()
    compile_s = time.perf_counter() - t0
    print(f"backend start + warm_up (compile or cache load): {compile_s:.1f} s", flush=True)

    lib = load("massbank_ms2", args.data, args.cache)
    qry = load("massbank_ms2_queries", args.data, args.cache)
    L, Q = prepared(lib), prepared(qry)
    counts = np.diff(L.offsets)
    print(f"library {len(L)} spectra, {L.offsets[-1]} peaks, max {counts.max()}", flush=True)
    rng = np.random.default_rng(20261118)
    report: dict[str, object] = {"device": dev, "compile_s": compile_s}

    checks: list[tuple] = []
    if not args.skip_checks:
        run_checks(be, L, qry, lib, rng, counts, checks)
    report["checks"] = checks

    rows = []
    # ---------------------------------------------------------------- (a) all vs all
    if not args.skip_a:
        params = SearchParameters(mode="custom", tolerance=0.1, threshold=0.7, top_n=100)
        # first: what this search shape builds once (tile indexes, host code compiled on
        # first use); then resident (nothing re-done: the library stays on the GPU)
        for label in ("first time in the process", "resident library"):
            before, cpu, long0 = be.rescored_pairs, time.process_time(), be.gpu_scored_pairs
            job = SearchJob(lib, lib, params, backend=be)
            ta, first, nh = timed_job(job)
            pairs = len(L) ** 2
            print(
                f"(a) {label}: {ta:.2f} s, {pairs / ta:.3e} pairs/s, first hits {first:.3f} s, "
                f"hits {nh}, rescored {be.rescored_pairs - before}, flagged on the GPU "
                f"{be.gpu_scored_pairs - long0}, host CPU "
                f"{time.process_time() - cpu:.2f} s, messages {job.messages}",
                flush=True,
            )
        rows.append(("a all-vs-all 54,390^2, thr 0.7, top 100", pairs, ta, first, nh))
        if args.diagnose:
            diagnose_a(be, lib, params)
        if args.profile:
            profile_a(be, lib, params, args.profile)
    print_rest(be, L, Q, qry, lib, rows, checks, report, args, dev)


def timed_job(job) -> tuple[float, float, int]:
    """Run a search job: seconds, seconds to its first chunk, hits."""
    t = time.perf_counter()
    first, nh = None, 0
    for chunk in job:
        if first is None:
            first = time.perf_counter() - t
        nh += len(chunk)
    return time.perf_counter() - t, first, nh


def diagnose_a(be, lib, params) -> None:
    """Time (a) as one ``run_batches`` call over every block, and as GPU launches only."""
    from engine.backends.cuda_tiles import plan_tiles

    plan = SearchJob(lib, lib, params, backend=be)._plan()
    batches = [b for _, bs in plan.blocks for b in bs]
    t = time.perf_counter()
    nh = sum(len(h) for _, h in be.run_batches(plan.queries, plan.library, batches, params))
    t1 = time.perf_counter() - t
    tiles = plan_tiles(batches, be.max_rows, be.max_cols, be._k.SORT_MAX)
    slots = be.pipeline.slots_for(tiles, params)
    dq, dl = be._upload(plan.queries), be._upload(plan.library)
    gpu = {}
    for qprune in (True, False):
        be.query_prune = qprune
        t = time.perf_counter()
        for n, tile in enumerate(tiles):
            be.pipeline.launch(tile, slots[n % len(slots)], dq, dl, params)
        for slot in slots:
            slot.stream.synchronize()
        gpu[qprune] = time.perf_counter() - t
    be.query_prune = True
    print(
        f"(a) diagnosis: one run_batches call {t1:.2f} s ({nh} pre-merge hits); "
        f"GPU launches only ({len(tiles)} tiles) {gpu[True]:.2f} s with the query-side "
        f"heavy-peak test, {gpu[False]:.2f} s without",
        flush=True,
    )


def profile_a(be, lib, params, path: Path) -> None:
    """cProfile of one more all-vs-all run, top 30 by own time, written to ``path``."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    SearchJob(lib, lib, params, backend=be).run()
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(30)
    path.write_text(buf.getvalue())


def run_checks(be, L, qry, lib, rng, counts, checks) -> None:
    """Exactness checks against the CPU kernel (appends to ``checks``)."""
    big = np.flatnonzero(counts > 1024)
    lsel = np.unique(np.r_[big, rng.choice(len(L), 2048 - len(big), replace=False)])
    qsel = np.unique(np.r_[big[:16], rng.choice(len(L), 240, replace=False)])
    Ls, Qs = L.reordered(lsel), L.reordered(qsel)
    for label, p, qs, ls in [
        (
            "cosine tol 0.1, 256x2048 (incl. >1024 peaks)",
            SearchParameters(mode="custom", tolerance=0.1),
            Qs,
            Ls,
        ),
        (
            "modified tol 0.1, 256x2048",
            SearchParameters(mode="custom", tolerance=0.1, score="modified_cosine"),
            Qs,
            Ls,
        ),
        (
            "cosine tol 2.0 (overflow path), 64x512",
            SearchParameters(mode="custom", tolerance=2.0),
            Qs.reordered(np.arange(64)),
            Ls.reordered(np.arange(512)),
        ),
        (
            "modified tol 1.0 (overflow path), 64x512",
            SearchParameters(mode="custom", tolerance=1.0, score="modified_cosine"),
            Qs.reordered(np.arange(64)),
            Ls.reordered(np.arange(512)),
        ),
    ]:
        before = be.rescored_pairs
        t = time.perf_counter()
        g = be.dense(qs, ls, p)
        tg = time.perf_counter() - t
        t = time.perf_counter()
        c = dense_block(
            qs.spectrum_set, ls.spectrum_set, 0, len(qs), 0, len(ls), p.tolerance, p.modified
        )
        tc = time.perf_counter() - t
        d, mm = compare_dense(g, c)
        checks.append((label, g[0].size, d, mm, be.rescored_pairs - before))
        f = be.dense(qs, ls, p, compact=True)
        fd, fmm = compare_dense((f[0].astype(np.float64), f[1]), c)
        checks.append((label + " compact", f[0].size, fd, fmm, None))
        print(
            f"check {label}: pairs {g[0].size}, max|diff| {d:.2e}, match mismatches {mm}, "
            f"rescored {be.rescored_pairs - before}, gpu {tg:.2f}s cpu {tc:.2f}s",
            flush=True,
        )
    # search hits: 64 queries vs the whole library, threshold 0.7, top 100, via SearchJob
    params = SearchParameters(mode="custom", tolerance=0.1, threshold=0.7, top_n=100)
    q64 = qry.subset(np.arange(64))
    gh = SearchJob(q64, lib, params, backend=be).run()
    Q64 = prepared(q64)
    t = time.perf_counter()
    options = SearchOptions(tolerance=0.1, threshold=0.7, top_n=100)
    ch = search_block(Q64.spectrum_set, L.spectrum_set, 0, len(Q64), 0, len(L), options)
    tc = time.perf_counter() - t
    same, d, mm = compare_hits((gh.query_index, gh.library_index, gh.score, gh.matches), ch)
    print(
        f"check search 64 queries x library thr 0.7 top 100: gpu hits {len(gh)}, cpu hits "
        f"{len(ch[0])}, same hit set {same}, max|diff| {d:.2e}, match mismatches {mm} "
        f"(cpu {tc:.1f}s)",
        flush=True,
    )
    checks.append(
        ("search 64 x 54390 thr 0.7 top 100 (hits)", len(gh), d, mm + (0 if same else 1), None)
    )
    pm = SearchParameters(
        tolerance=0.1,
        threshold=0.5,
        top_n=10,
        score="modified_cosine",
        precursor_tolerance=20.0,
        precursor_unit="ppm",
    )
    gh = SearchJob(q64, lib, pm, backend=be).run()
    ch = CpuBackend().score_batch(Q64, L, Batch(0, len(Q64), 0, len(L)), pm).top_per_query(10)
    same, d, mm = compare_hits(
        (gh.query_index, gh.library_index, gh.score, gh.matches),
        (ch.query_index, ch.library_index, ch.score, ch.matches),
    )
    print(
        f"check modified search 20 ppm thr 0.5 top 10: gpu hits {len(gh)}, cpu {len(ch)}, "
        f"same {same}, max|diff| {d:.2e}, mismatches {mm}",
        flush=True,
    )
    checks.append(("modified 20 ppm search (hits)", len(gh), d, mm + (0 if same else 1), None))


def print_rest(be, L, Q, qry, lib, rows, checks, report, args, dev) -> None:
    """Runs (b) and (c), then the table."""
    # ---------------------------------------------------------------- (b) queries
    params = SearchParameters(mode="custom", tolerance=0.1, threshold=0.7, top_n=100)
    SearchJob(qry, lib, params, backend=be).run()  # library resident now
    times = []
    for _ in range(3):
        times.append(timed_job(SearchJob(qry, lib, params, backend=be)))
    tb, fb, nhb = sorted(times)[1]
    pairs = len(Q) * len(L)
    rows.append(("b 1,000 queries x 54,390, resident", pairs, tb, fb, nhb))
    print(f"(b) runs {[(round(x, 3), round(y, 3)) for x, y, _ in times]}", flush=True)

    # ---------------------------------------------------------------- (c) dense
    n = min(args.dense_n, len(L))
    sel = np.sort(np.random.default_rng(0).choice(len(L), n, replace=False))
    D = L.reordered(sel)
    p = SearchParameters(mode="custom", tolerance=0.1)
    be.dense(D.reordered(np.arange(256)), D.reordered(np.arange(256)), p)
    results = {}
    for compact in (True, False):
        before = be.rescored_pairs
        tt = []
        for _ in range(2):
            t = time.perf_counter()
            s, m = be.dense(D, D, p, compact=compact)
            tt.append(time.perf_counter() - t)
            del s, m  # keep one result pair of each kind below
        s, m = be.dense(D, D, p, compact=compact)
        results[compact] = (s, m)
        kind = "float32/int16" if compact else "float64/int32"
        rows.append(
            (f"c dense {n:,} x {n:,}, tol 0.1, {kind}", n * n, min(tt), None, int(np.sum(s >= 0.7)))
        )
        print(
            f"(c) {kind}: {[round(x, 3) for x in tt]} s; rescored "
            f"{(be.rescored_pairs - before) // 3}",
            flush=True,
        )
    (fs, fm), (ds, dm) = results[True], results[False]
    d32 = float(np.abs(fs.astype(np.float64) - ds).max())
    mm32 = int(np.count_nonzero(fm != dm))
    print(
        f"(c) compact vs float64 result: max|diff| {d32:.2e}, match mismatches {mm32}", flush=True
    )
    checks.append((f"dense {n}^2 compact vs float64 GPU", fs.size, d32, mm32, None))

    # ---------------------------------------------------------------- table
    print()
    print(f"device: {dev}")
    print(
        f"{'run':44s} {'pairs':>10s} {'seconds':>9s} {'pairs/s':>10s} {'first hits':>10s} "
        f"{'hits':>10s}"
    )
    for name, pairs, sec, first, nh in rows:
        fh = f"{first:.3f} s" if first is not None else "-"
        print(f"{name:44s} {pairs:10.3e} {sec:9.2f} {pairs / sec:10.3e} {fh:>10s} {nh:10d}")
    print()
    print(f"{'exactness check':48s} {'pairs/hits':>10s} {'max|diff|':>10s} {'mism.':>6s}")
    for label, npairs, d, mm, _ in checks:
        print(f"{label:48s} {npairs:10d} {d:10.2e} {mm:6d}")
    report["rows"] = rows
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
