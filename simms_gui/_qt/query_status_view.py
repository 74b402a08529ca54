"""The "Query status" sheet: every query of the last search, with hits or why it has none."""

from __future__ import annotations

import math

import numpy as np
from PyQt6.QtCore import QAbstractTableModel, QModelIndex, QSortFilterProxyModel, Qt, pyqtSignal
from PyQt6.QtGui import QColor
from PyQt6.QtWidgets import QAbstractItemView, QLabel, QTableView, QVBoxLayout, QWidget

from simms_gui._qt.desk import on_main_thread
from simms_gui.model.answers import flag_lines, status_summary
from simms_gui.model.events import Restored, SearchFinished, SearchStarted

__all__ = ["QUERY_SHEET_COLUMNS", "QueryStatusModel", "QueryStatusPanel"]

#: (queries-table column, header, number format), in order.
QUERY_SHEET_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("query_index", "Q #", "d"),
    ("query_name", "Query", ""),
    ("status", "Status", ""),
    ("hits", "Hits", "d"),
    ("best_score", "Best score", ".4f"),
    ("best_matches", "Matches", "d"),
    ("best_library_name", "Best hit", ""),
    ("flags", "Flags", ""),
    ("query_precursor_mz", "Query m/z", ".4f"),
    ("query_id", "Query ID", ""),
)
_NO_HIT = QColor("#8a8a8a")
_FLAGGED = QColor("#b35900")


class QueryStatusModel(QAbstractTableModel):
    """One row per query: the queries table (:func:`simms_gui.model.answers.query_columns`)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.columns: dict[str, np.ndarray] = {}
        self._n = 0

    def set_columns(self, columns: dict[str, np.ndarray] | None) -> None:
        """Show a queries table (None: empty)."""
        self.beginResetModel()
        self.columns = dict(columns or {})
        self._n = len(self.columns["query_index"]) if self.columns else 0
        if self._n:
            self.columns["flags"] = np.array(
                ["; ".join(flag_lines(self.row(r))) for r in range(self._n)], dtype=object
            )
        self.endResetModel()

    def row(self, r: int) -> dict[str, object]:
        """Query ``r``'s columns (``library_name``/``matches`` as in the hit columns)."""
        row = {k: v[r] for k, v in self.columns.items()}
        row["library_name"] = row.get("best_library_name", "")
        row["matches"] = row.get("best_matches", 0)
        return row

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else self._n

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(QUERY_SHEET_COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return QUERY_SHEET_COLUMNS[section][1]
        return None

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not self._n:
            return None
        key, _title, fmt = QUERY_SHEET_COLUMNS[index.column()]
        value = self.columns[key][index.row()]
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            if fmt == "d":
                return str(int(value))
            if fmt:
                return "" if math.isnan(float(value)) else format(float(value), fmt)
            return str(value)
        if role == Qt.ItemDataRole.UserRole:  # sort key
            if fmt:
                number = float(value)
                return -math.inf if math.isnan(number) else number
            return str(value).lower()
        if role == Qt.ItemDataRole.ForegroundRole:
            if self.columns["status"][index.row()] != "hits":
                return _NO_HIT
            if key == "flags":
                return _FLAGGED
        if role == Qt.ItemDataRole.TextAlignmentRole and fmt:
            return Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        return None


class QueryStatusPanel(QWidget):
    """Every query of the last search: status, hit count, best score and hit, flags.

    Filled from the session after each search (and when a session is opened);
    double-click a query to list its hits.

    Signals
    -------
    queryActivated(int)
        The query (index) double-clicked.
    """

    queryActivated = pyqtSignal(int)  # noqa: N815

    def __init__(self, session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.model = QueryStatusModel(self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(Qt.ItemDataRole.UserRole)
        self.summary = QLabel("Run a search: every query is listed here with its status.")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(-1, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setStretchLastSection(True)
        char = self.fontMetrics().horizontalAdvance("0")
        for k, (key, title, _fmt) in enumerate(QUERY_SHEET_COLUMNS):
            width = {"query_name": 24, "best_library_name": 24, "status": 28, "flags": 30}
            self.table.setColumnWidth(k, width.get(key, len(title) + 5) * char)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.summary)
        layout.addWidget(self.table, 1)
        self.table.doubleClicked.connect(
            lambda index: self.queryActivated.emit(
                int(self.model.columns["query_index"][self.proxy.mapToSource(index).row()])
            )
        )
        session.events.search_finished.connect(self.on_ended)
        session.events.restored.connect(self.on_ended)
        session.events.search_started.connect(self.on_started)

    @on_main_thread
    def on_started(self, _event: SearchStarted) -> None:
        """A search started: the table waits for its end."""
        self.model.set_columns(None)
        self.summary.setText("Searching…")

    @on_main_thread
    def on_ended(self, _event: SearchFinished | Restored) -> None:
        """A search ended, or a session was opened: the table of its queries."""
        self.refresh()

    def refresh(self) -> None:
        """Show the session's queries table (its last search)."""
        columns = self.session.query_columns()
        self.model.set_columns(columns)
        if columns is None:
            self.summary.setText("Run a search: every query is listed here with its status.")
            return
        n = len(columns["status"])
        flagged = int(sum(1 for f in self.model.columns.get("flags", ()) if f))
        fdr = self.session.params.fdr
        limit = f" at q ≤ {fdr:g}" if fdr is not None else ""
        self.summary.setText(
            f"{n:,} queries{limit}: {status_summary(columns['status'])}"
            + (
                f"; {flagged:,} best hits flagged (tied with other compounds, few peaks)"
                if flagged
                else ""
            )
            + ". Double-click a query to list its hits."
        )
