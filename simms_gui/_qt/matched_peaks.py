"""Table of the peak pairs behind one greedy-cosine score.

:class:`MatchedPeaksModel` keeps the pairs as numpy columns and sorts them
itself on numeric keys (no string comparison); :class:`MatchedPeaksView` is a
sortable :class:`QTableView` over it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PyQt6 import QtCore, QtGui, QtWidgets
from PyQt6.QtCore import Qt

from engine.matching import PeakMatches

__all__ = ["COLUMNS", "SHIFTED_TEXT", "MatchedPeaksModel", "MatchedPeaksView"]

#: Column keys, in display order.
COLUMNS = (
    "query_mz",
    "library_mz",
    "shifted",
    "delta_mda",
    "delta_ppm",
    "query_intensity",
    "library_intensity",
    "contribution",
)

#: Text colour of shifted pairs: the mirror plot's orange, darkened to read on white.
SHIFTED_TEXT = "#b35500"

_HEADERS = {
    "query_mz": ("query m/z", "m/z of the query peak"),
    "library_mz": ("library m/z", "m/z of the library peak"),
    "delta_mda": (
        "Δ (mDa)",
        "query m/z − library m/z, in milli-dalton (minus the precursor shift for shifted pairs)",
    ),
    "delta_ppm": ("Δ (ppm)", "Δ relative to the library m/z, in parts per million"),
    "query_intensity": ("query int.", "query peak intensity (% of the strongest peak)"),
    "library_intensity": ("library int.", "library peak intensity (% of the strongest peak)"),
    "contribution": ("contribution", "the pair's share of the score; the column sums to the score"),
    "shifted": ("", "shifted: matched across the precursor m/z difference (modified cosine)"),
}

_FORMATS: dict[str, Callable[[object], str]] = {
    "query_mz": lambda v: f"{v:.4f}",
    "library_mz": lambda v: f"{v:.4f}",
    "delta_mda": lambda v: f"{v:+.2f}",
    "delta_ppm": lambda v: f"{v:+.1f}",
    "query_intensity": lambda v: f"{v:.1f}",
    "library_intensity": lambda v: f"{v:.1f}",
    "contribution": lambda v: f"{v:.4f}",
    "shifted": lambda v: "shifted" if v else "",
}


def _relative(intensity: np.ndarray) -> np.ndarray:
    top = float(intensity.max()) if intensity.size else 0.0
    return intensity * (100.0 / top) if top > 0 else np.zeros_like(intensity)


class MatchedPeaksModel(QtCore.QAbstractTableModel):
    """Matched peak pairs as a table model over numpy columns.

    Display role gives formatted text, :data:`Qt.ItemDataRole.UserRole` the raw
    number (float, or bool for ``shifted``), :attr:`MATCH_INDEX_ROLE` the row
    of the pair in the original :class:`~engine.matching.PeakMatches`.

    Parameters
    ----------
    parent : QObject, optional

    Attributes
    ----------
    columns : dict of str to ndarray
        Current rows, one array per key of :data:`COLUMNS`, in display order.
    score : float
        Score of the pair shown (sum of the ``contribution`` column).
    """

    MATCH_INDEX_ROLE = Qt.ItemDataRole.UserRole + 1

    def __init__(self, parent: QtCore.QObject | None = None) -> None:
        super().__init__(parent)
        self.columns: dict[str, np.ndarray] = {k: np.empty(0) for k in COLUMNS}
        self.match_index = np.empty(0, dtype=np.int64)
        self.score = 0.0
        self._sort: tuple[int, Qt.SortOrder] | None = None

    # -------------------------------------------------------------- data
    def set_matches(
        self,
        query_mz: np.ndarray,
        query_intensity: np.ndarray,
        library_mz: np.ndarray,
        library_intensity: np.ndarray,
        matches: PeakMatches,
        *,
        query_precursor_mz: float | None = None,
        library_precursor_mz: float | None = None,
    ) -> None:
        """Show the pairs of ``matches`` (one row per matched pair).

        Parameters
        ----------
        query_mz, query_intensity, library_mz, library_intensity : array_like
            The peaks ``matches`` was computed on.
        matches : engine.matching.PeakMatches
            Result of :func:`engine.matching.greedy_matches`.
        query_precursor_mz, library_precursor_mz : float, optional
            When both are given, Δ of shifted pairs is measured after the
            precursor shift (``query − (library + query_prec − library_prec)``).
        """
        qmz = np.asarray(query_mz, dtype=np.float64)
        lmz = np.asarray(library_mz, dtype=np.float64)
        qi = np.asarray(matches.query_peak, dtype=np.int64)
        li = np.asarray(matches.library_peak, dtype=np.int64)
        shifted = np.asarray(matches.shifted, dtype=bool)
        q, lib = qmz[qi], lmz[li]
        offset = np.zeros(len(qi))
        if query_precursor_mz is not None and library_precursor_mz is not None:
            offset[shifted] = float(query_precursor_mz) - float(library_precursor_mz)
        delta = q - (lib + offset)
        reference = lib + offset
        with np.errstate(divide="ignore", invalid="ignore"):
            ppm = np.where(reference > 0, delta / reference * 1e6, np.nan)
        self.beginResetModel()
        self.columns = {
            "query_mz": q,
            "library_mz": lib,
            "delta_mda": delta * 1e3,
            "delta_ppm": ppm,
            "query_intensity": _relative(np.asarray(query_intensity, np.float64))[qi],
            "library_intensity": _relative(np.asarray(library_intensity, np.float64))[li],
            "contribution": np.asarray(matches.contribution, dtype=np.float64),
            "shifted": shifted,
        }
        self.match_index = np.arange(len(qi), dtype=np.int64)
        self.score = float(matches.score)
        if self._sort is not None:
            self._apply_sort(*self._sort)
        self.endResetModel()

    def clear(self) -> None:
        """Remove all rows."""
        self.beginResetModel()
        self.columns = {k: np.empty(0) for k in COLUMNS}
        self.match_index = np.empty(0, dtype=np.int64)
        self.score = 0.0
        self.endResetModel()

    # ------------------------------------------------------- Qt interface
    def rowCount(self, parent: QtCore.QModelIndex = QtCore.QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.match_index)

    def columnCount(self, parent: QtCore.QModelIndex = QtCore.QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(COLUMNS)

    def data(self, index: QtCore.QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        key = COLUMNS[index.column()]
        value = self.columns[key][index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return _FORMATS[key](value)
        if role == Qt.ItemDataRole.UserRole:
            return bool(value) if key == "shifted" else float(value)
        if role == self.MATCH_INDEX_ROLE:
            return int(self.match_index[index.row()])
        if role == Qt.ItemDataRole.TextAlignmentRole:
            if key == "shifted":
                return Qt.AlignmentFlag.AlignCenter
            return Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        if role == Qt.ItemDataRole.ForegroundRole and self.columns["shifted"][index.row()]:
            return QtGui.QBrush(QtGui.QColor(SHIFTED_TEXT))  # as the mirror plot colours it
        if role == Qt.ItemDataRole.ToolTipRole and key != "shifted":
            return f"{float(value):.6g}"
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ):  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and 0 <= section < len(COLUMNS):
            title, tip = _HEADERS[COLUMNS[section]]
            if role == Qt.ItemDataRole.DisplayRole:
                return title
            if role == Qt.ItemDataRole.ToolTipRole:
                return tip
        elif orientation == Qt.Orientation.Vertical and role == Qt.ItemDataRole.DisplayRole:
            return str(section + 1)
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Sort rows by the numeric value of ``column`` (stable; NaN last)."""
        if not 0 <= column < len(COLUMNS):
            return
        self.layoutAboutToBeChanged.emit()
        self._sort = (column, order)
        self._apply_sort(column, order)
        self.layoutChanged.emit()

    def _apply_sort(self, column: int, order: Qt.SortOrder) -> None:
        keys = self.columns[COLUMNS[column]].astype(np.float64)
        finite = ~np.isnan(keys)
        if order == Qt.SortOrder.DescendingOrder:
            keys = -keys
        perm = np.lexsort((keys, ~finite))  # finite first, then by key (stable)
        # persistent indexes (selection) follow their rows
        new_row = np.empty_like(perm)
        new_row[perm] = np.arange(len(perm))
        for key in COLUMNS:
            self.columns[key] = self.columns[key][perm]
        self.match_index = self.match_index[perm]
        persistent = self.persistentIndexList()
        if persistent:
            self.changePersistentIndexList(
                persistent,
                [self.index(int(new_row[p.row()]), p.column()) for p in persistent],
            )


class MatchedPeaksView(QtWidgets.QTableView):
    """Sortable table of matched peak pairs (``parent``: an optional QWidget).

    Attributes
    ----------
    matches_model : MatchedPeaksModel
        The model shown (also ``view.model()``).

    Signals
    -------
    matchSelected(int)
        Row (in the original :class:`~engine.matching.PeakMatches`) of the pair
        the user selected, or -1 when the selection is cleared; connect it to
        :meth:`MirrorPlotWidget.highlight_match`.
    """

    matchSelected = QtCore.pyqtSignal(int)  # noqa: N815  (Qt naming)

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.matches_model = MatchedPeaksModel(self)
        self.setModel(self.matches_model)
        self.setSortingEnabled(True)
        self.sortByColumn(COLUMNS.index("query_mz"), Qt.SortOrder.AscendingOrder)
        self.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.setAlternatingRowColors(True)
        self.setWordWrap(False)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.verticalHeader().setVisible(False)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.selectionModel().currentRowChanged.connect(self._on_current_row)

    def set_matches(
        self,
        query_mz: np.ndarray,
        query_intensity: np.ndarray,
        library_mz: np.ndarray,
        library_intensity: np.ndarray,
        matches: PeakMatches,
        **kwargs: float | None,
    ) -> None:
        """Show ``matches``; see :meth:`MatchedPeaksModel.set_matches`."""
        self.matches_model.set_matches(
            query_mz, query_intensity, library_mz, library_intensity, matches, **kwargs
        )

    def clear(self) -> None:
        """Remove all rows."""
        self.matches_model.clear()

    def _on_current_row(self, current: QtCore.QModelIndex, _previous: QtCore.QModelIndex) -> None:
        if not current.isValid():
            self.matchSelected.emit(-1)
            return
        self.matchSelected.emit(int(current.data(MatchedPeaksModel.MATCH_INDEX_ROLE)))
