"""CPU search against ms_entropy's Flash entropy search: identity, open and analog searches.

MassBank queries (``massbank_ms2_queries.mgf.gz``) against the MassBank library
(``massbank_ms2.mgf.gz``, 54,390 spectra), top 10, through ``engine.search``
on the CPU backend.  Each time is the best of ``--repeats`` runs after a first
one (compilation, preprocessing and the peak indexes are then cached, as
Flash's index is built apart):

* entropy identity search (identity mode: 0.02 Da, precursor 0.01 Da) and the
  same without a precursor window (open search), ours and Flash, both 1 thread;
  every hit's score is compared with Flash's score of that library spectrum, and
  each query's top 10 with Flash's top 10 among the library spectra of the same
  ion mode (ours skips the opposite mode);
* analog mode (modified cosine, shift <= 100 Da, >= 6 matches, >= 0.7), on
  ``--threads`` threads;
* the modified cosine without a precursor window (analog mode's other settings);
* the peak index: build time and size (ours: all library blocks of the open
  search; Flash: ``build_index``, which also cleans the spectra).

Needs ``ms_entropy`` (``--skip-flash`` without it).  Usage::

    python benchmarks/bench_cpu_vs_flash.py [--queries 1000] [--repeats 2] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))

import engine  # noqa: E402
from engine.backends.base import PreparedSpectra, score_kind  # noqa: E402
from engine.backends.cpu import CpuBackend  # noqa: E402
from engine.kernels import library_peak_index  # noqa: E402

P = engine.SearchParameters


def best_time(queries, library, params, threads: int, repeats: int):
    """First run (compiles, prepares), then the best of ``repeats`` runs: (seconds, hits)."""

    def run():
        return engine.search_job(queries, library, params, backend="cpu", cpu_threads=threads).run()

    hits = run()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        hits = run()
        best = min(best, time.perf_counter() - start)
    return best, hits


def _peaks(lib, i) -> np.ndarray:
    mz, intensity = lib.peaks(i)
    return np.column_stack([mz, intensity]).astype(np.float32)


class Flash:
    """ms_entropy's FlashEntropySearch over the library, rows mapped back to ours."""

    def __init__(self, library) -> None:
        from ms_entropy import FlashEntropySearch

        spectra = [
            {"precursor_mz": float(library.precursor_mz[i]), "peaks": _peaks(library, i), "row": i}
            for i in range(len(library))
        ]
        start = time.perf_counter()
        self.search = FlashEntropySearch()
        ordered = self.search.build_index(spectra)
        self.build_seconds = time.perf_counter() - start
        self.rows = np.array([s["row"] for s in ordered], dtype=np.int64)
        self.cleaned = {int(s["row"]): s["peaks"] for s in ordered}
        self.pairwise = 0.0  # largest |our score - ms_entropy's pairwise score| seen
        self.nbytes = sum(a.nbytes for a in self.search.entropy_search.index)
        self.nbytes += self.search.metadata.nbytes + self.search.precursor_mz_array.nbytes

    def run(self, queries, library, hits, open_search: bool, top_n: int = 10):
        """Seconds of the searches (each query's top ``top_n`` picked too), and the
        agreement with our ``hits`` (:func:`compare`, outside the timing)."""
        from ms_entropy import calculate_entropy_similarity

        lib_pol = library.polarity()
        q_pol = queries.polarity()
        by_query = np.split(
            np.arange(len(hits)), np.searchsorted(hits.query_index, np.arange(1, len(queries)))
        )
        seconds, diff, same = 0.0, 0.0, 0
        for q in range(len(queries)):
            precursor = float(queries.precursor_mz[q])
            peaks = self.search.clean_spectrum_for_search(precursor, _peaks(queries, q))
            start = time.perf_counter()
            if open_search:
                scores = self.search.open_search(peaks=peaks, ms2_tolerance_in_da=0.02)
            else:
                scores = self.search.identity_search(
                    precursor_mz=precursor, peaks=peaks,
                    ms1_tolerance_in_da=0.01, ms2_tolerance_in_da=0.02,
                )  # fmt: skip
            top = np.argpartition(-scores, top_n)[:top_n]
            top = top[np.argsort(-scores[top], kind="stable")]
            seconds += time.perf_counter() - start
            full = np.zeros(len(library), dtype=np.float64)
            full[self.rows] = scores
            mine = by_query[q]
            for l, score in zip(hits.library_index[mine], hits.score[mine], strict=True):
                ref = calculate_entropy_similarity(
                    peaks, self.cleaned[int(l)], ms2_tolerance_in_da=0.02, clean_spectra=False
                )
                self.pairwise = max(self.pairwise, abs(ref - score))
            d, ok = compare(
                hits.library_index[mine], hits.score[mine], full, (lib_pol * q_pol[q]) >= 0, top_n
            )
            diff, same = max(diff, d), same + ok
        return seconds, diff, same / max(len(queries), 1)


def compare(l, s, flash_scores, allowed, top_n):
    """Largest |our score - Flash's| over one query's hits ``(l, s)``; whether our top
    ``top_n`` holds every library spectrum of the same ion mode that Flash scores
    above its ``top_n``-th best (ties and float32 rounding may swap the last place)."""
    diff = float(np.max(np.abs(flash_scores[l] - s))) if len(s) else 0.0
    scores = np.where(allowed, flash_scores, 0.0)
    positive = np.flatnonzero(scores > 0)
    cut = np.sort(scores[positive])[-top_n] + 1e-5 if len(positive) >= top_n else 0.0
    theirs = {int(x) for x in positive if scores[x] > cut}
    return diff, theirs <= set(l.tolist())


def index_stats(library, params):
    """Seconds and bytes of our peak indexes over all library blocks of a CPU search."""
    prepared = PreparedSpectra.for_search(library, params)
    size = CpuBackend().block_shape(params.batch_size, params.top_n)[1]
    kind = score_kind(params)
    start = time.perf_counter()
    parts = [
        library_peak_index(prepared.spectrum_set, l0, min(l0 + size, len(prepared)), kind)
        for l0 in range(0, len(prepared), size)
    ]
    seconds = time.perf_counter() - start
    return seconds, sum(a.nbytes for part in parts for a in part if hasattr(a, "nbytes"))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2, help="threads of the analog searches")
    ap.add_argument("--skip-flash", action="store_true")
    ap.add_argument("--skip-modified", action="store_true", help="no modified-cosine rows")
    a = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    library = engine.load_library(DATA / "massbank_ms2.mgf.gz")
    queries = engine.load_library(DATA / "massbank_ms2_queries.mgf.gz")
    queries = queries.subset(np.arange(min(a.queries, len(queries))))
    nq = len(queries)
    flash = None if a.skip_flash else Flash(library)
    rows = []
    for name, params, open_search in (
        ("entropy identity", P(), False),
        ("entropy open (no precursor window)", P(precursor_tolerance=None), True),
    ):
        seconds, hits = best_time(queries, library, params, 1, a.repeats)
        note = f"{len(hits)} hits"
        if flash is not None:
            flash.pairwise = 0.0
            f_seconds, diff, same = flash.run(queries, library, hits, open_search)
            note += (
                f"; max |ours - ms_entropy pairwise| {flash.pairwise:.1e}, "
                f"max |ours - Flash| {diff:.1e}, same top 10 as Flash {same:.1%}"
            )
            rows.append((f"Flash {name}", 1, f_seconds, ""))
        rows.append((f"ours: {name}", 1, seconds, note))
    modified = [
        ("analog mode (modified cosine +-100 Da, >= 6 matches, >= 0.7)", P(mode="analog")),
        (
            "modified cosine, no precursor window (analog mode's other settings)",
            P(mode="analog", precursor_tolerance=None),
        ),
        (
            "modified cosine, no window, 0.1 Da, peaks as in the files, >= 0.7",
            P(mode="custom", score="modified_cosine", threshold=0.7),
        ),
    ]
    for name, params in [] if a.skip_modified else modified:
        seconds, hits = best_time(queries, library, params, a.threads, a.repeats)
        rows.append((f"ours: {name}", a.threads, seconds, f"{len(hits)} hits"))
    print(
        f"{nq:,} queries x {len(library):,} library spectra, top 10, CPU ({os.cpu_count()} cores)"
    )
    print(f"| {'search':<72} | threads | {'seconds':>7} | {'ms/query':>8} | note |")
    print(f"|{'-' * 74}|---------|---------|----------|------|")
    for name, threads, seconds, note in rows:
        print(
            f"| {name:<72} | {threads:>7} | {seconds:7.3f} | {seconds / nq * 1e3:8.3f} | {note} |"
        )
    print()
    for label, params in (("entropy", P(precursor_tolerance=None)), ("analog", P(mode="analog"))):
        seconds, size = index_stats(library, params)
        print(f"our peak index ({label}, whole library): {seconds:.2f} s, {size / 2**20:.1f} MiB")
    if flash is not None:
        print(
            f"Flash build_index (cleans the spectra too): {flash.build_seconds:.2f} s, "
            f"{flash.nbytes / 2**20:.1f} MiB"
        )


if __name__ == "__main__":
    main()
