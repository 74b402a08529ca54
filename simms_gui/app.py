"""``simms-gui``: the desktop application's entry point."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main", "run"]


def run() -> int:
    """Start the Qt event loop (returns at once inside IPython with ``%gui qt``)."""
    from simms_gui.viewer import get_app

    app = get_app()
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None and getattr(shell, "active_eventloop", None) == "qt":
        return 0
    return app.exec()


def _parser() -> argparse.ArgumentParser:
    from simms_gui.version import __version__

    p = argparse.ArgumentParser(
        prog="simms-gui",
        description="SimMS desktop: search MS/MS spectral libraries with the exact greedy cosine.",
    )
    p.add_argument("--version", action="version", version=f"simms-gui {__version__}")
    p.add_argument(
        "--smoke-test",
        action="store_true",
        help="offscreen self-test: load the demo, run a CPU search, check hits, exit 0/1",
    )
    p.add_argument(
        "--library",
        action="append",
        default=[],
        metavar="FILE",
        help="library file to open (repeatable)",
    )
    p.add_argument("--queries", metavar="FILE", help="query file to open")
    p.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="files to open: the first is the library, a second the queries",
    )
    return p


def smoke_test() -> int:
    """Load the bundled demo offscreen, run a CPU search and check the hits."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    start = time.perf_counter()
    try:
        from simms_gui.viewer import Viewer

        viewer = Viewer(show=False)
        if not viewer.window.files.load_demo(background=False):
            print("simms-gui smoke test: FAILED: demo data not installed", flush=True)
            return 1
        hits = viewer.search(backend="cpu", top_n=5).wait(timeout=300)
        queries, library = viewer.queries, viewer.library
        n_with_hits = len(set(hits.query_index.tolist()))
        ok = len(hits) > 0 and float(hits.score.max()) > 0.5 and n_with_hits > 0
        viewer.show_mirror(int(hits.query_index[0]), int(hits.library_index[0]))
        with tempfile.TemporaryDirectory() as folder:  # the tables users get (pandas)
            viewer.export_hits(Path(folder) / "hits.tsv")
            viewer.save_session(Path(folder) / "smoke.simms")
            viewer.open_session(Path(folder) / "smoke.simms")
            ok = ok and len(viewer.session.hits) == len(hits)
        viewer.close()
        if os.environ.get("SIMMS_BUILD_KERNEL_CACHE"):  # packaging: every mode's kernels too
            from engine.warmup import warm_up

            warm_up("cpu")
    except Exception as exc:  # report and fail, never a traceback-only exit
        print(f"simms-gui smoke test: FAILED: {type(exc).__name__}: {exc}", flush=True)
        return 1
    elapsed = time.perf_counter() - start
    status = "OK" if ok else "FAILED"
    print(
        f"simms-gui smoke test: {status}: {len(queries)} queries x {len(library)} library "
        f"spectra, {len(hits)} hits for {n_with_hits} queries, best score "
        f"{float(hits.score.max()) if len(hits) else 0:.3f}, {elapsed:.1f} s (cpu)",
        flush=True,
    )
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the desktop application (the ``simms-gui`` command)."""
    args = _parser().parse_args(argv)
    if args.smoke_test:
        return smoke_test()
    from simms_gui.system_check import check_display_libraries

    problem = check_display_libraries()
    if problem:
        print(problem, file=sys.stderr)
        return 1
    from simms_gui._qt.main_window import first_start
    from simms_gui.viewer import Viewer, get_app

    get_app()
    viewer = Viewer(show=True, persist_settings=True)
    window = viewer.window
    libraries = list(args.library)
    queries = args.queries
    files = list(args.files)
    if files and not libraries:
        libraries.append(files.pop(0))
    if files and queries is None:
        queries = files.pop(0)
    libraries += files
    for path in libraries:
        window.files.open_file(path, "library")
    if queries:
        window.files.open_file(queries, "queries")
    first = first_start()
    if not libraries and not queries:
        # the first start shows the demo; later ones offer the last session (else the demo)
        if first:
            window.files.load_demo(background=True)  # the window paints and shows progress at once
        else:
            window.sessions.restore_on_start()
    return run()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
