"""SimMS desktop: the Qt application and its napari-style Python API.

>>> import simms_gui                       # doctest: +SKIP
>>> viewer = simms_gui.Viewer()            # doctest: +SKIP
>>> simms_gui.run()                        # doctest: +SKIP
>>> simms_gui.mirror_figure(queries[0], library[8750], path="m.pdf")  # doctest: +SKIP
"""

from __future__ import annotations

from simms_gui.version import __version__

__all__ = ["Viewer", "__version__", "mirror_figure", "run"]


def __getattr__(name: str):
    # Qt is imported on first use, so `simms_gui.__version__` needs no display
    if name == "Viewer":
        from simms_gui.viewer import Viewer

        return Viewer
    if name == "mirror_figure":
        from simms_gui.figures import mirror_figure

        return mirror_figure
    if name == "run":
        from simms_gui.app import run

        return run
    raise AttributeError(f"module 'simms_gui' has no attribute {name!r}")
