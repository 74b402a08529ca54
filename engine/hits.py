"""Columnar hit tables: the output of every search."""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numba
import numpy as np

from engine.kernels.threads import for_each_span

__all__ = ["HitContext", "HitTable"]


class HitContext(Protocol):
    """What hits refer to (queries, library, parameters): it annotates them."""

    def columns(self, hits: HitTable) -> dict[str, np.ndarray]:
        """Every user-facing column of ``hits`` (metadata, evidence)."""


@dataclass(frozen=True, eq=False)
class HitTable:
    """Search hits as four aligned columns.

    Columns read like a table's: ``hits["score"]``.  Hits returned by
    :func:`engine.search` know their queries, library and parameters, so
    ``hits["library_name"]``, :meth:`annotated` and :meth:`to_pandas` add both
    spectra's metadata, the reverse score and the explained intensity.

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
    context: HitContext | None = field(default=None, repr=False, compare=False)

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
        """Stack tables row-wise (one table's columns are shared, not copied)."""
        tables = list(tables)
        if not tables:
            return cls.empty()
        if len(tables) == 1:
            return cls(*(getattr(tables[0], c) for c in cls.columns()))
        return cls(*(np.concatenate([getattr(t, c) for t in tables]) for c in cls.columns()))

    @staticmethod
    def columns() -> tuple[str, ...]:
        """Column names in order."""
        return ("query_index", "library_index", "score", "matches")

    def __reduce__(self) -> tuple:
        """Pickle compactly (Dask workers send their hits this way): a query column in
        order as runs, indexes and match counts in the narrowest integers that hold
        them; unpickled with the same values and dtypes."""
        packed = [_pack_column(getattr(self, c), runs=(c == "query_index")) for c in self.columns()]
        return (_unpack_hits, (packed, self.context))

    def __len__(self) -> int:
        return len(self.query_index)

    def __repr__(self) -> str:
        return f"<HitTable of {len(self)} hits>"

    def __getitem__(self, name: str) -> np.ndarray:
        """Column ``name``: a core column, else an annotated one (``"library_name"``)."""
        if not isinstance(name, str):
            raise TypeError("hits[...] takes a column name; use hits.take(rows) for rows")
        if name in self.columns():
            return getattr(self, name)
        if self.context is not None:
            columns = self.annotated()
            if name in columns:
                return columns[name]
        known = [*self.columns(), *(self.annotated() if self.context is not None else ())]
        raise KeyError(f"no column {name!r}; columns are: {', '.join(dict.fromkeys(known))}")

    def keys(self) -> list[str]:
        """Column names (the annotated ones too when the hits know their search)."""
        if self.context is None:
            return list(self.columns())
        return list(self.annotated())

    def with_context(self, context: HitContext | None) -> HitTable:
        """The same hits, annotated from ``context`` (see :class:`HitContext`)."""
        return replace(self, context=context)

    def annotated(self) -> dict[str, np.ndarray]:
        """Every column a chemist reads: ids, names, structures, adduct, ion modes,
        instrument, collision energy, retention time, SPLASH, licence and authors of
        the library spectrum, the score, reverse score and explained intensity.

        Raises
        ------
        ValueError
            When the hits do not know their search (made by hand, not by
            :func:`engine.search`); use :meth:`with_context` or
            ``engine.export.hit_columns(hits, queries, library, params)``.
        """
        if self.context is None:
            raise ValueError(
                "these hits do not know their queries and library: use "
                "engine.export.hit_columns(hits, queries, library, params)"
            )
        return self.context.columns(self)

    def to_pandas(self, annotated: bool = True) -> Any:
        """The hits as a ``pandas.DataFrame`` (annotated when the hits know their search).

        Raises
        ------
        ImportError
            When pandas is not installed, with the command that installs it.
        """
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                "HitTable.to_pandas() needs pandas: pip install pandas "
                "(hits['score'] and hits.to_dict() work without it)"
            ) from None
        if annotated and self.context is not None:
            return pd.DataFrame(self.annotated())
        return pd.DataFrame(self.to_dict())

    def _repr_html_(self) -> str:
        """The first rows as an HTML table (Jupyter)."""
        shown = self.take(np.arange(min(len(self), 10)))
        columns = shown.annotated() if self.context is not None else shown.to_dict()
        if self.context is not None:
            keep = ("query_id", "library_name", "score", "reverse_score", "matches",
                    "precursor_mz_delta", "library_adduct", "library_inchikey")  # fmt: skip
            columns = {k: columns[k] for k in keep if k in columns}
        head = "".join(f"<th>{html.escape(k)}</th>" for k in columns)
        rows = []
        for r in range(len(shown)):
            cells = []
            for values in columns.values():
                v = values[r]
                text = f"{v:.4f}" if isinstance(v, float | np.floating) else str(v)
                cells.append(f"<td>{html.escape(text)}</td>")
            rows.append("<tr>" + "".join(cells) + "</tr>")
        more = f"<p>{len(self)} hits" + (", first 10 shown" if len(self) > 10 else "") + "</p>"
        return f"<table><tr>{head}</tr>{''.join(rows)}</table>{more}"

    def take(self, rows: np.ndarray) -> HitTable:
        """The rows at ``rows`` (indices or a boolean mask)."""
        return HitTable(*(getattr(self, c)[rows] for c in self.columns()), context=self.context)

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


# -- compact pickling ---------------------------------------------------------------
def _narrowest(values: np.ndarray) -> np.ndarray:
    """Integer ``values`` in int16 or int32 where they fit (as they are otherwise)."""
    if values.dtype.kind not in "iu" or not len(values):
        return values
    lo, hi = int(values.min()), int(values.max())
    for narrow in (np.int16, np.int32):
        info = np.iinfo(narrow)
        if np.dtype(narrow).itemsize < values.dtype.itemsize and info.min <= lo and hi <= info.max:
            return values.astype(narrow)
    return values


def _pack_column(values: np.ndarray, runs: bool = False) -> tuple:
    """``(dtype, kind, arrays)`` of one column: ``"runs"`` (distinct values and their
    counts, for a nondecreasing column) or ``"plain"``."""
    values = np.asarray(values)
    if (
        runs
        and values.dtype.kind in "iu"
        and len(values) > 1
        and bool(np.all(values[1:] >= values[:-1]))
    ):
        starts = np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1])))
        counts = np.diff(np.append(starts, len(values)))
        return (values.dtype.str, "runs", (_narrowest(values[starts]), _narrowest(counts)))
    return (values.dtype.str, "plain", (_narrowest(values),))


def _unpack_column(packed: tuple) -> np.ndarray:
    dtype, kind, arrays = packed
    if kind == "runs":
        values, counts = arrays
        return np.repeat(values.astype(dtype), counts.astype(np.int64))
    return arrays[0].astype(dtype, copy=False)


def _unpack_hits(packed: list, context: HitContext | None) -> HitTable:
    """A :class:`HitTable` from :meth:`HitTable.__reduce__`'s columns."""
    return HitTable(*(_unpack_column(c) for c in packed), context=context)


# -- ordering of hit rows: group by query, best first, keep the top N ----------------
@numba.njit(cache=True, nogil=True)
def _in_order(rows, library, score):  # pragma: no cover - numba
    """Whether ``rows`` are ordered by score descending, then library ascending (a
    device top-N comes so: its query's sort is skipped, with the same result, as
    the keys of distinct hits of one query are distinct)."""
    for k in range(1, len(rows)):
        s0, s1 = score[rows[k - 1]], score[rows[k]]
        if not (s1 < s0 or (s1 == s0 and library[rows[k]] > library[rows[k - 1]])):
            return False  # (NaN scores too: the sort places them)
    return True


@numba.njit(cache=True, nogil=True)
def _grouped_by_query(query, q_lo, n_groups):  # pragma: no cover - numba
    """Rows grouped by query (a stable counting sort) and each group's start."""
    n = len(query)
    starts = np.zeros(n_groups + 1, dtype=np.int64)
    for k in range(n):
        starts[query[k] - q_lo + 1] += 1
    for g in range(n_groups):
        starts[g + 1] += starts[g]
    grouped = np.empty(n, dtype=np.int64)
    fill = starts[:-1].copy()
    for k in range(n):
        g = query[k] - q_lo
        grouped[fill[g]] = k
        fill[g] += 1
    return grouped, starts


@numba.njit(cache=True, nogil=True)
def _order_groups(g0, g1, grouped, starts, library, score, top_n, kept):  # pragma: no cover
    """Sort query groups ``[g0, g1)`` in place (score descending, then library), sizes kept."""
    for g in range(g0, g1):
        a, b = starts[g], starts[g + 1]
        if b - a > 1 and not _in_order(grouped[a:b], library, score):
            rows = grouped[a:b]
            by_library = rows[np.argsort(library[rows], kind="mergesort")]
            grouped[a:b] = by_library[np.argsort(-score[by_library], kind="mergesort")]
        kept[g] = min(b - a, top_n) if top_n > 0 else b - a


@numba.njit(cache=True, nogil=True)
def _kept_rows(grouped, starts, kept):  # pragma: no cover - numba
    n_groups = kept.shape[0]
    out_start = np.zeros(n_groups + 1, dtype=np.int64)
    for g in range(n_groups):
        out_start[g + 1] = out_start[g] + kept[g]
    out = np.empty(out_start[n_groups], dtype=np.int64)
    for g in range(n_groups):
        out[out_start[g] : out_start[g + 1]] = grouped[starts[g] : starts[g] + kept[g]]
    return out


def _top_n_order(query, library, score, top_n, q_lo, n_groups):
    grouped, starts = _grouped_by_query(query, q_lo, n_groups)
    kept = np.empty(n_groups, dtype=np.int64)
    for_each_span(_order_groups, n_groups, grouped, starts, library, score, top_n, kept)
    return _kept_rows(grouped, starts, kept)


#: Up to this many rows are ordered by numpy in this thread: a parallel kernel's
#: start and barrier cost more than the sort, and on a busy machine each barrier
#: can wait a scheduler time slice (a streamed search orders every small chunk).
SMALL_ORDER_ROWS = 32_768


def _top_n_order_small(
    query: np.ndarray, library: np.ndarray, score: np.ndarray, top_n: int
) -> np.ndarray:
    """:func:`top_n_order` by one stable ``np.lexsort`` (same order, ties kept in row order)."""
    query = np.asarray(query, dtype=np.int64)
    order = np.lexsort((np.asarray(library, dtype=np.int64), -np.asarray(score, np.float64), query))
    if top_n <= 0:
        return order
    grouped = query[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = grouped[1:] != grouped[:-1]
    starts = np.flatnonzero(first)
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.append(starts, len(order))))
    return order[rank < top_n]


def compile_large_order() -> None:
    """Compile (or load) the threaded ordering of hit lists too large for numpy's sort.

    A warm-up calls it: tiny hit lists take numpy's path, so a warm-up's own
    searches never reach it, and a first large search would compile it.
    """
    rows = SMALL_ORDER_ROWS + 1
    n = np.arange(rows)
    top_n_order(n % 7, n, np.ones(rows), 2)


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
    if len(query) <= SMALL_ORDER_ROWS:
        return _top_n_order_small(query, library, score, int(top_n))
    q_lo, q_hi = int(query.min()), int(query.max())
    return _top_n_order(
        np.ascontiguousarray(query, dtype=np.int64),
        np.ascontiguousarray(library, dtype=np.int64),
        np.ascontiguousarray(score, dtype=np.float64),
        int(top_n),
        q_lo,
        q_hi - q_lo + 1,
    )
