"""Table model of search hits over columnar numpy data.

Rows live in growing numpy columns (``engine.export.hit_columns`` plus the
library's name).  What the view shows is ``_view``, an int64 array of storage
rows: sorting is one stable sort of a column over the visible rows
(:func:`~simms_gui._qt.sort_order.stable_order`: radix buckets, then a nearly
sorted timsort), filtering one boolean mask; ``data()`` reads
``column[_view[row]]``.  Text columns sort and filter through integer codes
computed over the *distinct* spectra they come from (a library has tens of
thousands of names, a hit list may have millions of rows): each spectrum's
first row is recorded as chunks stream in, the names' ranks are cached until a
new spectrum appears, so millions of hits sort and filter in well under a
second.
"""

from __future__ import annotations

import math

import numpy as np
from PyQt6.QtCore import QAbstractTableModel, QModelIndex, Qt, pyqtSignal
from PyQt6.QtGui import QColor

from engine import HitTable
from simms_gui._qt.desk import on_main_thread
from simms_gui._qt.growable import GrowableColumns, GrowableRows
from simms_gui._qt.hit_columns import (
    BEST_FIRST,
    COLUMNS,
    ORDER_KEYS,
    TEXT_FILTER_KEYS,
    Column,
    format_cell,
)
from simms_gui._qt.sort_order import SourceCodes, stable_order
from simms_gui.model.answers import first_best, flag_lines, flags_column
from simms_gui.model.events import HitsChanged

__all__ = ["COLUMNS", "Column", "HitsTableModel"]


_NUMERIC_ALIGN = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
_FLAG_COLOUR = QColor("#b35900")


class HitsTableModel(QAbstractTableModel):
    """Hits as a sortable, filterable table.

    Signals
    -------
    countsChanged(int, int)
        ``(visible rows, all rows)`` after appends and filter changes.
    """

    countsChanged = pyqtSignal(int, int)  # noqa: N815 (Qt naming)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._store = GrowableColumns()
        self._view_store = GrowableRows()
        self._cols: dict[str, np.ndarray] = {}
        self._n = 0
        self._view = np.empty(0, dtype=np.int64)
        self._sort_column = -1
        self._sort_order = Qt.SortOrder.AscendingOrder
        self._text = ""
        self._score_range: tuple[float, float] | None = None
        self._best_only = False
        self._query: int | None = None
        self._codes: dict[str, np.ndarray] = {}
        self._sources: dict[str, SourceCodes] = {}
        self._ranks: dict[str, tuple[int, np.ndarray]] = {}
        self._library_name = ""

    # -- data in ----------------------------------------------------------------------
    def clear(self, library_name: str = "") -> None:
        """Remove all rows (a new search starts)."""
        self.beginResetModel()
        self._store = GrowableColumns()
        self._view_store = GrowableRows()
        self._cols = {}
        self._n = 0
        self._view = np.empty(0, dtype=np.int64)
        self._codes = {}
        self._sources = {}
        self._ranks = {}
        self._library_name = library_name
        self.endResetModel()
        self.countsChanged.emit(0, 0)

    @on_main_thread
    def show_hits(self, event: HitsChanged) -> None:
        """The session's hits changed: one path for a streamed search and a restored session.

        ``replace`` resets the table to the event's hits (a search starts, a
        session is restored); otherwise they are appended as a chunk.
        """
        columns = event.columns
        if columns is None:
            columns = dict(event.hits.to_dict()) if len(event.hits) else None
        if event.replace:
            self.set_columns(columns or {"score": np.empty(0)}, event.library_name)
        elif columns is not None:
            self.append_columns(columns)

    def resort(self) -> None:
        """Sort again by the current column (a search ended: its rows in their places)."""
        if self._sort_column >= 0:
            self.sort(self._sort_column, self._sort_order)

    def set_columns(self, columns: dict[str, np.ndarray], library_name: str = "") -> None:
        """Replace all rows by ``columns`` (a dict like ``hit_columns``' output)."""
        self.clear(library_name)
        self.append_columns(columns)
        self.apply()

    def append_columns(self, columns: dict[str, np.ndarray]) -> None:
        """Append a chunk of hits (``hit_columns`` of one ``HitTable`` chunk).

        Rows that pass the current filters are inserted at the end of the view
        (``beginInsertRows``); a sorted view is re-sorted by :meth:`apply`.
        """
        n_new = len(columns["score"])
        if n_new == 0:
            return
        columns = dict(columns)
        if "flags" not in columns:  # columns made without simms_gui.model.answers.display_columns
            columns["flags"] = flags_column(columns)
        if "q_value" not in columns:
            columns["q_value"] = np.full(n_new, np.nan)
        if "library" not in columns:
            named = columns.get("library_file")
            if named is not None and len(named) and all(named[[0, -1]] != ""):
                columns["library"] = named  # several libraries searched as one
            else:
                lib = np.empty(n_new, dtype=object)
                lib[:] = self._library_name
                columns["library"] = lib
        start = self._n
        self._store.append(columns)
        self._cols = self._store.columns()
        self._n += n_new
        self._codes = {}
        for source in ("query_index", "library_index"):
            if source in columns:
                self._sources.setdefault(source, SourceCodes()).append(columns[source], start)
        new_rows = np.arange(start, self._n, dtype=np.int64)
        if self._best_only:
            # best-per-query depends on all rows: recompute the whole view
            self.apply()
            return
        keep = new_rows[self._mask(new_rows)]
        if self._sort_column < 0:
            keep = self._sorted(keep)
        if len(keep):
            first = len(self._view)
            self.beginInsertRows(QModelIndex(), first, first + len(keep) - 1)
            self._view = self._view_store.extend(self._view, keep)
            self.endInsertRows()
            if self._sort_column < 0 and first and not self._follows(first - 1, keep[0]):
                self._into_query_order(first)  # a search visits queries in precursor order
        self.countsChanged.emit(len(self._view), self._n)

    # -- Qt model API -----------------------------------------------------------------
    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._view)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and 0 <= section < len(COLUMNS):
            col = COLUMNS[section]
            if role == Qt.ItemDataRole.DisplayRole:
                return col.title
            if role == Qt.ItemDataRole.ToolTipRole:
                return col.tip or col.title
            if role == Qt.ItemDataRole.InitialSortOrderRole:
                best = col.key in BEST_FIRST
                return Qt.SortOrder.DescendingOrder if best else Qt.SortOrder.AscendingOrder
        elif orientation == Qt.Orientation.Vertical and role == Qt.ItemDataRole.DisplayRole:
            return str(section + 1)
        return None

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not self._cols:
            return None
        col = COLUMNS[index.column()]
        if role == Qt.ItemDataRole.ToolTipRole and col.key == "flags":
            return "\n".join(flag_lines(self.row_of(index.row()))) or None
        if role == Qt.ItemDataRole.ForegroundRole and col.key == "flags":
            return _FLAG_COLOUR
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            value = self._cols[col.key][self._view[index.row()]]
            return format_cell(value, col.fmt)
        if role == Qt.ItemDataRole.TextAlignmentRole and col.fmt:
            return _NUMERIC_ALIGN
        if role == Qt.ItemDataRole.UserRole:
            value = self._cols[col.key][self._view[index.row()]]
            return value.item() if isinstance(value, np.generic) else value
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Sort the visible rows by ``column`` (-1: query order, best hits first); stable."""
        self._sort_column, self._sort_order = column, order
        self.layoutAboutToBeChanged.emit()
        old = self._view
        self._view = self._sorted(self._view)
        self._remap_persistent(old, self._view)
        self.layoutChanged.emit()

    # -- filters ----------------------------------------------------------------------
    def set_text_filter(self, text: str) -> None:
        """Show rows whose query/hit name, id or InChIKey contains ``text`` (any case)."""
        self._text = text.strip().lower()
        self.apply()

    def set_score_range(self, low: float | None, high: float | None) -> None:
        """Show rows with ``low <= score <= high`` (None: no limit)."""
        self._score_range = _score_range(low, high)
        self.apply()

    def set_filters(self, text: str, scores: tuple, best: bool, query: int | None) -> None:
        """Set every filter at once (text, score range, best only, query), then apply."""
        self._text, self._score_range = text.strip().lower(), _score_range(*scores)
        self._best_only, self._query = bool(best), None if query is None else int(query)
        self.apply()

    def sort_state(self) -> tuple[int, Qt.SortOrder]:
        """``(column, order)`` of the sort (-1: query order)."""
        return self._sort_column, self._sort_order

    def set_best_only(self, best: bool) -> None:
        """Show only the best hit of each query."""
        self._best_only = bool(best)
        self.apply()

    def set_query_filter(self, query_index: int | None) -> None:
        """Show only the hits of query ``query_index`` (None: of every query)."""
        self._query = None if query_index is None else int(query_index)
        self.apply()

    @property
    def query_filter(self) -> int | None:
        """The query whose hits alone are shown, or None."""
        return self._query

    def clear_filters(self) -> None:
        """Drop all filters (the view is recomputed by the next :meth:`apply`)."""
        self._text, self._score_range, self._best_only = "", None, False
        self._query = None

    def apply(self) -> None:
        """Recompute the visible rows (filters, then sort) in one reset."""
        rows = np.arange(self._n, dtype=np.int64)
        view = self._sorted(rows[self._mask(rows)])
        self.beginResetModel()
        self._view = view
        self.endResetModel()
        self.countsChanged.emit(len(self._view), self._n)

    # -- reading rows -----------------------------------------------------------------
    @property
    def total_rows(self) -> int:
        """Rows stored (visible or not)."""
        return self._n

    @property
    def view_rows(self) -> np.ndarray:
        """Storage rows in display order (read-only view)."""
        out = self._view.view()
        out.flags.writeable = False
        return out

    def column(self, key: str, *, visible: bool = True) -> np.ndarray:
        """Column ``key`` of the visible rows in display order (or of all rows)."""
        if not self._cols:
            return np.empty(0)
        col = self._cols[key]
        return col[self._view] if visible else col

    def row_of(self, view_row: int) -> dict[str, object]:
        """All columns of one visible row."""
        r = self._view[view_row]
        return {k: v[r] for k, v in self._cols.items()}

    def hit_table(self, *, visible: bool = True) -> HitTable:
        """The visible rows (display order) or all rows as a :class:`HitTable`."""
        if not self._cols:
            return HitTable.empty()
        rows = self._view if visible else slice(None)
        return HitTable.from_arrays(
            self._cols["query_index"][rows],
            self._cols["library_index"][rows],
            self._cols["score"][rows],
            self._cols["matches"][rows],
        )

    def find_row(self, query_index: int, library_index: int) -> int:
        """Visible row of a hit, -1 when hidden or absent."""
        if not self._cols:
            return -1
        q = self._cols["query_index"][self._view]
        lib = self._cols["library_index"][self._view]
        hit = np.flatnonzero((q == query_index) & (lib == library_index))
        return int(hit[0]) if len(hit) else -1

    # -- internals --------------------------------------------------------------------
    def _mask(self, rows: np.ndarray) -> np.ndarray:
        mask = np.ones(len(rows), dtype=bool)
        if not self._cols or not len(rows):
            return mask
        if self._score_range is not None:
            s = self._cols["score"][rows]
            lo, hi = self._score_range
            mask &= (s >= lo - 1e-12) & (s <= hi + 1e-12)
        if self._text:
            text_mask = np.zeros(len(rows), dtype=bool)
            for key in TEXT_FILTER_KEYS:
                if key in self._cols:
                    uniq, inverse = self._distinct(key)
                    hit = np.fromiter(
                        (self._text in str(v).lower() for v in uniq), dtype=bool, count=len(uniq)
                    )
                    text_mask |= hit[inverse[rows]]
            mask &= text_mask
        if self._best_only:
            mask &= self._best_rows()[rows]
        if self._query is not None:
            mask &= self._cols["query_index"][rows] == self._query
        return mask

    def _best_rows(self) -> np.ndarray:
        """Boolean over storage rows: the best hit of each query (the first of a tie as
        stored: ``order_ties``' order, :func:`simms_gui.model.answers.first_best`)."""
        c = self._cols
        rows = first_best(c["query_index"], c["score"])
        best = np.zeros(self._n, dtype=bool)
        best[rows] = True
        return best

    def _source_key(self, key: str) -> str | None:
        for prefix, source in (("query_", "query_index"), ("library_", "library_index")):
            codes = self._sources.get(source)
            if key.startswith(prefix) and source in self._cols and codes and codes.usable:
                return source
        return None

    def _distinct(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """Distinct values of a text column and each row's position among them.

        Uses the spectrum index the column derives from, so only the distinct
        spectra (not all rows) are looked at.
        """
        cache_key = "distinct:" + key
        if cache_key in self._codes:
            return self._codes[cache_key], self._codes[cache_key + ":inv"]
        col = self._cols[key]
        source = self._source_key(key)
        if source is not None:
            codes = self._sources[source]
            values, first = codes.distinct()
            uniq = col[first]
            inverse = codes.table(np.arange(len(values)))[self._cols[source]]
        else:
            uniq, inverse = np.unique(col.astype(str), return_inverse=True)
        self._codes[cache_key], self._codes[cache_key + ":inv"] = uniq, inverse.ravel()
        return uniq, inverse.ravel()

    def _sort_key(self, key: str, rows: np.ndarray) -> np.ndarray:
        """Numbers ordering ``rows`` like column ``key`` (text: ranks of the lower-case text)."""
        col = self._cols[key]
        if col.dtype != object:
            return col[rows]
        source = self._source_key(key)
        if source is None:
            cache_key = "rank:" + key
            if cache_key not in self._codes:
                uniq, inverse = self._distinct(key)
                self._codes[cache_key] = _text_ranks(uniq)[inverse]
            return self._codes[cache_key][rows]
        codes = self._sources[source]
        version, table = self._ranks.get(key, (-1, None))
        if version != codes.version or table is None:  # a new spectrum since: rank again
            _, first = codes.distinct()
            table = codes.table(_text_ranks(col[first]))
            self._ranks[key] = (codes.version, table)
        return table[self._cols[source][rows]]

    def _into_query_order(self, first: int) -> None:
        """Move the rows appended from view row ``first`` on to their places in query order.

        The new rows of queries not shown yet go in between (one merge); those
        of a query already shown (a chunk boundary inside its hits) are sorted
        into its rows.  Linear in the rows, never a sort of the whole view.
        """
        self.layoutAboutToBeChanged.emit()
        old = self._view.copy()
        shown, new = old[:first], old[first:]
        q = self._cols["query_index"]
        shown_q, new_q = q[shown], q[new]
        at = np.searchsorted(shown_q, new_q, side="left")
        known = at != np.searchsorted(shown_q, new_q, side="right")
        view = np.insert(shown, at[~known], new[~known])
        if known.any():
            view_q = q[view]
            for query in np.unique(new_q[known]):
                lo, hi = np.searchsorted(view_q, [query, query + 1])
                block = self._sorted(np.r_[view[lo:hi], new[new_q == query]])
                view = np.r_[view[:lo], block, view[hi:]]
                view_q = q[view]
        self._view[:] = view
        self._remap_persistent(old, self._view)
        self.layoutChanged.emit()

    def _follows(self, shown: int, b: int) -> bool:
        """Whether storage row ``b`` comes after the view's row ``shown`` in query order."""
        if not all(k in self._cols for k in ORDER_KEYS):
            return True
        a, q, score = self._view[shown], self._cols["query_index"], self._cols["score"]
        return (q[a], -score[a], a) <= (q[b], -score[b], b)

    def _sorted(self, rows: np.ndarray) -> np.ndarray:
        if self._sort_column < 0:  # query order: query, score descending, then as they came
            if len(rows) < 2 or not all(k in self._cols for k in ORDER_KEYS):
                return np.sort(rows)
            # equal scores keep their arrival order: the engine's tie order
            # (engine.search.order_ties), never the library position
            c = self._cols
            return rows[np.lexsort((rows, -c["score"][rows], c["query_index"][rows]))]
        if not self._cols or len(rows) < 2:
            return rows
        key = self._sort_key(COLUMNS[self._sort_column].key, rows)
        descending = self._sort_order == Qt.SortOrder.DescendingOrder
        return rows[stable_order(key, descending=descending)]

    def _remap_persistent(self, old: np.ndarray, new: np.ndarray) -> None:
        indexes = self.persistentIndexList()
        if not indexes:
            return
        position = np.empty(self._n, dtype=np.int64)
        position[new] = np.arange(len(new))
        changed_from, changed_to = [], []
        for idx in indexes:
            if 0 <= idx.row() < len(old):
                row = int(position[old[idx.row()]])
                changed_from.append(idx)
                changed_to.append(self.index(row, idx.column()))
        self.changePersistentIndexList(changed_from, changed_to)


def _text_ranks(values: np.ndarray) -> np.ndarray:
    """Rank of each value's lower-case text among the distinct ones (0 first)."""
    text = np.array([str(v).lower() for v in values], dtype=str)
    return np.unique(text, return_inverse=True)[1].ravel().astype(np.int64)


def _score_range(low: float | None, high: float | None) -> tuple[float, float] | None:
    if low is None and high is None:
        return None
    return (-math.inf if low is None else low, math.inf if high is None else high)
