"""The window's results table at scale: millions of hits streamed in, sorted, filtered.

Builds hit columns like a search of 5,000 queries against MassBank-sized names
(``--rows``, default 5,000,000), streams them into the real
``HitsTableModel`` in ``--chunks`` chunks (as a search's worker does), then sorts
and filters them.  Prints one table of seconds (wall and the process's CPU
seconds) with the load average before and after.  Offscreen Qt; run from the
repository root::

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_results_table.py [--rows 5000000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PyQt6.QtCore import Qt  # noqa: E402
from PyQt6.QtWidgets import QApplication  # noqa: E402

from simms_gui._qt.results_model import COLUMNS, HitsTableModel  # noqa: E402

COL = {c.key: k for k, c in enumerate(COLUMNS)}


def hit_columns(n: int, rng: np.random.Generator, n_queries: int, n_library: int) -> dict:
    """Columns shaped like a search's hits (sorted by query, names from the library)."""
    q = np.sort(rng.integers(0, n_queries, n))
    lib = rng.integers(0, n_library, n)
    names = np.array([f"compound {i:06d}" for i in range(n_library)], dtype=object)
    keys = np.array([f"KEY{(i * 7919) % n_library:06d}-UHFFFAOYSA-N" for i in range(n_library)])
    q_ids = np.array([f"Q{i:05d}" for i in range(n_queries)], dtype=object)
    qp, lp = rng.uniform(100, 900, n_queries)[q], rng.uniform(100, 900, n_library)[lib]
    return {
        "query_index": q,
        "query_id": q_ids[q],
        "library_index": lib,
        "library_id": names[lib],
        "score": rng.random(n),
        "matches": rng.integers(1, 40, n).astype(np.int32),
        "reverse_score": rng.random(n),
        "library_explained": rng.random(n),
        "query_precursor_mz": qp,
        "library_precursor_mz": lp,
        "precursor_mz_delta": lp - qp,
        "query_name": q_ids[q],
        "library_name": names[lib],
        "library_inchikey": keys.astype(object)[lib],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--chunks", type=int, default=500)
    args = ap.parse_args()
    app = QApplication.instance() or QApplication([])  # noqa: F841 - models need one
    columns = hit_columns(args.rows, np.random.default_rng(1), 5000, 54_390)
    model = HitsTableModel()
    rows = []
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    clock = _Clock()
    for part in np.array_split(np.arange(args.rows), args.chunks):
        model.append_columns({k: v[part[0] : part[-1] + 1] for k, v in columns.items()})
    rows.append((f"stream {args.rows:,} rows in {args.chunks} chunks", *clock.lap()))
    for key, order in [
        ("score", Qt.SortOrder.DescendingOrder),
        ("score", Qt.SortOrder.AscendingOrder),
        ("library_name", Qt.SortOrder.AscendingOrder),
        ("precursor_mz_delta", Qt.SortOrder.DescendingOrder),
        ("matches", Qt.SortOrder.DescendingOrder),
    ]:
        clock = _Clock()
        model.sort(COL[key], order)
        rows.append((f"sort by {key} ({order.name[:-5].lower()})", *clock.lap()))
    clock = _Clock()
    model.set_text_filter("compound 0012")
    rows.append((f"text filter ({model.rowCount():,} rows left)", *clock.lap()))
    clock = _Clock()
    model.set_text_filter("")
    model.set_score_range(0.9, 1.0)
    rows.append((f"score filter ({model.rowCount():,} rows left)", *clock.lap()))
    clock = _Clock()
    model.set_score_range(None, None)
    model.set_best_only(True)
    rows.append((f"best hit per query ({model.rowCount():,} rows)", *clock.lap()))
    print("load average after:  {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"\n{'step':48s} seconds   CPU s")
    for name, seconds, cpu in rows:
        print(f"{name:48s} {seconds:7.3f} {cpu:7.3f}")


class _Clock:
    """Wall and process CPU seconds since it was made."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def lap(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


if __name__ == "__main__":
    main()
