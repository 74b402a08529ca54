"""Where a cold first search spends its numba compile time, per dispatcher.

Runs ``simms search`` of the demo queries against the demo library in a fresh
child process with an empty ``NUMBA_CACHE_DIR`` and ``SIMMS_CACHE_DIR``; the
child listens to numba's ``numba:compile`` event and records, per dispatcher,
each signature compiled and its self time (nested compiles of the functions it
calls are charged to them, not to it).  Prints, per mode, a table sorted by
time, the dispatchers that compiled more than one signature, and the totals.
Usage::

    python benchmarks/profile_compile.py [--modes identity analog custom] [--top 15]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO_QUERIES = ROOT / "resources" / "demo_queries.mgf"
DEMO_LIBRARY = ROOT / "resources" / "demo_library.mgf"


def _child(mode: str, out: str, hits: str) -> None:
    """Run one search in this process, listening to numba's compile events."""
    import threading

    from numba.core import event

    records: list[dict] = []
    local = threading.local()

    class Compiles(event.Listener):
        def on_start(self, ev):
            stack = local.__dict__.setdefault("stack", [])
            stack.append([time.thread_time(), 0.0, 0.0])  # start, nested, LLVM

        def on_end(self, ev):
            start, nested, llvm = local.stack.pop()
            took = time.thread_time() - start
            if local.stack:
                local.stack[-1][1] += took
            func = ev.data["dispatcher"].py_func
            records.append(
                {
                    "name": f"{func.__module__}.{func.__qualname__}",
                    "sig": ", ".join(str(a) for a in ev.data["args"]),
                    "self": took - nested,
                    "llvm": llvm,
                    "total": took,
                    "depth": len(local.stack),
                }
            )

    class Llvm(event.Listener):
        """LLVM time (optimisation, code generation), charged to the compile it is in."""

        def on_start(self, ev):
            local.llvm = getattr(local, "llvm", 0) + 1
            if local.llvm == 1:
                local.llvm_start = time.thread_time()

        def on_end(self, ev):
            local.llvm -= 1
            stack = getattr(local, "stack", None)
            if local.llvm == 0 and stack:
                stack[-1][2] += time.thread_time() - local.llvm_start

    event.register("numba:compile", Compiles())
    event.register("numba:llvm_lock", Llvm())
    from engine.cli import main

    start = time.perf_counter()
    argv = ["search", str(DEMO_QUERIES), str(DEMO_LIBRARY), "--mode", mode,
            "--backend", "cpu", "-o", hits, "--quiet"]  # fmt: skip
    status = main(argv)
    wall = time.perf_counter() - start
    Path(out).write_text(json.dumps({"status": status, "wall": wall, "records": records}))


def profile(mode: str) -> dict:
    """Run the child for ``mode`` cold; its records, wall and CPU seconds."""
    with tempfile.TemporaryDirectory() as numba_cache, tempfile.TemporaryDirectory() as lib:
        env = {**os.environ, "NUMBA_CACHE_DIR": numba_cache, "SIMMS_CACHE_DIR": lib,
               "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(ROOT)}  # fmt: skip
        out = str(Path(lib) / "profile.json")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        code = f"import sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import profile_compile as p; p._child({mode!r}, {out!r}, {str(Path(lib) / 'hits.tsv')!r})"  # noqa: E501
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode:
            raise SystemExit(f"{mode}: child exited {done.returncode}")
        result = json.loads(Path(out).read_text())
    result["process_wall"] = wall
    result["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result


def report(mode: str, result: dict, top: int) -> None:
    """Print the per-dispatcher table of one mode."""
    per: dict[str, dict] = defaultdict(lambda: {"n": 0, "self": 0.0, "llvm": 0.0, "sigs": []})
    for r in result["records"]:
        row = per[r["name"]]
        row["n"] += 1
        row["self"] += r["self"]
        row["llvm"] += r["llvm"]
        row["sigs"].append(r["sig"])
    total = sum(r["self"] for r in result["records"])
    llvm = sum(r["llvm"] for r in result["records"])
    n_sigs = len(result["records"])
    print(f"\n## {mode}: process {result['process_wall']:.1f} s wall, {result['cpu']:.1f} s CPU; "
          f"compile {total:.1f} s CPU (LLVM {llvm:.1f}), {n_sigs} signatures of {len(per)} "
          "dispatchers\n")  # fmt: skip
    print("| dispatcher | signatures | self CPU s | of which LLVM s |")
    print("|---|---|---|---|")
    rows = sorted(per.items(), key=lambda kv: -kv[1]["self"])
    rest = rows[top:]
    rows_shown = [(name.removeprefix("engine."), row) for name, row in rows[:top]]
    if rest:
        summed = {k: sum(r[k] for _, r in rest) for k in ("n", "self", "llvm")}
        rows_shown.append((f"({len(rest)} more)", summed))
    for name, row in rows_shown:
        print(f"| {name} | {row['n']} | {row['self']:.2f} | {row['llvm']:.2f} |")
    multi = [(name, row) for name, row in rows if row["n"] > 1]
    if multi:
        print("\nmore than one signature:")
        for name, row in multi:
            print(f"- {name} ({row['self']:.2f} s)")
            for sig in row["sigs"]:
                print(f"    ({sig})")


def main() -> None:
    """Profile each mode cold and print its table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modes", nargs="+", default=["identity", "analog", "custom"])
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--json", help="also write the raw records of every mode here")
    args = ap.parse_args()
    results = {}
    for mode in args.modes:
        results[mode] = profile(mode)
        report(mode, results[mode], args.top)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
