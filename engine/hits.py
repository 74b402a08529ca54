"""Columnar hit tables: the output of every search."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

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

    def top_per_query(self, n: int) -> HitTable:
        """Keep at most ``n`` best hits of each query (all when ``n <= 0``), canonical order."""
        from engine.kernels.topn import top_n_order

        return self.take(top_n_order(self.query_index, self.library_index, self.score, max(n, 0)))

    def best_per_query(self) -> HitTable:
        """The single best hit of each query."""
        return self.top_per_query(1)

    def to_dict(self) -> dict[str, np.ndarray]:
        """Columns as a dict of arrays."""
        return {c: getattr(self, c) for c in self.columns()}
