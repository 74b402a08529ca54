"""The precursor window: which library spectra a block of queries may match."""

from __future__ import annotations

import numpy as np

from engine.params import SearchParameters

__all__ = ["library_window", "precursor_order", "windowed_query_blocks"]


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
    l_lo, l_hi = _windows(np.array([lo, hi]), library_precursors, params)
    return int(l_lo[0]), max(int(l_lo[0]), int(l_hi[1]))


def _windows(
    precursors: np.ndarray, library_precursors: np.ndarray, params: SearchParameters
) -> tuple[np.ndarray, np.ndarray]:
    """Each precursor's library window ``[lo, hi)``, widened by a hair as above."""
    tol = params.precursor_tolerance * (
        precursors * 1e-6 if params.precursor_unit == "ppm" else 1.0
    )
    lo = np.searchsorted(library_precursors, precursors - tol * (1 + 1e-9) - 1e-9, side="left")
    hi = np.searchsorted(library_precursors, precursors + tol * (1 + 1e-9) + 1e-9, side="right")
    return lo, hi


def windowed_query_blocks(
    query_precursors: np.ndarray,
    library_precursors: np.ndarray,
    params: SearchParameters,
    max_queries: int,
    *,
    first_block: int = 64,
    overhead_pairs: int = 1 << 18,
) -> list[tuple[int, int]]:
    """Blocks of precursor-sorted queries that share a library window without much waste.

    A block of queries is scored against the union of its queries' windows, so a
    block of 2,048 queries spread over 300 Da scores every query against 300 Da
    of library where ±0.5 Da were asked (measured: 69 times the pairs needed for
    10,000 queries against 1.5 M spectra).  A block grows while the pairs it
    scores stay within twice its queries' own windows plus ``overhead_pairs``
    (what a batch costs anyway), up to ``max_queries``; the first blocks are
    small so that hits come early.

    Parameters
    ----------
    query_precursors, library_precursors : ndarray
        Sorted ascending, unknown (NaN) last; queries without a precursor match
        nothing and are left out of every block.
    params : SearchParameters
        ``precursor_tolerance`` (not None) and ``precursor_unit``.
    max_queries : int
        Most queries in a block.
    first_block : int
        Most queries in the first block; the cap doubles with each block.
    overhead_pairs : int
        Pairs a block may waste beyond its queries' own windows.

    Returns
    -------
    list of (q0, q1)
        Consecutive blocks; every query with a precursor is in exactly one.
    """
    known = int(np.count_nonzero(~np.isnan(query_precursors)))
    lo, hi = _windows(np.asarray(query_precursors[:known]), library_precursors, params)
    lo, hi = lo.tolist(), hi.tolist()
    blocks, start, cap = [], 0, max(1, min(first_block, max_queries))
    while start < known:
        own, stop = hi[start] - lo[start], start + 1
        while stop < known and stop - start < cap:
            grown = own + hi[stop] - lo[stop]
            if (stop - start + 1) * (hi[stop] - lo[start]) > 2 * grown + overhead_pairs:
                break
            own, stop = grown, stop + 1
        blocks.append((start, stop))
        start, cap = stop, min(2 * cap, max_queries)
    return blocks
