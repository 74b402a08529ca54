"""Answers a chemist can defend, headless: q-values, ambiguity flags and every query's status.

What the window shows beside each hit and each query (no Qt here):

* :func:`display_columns` - a chunk of hits with its tied best hits in the
  engine's chemistry-neutral order (:func:`engine.search.order_ties`, never the
  library position) and their columns (:func:`engine.export.hit_columns`) with
  the q-values and the isomer check, plus a short ``flags`` column;
* :func:`flag_lines` - the flags of one hit in words, for the hit pane;
* :func:`query_columns` - one row per query: its status, hit count and best hit
  (:class:`engine.export.QueryTally`, :func:`engine.search.query_status`);
* :class:`HitList` - a search's hits as those columns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine import HitTable, SearchParameters, SpectrumLibrary
from engine.export import QueryTally, hit_columns, open_writer
from engine.search import order_ties, query_status, status_summary
from engine.search.ambiguity import best_rows

__all__ = [
    "HitList",
    "QValues",
    "SavedQValues",
    "best_hits",
    "display_columns",
    "first_best",
    "flag_lines",
    "flags_column",
    "query_columns",
    "status_summary",
    "write_hits",
]

#: Hit columns of a repository search's spectra (simms_gui.model.repository.HitSpectra):
#: column -> the hit spectra's metadata key.
REPOSITORY_COLUMNS = {
    "library_dataset": "dataset",
    "library_source_file": "library_file",
    "library_file_index": "file_index",
    "library_repository_index": "repository_index",
}
#: The q-values of hits (``FdrSearchJob.q_values``); None when the search made none.
QValues = Callable[[HitTable], np.ndarray]
#: Library rows to their isomer names (:class:`engine.analyses.qc.IsomerCheck`).
Isomers = Callable[[np.ndarray], np.ndarray]


def flags_column(columns: dict[str, np.ndarray]) -> np.ndarray:
    """Per hit, its ambiguity flags in a few words (``"tied ×3; few peaks; isomers"``).

    ``tied`` only where the best hits tied are of two or more compounds.
    """
    n = len(columns["score"])
    tied = columns.get("tied", np.zeros(n, dtype=np.int64))
    compounds = columns.get("tied_compounds", np.full(n, "", dtype=object))
    few = columns.get("few_peaks", np.zeros(n, dtype=bool))
    isomers = columns.get("isomers", np.full(n, "", dtype=object))
    out = np.full(n, "", dtype=object)
    other = compounds != ""  # a tie between spectra of one compound leaves no doubt
    for k in np.flatnonzero(other | few | (isomers != "")).tolist():
        words = []
        if other[k]:
            words.append(f"tied ×{int(tied[k])}")
        if few[k]:
            words.append("few peaks")
        if isomers[k]:
            words.append("isomers")
        out[k] = "; ".join(words)
    return out


def display_columns(
    hits: HitTable,
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters | None,
    q_values: QValues | None = None,
    isomers: Isomers | None = None,
) -> tuple[HitTable, dict[str, np.ndarray]]:
    """``hits`` with tied best hits ordered by :func:`engine.search.order_ties`, and
    their columns (q-values and isomers when given) with a ``flags`` column.

    Each query's hits must all be in ``hits`` (as in every chunk a search streams).
    """
    if len(hits):
        hits = order_ties(hits, queries, library, params)
    q = None if q_values is None else q_values(hits)
    columns = hit_columns(hits, queries, library, params, isomers, q)
    columns["flags"] = flags_column(columns)
    if "repository_index" in library.metadata:  # a repository's hit spectra: where each is from
        for key, column in REPOSITORY_COLUMNS.items():
            columns[key] = library.metadata[column][hits.library_index]
    return hits, columns


def first_best(query_index: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Positions of each query's first best hit as listed (query order of first appearance).

    A query's best hits are those within :data:`engine.search.TIE_TOLERANCE` of
    its best score; listed in :func:`engine.search.order_ties`'s order, the first
    is the tie order's choice, never the library position's.
    """
    zeros = np.zeros(len(query_index), dtype=np.int64)
    is_best, _ = best_rows(HitTable.from_arrays(query_index, zeros, score, zeros))
    rows = np.flatnonzero(is_best)
    _, first = np.unique(np.asarray(query_index)[rows], return_index=True)
    return np.sort(rows[first])


def best_hits(
    hits: HitTable,
    queries: SpectrumLibrary | None,
    library: SpectrumLibrary | None,
    params: SearchParameters | None,
) -> HitTable:
    """The best hit of each query, a tie decided by :func:`engine.search.order_ties`."""
    if queries is None or library is None or not len(hits):
        return hits.best_per_query()
    ordered = order_ties(hits, queries, library, params)
    return ordered.take(first_best(ordered.query_index, ordered.score))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def flag_lines(row: dict[str, object]) -> list[str]:
    """The warnings a chemist must see beside one hit (a row of the hit columns).

    ``"tied with 2 other compounds at the best score: A; B"`` (a tie between
    spectra of one compound is no doubt, and not listed), ``"only 1 matched
    peak"``, ``"isomers in library: C"``.
    """
    lines = []
    compounds = [c for c in str(row.get("tied_compounds", "") or "").split("; ") if c]
    mine = str(row.get("library_name", "")).casefold()
    named = [c for c in compounds if c.casefold() != mine]
    if len(compounds) > 1 and named:
        lines.append(
            f"tied with {_plural(len(named), 'other compound')} at the best score: "
            + "; ".join(named)
        )
    if bool(row.get("few_peaks", False)):
        lines.append(f"only {_plural(int(row.get('matches', 0)), 'matched peak')}")
    if row.get("isomers"):
        lines.append(f"isomers in library: {row['isomers']}")
    return lines


def query_columns(
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters,
    hits: HitTable,
    incomplete: Sequence[int] | np.ndarray = (),
) -> dict[str, np.ndarray]:
    """One row per query (:data:`engine.export.QUERY_COLUMNS`): status, hits, best hit.

    ``hits`` in canonical order (each query's best hit first), as
    ``Session.hits``; ``incomplete`` the queries whose search did not finish.
    """
    tally = QueryTally(queries, library)
    if len(hits):  # the best hit of a tie: order_ties' first, as in the exports
        tally.add(order_ties(hits, queries, library, params))
    status = query_status(queries, library, params, tally.hits > 0, incomplete)
    return tally.columns(params, incomplete, status)


class HitList:
    """Hits of a search as user-facing columns (:func:`display_columns`).

    Parameters
    ----------
    table : HitTable
        The hits (canonical order).
    queries, library : SpectrumLibrary
        The spectra the hit indexes refer to.
    params : SearchParameters, optional
    q_values, isomers : callable, optional
        The search's q-value estimate and isomer check (``Session.q_values``, ``Session.isomers``).

    Attributes
    ----------
    table : HitTable
        The hits, tied best hits in :func:`engine.search.order_ties`'s order.
    columns : dict of str to ndarray
    """

    def __init__(
        self,
        table: HitTable,
        queries: SpectrumLibrary | None,
        library: SpectrumLibrary | None,
        params: SearchParameters | None = None,
        q_values: QValues | None = None,
        isomers: Isomers | None = None,
    ) -> None:
        if queries is None or library is None:
            self.table = table
            self.columns: dict[str, np.ndarray] = dict(table.to_dict())
        else:
            self.table, self.columns = display_columns(
                table, queries, library, params, q_values, isomers
            )

    def __len__(self) -> int:
        return len(self.table)

    def __repr__(self) -> str:
        return f"<HitList of {len(self)} hits>"

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def to_pandas(self):
        """The columns as a :class:`pandas.DataFrame` (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(self.columns)


class SavedQValues:
    """The q-values of a saved hit list, looked up by (query, library) index.

    Parameters
    ----------
    hits : HitTable
    q_value : ndarray
        One per row of ``hits``.
    """

    def __init__(self, hits: HitTable, q_value: np.ndarray) -> None:
        self._keys = self._key(hits)
        order = np.argsort(self._keys, kind="stable")
        self._keys, self._q = self._keys[order], np.asarray(q_value, dtype=np.float64)[order]

    @staticmethod
    def _key(hits: HitTable) -> np.ndarray:
        return (hits.query_index.astype(np.int64) << 32) | hits.library_index.astype(np.int64)

    def __call__(self, hits: HitTable) -> np.ndarray:
        """q-values of ``hits`` (NaN for a hit not in the saved list)."""
        keys = self._key(hits)
        at = np.minimum(np.searchsorted(self._keys, keys), max(len(self._keys) - 1, 0))
        found = (self._keys[at] == keys) if len(self._keys) else np.zeros(len(keys), dtype=bool)
        return np.where(found, self._q[at] if len(self._q) else np.nan, np.nan)


def write_hits(
    session: Any, path: str | Path, hits: HitTable | str | None = None, format: str | None = None
) -> Path:
    """Write a session's hits with provenance (``engine.export.open_writer``).

    ``hits``: a :class:`~engine.HitTable`, ``"all"``/``"best"`` or None (all);
    the q-values and isomers of the session's search go with them.
    """
    if session.hits_queries is None or session.hits_library is None:
        raise RuntimeError("no search has been run yet")
    table = session.select_hits(hits or "all") if hits is None or isinstance(hits, str) else hits
    spectra = session.repositories.hit_spectra
    if spectra is not None and session.hits_library is spectra.library:
        # a repository's hits: each with its repository index, file, dataset and scan
        from simms_gui.model.repository import write_frame

        rows = spectra.repository_hits(table)
        frame = spectra.repository.hits_frame(rows, session.hits_queries)
        return write_frame(frame, path, format)
    writer = open_writer(
        path, session.hits_queries, session.hits_library, session.params, format=format,
        backend=session.backend, device=session.device, isomers=session.isomers,
        q_values=session.q_values,
    )  # fmt: skip
    try:
        writer.write(table)
    except BaseException:
        writer.abort()
        raise
    note = "the search was stopped" if session.cancelled else ""
    return writer.close(complete=not note, note=note, incomplete=session.incomplete)
