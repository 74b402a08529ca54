"""Preprocessing benchmark: each preset on MassBank, step by step and fused.

For every preset of ``engine.preprocess.PRESETS``, times the step-by-step
filters (``Pipeline.reference``) and the fused pass (calling the pipeline), best
of ``--repeat`` runs after a warm-up run (which also compiles the kernel), on
all of numba's threads and on one thread, checks that both give the same peaks
bit for bit, and prints a Markdown table: seconds, GB/s of peak data (the m/z
and intensity arrays of the input, float64), spectra per second, the CPU
seconds of the process in that run and its page faults (pages the run touched
first: fresh memory from the kernel, which zeroes each page on that first
touch).  The load average before and after is printed too: on a shared machine,
other work slows the parallel runs most (a kernel waits for its slowest
thread).  Usage::

    python benchmarks/bench_preprocess.py [--data DIR] [--repeat 5] [--fused-only]

Whether a run's output lands on fresh pages is glibc's choice: by default its
threshold for mapping large blocks afresh adapts to the blocks freed, so
repeated runs may reuse memory.  ``MALLOC_MMAP_THRESHOLD_=131072`` (fixed)
gives every run fresh pages, as a one-shot call has;
``MALLOC_MMAP_THRESHOLD_=2000000000 MALLOC_TRIM_THRESHOLD_=4000000000`` keeps
freed memory for reuse.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))


def best_of(run: Callable[[], object], repeat: int) -> tuple[float, float, int]:
    """Fastest of ``repeat`` timed runs after one untimed run: wall, CPU seconds, page faults.

    CPU seconds and minor page faults are the process's (all threads) in the
    run of least wall time.
    """
    run()
    times = []
    for _ in range(repeat):
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        times.append((wall, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults))
    return min(times)


def same_peaks(a, b) -> bool:
    return all(
        np.array_equal(getattr(a, k).view(np.int64), getattr(b, k).view(np.int64))
        for k in ("mz", "intensity", "offsets")
    ) and np.array_equal(a.ids, b.ids)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA, help="folder of massbank_ms2.mgf.gz")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--fused-only",
        action="store_true",
        help="time the fused pass only (the step-by-step result is still compared once)",
    )
    args = ap.parse_args(argv)

    import numba

    import engine
    from engine.preprocess import FILTERS, PRESETS, preset
    from engine.preprocess.fused import KernelSegment, compile_plan

    library = engine.load_library(args.data / "massbank_ms2.mgf.gz")
    n_bytes = library.mz.nbytes + library.intensity.nbytes
    threads = numba.get_num_threads()
    print(
        f"MassBank: {len(library):,} spectra, {library.n_peaks:,} peaks, "
        f"{n_bytes / 1e6:.1f} MB of peak data; numba {numba.__version__}, "
        f"{threads} threads ({numba.threading_layer()}), {os.cpu_count()} CPUs"
    )
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))

    rows = []
    for name in PRESETS:
        pipe = preset(name)
        plan = compile_plan(pipe.steps, FILTERS)
        passes = sum(isinstance(s, KernelSegment) for s in plan.segments) if plan else 0
        if not same_peaks(pipe(library), pipe.reference(library)):
            print(f"{name}: the fused pass differs from the filters", file=sys.stderr)
            return 1
        runs = []
        if not args.fused_only:
            runs.append(("step by step", threads, lambda p=pipe: p.reference(library)))
        runs.append((f"fused ({passes} pass)", threads, lambda p=pipe: p(library)))
        if passes:
            runs.append((f"fused ({passes} pass)", 1, lambda p=pipe: p(library)))
        for label, n_threads, run in runs:
            numba.set_num_threads(n_threads)
            try:
                seconds, cpu, faults = best_of(run, args.repeat)
            finally:
                numba.set_num_threads(threads)
            rows.append((name, label, n_threads, seconds, cpu, faults))

    print("load average after:  {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print()
    print(
        "| preset | path | threads | seconds | GB/s of peak data | spectra/s | CPU s "
        "| page faults |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, label, n_threads, seconds, cpu, faults in rows:
        if name == "none":  # the library itself comes back: nothing to measure
            rate, per_second = "(no pass)", "(no pass)"
        else:
            rate, per_second = f"{n_bytes / seconds / 1e9:.2f}", f"{len(library) / seconds:.2e}"
        print(
            f"| {name} | {label} | {n_threads} | {seconds:.4f} | {rate} | {per_second} "
            f"| {cpu:.4f} | {faults} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
