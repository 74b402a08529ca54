"""Screenshots of the real window for the README, after a search on the bundled demo.

Run it on a display of the size wanted (an X server without a window manager,
so the window gets exactly that size), e.g.::

    Xvfb :56 -screen 0 1366x768x24 &
    DISPLAY=:56 python docs/screenshots.py --size 1366x768
    Xvfb :57 -screen 0 1920x1080x24 &
    DISPLAY=:57 python docs/screenshots.py --size 1920x1080

It opens the demo (3,000 MassBank library spectra, 40 queries), searches on
the CPU (top 5), selects the first hit and saves ``docs/images/window_WxH.png``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="1366x768", help="window size WIDTHxHEIGHT")
    p.add_argument("--out", type=Path, help="PNG to write (default docs/images/window_WxH.png)")
    args = p.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    out = args.out or HERE / "images" / f"window_{width}x{height}.png"

    from PyQt6.QtWidgets import QApplication

    from engine.warmup import warming_up
    from simms_gui.viewer import Viewer

    viewer = Viewer(show=False, demo=True)
    window = viewer.window
    window.setGeometry(0, 0, width, height)
    window.show()
    window.arrange_docks()
    viewer.search(backend="cpu", top_n=5).wait(timeout=600)
    window.results.select_row(0)
    deadline = time.monotonic() + 300  # let the kernels' note settle: what a later start shows
    while warming_up() and time.monotonic() < deadline:
        QApplication.processEvents()
        time.sleep(0.05)
    window.slow_steps.clear_step("kernels")
    for _ in range(20):
        QApplication.processEvents()
        time.sleep(0.05)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not window.grab().save(str(out), "PNG", 9):
        raise OSError(f"could not write {out}")
    size = window.size()
    print(f"{out}: {size.width()}x{size.height()} window, {out.stat().st_size / 1024:.0f} KB")
    viewer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
