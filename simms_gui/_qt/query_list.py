"""Query list: the query spectra, filterable by name, id and precursor m/z."""

from __future__ import annotations

import math

import numpy as np
from PyQt6.QtCore import QAbstractTableModel, QModelIndex, QSortFilterProxyModel, Qt, pyqtSignal
from PyQt6.QtWidgets import (
    QAbstractItemView,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from engine import SpectrumLibrary
from simms_gui._qt.layouts import group_box

__all__ = ["QueryListModel", "QueryFilterProxy", "QueryList"]

_HEADERS = ("#", "ID", "Name", "Precursor m/z", "Peaks")


class QueryListModel(QAbstractTableModel):
    """One row per query spectrum: index, id, name, precursor m/z, peaks."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.spectra: SpectrumLibrary | None = None
        self._ids = self._names = np.empty(0, dtype=object)
        self._prec = np.empty(0)
        self._peaks = np.empty(0, dtype=np.int64)

    def set_spectra(self, spectra: SpectrumLibrary | None) -> None:
        """Show ``spectra`` (None: empty)."""
        self.beginResetModel()
        self.spectra = spectra
        if spectra is None:
            self._ids = self._names = np.empty(0, dtype=object)
            self._prec, self._peaks = np.empty(0), np.empty(0, dtype=np.int64)
        else:
            self._ids, self._names = spectra.metadata["id"], spectra.metadata["name"]
            titles = spectra.metadata.get("title")
            if titles is not None:
                self._names = np.where(self._names == "", titles, self._names)
            self._prec, self._peaks = spectra.precursor_mz, spectra.peak_counts
        self.endResetModel()

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._prec)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(_HEADERS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return _HEADERS[section]
        return None

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        r, c = index.row(), index.column()
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            if c == 0:
                return str(r)
            if c == 1:
                return str(self._ids[r])
            if c == 2:
                return str(self._names[r])
            if c == 3:
                v = float(self._prec[r])
                return "" if math.isnan(v) else f"{v:.4f}"
            return str(int(self._peaks[r]))
        if role == Qt.ItemDataRole.UserRole:  # sort key
            return (
                r,
                str(self._ids[r]),
                str(self._names[r]).lower(),
                float(self._prec[r]),
                int(self._peaks[r]),
            )[c]
        if role == Qt.ItemDataRole.TextAlignmentRole and c in (0, 3, 4):
            return Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        return None

    def text_of(self, row: int) -> str:
        """Lower-case id and name of a row (the filter's haystack)."""
        return f"{self._ids[row]}\t{self._names[row]}".lower()

    def precursor(self, row: int) -> float:
        """Precursor m/z of a row (NaN when unknown)."""
        return float(self._prec[row])


class QueryFilterProxy(QSortFilterProxyModel):
    """Filters queries by text (id, name) and a precursor m/z range."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._text = ""
        self._mz = (0.0, math.inf)
        self.setSortRole(Qt.ItemDataRole.UserRole)

    def set_text(self, text: str) -> None:
        """Keep queries whose id or name contains ``text`` (any case)."""
        self._text = text.strip().lower()
        self.invalidateFilter()

    def set_mz_range(self, low: float, high: float) -> None:
        """Keep queries with ``low <= precursor m/z <= high`` (0, inf: no limit)."""
        self._mz = (low, high)
        self.invalidateFilter()

    def filterAcceptsRow(self, row: int, parent: QModelIndex) -> bool:  # noqa: N802
        model = self.sourceModel()
        if not isinstance(model, QueryListModel):
            return True
        if self._text and self._text not in model.text_of(row):
            return False
        low, high = self._mz
        if low > 0 or high < math.inf:
            prec = model.precursor(row)
            if math.isnan(prec) or not low <= prec <= high:
                return False
        return True


class QueryList(QWidget):
    """The query spectra with filters and a "Heatmap of selection" button.

    Signals
    -------
    querySelected(int)
        A query became the current one (clicked; source row).
    queryActivated(int)
        A query was double-clicked (source row).
    heatmapRequested(list)
        Source rows of the selected queries.
    """

    querySelected = pyqtSignal(int)  # noqa: N815
    queryActivated = pyqtSignal(int)  # noqa: N815
    heatmapRequested = pyqtSignal(list)  # noqa: N815

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = QueryListModel(self)
        self.proxy = QueryFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.filter_edit = QLineEdit(placeholderText="Filter queries by name or ID…")
        self.filter_edit.setClearButtonEnabled(True)
        self.mz_min = QDoubleSpinBox(decimals=2, minimum=0.0, maximum=1e5)
        self.mz_min.setSpecialValueText("min")
        self.mz_max = QDoubleSpinBox(decimals=2, minimum=0.0, maximum=1e5)
        self.mz_max.setSpecialValueText("max")
        for box in (self.mz_min, self.mz_max):
            box.setKeyboardTracking(False)
            box.setToolTip("Precursor m/z range (min/max: no limit)")
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        header = self.table.horizontalHeader()
        header.setStretchLastSection(True)
        self.table.setWordWrap(False)  # else long IDs wrap at "-" and lose their end
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.fit_columns()
        self.heatmap_button = QPushButton("Heatmap of selection")
        self.heatmap_button.setToolTip("All-vs-all similarity of the selected queries")
        self.count_label = QLabel("")

        mz_row = QHBoxLayout()
        mz_row.addWidget(QLabel("Precursor m/z"))
        mz_row.addWidget(self.mz_min, 1)
        mz_row.addWidget(QLabel("–"))
        mz_row.addWidget(self.mz_max, 1)
        bottom = QHBoxLayout()
        bottom.addWidget(self.count_label, 1)
        bottom.addWidget(self.heatmap_button)
        box = group_box("Queries", self.filter_edit, mz_row, self.table, bottom)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(box)

        self.filter_edit.textChanged.connect(self._filter_changed)
        self.mz_min.valueChanged.connect(self._filter_changed)
        self.mz_max.valueChanged.connect(self._filter_changed)
        self.table.doubleClicked.connect(
            lambda index: self.queryActivated.emit(self.proxy.mapToSource(index).row())
        )
        self.table.selectionModel().currentRowChanged.connect(
            lambda current, _previous: (
                current.isValid() and self.querySelected.emit(self.proxy.mapToSource(current).row())
            )
        )
        self.table.setToolTip(
            "Click a query to see its best hit; double-click to list only its hits"
        )
        self.heatmap_button.clicked.connect(
            lambda: self.heatmapRequested.emit(self.selected_rows())
        )
        self._update_count()

    def set_spectra(self, spectra: SpectrumLibrary | None) -> None:
        """Show these query spectra (ID, m/z and peak columns fitted to their contents)."""
        self.model.set_spectra(spectra)
        self._update_count()
        self.fit_columns()

    #: Widest each column gets when fitted, in characters (hover shows the rest).
    MAX_CHARS = (5, 22, 26, 14, 8)

    def fit_columns(self, rows: int = 200) -> None:
        """Fit the columns to their header and first ``rows``, capped (wider: scroll)."""
        char = self.fontMetrics().horizontalAdvance("0")
        metrics = self.table.fontMetrics()
        header = self.table.horizontalHeader()
        n = min(rows, self.proxy.rowCount())
        for col, max_chars in enumerate(self.MAX_CHARS):
            width = header.fontMetrics().horizontalAdvance(_HEADERS[col]) + 3 * char
            for row in range(n):
                text = str(self.proxy.index(row, col).data() or "")
                width = max(width, metrics.horizontalAdvance(text) + 2 * char)
            self.table.setColumnWidth(col, min(width, max_chars * char))

    def selected_rows(self) -> list[int]:
        """Source rows of the selected queries, ascending."""
        rows = {self.proxy.mapToSource(i).row() for i in self.table.selectionModel().selectedRows()}
        return sorted(rows)

    def select_rows(self, rows: list[int]) -> None:
        """Select these source rows."""
        from PyQt6.QtCore import QItemSelection, QItemSelectionModel

        selection = QItemSelection()
        for row in rows:
            index = self.proxy.mapFromSource(self.model.index(row, 0))
            if index.isValid():
                selection.select(index, index)
        self.table.selectionModel().select(
            selection,
            QItemSelectionModel.SelectionFlag.ClearAndSelect
            | QItemSelectionModel.SelectionFlag.Rows,
        )

    def _filter_changed(self) -> None:
        self.proxy.set_text(self.filter_edit.text())
        low = self.mz_min.value()
        high = self.mz_max.value() or math.inf
        self.proxy.set_mz_range(low, high)
        self._update_count()

    def _update_count(self) -> None:
        shown, total = self.proxy.rowCount(), self.model.rowCount()
        self.count_label.setText(
            f"{total:,} queries" if shown == total else f"{shown:,} of {total:,}"
        )
