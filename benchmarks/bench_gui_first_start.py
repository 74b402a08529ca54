"""First start of the window on a fresh install: window, demo, Search, hits.

Runs the application as ``simms-gui`` does on a first start (fresh profile, the
demo opened in the background) in a child process with empty numba and library
caches, presses Search as soon as the demo is loaded, and prints one table of
seconds since the process started: window shown, demo loaded, search kernels
ready, the status bar's compile note shown and gone, Search pressed, first hits,
search done (a "compile note at the end" row: the note was still up 1.5 s
after).  Screenshots of the window go to ``--shots``.  Run it under a display::

    xvfb-run -s "-screen 0 1366x768x24" python benchmarks/bench_gui_first_start.py --shots DIR
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(shots: Path | None, limit: float) -> None:
    """The application's first start, timed from the process's launch."""
    t0 = float(os.environ["SIMMS_BENCH_T0"])
    from PyQt6.QtCore import QTimer

    from engine.warmup import warming_up
    from simms_gui.viewer import Viewer, get_app

    app = get_app()
    viewer = Viewer(show=True, persist_settings=True)
    window = viewer.window
    app.processEvents()
    times = {"window shown": time.time() - t0}
    if shots:
        window.grab().save(str(shots / "1-window.png"))
    window.files.load_demo(background=True)
    button = window.search_panel.search_button
    model = window.results.model

    def poll() -> None:
        now = time.time() - t0
        loaded = viewer.library is not None and viewer.queries is not None
        if "demo loaded" not in times and loaded and button.isEnabled():
            times["demo loaded"] = now
            if shots:
                window.grab().save(str(shots / "2-demo-loaded.png"))
            times["Search pressed"] = time.time() - t0
            button.click()
        if "kernels ready" not in times and not warming_up():
            times["kernels ready"] = now
        note = "Preparing the search kernels" in window.slow_steps.text()
        if note:
            times.pop("compile note gone", None)
            times.setdefault("compile note shown", now)
        elif "compile note shown" in times:
            times.setdefault("compile note gone", now)
        if "Search pressed" in times and "first hits" not in times and model.rowCount() > 0:
            times["first hits"] = now
        searching = window.searches.searching
        if "Search pressed" in times and "search done" not in times and not searching:
            if now - times["Search pressed"] > 0.2:
                times["search done"] = now
                QTimer.singleShot(1500, last_look)  # the window's own timers catch up
        if now > limit:
            finish()

    def last_look() -> None:
        poll_note()
        # counted now: the last chunks reach the table after the search's end is announced
        times["hits"] = model.rowCount()
        if shots:
            window.grab().save(str(shots / "3-hits.png"))
        finish()

    def poll_note() -> None:
        if "Preparing the search kernels" in window.slow_steps.text():
            times["compile note at the end"] = time.time() - t0

    def finish() -> None:
        for name, value in times.items():
            print(f"{name}\t{value}", flush=True)
        os._exit(0)  # the background warm-up may still be compiling: no wait at exit

    timer = QTimer(interval=50, timeout=poll)
    timer.start()
    app.exec()


def main() -> None:
    """Run the first start in a fresh child and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shots", type=Path, help="folder for screenshots")
    ap.add_argument("--limit", type=float, default=600.0, help="give up after these seconds")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.shots, args.limit)
        return
    if args.shots:
        args.shots.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as fresh:
        env = dict(os.environ)
        for name in ("NUMBA_CACHE_DIR", "SIMMS_CACHE_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
            env[name] = str(Path(fresh) / name.lower())
        env["SIMMS_BENCH_T0"] = repr(time.time())
        command = [sys.executable, __file__, "--child", "--limit", str(args.limit)]
        if args.shots:
            command += ["--shots", str(args.shots.resolve())]
        done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        print(done.stderr[-3000:], file=sys.stderr)
    print("| step | seconds since start |")
    print("|---|---|")
    for line in done.stdout.splitlines():
        name, _, value = line.partition("\t")
        if value:
            number = float(value)
            shown = f"{number:.0f}" if name == "hits" else f"{number:.1f}"
            print(f"| {name} | {shown} |")


if __name__ == "__main__":
    main()
