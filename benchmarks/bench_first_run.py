"""First contact: what a fresh install costs before its first answer.

Each step runs in a fresh subprocess with an empty numba cache
(``NUMBA_CACHE_DIR``) and an empty library cache (``SIMMS_CACHE_DIR``), as on a
new machine; the "warm" rows run again on the caches the step before left.
Prints a table of wall and CPU seconds (the child's user + system time).
Usage::

    python benchmarks/bench_first_run.py [--steps import identity analog custom]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO_QUERIES = ROOT / "resources" / "demo_queries.mgf"
DEMO_LIBRARY = ROOT / "resources" / "demo_library.mgf"


def _search(mode: str) -> list[str]:
    return [sys.executable, "-m", "engine", "search", str(DEMO_QUERIES), str(DEMO_LIBRARY),
            "--mode", mode, "--backend", "cpu", "-o", "HITS"]  # fmt: skip


STEPS = {
    "import": ("python -c 'import engine'", [sys.executable, "-c", "import engine"]),
    "identity": ("simms search demo (identity)", _search("identity")),
    "analog": ("simms search demo --mode analog", _search("analog")),
    "custom": ("simms search demo --mode custom", _search("custom")),
}


def run(command: list[str], env: dict) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and exit status of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode:
        print(done.stderr, file=sys.stderr)
    return wall, cpu, done.returncode


def main() -> None:
    """Run each step cold, then warm, and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", nargs="+", default=list(STEPS), choices=list(STEPS))
    args = ap.parse_args()
    print("| step | cold wall s | cold CPU s | warm wall s | warm CPU s |")
    print("|---|---|---|---|---|")
    for name in args.steps:
        label, command = STEPS[name]
        with tempfile.TemporaryDirectory() as numba_cache, tempfile.TemporaryDirectory() as lib:
            env = {**os.environ, "NUMBA_CACHE_DIR": numba_cache, "SIMMS_CACHE_DIR": lib,
                   "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
            command = [c.replace("HITS", str(Path(lib) / "hits.tsv")) for c in command]
            cold = run(command, env)
            warm = run(command, env)
        status = "" if cold[2] == warm[2] == 0 else f" (exit {cold[2]}, {warm[2]})"
        cells = " | ".join(f"{x:.2f}" for x in (cold[0], cold[1], warm[0], warm[1]))
        print(f"| {label}{status} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
