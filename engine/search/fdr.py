"""A q-value per hit, estimated in the search's own pass, and the ``fdr`` filter.

Schemes (:data:`engine.params.DECOY_SCHEMES`):

* ``"fragments"`` and ``"shifted"`` - target-decoy competition.  The library is
  searched together with one decoy per spectrum (:mod:`engine.search.decoys`) in
  one pass.  Each query's best target and best decoy compete: the query counts as
  a target at its best target score when that beats the best decoy (a tie goes to
  the decoy), else as a decoy at the decoy's score.
* ``"second"`` - no decoys: each query's best hit counts as a target, and its
  best hit of another compound (InChIKey first block; the library id when a hit
  has none) as a decoy.

``"second"`` is the default: on MassBank it was the only scheme whose estimate
stayed within 2x of the true wrong rate (decoy spectra almost never beat the
wrong library compounds that make the errors: they underestimated the FDR 3-30x;
``benchmarks/bench_fdr_calibration.py``, ``benchmarks/RESULTS.md``).

At a score threshold ``t``, FDR(t) = D(t) / T(t) (decoys / targets at or above
``t``, at most 1), and a hit's q-value is the least FDR(t) over all ``t`` at or
below its score, so q-values never fall as the score falls.  Decoy hits are
dropped before any hit is returned.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search.decoys import target_decoy_library
from engine.search.streaming import StreamingJob

__all__ = [
    "SECOND_BEST_DEPTH",
    "FdrEstimate",
    "FdrSearchJob",
    "compound_keys",
    "estimate_second_best",
    "estimate_target_decoy",
    "inner_search",
]

#: Scores are compared to 9 decimals here: backends add a score's products in
#: different orders (the CPU and the GPU differ in the last bits, ~1e-16), and a tie
#: between a target and a decoy must not depend on which one ran.
SCORE_DECIMALS = 9


def _snapped(scores) -> np.ndarray:
    return np.round(np.asarray(scores, dtype=np.float64), SCORE_DECIMALS)


#: The ``"second"`` scheme looks for a query's best hit of another compound among
#: this many best hits (or its top-N, when larger).
SECOND_BEST_DEPTH = 10


@dataclass(frozen=True)
class FdrEstimate:
    """The q-value of any score, from one search's targets and decoys.

    Attributes
    ----------
    scheme : str
        How targets and decoys were counted (see the module).
    targets, decoys : ndarray of float64
        Scores counted as targets and as decoys, ascending.
    lost : ndarray of bool or None
        Per query: its best decoy beat its best target (target-decoy competition);
        such a query's target hits get q-value 1.
    """

    scheme: str
    targets: np.ndarray
    decoys: np.ndarray
    lost: np.ndarray | None = None

    def __post_init__(self) -> None:
        t = np.sort(_snapped(self.targets))
        d = np.sort(_snapped(self.decoys))
        object.__setattr__(self, "targets", t)
        object.__setattr__(self, "decoys", d)
        # the least FDR at each target score and every target score below it
        object.__setattr__(self, "_least", np.minimum.accumulate(self.fdr(t)) if len(t) else t)

    def fdr(self, threshold: np.ndarray | float) -> np.ndarray:
        """Estimated FDR among the targets scoring at least ``threshold`` (1 when none)."""
        s = np.atleast_1d(_snapped(threshold))
        n_t = len(self.targets) - np.searchsorted(self.targets, s, side="left")
        n_d = len(self.decoys) - np.searchsorted(self.decoys, s, side="left")
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(n_t > 0, np.minimum(n_d / np.maximum(n_t, 1), 1.0), 1.0)

    def q_value(self, scores: np.ndarray) -> np.ndarray:
        """q-value of each score: the least :meth:`fdr` over thresholds at or below it."""
        s = _snapped(scores)
        q = self.fdr(s)
        below = np.searchsorted(self.targets, s, side="right") - 1  # last target score <= s
        has = below >= 0
        q[has] = np.minimum(q[has], self._least[below[has]])
        return q

    def hit_q_values(self, hits: HitTable) -> np.ndarray:
        """q-value of each target hit: by its score, 1 for a query whose decoy won."""
        q = self.q_value(hits.score)
        if self.lost is not None:
            q[self.lost[hits.query_index]] = 1.0
        return q


def estimate_target_decoy(hits: HitTable, n_target: int, n_queries: int) -> FdrEstimate:
    """Target-decoy competition on the hits of a target + decoy library.

    Parameters
    ----------
    hits : HitTable
        Hits of one search in the library of :func:`target_decoy_library`: library
        index ``>= n_target`` is a decoy.
    n_target : int
        Spectra of the target library.
    n_queries : int
        Number of queries.
    """
    decoy = hits.library_index >= n_target
    score = _snapped(hits.score)
    best_t = _best(hits.query_index[~decoy], score[~decoy], n_queries)
    best_d = _best(hits.query_index[decoy], score[decoy], n_queries)
    target_wins = np.isfinite(best_t) & ~(best_d >= best_t)  # a tie goes to the decoy
    decoy_wins = np.isfinite(best_d) & ~target_wins
    return FdrEstimate("target-decoy", best_t[target_wins], best_d[decoy_wins], lost=decoy_wins)


def estimate_second_best(hits: HitTable, library: SpectrumLibrary, n_queries: int) -> FdrEstimate:
    """Second-best-hit estimate: best hits as targets, each query's best hit of another
    compound than its best hit's as a decoy.

    Parameters
    ----------
    hits : HitTable
        Hits in canonical order (query, score descending).
    library : SpectrumLibrary
        The library searched (compounds: :func:`compound_keys`).
    n_queries : int
    """
    q = hits.query_index
    first = np.ones(len(q), dtype=bool)
    first[1:] = q[1:] != q[:-1]
    top = np.maximum.accumulate(np.where(first, np.arange(len(q)), 0))  # row of the best hit
    rows, at = np.unique(hits.library_index, return_inverse=True)
    compound = compound_keys(library, rows)[at.reshape(-1)]
    other = compound != compound[top]
    best = _best(q[first], hits.score[first], n_queries)
    second = _best(q[other], hits.score[other], n_queries)
    return FdrEstimate("second-best", best[np.isfinite(best)], second[np.isfinite(second)])


def compound_keys(library: SpectrumLibrary, rows: np.ndarray | None = None) -> np.ndarray:
    """InChIKey first block of spectra ``rows`` (all by default); ``id:<library id>`` for
    a spectrum without one."""
    rows = np.arange(len(library)) if rows is None else np.asarray(rows, dtype=np.int64)
    inchikeys, ids = library.metadata["inchikey"][rows], library.metadata["id"][rows]
    return np.array(
        [
            str(k).split("-")[0].strip().upper() or f"id:{i}"
            for k, i in zip(inchikeys, ids, strict=True)
        ],
        dtype=object,
    )


def _best(query: np.ndarray, score: np.ndarray, n: int) -> np.ndarray:
    """Highest score of each of ``n`` queries (NaN when it has none)."""
    best = np.full(n, -np.inf)
    np.maximum.at(best, query, score)
    best[np.isneginf(best)] = np.nan
    return best


def inner_search(
    library: SpectrumLibrary, params: SearchParameters
) -> tuple[SpectrumLibrary, SearchParameters]:
    """The library and parameters the one pass of an FDR search runs on.

    With decoys: the target + decoy library, each query keeping twice its top-N so
    that decoys seldom push a target out of it (the targets' top-N is cut
    afterwards; the competition needs only each query's best hit and next best).
    ``"second"``: the library itself, each query keeping at least
    :data:`SECOND_BEST_DEPTH` hits to find its best hit of another compound in.
    """
    if params.decoys == "second":
        depth = 0 if params.top_n == 0 else max(params.top_n, SECOND_BEST_DEPTH)
        return library, dataclasses.replace(params, fdr=None, top_n=depth)
    inner = dataclasses.replace(params, fdr=None, top_n=2 * params.top_n)
    return target_decoy_library(library, params.decoys), inner


class FdrSearchJob(StreamingJob):
    """A search with a q-value per hit: one pass of ``inner`` (built by the caller on
    :func:`inner_search`'s library and parameters), then the estimate, the ``fdr``
    filter and the targets' top-N, yielded as one chunk at the end.

    ``progress``, ``messages``, ``backend`` and cancellation are the inner job's.
    A cancelled search estimates from the hits found so far.

    Parameters
    ----------
    inner : StreamingJob
        The search job of the pass (its ``keep_hits`` must be True).
    queries, library : SpectrumLibrary
        The queries and the target library.
    params : SearchParameters
        The user's parameters (``fdr`` set).
    """

    def __init__(
        self,
        inner: StreamingJob,
        queries: SpectrumLibrary,
        library: SpectrumLibrary,
        params: SearchParameters,
        *,
        keep_hits: bool = True,
    ) -> None:
        super().__init__(
            queries, library, params, on_message=inner._on_message,
            cancel_token=inner.cancel_token, keep_hits=keep_hits,
        )  # fmt: skip
        self.inner = inner
        self.messages = inner.messages
        self.progress = inner.progress
        #: The estimate, once the pass is over (None before).
        self.estimate: FdrEstimate | None = None

    @property
    def backend(self):  # noqa: ANN201 - the inner job's backend (it may fall back)
        """The inner job's backend."""
        return self.inner.backend

    def q_values(self, hits: HitTable) -> np.ndarray:
        """q-values of target ``hits`` (the writer's column); NaN before the pass is over."""
        if self.estimate is None:
            return np.full(len(hits), np.nan)
        return self.estimate.hit_q_values(hits)

    def __iter__(self) -> Iterator[HitTable]:
        for _ in self.inner:
            self.progress = self.inner.progress
        self.progress = self.inner.progress
        self.incomplete_queries = self.inner.incomplete_queries
        hits, n_target, n = self.inner.hits, len(self.library), len(self.queries)
        if self.params.decoys == "second":
            self.estimate = estimate_second_best(hits, self.library, n)
        else:
            self.estimate = estimate_target_decoy(hits, n_target, n)
            hits = hits.take(hits.library_index < n_target)
        if self.inner.params.top_n != self.params.top_n:  # hits come in canonical order
            hits = hits.top_per_query(self.params.top_n)
        hits = hits.take(self.estimate.hit_q_values(hits) <= self.params.fdr)
        self._say(_summary(self.estimate, self.params.fdr, hits, n))
        self.progress.hits = 0
        self.finished = self.inner.finished
        if len(hits):
            yield self._keep(hits)


def _summary(estimate: FdrEstimate, fdr: float, hits: HitTable, n_queries: int) -> str:
    kept = len(np.unique(hits.query_index))
    return (
        f"q-values ({estimate.scheme}, {len(estimate.targets)} targets, "
        f"{len(estimate.decoys)} decoys): {kept} of {n_queries} queries have hits at q <= {fdr:g}"
    )
