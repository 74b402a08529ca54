"""The precursor window: which library spectra a block of queries may match."""

from __future__ import annotations

import numpy as np

from engine.params import SearchParameters

__all__ = ["library_window", "precursor_order"]


def precursor_order(precursor_mz: np.ndarray) -> np.ndarray:
    """Positions sorted by precursor m/z, stable; unknown (NaN) precursors last."""
    return np.argsort(precursor_mz, kind="stable")


def library_window(
    query_precursors: np.ndarray, library_precursors: np.ndarray, params: SearchParameters
) -> tuple[int, int]:
    """Library positions ``[lo, hi)`` that a block of queries may match.

    Parameters
    ----------
    query_precursors : ndarray
        Precursor m/z of the query block (NaN: unknown).
    library_precursors : ndarray
        Library precursor m/z, sorted ascending (NaN last).
    params : SearchParameters
        ``precursor_tolerance`` (not None) and ``precursor_unit``.

    Returns
    -------
    tuple of int
        ``(lo, hi)`` with ``lo <= hi``; ``(0, 0)`` when no query has a precursor.

    Notes
    -----
    The window is widened by a hair so float rounding at its edge never drops a
    pair; the kernels apply the exact test to every pair inside it.
    """
    lo = np.nanmin(query_precursors, initial=np.inf)
    hi = np.nanmax(query_precursors, initial=-np.inf)
    if not np.isfinite(lo):
        return 0, 0
    ppm = params.precursor_unit == "ppm"
    tol_lo = params.precursor_tolerance * (lo * 1e-6 if ppm else 1.0)
    tol_hi = params.precursor_tolerance * (hi * 1e-6 if ppm else 1.0)
    l_lo = int(np.searchsorted(library_precursors, lo - tol_lo * (1 + 1e-9) - 1e-9, side="left"))
    l_hi = int(np.searchsorted(library_precursors, hi + tol_hi * (1 + 1e-9) + 1e-9, side="right"))
    return l_lo, max(l_lo, l_hi)
