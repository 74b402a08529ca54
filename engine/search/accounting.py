"""Every query accounted for: why a query has no hit, in words a chemist can act on."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from engine.backends import PreparedSpectra
from engine.library import SpectrumLibrary
from engine.params import SearchParameters

__all__ = ["QUERY_STATUSES", "query_status", "status_summary"]

#: The statuses :func:`query_status` gives, in the order they are decided.
QUERY_STATUSES = (
    "hits",
    "search not finished",
    "no peaks left after preprocessing",
    "no precursor m/z",
    "no library spectrum in the precursor window",
    "no library spectrum of its ion mode in the window",
    "no hit passed the filters",
)


def query_status(
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters,
    has_hits: np.ndarray,
    incomplete: Sequence[int] | np.ndarray = (),
) -> np.ndarray:
    """The status of each query of a search (one of :data:`QUERY_STATUSES`).

    Parameters
    ----------
    queries, library : SpectrumLibrary
        As searched.
    params : SearchParameters
        The search's parameters.
    has_hits : ndarray of bool, shape (n_queries,)
        Whether each query got a hit.
    incomplete : sequence of int
        Queries whose search did not finish (cancelled, a lost cluster).

    Returns
    -------
    ndarray of object (str), shape (n_queries,)
        ``"hits"``; or why there is none: its search did not finish; no peak
        left after the preprocessing (for entropy also its cleaning, which drops
        peaks within 1.6 Da of the precursor and above); no precursor m/z while
        a precursor window is on; no library spectrum within the window; none of
        its ion mode there (``match_ion_mode``); else no library spectrum passed
        the score threshold, minimum matched peaks and the other filters.
    """
    n = len(queries)
    status = np.full(n, QUERY_STATUSES[-1], dtype=object)
    undecided = ~np.asarray(has_hits, dtype=bool)
    status[~undecided] = QUERY_STATUSES[0]

    def decide(mask: np.ndarray, what: str) -> None:
        chosen = undecided & mask
        status[chosen] = what
        undecided[chosen] = False

    cut = np.zeros(n, dtype=bool)
    cut[np.asarray(incomplete, dtype=np.int64)] = True
    decide(cut, QUERY_STATUSES[1])
    prepared = PreparedSpectra.for_search(queries, params)
    decide(np.diff(prepared.offsets) == 0, QUERY_STATUSES[2])
    precursor = queries.precursor_mz
    in_window = np.full(n, len(library), dtype=np.int64)
    same_mode = _compatible(queries.polarity(), library.polarity(), None, None)
    if params.precursor_tolerance is not None:
        decide(np.isnan(precursor), QUERY_STATUSES[3])
        tol = params.precursor_tolerance * (
            precursor * 1e-6 if params.precursor_unit == "ppm" else 1.0
        )
        lo, hi = precursor - tol, precursor + tol
        in_window = _count_between(library.precursor_mz, lo, hi)
        decide(in_window == 0, QUERY_STATUSES[4])
        same_mode = _compatible(
            queries.polarity(), library.polarity(), library.precursor_mz, (lo, hi)
        )
    if params.match_ion_mode:
        decide(same_mode == 0, QUERY_STATUSES[5])
    return status


def status_summary(status: np.ndarray) -> str:
    """``"950 with hits, 30 no library spectrum in the precursor window, ..."``."""
    counts = Counter(status.tolist())
    parts = [
        f"{counts[s]} " + ("with hits" if s == "hits" else s) for s in QUERY_STATUSES if counts[s]
    ]
    return ", ".join(parts) if parts else "no queries"


def _count_between(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """How many of ``values`` lie in each ``[lo, hi]`` (NaN bounds: none)."""
    ordered = np.sort(values[~np.isnan(values)])
    count = np.searchsorted(ordered, hi, side="right") - np.searchsorted(ordered, lo, side="left")
    return np.where(np.isnan(lo) | np.isnan(hi), 0, np.maximum(count, 0))


def _compatible(query_mode, library_mode, library_precursor, window) -> np.ndarray:
    """Library spectra each query may match by ion mode (unknown matches either),
    counted in its precursor ``window`` (or in the whole library)."""
    counts = np.zeros(len(query_mode), dtype=np.int64)
    for mode in (-1, 0, 1):
        rows = query_mode == mode
        if not rows.any():
            continue
        allowed = np.ones(len(library_mode), dtype=bool) if mode == 0 else library_mode != -mode
        if window is None:
            counts[rows] = int(allowed.sum())
        else:
            lo, hi = window
            counts[rows] = _count_between(library_precursor[allowed], lo[rows], hi[rows])
    return counts
