"""Ctrl-C at random moments of ``simms search`` on MassBank; prints one row per interrupt.

Usage: ``python benchmarks/interrupt_cli.py [--trials 10]`` from the project root, with
``../shared/data`` beside it.  Each run searches the 1,000 MassBank queries against the
54,390-spectrum library on the CPU (cosine: all hits >= 0.2; modified cosine: top 3),
waits until the search has started, sleeps a random 0-3 s, sends SIGINT, and reports
the exit status, whether stderr holds a traceback, the ``# complete:`` line and the
rows that pandas reads back.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
SEARCHES = {
    "cosine": ["--top", "0", "--threshold", "0.2"],
    "modified-cosine": ["--score", "modified-cosine", "--top", "3"],
}


def interrupt_once(score: str, delay: float, out: Path) -> dict:
    command = [
        sys.executable, "-m", "engine", "search",
        str(DATA / "massbank_ms2_queries.mgf.gz"), str(DATA / "massbank_ms2.mgf.gz"),
        "-o", str(out), "--backend", "cpu", *SEARCHES[score],
    ]  # fmt: skip
    proc = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if "searching" in line:
            break
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    err = proc.stderr.read()
    code = proc.wait()
    text = out.read_text(encoding="utf-8") if out.exists() else ""
    complete = next((ln for ln in text.splitlines() if ln.startswith("# complete:")), "-")
    rows = len(pd.read_csv(out, sep="\t", comment="#")) if out.exists() else 0
    return {
        "score": score,
        "delay_s": round(delay, 2),
        "exit": code,
        "traceback": "Traceback" in err or "Fatal" in err,
        "rows": rows,
        "complete": complete[len("# complete: ") :][:60],
        "stderr_tail": "" if code == 130 else err.strip().splitlines()[-3:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--max-delay", type=float, default=3.0)
    args = parser.parse_args()
    rng = random.Random(20261123)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for score in SEARCHES:
            for trial in range(args.trials):
                out = Path(tmp) / f"{score}-{trial}.tsv"
                results.append(interrupt_once(score, rng.uniform(0, args.max_delay), out))
                print(results[-1], flush=True)
    table = pd.DataFrame(results)
    print(table.to_string(index=False))
    ok = (table.exit == 130) & ~table.traceback & table.complete.str.startswith("no")
    print(f"{ok.sum()} of {len(table)} interrupts: exit 130, no traceback, marked incomplete")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
