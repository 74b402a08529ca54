"""The Repository summary tab: per query, the files (or datasets) holding its hits.

A table of the ``pandas.DataFrame`` that ``engine.Repository.summary`` makes
(:class:`FrameModel`, sortable), which way it is grouped, and its export.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PyQt6.QtCore import QAbstractTableModel, QModelIndex, QSortFilterProxyModel, Qt, pyqtSignal
from PyQt6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from simms_gui._qt.hit_columns import Column, format_cell
from simms_gui.model.events import RepositorySummary

__all__ = ["SUMMARY_COLUMNS", "FrameModel", "RepositorySummaryPanel"]

#: Columns of the summary shown, in order (those missing from a frame are left out).
SUMMARY_COLUMNS: tuple[Column, ...] = (
    Column("query_index", "Q #", "d", "Position of the query in the query file"),
    Column("query_id", "Query ID"),
    Column("dataset", "Dataset"),
    Column("file", "File", "", "The repository's source file of the hits"),
    Column("hits", "Hits", "d", "Hits of this query in this file (or dataset)"),
    Column("best_score", "Best score", ".4f", "The query's best score in this file"),
    Column("mean_score", "Mean score", ".4f"),
    Column("best_id", "Best hit ID", "", "ID of the best-scoring spectrum"),
    Column("best_file_index", "Scan #", "d", "Position of the best spectrum in its file"),
    Column("best_repository_index", "Repository #", "d", "Repository index of the best spectrum"),
)
_RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
_SYNTHETIC = "color: #a00000; font-weight: bold;"


class FrameModel(QAbstractTableModel):
    """A ``pandas.DataFrame`` as a read-only Qt table: the columns of ``columns`` it has.

    ``UserRole`` gives each cell's value (what the proxy sorts by).
    """

    def __init__(self, columns: tuple[Column, ...] = SUMMARY_COLUMNS, parent=None) -> None:
        super().__init__(parent)
        self.all_columns = columns
        self.columns: tuple[Column, ...] = ()
        self.frame = None
        self._values: list[np.ndarray] = []

    def set_frame(self, frame) -> None:
        """Show ``frame`` (None: nothing)."""
        self.beginResetModel()
        self.frame = frame
        names = () if frame is None else set(frame.columns)
        self.columns = tuple(c for c in self.all_columns if c.key in names)
        self._values = [frame[c.key].to_numpy() for c in self.columns] if frame is not None else []
        self.endResetModel()

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() or self.frame is None else len(self.frame)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(self.columns):
            return None
        col = self.columns[section]
        if role == Qt.ItemDataRole.DisplayRole:
            return col.title
        if role == Qt.ItemDataRole.ToolTipRole:
            return col.tip or col.title
        return None

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        col = self.columns[index.column()]
        value = self._values[index.column()][index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            if col.key == "file":
                return Path(str(value)).name
            return format_cell(value, col.fmt)
        if role == Qt.ItemDataRole.ToolTipRole:
            return str(value)
        if role == Qt.ItemDataRole.TextAlignmentRole and col.fmt:
            return _RIGHT
        if role == Qt.ItemDataRole.UserRole:
            return value.item() if isinstance(value, np.generic) else value
        return None

    def cell(self, row: int, key: str):
        """The value of column ``key`` in source row ``row``."""
        return self.frame[key].iloc[row]


class RepositorySummaryPanel(QWidget):
    """The summary of the last repository search: a sortable table and its export.

    Signals
    -------
    exportRequested()
    """

    exportRequested = pyqtSignal()  # noqa: N815

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel("Open a repository (File → Open repository…) and search it")
        self.title.setWordWrap(True)
        self.by_box = QComboBox()
        self.by_box.addItem("per file", "file")
        self.by_box.addItem("per dataset", "dataset")
        self.by_box.setToolTip("One row per query and file, or per query and dataset")
        self.counts = QLabel("")
        self.counts.setStyleSheet("color: palette(mid);")
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip("Write this summary to CSV or XLSX")
        self.export_button.setEnabled(False)
        self.model = FrameModel()
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(Qt.ItemDataRole.UserRole)
        self.view = QTableView()
        self.view.setModel(self.proxy)
        # the engine's order (query, best score first) until a header is clicked
        self.view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.view.setSortingEnabled(True)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setAlternatingRowColors(True)
        self.view.verticalHeader().setDefaultSectionSize(22)
        self.view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.view.horizontalHeader().setStretchLastSection(True)

        bar = QHBoxLayout()
        bar.addWidget(QLabel("Summary"))
        bar.addWidget(self.by_box)
        bar.addWidget(self.counts, 1)
        bar.addWidget(self.export_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addLayout(bar)
        layout.addWidget(self.view, 1)
        self.summary: RepositorySummary | None = None
        self.by_box.currentIndexChanged.connect(lambda _i: self._show())
        self.export_button.clicked.connect(self.exportRequested.emit)

    @property
    def by(self) -> str:
        """``"file"`` or ``"dataset"``: how the table groups the hits."""
        return str(self.by_box.currentData())

    def set_by(self, by: str) -> None:
        """Group the table per ``"file"`` or per ``"dataset"``."""
        self.by_box.setCurrentIndex(self.by_box.findData(by))

    def frame(self):
        """The summary shown (a ``pandas.DataFrame``), or None."""
        if self.summary is None:
            return None
        return self.summary.files if self.by == "file" else self.summary.datasets

    def set_summary(self, summary: RepositorySummary | None) -> None:
        """Show a repository search's summary (None: clear)."""
        self.summary = summary
        self._show()

    def set_title(self, text: str, synthetic: bool = False) -> None:
        """The line above the table (red when the repository is synthetic)."""
        self.title.setText(text)
        self.title.setStyleSheet(_SYNTHETIC if synthetic else "")

    def _show(self) -> None:
        frame = self.frame()
        self.model.set_frame(frame)
        self.export_button.setEnabled(frame is not None and len(frame) > 0)
        if frame is None:
            self.counts.setText("")
            return
        queries = frame["query_index"].nunique() if len(frame) else 0
        places = frame[self.by].nunique() if len(frame) else 0
        state = "" if self.summary.final else " · searching…"
        self.counts.setText(
            f"{len(frame):,} rows · {queries:,} queries found in {places:,} {self.by}s{state}"
        )
        self.view.resizeColumnsToContents()
