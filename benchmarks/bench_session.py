"""Session files: save and reopen a MassBank search, and check the hits come back equal.

    python benchmarks/bench_session.py [--data ../shared/data] [--top 10] [--all-hits]

Searches the 1,000 MassBank queries against the 54,390-spectrum library on the
CPU (identity mode, or ``--all-hits``: cosine with every hit kept, for a large
hit list), saves the session, opens it in a fresh session (the libraries come
from the library cache, as on a second start) and prints a table.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import engine  # noqa: E402
from simms_gui.session import Session  # noqa: E402
from simms_gui.session_file import open_session, save_session  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--top", type=int, default=10)
    p.add_argument("--all-hits", action="store_true", help="cosine, threshold 0.1, every hit")
    args = p.parse_args()
    session = Session()
    t = time.perf_counter()
    session.open(args.data / "massbank_ms2.mgf.gz")
    session.open(args.data / "massbank_ms2_queries.mgf.gz", "queries")
    rows = [("open library + queries (cache)", f"{time.perf_counter() - t:.2f} s")]
    if args.all_hits:
        params = engine.SearchParameters(mode="custom", score="cosine", threshold=0.1, top_n=0)
    else:
        params = engine.SearchParameters(top_n=args.top)
    t = time.perf_counter()
    hits = session.run_search(params, backend="cpu")
    rows.append((f"search ({params.mode}, {len(hits):,} hits)", f"{time.perf_counter() - t:.2f} s"))
    session.select((int(hits.query_index[0]), int(hits.library_index[0])), [0, 1])
    with tempfile.TemporaryDirectory() as folder:
        t = time.perf_counter()
        path = save_session(session, Path(folder) / "massbank.simms")
        rows.append(("save session", f"{time.perf_counter() - t:.2f} s"))
        rows.append(("session file size", f"{path.stat().st_size / 1e6:.2f} MB"))
        fresh = Session()
        t = time.perf_counter()
        problems = open_session(fresh, path)
        rows.append(
            ("open session (files re-read through the cache)", f"{time.perf_counter() - t:.2f} s")
        )
        t = time.perf_counter()
        columns = fresh.hit_list().columns
        rows.append(("hit columns for the table", f"{time.perf_counter() - t:.2f} s"))
    same = (
        np.array_equal(fresh.hits.query_index, hits.query_index)
        and np.array_equal(fresh.hits.library_index, hits.library_index)
        and np.array_equal(fresh.hits.score, hits.score)
        and np.array_equal(fresh.hits.matches, hits.matches)
        and fresh.params == params
        and len(columns["score"]) == len(hits)
    )
    rows.append(("hits, parameters equal after reopening", str(same)))
    rows.append(("problems reported", str(len(problems))))
    width = max(len(r[0]) for r in rows)
    print(f"| {'step'.ljust(width)} | result |\n|{'-' * (width + 2)}|---|")
    for name, value in rows:
        print(f"| {name.ljust(width)} | {value} |")
    return 0 if same and not problems else 1


if __name__ == "__main__":
    raise SystemExit(main())
