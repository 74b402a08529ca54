"""Columnar hit tables: the output of every search."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numba
import numpy as np

__all__ = ["HitTable"]


@dataclass(frozen=True, eq=False)
class HitTable:
    """Search hits as four aligned columns.

    Attributes
    ----------
    query_index : ndarray of int64
        Position of the query among the loaded query spectra.
    library_index : ndarray of int64
        Position of the hit among the loaded library spectra.
    score : ndarray of float64
        Greedy cosine (or modified cosine) score.
    matches : ndarray of int32
        Number of matched peak pairs.
    """

    query_index: np.ndarray
    library_index: np.ndarray
    score: np.ndarray
    matches: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.query_index)
        if not (len(self.library_index) == len(self.score) == len(self.matches) == n):
            raise ValueError("hit columns must have equal lengths")

    @classmethod
    def empty(cls) -> HitTable:
        """A table with no rows."""
        return cls(
            np.empty(0, np.int64),
            np.empty(0, np.int64),
            np.empty(0, np.float64),
            np.empty(0, np.int32),
        )

    @classmethod
    def from_arrays(cls, query_index, library_index, score, matches) -> HitTable:
        """Build a table, converting each column to its canonical dtype."""
        return cls(
            np.asarray(query_index, dtype=np.int64),
            np.asarray(library_index, dtype=np.int64),
            np.asarray(score, dtype=np.float64),
            np.asarray(matches, dtype=np.int32),
        )

    @classmethod
    def concat(cls, tables: Iterable[HitTable]) -> HitTable:
        """Stack tables row-wise."""
        tables = list(tables)
        if not tables:
            return cls.empty()
        return cls(*(np.concatenate([getattr(t, c) for t in tables]) for c in cls.columns()))

    @staticmethod
    def columns() -> tuple[str, ...]:
        """Column names in order."""
        return ("query_index", "library_index", "score", "matches")

    def __len__(self) -> int:
        return len(self.query_index)

    def __repr__(self) -> str:
        return f"<HitTable of {len(self)} hits>"

    def take(self, rows: np.ndarray) -> HitTable:
        """The rows at ``rows`` (indices or a boolean mask)."""
        return HitTable(*(getattr(self, c)[rows] for c in self.columns()))

    def sorted(self) -> HitTable:
        """Canonical order: query ascending, score descending, library index ascending."""
        return self.top_per_query(0)

    def top_per_query(self, n: int, library_rank: np.ndarray | None = None) -> HitTable:
        """Keep at most ``n`` best hits of each query (all when ``n <= 0``), canonical order.

        Parameters
        ----------
        n : int
            Hits per query to keep.
        library_rank : ndarray of int64, optional
            Rank equal scores by ``library_rank[library_index]`` instead of the
            library index (a backend whose library positions are reordered passes
            the original indexes of its positions).
        """
        library = self.library_index if library_rank is None else library_rank[self.library_index]
        return self.take(top_n_order(self.query_index, library, self.score, max(n, 0)))

    def best_per_query(self) -> HitTable:
        """The single best hit of each query."""
        return self.top_per_query(1)

    def to_dict(self) -> dict[str, np.ndarray]:
        """Columns as a dict of arrays."""
        return {c: getattr(self, c) for c in self.columns()}


# -- ordering of hit rows: group by query, best first, keep the top N ----------------
@numba.njit(cache=True, parallel=True, nogil=True)
def _top_n_order(query, library, score, top_n, q_lo, n_groups):  # pragma: no cover - numba
    n = len(query)
    starts = np.zeros(n_groups + 1, dtype=np.int64)
    for k in range(n):
        starts[query[k] - q_lo + 1] += 1
    for g in range(n_groups):
        starts[g + 1] += starts[g]
    grouped = np.empty(n, dtype=np.int64)
    fill = starts[:-1].copy()
    for k in range(n):  # counting sort by query, stable
        g = query[k] - q_lo
        grouped[fill[g]] = k
        fill[g] += 1
    kept = np.empty(n_groups, dtype=np.int64)
    for g in numba.prange(n_groups):
        a, b = starts[g], starts[g + 1]
        if b - a > 1:
            rows = grouped[a:b]
            by_library = rows[np.argsort(library[rows], kind="mergesort")]
            grouped[a:b] = by_library[np.argsort(-score[by_library], kind="mergesort")]
        kept[g] = min(b - a, top_n) if top_n > 0 else b - a
    out_start = np.zeros(n_groups + 1, dtype=np.int64)
    for g in range(n_groups):
        out_start[g + 1] = out_start[g] + kept[g]
    out = np.empty(out_start[n_groups], dtype=np.int64)
    for g in numba.prange(n_groups):
        out[out_start[g] : out_start[g + 1]] = grouped[starts[g] : starts[g] + kept[g]]
    return out


def top_n_order(
    query: np.ndarray, library: np.ndarray, score: np.ndarray, top_n: int = 0
) -> np.ndarray:
    """Row order: query ascending, score descending, library index ascending.

    Parameters
    ----------
    query, library : ndarray of int64
        Query and library index of each row.
    score : ndarray of float64
    top_n : int
        Keep only each query's first ``top_n`` rows (all when 0).

    Returns
    -------
    ndarray of int64
        Indexes of the rows to take, in order.  Linear in the rows plus a small
        sort per query, instead of one large three-key sort.
    """
    if len(query) == 0:
        return np.empty(0, dtype=np.int64)
    q_lo, q_hi = int(query.min()), int(query.max())
    return _top_n_order(
        np.ascontiguousarray(query, dtype=np.int64),
        np.ascontiguousarray(library, dtype=np.int64),
        np.ascontiguousarray(score, dtype=np.float64),
        int(top_n),
        q_lo,
        q_hi - q_lo + 1,
    )
