"""``search_block``: the exact hits of a query block against a library block on the CPU.

Chooses the kernel (the pruned search of any score, or every pair scored) and
bounds its memory: with ``top_n == 0`` rows hold a whole library block, so
queries go at most :data:`ALL_HITS_MAX_ROWS` at a time, within
:data:`ALL_HITS_ROW_BYTES` of row buffers.
"""

from __future__ import annotations

import numpy as np

from engine.kernels.cancel import cancelled, new_flag
from engine.kernels.pair import check_score_parameters
from engine.kernels.peak_index import (
    PeakIndex,
    index_fits,
    indexed_kernel,
    library_peak_index,
)
from engine.kernels.rows import compact_rows, row_width, scan_kernel
from engine.kernels.spectrum_set import SearchOptions, SpectrumSet, checked_block

__all__ = ["ALL_HITS_CHUNK", "checked_options", "search_block"]

#: Fewest query rows per kernel call when every hit is kept.
ALL_HITS_CHUNK = 16
#: Most query rows per such call: each call is one parallel region, and on a busy
#: machine a region waits for its slowest thread, so many small calls cost much
#: more than their work (measured on the 2-core machine under load: clustering
#: MassBank's pairs, 16 rows a call 7-33 s, 256 rows 3-10 s).
ALL_HITS_MAX_ROWS = 256
#: Bytes of row buffers (about 20 per column) one such call may hold.
ALL_HITS_ROW_BYTES = 32 << 20

Hits = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def checked_options(options: SearchOptions) -> SearchOptions:
    """``options`` with plain types and ``min_matches >= 1``; ValueError when out of range."""
    check_score_parameters(options.tolerance, 0.0, 1.0)
    precursor_tolerance = float(options.precursor_tolerance)
    if not np.isfinite(precursor_tolerance):
        raise ValueError("precursor_tolerance must be finite")
    top_n = int(options.top_n)
    if top_n < 0:
        raise ValueError("top_n must be >= 0")
    return SearchOptions(
        tolerance=float(options.tolerance),
        kind=int(options.kind),
        precursor_tolerance=precursor_tolerance,
        ppm=bool(options.ppm),
        min_matches=max(1, int(options.min_matches)),
        threshold=float(options.threshold),
        top_n=top_n,
        same_polarity=bool(options.same_polarity),
    )


def _all_hits_rows(width: int) -> int:
    """Query rows per kernel call when every hit is kept, for rows ``width`` columns wide."""
    fit = ALL_HITS_ROW_BYTES // (20 * max(width, 1))
    return int(max(ALL_HITS_CHUNK, min(ALL_HITS_MAX_ROWS, fit)))


def search_block(
    queries: SpectrumSet,
    library: SpectrumSet,
    q_start: int,
    q_stop: int,
    l_start: int,
    l_stop: int,
    options: SearchOptions = SearchOptions(),  # noqa: B008 - an immutable tuple
    *,
    prune: bool = True,
    library_index: PeakIndex | None = None,
    stop: np.ndarray | None = None,
) -> Hits:
    """Exact greedy-cosine hits of a block of queries against a block of the library.

    Parallel over queries; memory per query is one top-n buffer (or, when
    ``top_n == 0``, one row of the block, for at most 16 queries at a time).

    Parameters
    ----------
    queries, library : SpectrumSet
        Whole query set and library in CSR form (m/z sorted per spectrum, weights
        from :func:`~engine.kernels.prepare_weights`, int64 offsets, norms,
        precursor m/z with NaN when unknown).
    q_start, q_stop : int
        Queries ``[q_start, q_stop)`` are scored.
    l_start, l_stop : int
        Against library spectra ``[l_start, l_stop)``.
    options : SearchOptions
        Fragment tolerance; modified cosine (matchms ``ModifiedCosineGreedy``,
        library = reference, shift = library precursor - query precursor; a pair
        with a NaN precursor gets only the zero-shift candidates); precursor
        window (pairs with ``|q_prec - l_prec| > tol`` skipped, tol in Da or ppm of
        the query precursor; a NaN precursor is skipped when the window is on);
        ``matches >= max(1, min_matches)``; ``score >= threshold``; with
        ``top_n > 0`` only each query's ``top_n`` best hits (score descending,
        then library index ascending).
    prune : bool, keyword-only
        Skip pairs whose exact upper bound (sum of all candidate terms: products,
        entropy terms, or for the modified cosine the products of the zero-shift
        and shifted candidates, found with inverted indexes over the library
        block's peaks) cannot pass ``threshold``, ``min_matches`` or the current
        ``top_n``-th best; only library spectra sharing a candidate peak are
        visited.  The hits are identical either way; ``False`` scores every pair
        (brute force).
    library_index : PeakIndex, optional, keyword-only
        :func:`~engine.kernels.library_peak_index` of this library block for
        ``options.kind``, to reuse it across query blocks; made here when omitted
        (or built for another kind).
    stop : ndarray of uint8, shape (1,), optional, keyword-only
        Cancellation flag another thread may set while the kernel runs: once
        ``stop[0]`` is non-zero every query row returns the hits it has scored so
        far (within about one pair's time), so the block's hits are incomplete.

    Returns
    -------
    query_index : ndarray of int64
    library_index : ndarray of int64
    score : ndarray of float64
    matches : ndarray of int32
        One entry per hit, ordered by query index, then score descending, then
        library index ascending.  Indices are absolute (into the whole sets).
    """
    queries, q_start, q_stop = checked_block(queries, q_start, q_stop, "query")
    library, l_start, l_stop = checked_block(library, l_start, l_stop, "library")
    options = checked_options(options)
    if stop is None:
        stop = new_flag()
    elif stop.dtype != np.uint8 or stop.shape != (1,):
        raise ValueError("stop must be a uint8 array of shape (1,)")
    if q_stop <= q_start or l_stop <= l_start:
        return (
            np.empty(0, np.int64),
            np.empty(0, np.int64),
            np.empty(0, np.float64),
            np.empty(0, np.int32),
        )
    width = row_width(options, l_start, l_stop)
    chunk = q_stop - q_start if options.top_n > 0 else _all_hits_rows(width)
    if prune and (library_index is None or not index_fits(library_index, options.kind)):
        library_index = library_peak_index(library, l_start, l_stop, options.kind)
    parts = []
    for c0 in range(q_start, q_stop, chunk):
        if cancelled(stop) and parts:
            break
        c1 = min(q_stop, c0 + chunk)
        if prune:
            rows = indexed_kernel(
                queries, library, c0, c1, l_start, l_stop, options, library_index, width, stop
            )
        else:
            rows = scan_kernel(queries, library, c0, c1, l_start, l_stop, options, width, stop)
        parts.append(compact_rows(c0, *rows))
    if len(parts) == 1:
        return parts[0]
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(4))  # type: ignore[return-value]
