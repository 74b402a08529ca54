"""Every query accounted for in every export: the ``queries`` table beside the hits.

A hit list names only the queries that got hits; the queries table has one row
per query, with its status (:data:`engine.search.QUERY_STATUSES`: hits, or why
there is none) and a summary of its best hit.  TSV, CSV and Parquet hit lists get
it as a sibling file, ``hits.tsv`` → ``hits.queries.tsv`` (:func:`queries_path`);
mzTab-M as its SMF rows; the GNPS-style TSV as ``name.queries.tsv``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.atomic import atomic_path
from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search import query_status
from engine.search.ambiguity import FEW_PEAKS, ambiguity_columns
from engine.search.annotate import ION_MODE_NAMES

__all__ = ["QUERY_COLUMNS", "QueryTally", "queries_path", "write_queries"]

#: Columns of the queries table, in order.
QUERY_COLUMNS = (
    "query_index",
    "query_id",
    "query_name",
    "query_precursor_mz",
    "query_ion_mode",
    "status",
    "hits",
    "best_score",
    "best_matches",
    "best_library_id",
    "best_library_name",
    "tied",
    "tied_compounds",
    "few_peaks",
)


def queries_path(path: str | Path) -> Path:
    """Where the queries table of the hit list ``path`` goes: ``hits.tsv`` →
    ``hits.queries.tsv`` (``.mztab`` and GNPS files: ``.queries.tsv``)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        suffix = ".tsv"
    return path.with_name(f"{path.stem}.queries{suffix}")


class QueryTally:
    """Per query, its hits and its best hit, as the chunks of a search go by.

    Parameters
    ----------
    queries, library : SpectrumLibrary
    """

    def __init__(self, queries: SpectrumLibrary, library: SpectrumLibrary) -> None:
        n = len(queries)
        self.queries, self.library = queries, library
        self.hits = np.zeros(n, dtype=np.int64)
        self.best_score = np.full(n, np.nan)
        self.best_matches = np.zeros(n, dtype=np.int64)
        self.best_library = np.full(n, -1, dtype=np.int64)
        self.tied = np.zeros(n, dtype=np.int64)
        self.tied_compounds = np.full(n, "", dtype=object)

    def add(self, hits: HitTable) -> None:
        """Count one chunk (each query's hits all in it, its best hit first)."""
        if not len(hits):
            return
        q = hits.query_index
        self.hits += np.bincount(q, minlength=len(self.hits))
        first = np.ones(len(hits), dtype=bool)
        first[1:] = q[1:] != q[:-1]
        rows = np.flatnonzero(first)
        at = q[rows]
        self.best_score[at] = hits.score[rows]
        self.best_matches[at] = hits.matches[rows]
        self.best_library[at] = hits.library_index[rows]
        whole = ambiguity_columns(hits, self.library)
        self.tied[at] = whole["tied"][rows]
        self.tied_compounds[at] = whole["tied_compounds"][rows]

    def columns(
        self,
        params: SearchParameters,
        incomplete: np.ndarray | tuple = (),
        status: np.ndarray | None = None,
    ) -> dict[str, np.ndarray]:
        """The queries table: one row per query, :data:`QUERY_COLUMNS`."""
        queries, library = self.queries, self.library
        if status is None:
            status = query_status(queries, library, params, self.hits > 0, incomplete)
        lib = np.maximum(self.best_library, 0)
        found = self.best_library >= 0
        qm, lm = queries.metadata, library.metadata

        def from_library(column: np.ndarray) -> np.ndarray:
            out = np.full(len(found), "", dtype=object)
            if len(library):
                out[found] = column[lib[found]]
            return out

        return {
            "query_index": np.arange(len(queries), dtype=np.int64),
            "query_id": qm["id"],
            "query_name": qm["name"],
            "query_precursor_mz": np.round(queries.precursor_mz.astype(np.float64), 8),
            "query_ion_mode": ION_MODE_NAMES[queries.polarity().astype(np.int64) + 1],
            "status": np.asarray(status, dtype=object),
            "hits": self.hits,
            "best_score": self.best_score,
            "best_matches": self.best_matches,
            "best_library_id": from_library(lm["id"]),
            "best_library_name": from_library(lm["name"]),
            "tied": self.tied,
            "tied_compounds": self.tied_compounds,
            "few_peaks": found & (self.best_matches <= FEW_PEAKS),
        }


def write_queries(path: str | Path, columns: dict[str, np.ndarray]) -> Path:
    """Write the queries table atomically (TSV, CSV or Parquet by ``path``'s suffix)."""
    from engine.export.cells import frame_for_writing

    path = Path(path)
    frame = frame_for_writing(columns)
    with atomic_path(path, fsync=True) as tmp:
        if path.suffix.lower() in (".parquet", ".pq"):
            frame.to_parquet(tmp, index=False)
        else:
            sep = "," if path.suffix.lower() == ".csv" else "\t"
            frame.to_csv(tmp, sep=sep, index=False, quoting=_QUOTE_TEXT)
    return path


#: csv.QUOTE_NONNUMERIC: text quoted (a ``#`` in a name is never a comment).
_QUOTE_TEXT = 2
