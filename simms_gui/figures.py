"""Figures from Python, no window needed: ``simms_gui.mirror_figure(query, hit)``.

The figure is the one the window shows and exports (same builder, texts and
colours), laid out off screen at publication size.  A QApplication is made when
there is none; on a machine without a display Qt's ``offscreen`` platform is used.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from engine import SearchParameters, Spectrum, SpectrumLibrary
from simms_gui.pairs import compute_pair, mirror_arguments

__all__ = ["mirror_figure"]


def _spectrum(
    which: str, value: int | Spectrum | SpectrumLibrary, spectra: SpectrumLibrary | None
) -> tuple[SpectrumLibrary, int]:
    """``(library, index)`` of a spectrum: an index, a ``library[i]`` or a library of one."""
    if isinstance(value, Spectrum):
        return value.library, value.index
    if isinstance(value, SpectrumLibrary):
        if len(value) != 1:
            raise ValueError(f"{which}: a library of {len(value)} spectra; give one spectrum")
        return value, 0
    if spectra is None:
        raise ValueError(
            f"{which}={value!r} is an index: also give the spectra it refers to "
            f"({'queries' if which == 'query' else 'library'}=...)"
        )
    index = int(value)
    if not -len(spectra) <= index < len(spectra):
        raise IndexError(f"{which} index {index} out of range for {len(spectra)} spectra")
    return spectra, index % len(spectra)


def _application():
    """The running QApplication, or a new one (``offscreen`` without a display)."""
    from PyQt6.QtWidgets import QApplication

    if QApplication.instance() is None and sys.platform.startswith("linux"):
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    global _APP
    _APP = QApplication.instance() or QApplication([])  # held: else Python deletes it
    return _APP


_APP = None


def mirror_figure(
    query: int | Spectrum | SpectrumLibrary,
    hit: int | Spectrum | SpectrumLibrary,
    *,
    queries: SpectrumLibrary | None = None,
    library: SpectrumLibrary | None = None,
    params: SearchParameters | None = None,
    path: str | os.PathLike | None = None,
    dpi: float = 300.0,
    title: str | None = None,
    mz_range: tuple[float, float] | None = None,
    size_in: tuple[float, float] | None = None,
):
    """Mirror plot of a query against a library spectrum, as the window draws it; no window.

    The spectra are preprocessed and their peaks matched as a search with
    ``params`` scores them; the figure is laid out at ``size_in`` inches.

    Parameters
    ----------
    query, hit : int, Spectrum or SpectrumLibrary
        ``queries[i]`` / ``library[j]`` (:class:`engine.Spectrum`), a library
        of one spectrum, or an index into ``queries`` / ``library``.
    queries, library : SpectrumLibrary, optional
        Needed when ``query`` / ``hit`` are indices (e.g. a hit row's
        ``query_index`` and ``library_index``).
    params : SearchParameters, optional
        Score, tolerance and preprocessing (default :class:`~engine.SearchParameters`;
        ``SearchParameters(mode="analog")`` for modified cosine).
    path : str or PathLike, optional
        Also write the figure there: ``.png`` (at ``dpi``), ``.svg`` or ``.pdf``.
    dpi : float, default 300
        Resolution of a PNG.
    title : str, optional
        Text after the score in the title (default: the library compound's name).
    mz_range : (float, float), optional
        m/z range shown (default: both spectra whole).
    size_in : (float, float), optional
        Width and height in inches (default 7 × 4.2, a two-column journal figure).

    Returns
    -------
    simms_gui._qt.mirror_figure.MirrorFigure
        ``.save(path)`` writes it again (PNG, SVG or PDF); ``.title_text``,
        ``.matches`` say what it shows.

    Raises
    ------
    ValueError
        A bad ``path`` suffix, or an index without its spectra.

    Examples
    --------
    >>> fig = simms_gui.mirror_figure(queries[0], library[8750])    # doctest: +SKIP
    >>> fig.save("mirror.pdf")                                       # doctest: +SKIP
    >>> simms_gui.mirror_figure(3, 51, queries=q, library=lib,
    ...     params=SearchParameters(mode="analog"), path="m.svg")    # doctest: +SKIP
    """
    q_spectra, q_index = _spectrum("query", query, queries)
    l_spectra, l_index = _spectrum("hit", hit, library)
    if path is not None and Path(path).suffix.lower() not in (".png", ".svg", ".pdf"):
        raise ValueError(f"{path}: unsupported figure format; use .png, .svg or .pdf")
    params = SearchParameters() if params is None else params
    _application()
    from simms_gui._qt.mirror_export import FIGURE_SIZE_IN, publication_figure

    pair = compute_pair(q_spectra, q_index, l_spectra, l_index, params)
    args, kwargs = mirror_arguments(pair, params, title=title)
    size_in = FIGURE_SIZE_IN if size_in is None else size_in
    figure = publication_figure(args, kwargs, x_range=mz_range, size_in=size_in)
    if path is not None:
        figure.save(path, dpi=dpi)
    return figure
