"""Results panel: filter bar and the hits table."""

from __future__ import annotations

from PyQt6.QtCore import QItemSelectionModel, Qt, pyqtSignal
from PyQt6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from simms_gui._qt.query_filter_bar import QueryFilterBar
from simms_gui._qt.results_model import COLUMNS, HitsTableModel
from simms_gui.model.requests import TableView

__all__ = ["ResultsPanel"]

#: Initial column widths in characters (others: fit to header).
_WIDTHS = {
    "query_name": 22,
    "library_name": 26,
    "library_smiles": 24,
    "library_inchikey": 28,
    "query_id": 16,
    "library_id": 16,
    "library": 16,
}
#: Widest a column gets when fitted to its contents, in characters (hover shows the rest).
MAX_FIT_CHARS = 32
#: Rows measured when fitting columns to their contents.
FIT_ROWS = 200


class ResultsPanel(QWidget):
    """Hits table with a text filter, a score range and a best-hit-per-query toggle.

    Signals
    -------
    hitSelected(int)
        Visible row of the current hit (-1 when none).
    viewChanged(TableView)
        The filters or the sort changed (:meth:`view_state`).
    """

    hitSelected = pyqtSignal(int)  # noqa: N815
    viewChanged = pyqtSignal(object)  # noqa: N815

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = HitsTableModel(self)

        self.filter_edit = QLineEdit(placeholderText="Filter name, ID or InChIKey…")
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.setToolTip(
            "Show hits whose query or hit name, ID or InChIKey contains this"
        )
        self.score_min = QDoubleSpinBox(decimals=3, minimum=0.0, maximum=1.0, singleStep=0.05)
        self.score_max = QDoubleSpinBox(decimals=3, minimum=0.0, maximum=1.0, singleStep=0.05)
        self.score_max.setValue(1.0)
        for box, tip in (
            (self.score_min, "Lowest score shown"),
            (self.score_max, "Highest score shown"),
        ):
            box.setToolTip(tip)
            box.setKeyboardTracking(False)
        self.best_check = QCheckBox("Best hit per query")
        self.best_check.setToolTip("Show only the highest-scoring hit of each query")
        self.count_label = QLabel("No hits")
        self.count_label.setMinimumWidth(150)
        self.count_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.filter_edit, 3)
        bar.addWidget(QLabel("Score"))
        bar.addWidget(self.score_min)
        bar.addWidget(QLabel("–"))
        bar.addWidget(self.score_max)
        bar.addWidget(self.best_check)
        bar.addWidget(self.count_label, 1)

        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        header.setSectionsMovable(True)
        header.setHighlightSections(False)
        header.setStretchLastSection(True)
        char = self.fontMetrics().horizontalAdvance("0")
        for k, col in enumerate(COLUMNS):
            width = _WIDTHS.get(col.key)
            if width is None:
                width = max(len(col.title) + 4, 9 if col.fmt != "d" else 6)
            self.table.setColumnWidth(k, width * char)
        self.table.setSortingEnabled(True)

        #: Shown over the table while the hits no longer answer the loaded inputs.
        self.stale_banner = QLabel("")
        self.stale_banner.setWordWrap(True)
        self.stale_banner.setStyleSheet(
            "QLabel { background: #fff3cd; color: #664d03; border: 1px solid #e0c36a;"
            " padding: 4px; }"
        )
        self.stale_banner.hide()
        self._fitted = False

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        self.query_bar = QueryFilterBar()
        self.query_bar.clearRequested.connect(self.clear_query_filter)
        layout.addWidget(self.query_bar)
        layout.addWidget(self.stale_banner)
        layout.addWidget(self.table)

        self.filter_edit.textChanged.connect(self.model.set_text_filter)
        self.score_min.valueChanged.connect(self._score_changed)
        self.score_max.valueChanged.connect(self._score_changed)
        self.best_check.toggled.connect(self.model.set_best_only)
        self.model.countsChanged.connect(self._update_count)
        self.table.selectionModel().currentRowChanged.connect(
            lambda current, _previous: self.hitSelected.emit(current.row())
        )
        self.model.modelReset.connect(lambda: self.hitSelected.emit(self.current_row()))
        self.model.modelReset.connect(self._unfit)
        self.model.rowsInserted.connect(self._fit_once)
        self.model.rowsInserted.connect(self._select_first)
        for signal in (
            self.filter_edit.textChanged, self.score_min.valueChanged,
            self.score_max.valueChanged, self.best_check.toggled,
            self.table.horizontalHeader().sortIndicatorChanged, self.query_bar.clearRequested,
        ):  # fmt: skip
            signal.connect(lambda *_: self.viewChanged.emit(self.view_state()))

    def _select_first(self, *_args) -> None:
        if self.current_row() < 0 and self.model.rowCount():
            self.select_row(0)  # the first hits streamed in: their mirror plot at once

    # -- filters and sort as a whole (session files) ------------------------------------
    def view_state(self) -> TableView:
        """The filters and sort shown now."""
        column, order = self.model.sort_state()
        return TableView(
            self.filter_edit.text(), self.score_min.value(), self.score_max.value(),
            self.best_check.isChecked(), None if column < 0 else COLUMNS[column].key,
            order == Qt.SortOrder.DescendingOrder, self.model.query_filter,
        )  # fmt: skip

    def set_view_state(self, view: TableView, query_name: str = "") -> None:
        """Show the hits filtered and sorted as ``view`` says (a session was opened)."""
        widgets = (self.filter_edit, self.score_min, self.score_max, self.best_check)
        for w in widgets:
            w.blockSignals(True)
        self.filter_edit.setText(view.text)
        self.score_min.setValue(view.score_min)
        self.score_max.setValue(view.score_max)
        self.best_check.setChecked(view.best_only)
        for w in widgets:
            w.blockSignals(False)
        model = self.model
        model.set_filters(view.text, self._score_range(), view.best_only, view.query)
        if view.query is not None:
            self.query_bar.show_query(query_name or f"#{view.query}")
        else:
            self.query_bar.hide()
        keys = [c.key for c in COLUMNS]
        column = keys.index(view.sort_key) if view.sort_key in keys else -1
        order = Qt.SortOrder.DescendingOrder if view.descending else Qt.SortOrder.AscendingOrder
        self.table.horizontalHeader().setSortIndicator(column, order)
        model.sort(column, order)

    # -- column widths ----------------------------------------------------------------
    def _unfit(self) -> None:
        if self.model.rowCount() == 0:
            self._fitted = False

    def _fit_once(self, *_args) -> None:
        if not self._fitted:
            self.fit_columns()

    def fit_columns(self) -> None:
        """Fit columns to their header and first rows, capped (hover shows full text)."""
        self._fitted = self.model.rowCount() > 0
        char = self.fontMetrics().horizontalAdvance("0")
        header = self.table.horizontalHeader()
        cap = MAX_FIT_CHARS * char
        margin = 2 * char
        n = min(self.model.rowCount(), FIT_ROWS)
        metrics = self.table.fontMetrics()
        for k in range(self.model.columnCount()):
            title = str(self.model.headerData(k, Qt.Orientation.Horizontal) or "")
            width = header.fontMetrics().horizontalAdvance(title) + 3 * char  # sort arrow
            for row in range(n):
                text = self.model.data(self.model.index(row, k))
                if text:
                    width = max(width, metrics.horizontalAdvance(str(text)) + margin)
            self.table.setColumnWidth(k, min(width, cap))

    # -- stale hits -------------------------------------------------------------------
    def set_stale(self, text: str) -> None:
        """Grey the hits with ``text`` over them ("" : they are current)."""
        self.stale_banner.setText(text)
        self.stale_banner.setVisible(bool(text))
        self.table.setStyleSheet("QTableView { color: gray; }" if text else "")

    @property
    def stale(self) -> bool:
        """True while the hits are shown greyed as out of date."""
        return not self.stale_banner.isHidden()

    # -- API --------------------------------------------------------------------------
    def current_row(self) -> int:
        """Visible row of the current hit, -1 when none."""
        index = self.table.currentIndex()
        return index.row() if index.isValid() else -1

    def select_row(self, row: int) -> None:
        """Make visible row ``row`` current and selected, and scroll to it."""
        if not 0 <= row < self.model.rowCount():
            return
        index = self.model.index(row, 0)
        flags = (
            QItemSelectionModel.SelectionFlag.ClearAndSelect
            | QItemSelectionModel.SelectionFlag.Rows
        )
        self.table.selectionModel().setCurrentIndex(index, flags)
        self.table.scrollTo(index)

    def filter_to_query(self, query_index: int, name: str) -> None:
        """List only the hits of one query, and say so in a bar above the table."""
        self.model.set_query_filter(query_index)
        self.query_bar.show_query(name)

    def clear_query_filter(self) -> None:
        """List the hits of every query again (hides the bar)."""
        self.model.set_query_filter(None)
        self.query_bar.hide()

    def reset_filters(self) -> None:
        """Clear the text filter, the score range and the best-hit toggle."""
        for w in (self.filter_edit, self.score_min, self.score_max, self.best_check):
            w.blockSignals(True)
        self.filter_edit.clear()
        self.score_min.setValue(0.0)
        self.score_max.setValue(1.0)
        self.best_check.setChecked(False)
        for w in (self.filter_edit, self.score_min, self.score_max, self.best_check):
            w.blockSignals(False)
        self.query_bar.hide()
        self.model.clear_filters()

    def _score_range(self) -> tuple[float | None, float | None]:
        lo, hi = self.score_min.value(), self.score_max.value()
        return (None, None) if lo <= 0.0 and hi >= 1.0 else (lo, hi)

    def _score_changed(self) -> None:
        self.model.set_score_range(*self._score_range())

    def _update_count(self, visible: int, total: int) -> None:
        if total == 0:
            self.count_label.setText("No hits")
        elif visible == total:
            self.count_label.setText(f"{total:,} hits")
        else:
            self.count_label.setText(f"{visible:,} of {total:,} hits")
