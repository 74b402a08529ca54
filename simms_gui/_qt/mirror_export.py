"""Mirror figures at publication size, off screen: PNG, SVG and PDF without a window.

:func:`publication_figure` lays out a :class:`~simms_gui._qt.mirror_figure.MirrorFigure`
at :data:`~simms_gui._qt.figure_export.FIGURE_SIZE_IN` inches (fonts at their
point sizes) on a canvas never shown; :func:`export_mirror` writes it.  The
window's exports and :func:`simms_gui.mirror_figure` both use them.
"""

from __future__ import annotations

import os
from pathlib import Path

from PyQt6 import QtCore, QtWidgets

from simms_gui._qt.figure_export import CANVAS_DPI, FIGURE_SIZE_IN
from simms_gui._qt.mirror_figure import MirrorFigure

__all__ = ["FIGURE_SIZE_IN", "export_mirror", "publication_figure"]


def publication_figure(
    args: tuple,
    kwargs: dict,
    *,
    x_range: tuple[float, float] | None = None,
    highlighted: int | None = None,
    size_in: tuple[float, float] = FIGURE_SIZE_IN,
) -> MirrorFigure:
    """A :class:`MirrorFigure` laid out off screen at ``size_in`` inches, ready to save.

    Parameters
    ----------
    args, kwargs
        Arguments of :meth:`MirrorFigure.set_pair`.
    x_range : (float, float), optional
        m/z range shown (default: both spectra whole).
    highlighted : int, optional
        Matched pair to emphasise.
    size_in : (float, float)
        Width and height in inches (laid out at :data:`CANVAS_DPI`).

    Returns
    -------
    MirrorFigure
        Never shown on screen; ``close()`` it when done.
    """
    figure = MirrorFigure()
    figure.setAttribute(QtCore.Qt.WidgetAttribute.WA_DontShowOnScreen)
    width, height = (round(side * CANVAS_DPI) for side in size_in)
    figure.resize(width, height)
    figure.show()
    figure.set_pair(*args, **kwargs)
    if x_range is not None:
        figure.plot_item.getViewBox().setXRange(*x_range, padding=0)
    figure.highlight_match(highlighted)
    QtWidgets.QApplication.processEvents()
    figure.update_labels()
    return figure


def export_mirror(
    path: str | os.PathLike,
    args: tuple,
    kwargs: dict,
    *,
    x_range: tuple[float, float] | None = None,
    highlighted: int | None = None,
    size_in: tuple[float, float] = FIGURE_SIZE_IN,
    dpi: float = 300.0,
) -> Path:
    """Write a mirror figure at publication size to PNG, SVG or PDF (by suffix), atomically.

    The figure of :func:`publication_figure` is written as a PNG at ``dpi``
    (resolution stored in the file), a vector SVG or a vector PDF; no window is needed.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        For another suffix.
    """
    figure = publication_figure(
        args, kwargs, x_range=x_range, highlighted=highlighted, size_in=size_in
    )
    try:
        return figure.save(path, dpi=dpi)
    finally:
        figure.close()
        figure.deleteLater()
