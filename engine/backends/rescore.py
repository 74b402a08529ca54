"""Exact host rescoring of pair lists (the pairs a GPU tile flagged).

A GPU tile flags the pairs whose candidate component is too large for its
on-chip scratch; they are rescored here, exactly, with the CPU cores of
:mod:`engine.kernels.greedy`, in worker threads (the numba kernel releases the
GIL) so the GPU pipeline never waits for them unless their batch is next.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from engine.backends.base import PreparedSpectra
from engine.hits import HitTable
from engine.kernels.dense import score_listed_pairs
from engine.params import SearchParameters

__all__ = [
    "PendingScores",
    "merge_batch_hits",
    "rescore_threads",
    "submit_rescore",
]


#: Least pairs per rescoring task (one worker thread each).
RESCORE_CHUNK = 64

_POOL_LOCK = threading.Lock()
_POOL: ThreadPoolExecutor | None = None


def rescore_threads() -> int:
    """Threads of the rescoring: ``SIMMS_RESCORE_THREADS``, else the process's share of
    the cores (numba's thread count, which ``NUMBA_NUM_THREADS`` sets) but two, 1 to 32.

    Several GPU processes on one host (a Dask worker per GPU) each get their share
    instead of all cores each, which would oversubscribe the host.
    """
    given = os.environ.get("SIMMS_RESCORE_THREADS", "").strip()
    if given.isdigit() and int(given) > 0:
        return int(given)
    import numba

    share = min(int(numba.config.NUMBA_NUM_THREADS), os.cpu_count() or 2)
    return max(1, min(32, share - 2))


def _rescore_pool() -> ThreadPoolExecutor:
    """The shared worker threads of the rescoring (:func:`rescore_threads`)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            workers = rescore_threads()
            _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="simms-rescore")
        return _POOL


class PendingScores:
    """Exact scores of listed pairs being computed by worker threads.

    Attributes
    ----------
    q_index, l_index : ndarray of int64
        The pairs, as submitted.
    """

    def __init__(self, q_index: np.ndarray, l_index: np.ndarray, futures: list[Future]) -> None:
        self.q_index, self.l_index = q_index, l_index
        self._futures = futures

    def done(self) -> bool:
        """True when every worker finished (``result`` will not block)."""
        return all(f.done() for f in self._futures)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """``(scores float64, matches int32)`` of the pairs, in submission order."""
        if not self._futures:
            return np.empty(0, np.float64), np.empty(0, np.int32)
        parts = [f.result() for f in self._futures]
        return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))


def submit_rescore(
    queries: PreparedSpectra,
    library: PreparedSpectra,
    q_index: np.ndarray,
    l_index: np.ndarray,
    tolerance: float,
    kind: int,
    threshold: float | np.ndarray = 0.0,
) -> PendingScores:
    """Start the exact CPU scoring of listed pairs (the overflow path of the GPU kernels)
    on worker threads; return at once (``.result()`` waits for the scores).

    Parameters
    ----------
    queries, library : PreparedSpectra
    q_index, l_index : ndarray of int
        Pair ``k`` is query ``q_index[k]`` × library spectrum ``l_index[k]``.
    tolerance : float
        Fragment tolerance (Da; :func:`~engine.backends.base.score_tolerance`).
    kind : int
        Score kind (:func:`~engine.backends.base.score_kind`; ``True`` reads as
        the modified cosine).
    threshold : float or ndarray of float
        Pairs of the cosine proven below it by the best-partner bound are not
        scored (score 0, no matches: no hit); 0 scores every pair.  One value per
        pair, or one for all (e.g. per pair: the query's running top-N floor).

    Returns
    -------
    PendingScores
    """
    q_index = np.ascontiguousarray(q_index, dtype=np.int64)
    l_index = np.ascontiguousarray(l_index, dtype=np.int64)
    if len(q_index) == 0:
        return PendingScores(q_index, l_index, [])
    thresholds = np.array(np.broadcast_to(np.asarray(threshold, np.float64), q_index.shape))
    q, lib = queries.spectrum_set, library.spectrum_set
    pool = _rescore_pool()
    # long lists in ~8 tasks per thread: each task's call holds the GIL a while, and
    # thousands of them starved the threads that launch GPU work and merge hits
    chunk = max(RESCORE_CHUNK, -(-len(q_index) // (8 * rescore_threads())))
    futures = [
        pool.submit(
            score_listed_pairs,
            q_index[k : k + chunk],
            l_index[k : k + chunk],
            q,
            lib,
            float(tolerance),
            int(kind),
            thresholds[k : k + chunk],
        )
        for k in range(0, len(q_index), chunk)
    ]
    return PendingScores(q_index, l_index, futures)


def merge_batch_hits(
    parts: list, params: SearchParameters, wide: bool, ranks: np.ndarray, cut: bool = True
) -> HitTable:
    """One batch's hits from its GPU tables and rescored pairs (top-N per query).

    ``wide``: the batch spans several selection segments, so a query may have
    more than ``top_n`` hits.  Only the queries over their top-N are selected
    again; the rows come in no particular order.  Without ``cut`` the tables
    are only stacked: the caller selects each query's top-N across batches.

        Equal scores are ranked by ``ranks`` of the library positions, as in the kernels.
    """
    tables = []
    rescored = False
    for p in parts:
        if isinstance(p, PendingScores):
            sc, m = p.result()
            keep = (m >= max(1, params.min_matches)) & (sc >= params.threshold)
            tables.append(HitTable.from_arrays(p.q_index[keep], p.l_index[keep], sc[keep], m[keep]))
            rescored = True
        else:
            tables.append(p)
    if not tables:
        return HitTable.empty()
    if len(tables) == 1 and not rescored and not wide:
        return tables[0]
    hits = HitTable.concat(tables)
    if not cut:
        return hits
    if params.top_n > 0 and len(hits):  # cut only where a query has too many hits
        q = hits.query_index - hits.query_index.min()
        over = np.bincount(q) > params.top_n
        if not over.any():
            return hits
        rows = over[q]
        if rows.sum() * 2 < len(hits):  # few queries over their top-N (e.g. rescored pairs)
            cut = hits.take(np.flatnonzero(rows)).top_per_query(params.top_n, library_rank=ranks)
            return HitTable.concat([hits.take(np.flatnonzero(~rows)), cut])
    return hits.top_per_query(params.top_n, library_rank=ranks)
