"""How responsive the real window stays while a CPU search streams hits into it.

Opens the application window (``simms_gui.Viewer``), loads the bundled demo
queries and a library (default: the 54,390-spectrum MassBank file in
``../shared/data``), starts a search on the CPU and, on the GUI thread, ticks a
10 ms timer.  Prints one table: time to the first rows in the table, search
time, rows, and the gaps between timer ticks (a gap over 100 ms is a frozen
frame).  Run it under Xvfb for a real window, or with QT_QPA_PLATFORM=offscreen:

    xvfb-run -s "-screen 0 1600x1000x24" python benchmarks/bench_gui_responsiveness.py
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_LIBRARY = ROOT.parent / "shared" / "data" / "massbank_ms2.mgf.gz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", default=str(DEFAULT_LIBRARY))
    parser.add_argument("--queries", default=None, help="default: the bundled demo queries")
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--screenshot", help="save the window after the search to this PNG")
    args = parser.parse_args()

    from PyQt6.QtCore import QTimer

    import simms_gui
    from engine.warmup import warm_up
    from simms_gui.resources import demo_queries_path
    from simms_gui.viewer import get_app

    app = get_app()
    t0 = time.perf_counter()
    warm_up("cpu")  # numba compile (or cache load) is measured apart from the search
    compile_s = time.perf_counter() - t0
    viewer = simms_gui.Viewer(show=True)
    t0 = time.perf_counter()
    viewer.open_library(args.library)
    viewer.open_queries(args.queries or demo_queries_path())
    load_s = time.perf_counter() - t0
    model = viewer.window.results.model

    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    first_rows: list[float] = []
    model.rowsInserted.connect(lambda *_: first_rows or first_rows.append(time.perf_counter()))

    timer.start()
    start = time.perf_counter()
    handle = viewer.search(backend="cpu", top_n=args.top)
    hits = handle.wait()
    end = time.perf_counter()
    app.processEvents()
    timer.stop()
    if args.screenshot:
        viewer.screenshot(args.screenshot)

    gaps = np.diff([start, *[t for t in ticks if t >= start], end]) * 1000
    nq, nl = len(viewer.queries), len(viewer.library)
    rows = [
        ("library / queries", f"{nl} / {nq} spectra"),
        ("kernel warm-up (compile or cache load)", f"{compile_s:.2f} s"),
        ("file loading (library cache + queries)", f"{load_s:.2f} s"),
        (
            "time to first rows in the table",
            f"{first_rows[0] - start:.2f} s" if first_rows else "-",
        ),
        ("search, end to end", f"{end - start:.2f} s ({nq * nl / (end - start):.3g} pairs/s)"),
        ("rows in the table", f"{model.rowCount()} (hits {len(hits)})"),
        (
            "GUI timer gaps: median / p99 / max",
            f"{np.median(gaps):.0f} / {np.percentile(gaps, 99):.0f} / {gaps.max():.0f} ms",
        ),  # fmt: skip
        ("gaps over 100 ms", f"{int((gaps > 100).sum())} of {len(gaps)}"),
    ]
    width = max(len(k) for k, _ in rows)
    print(f"{'measure':<{width}}  value")
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    viewer.close()


if __name__ == "__main__":
    main()
