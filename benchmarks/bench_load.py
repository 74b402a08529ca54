"""Library loading benchmark: cold MGF load (fast and reference parsers), matchms, cache.

Reads one MGF file (default: MassBank, 54,390 spectra, gzip) with

* ``read_library(path)``: the fast parser (numba scan, pyteomics only for
  records it cannot prove), best of ``--repeats``;
* ``read_library(path, parser="reference")``: pyteomics record by record,
  best of ``--repeats``;
* matchms ``load_from_mgf`` on the same file (gzip read as a text stream), once;
* ``load_library(path)`` through the content-hash cache (``$SIMMS_CACHE_DIR``
  set to a temporary folder), best of ``--repeats`` after one run that fills it;

plus the fast parser's first call in a fresh interpreter (numba's on-disk cache
loaded, imports included).  "Cold" means no library cache: the file is read,
hashed, un-gzipped and parsed every time.  Prints one table.  Usage::

    python benchmarks/bench_load.py [--file PATH] [--repeats 3] [--skip-matchms]
"""

from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))

from engine.io import load_library, read_library  # noqa: E402


def _best(function, repeats: int) -> tuple[float, object, float]:
    """Best wall-clock seconds of ``repeats`` runs, the result, and that run's CPU seconds."""
    best, result, cpu = float("inf"), None, float("nan")
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = function()
        seconds = time.perf_counter() - start
        if seconds < best:
            best, cpu = seconds, time.process_time() - start_cpu
    return best, result, cpu


def _fresh_process(path: Path) -> float:
    """Seconds of the fast parser's first call in a new interpreter (imports included)."""
    code = (
        "import time; t = time.perf_counter(); "
        f"from engine.io import read_library; read_library(r'{path}'); "
        "print(time.perf_counter() - t)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def _matchms(path: Path) -> tuple[float, int, float]:
    from matchms.importing import load_from_mgf

    start, start_cpu = time.perf_counter(), time.process_time()
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as stream:
        count = sum(1 for _ in load_from_mgf(stream))
    return time.perf_counter() - start, count, time.process_time() - start_cpu


def main() -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=DATA / "massbank_ms2.mgf.gz")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-matchms", action="store_true")
    args = parser.parse_args()
    path = args.file.resolve()

    read_library(ROOT / "resources" / "demo_queries.mgf")  # numba kernels loaded
    fast_s, lib, fast_cpu = _best(lambda: read_library(path), args.repeats)
    ref_s, ref, ref_cpu = _best(lambda: read_library(path, parser="reference"), args.repeats)
    n = len(lib)
    rows = [
        (f"ours, fast parser (cold, best of {args.repeats})", fast_s, n, fast_cpu),
        (f"ours, reference parser (pyteomics, best of {args.repeats})", ref_s, len(ref), ref_cpu),
        ("ours, fast parser, first call in a new process", _fresh_process(path), n, None),
    ]
    matchms_s = None
    if not args.skip_matchms:
        matchms_s, count, matchms_cpu = _matchms(path)
        rows.append(("matchms load_from_mgf (1 run)", matchms_s, count, matchms_cpu))
    with tempfile.TemporaryDirectory() as cache_dir:
        os.environ["SIMMS_CACHE_DIR"] = cache_dir
        fill_s, _, fill_cpu = _best(lambda: load_library(path), 1)
        cached_s, _, cached_cpu = _best(lambda: load_library(path), args.repeats)
        rows.append(("ours, load_library filling the cache (1 run)", fill_s, n, fill_cpu))
        rows.append(
            (f"ours, load_library from the cache (best of {args.repeats})", cached_s, n, cached_cpu)
        )

    print(f"{path.name}: {n:,} spectra, {lib.n_peaks:,} peaks; {os.cpu_count()} CPUs")
    print("| method | seconds | CPU seconds | spectra/s | vs matchms |")
    print("|---|---|---|---|---|")
    for name, seconds, count, cpu in rows:
        ratio = f"{matchms_s / seconds:.1f}x" if matchms_s else "-"
        cpu_text = "-" if cpu is None else f"{cpu:.3f}"
        print(f"| {name} | {seconds:.3f} | {cpu_text} | {count / seconds:,.0f} | {ratio} |")


if __name__ == "__main__":
    main()
