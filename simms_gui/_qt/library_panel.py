"""Library panel: loaded libraries and queries, spectra counts, import reports."""

from __future__ import annotations

from PyQt6.QtCore import Qt, pyqtSignal
from PyQt6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from simms_gui._qt.layouts import closable, group_box
from simms_gui.model.files import LoadedFile
from simms_gui.reports import profile_warning, report_counts, report_text

__all__ = ["LibraryPanel", "ImportReportDialog"]


class ImportReportDialog(QDialog):
    """Shows what a reader skipped or repaired, and why."""

    def __init__(self, title: str, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Import report — {title}")
        self.text = QPlainTextEdit(text)
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        closable(self, self.text, 720, 420)


class LibraryPanel(QWidget):
    """Lists the libraries (the active one in bold) and the query file.

    Signals
    -------
    activeChanged(int)
        The user picked library ``index`` as the one to search.
    removeRequested(int)
    """

    activeChanged = pyqtSignal(int)  # noqa: N815
    removeRequested = pyqtSignal(int)  # noqa: N815

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["File", "Spectra", "Skipped", "Repaired"])
        self.tree.setRootIsDecorated(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setColumnWidth(0, 190)
        for col in (1, 2, 3):
            self.tree.setColumnWidth(col, 62)
        self.libraries_item = QTreeWidgetItem(["Libraries"])
        self.queries_item = QTreeWidgetItem(["Queries"])
        for item in (self.libraries_item, self.queries_item):
            font = item.font(0)
            font.setBold(True)
            item.setFont(0, font)
            item.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.tree.addTopLevelItem(item)
            item.setExpanded(True)
        self.report_view = QPlainTextEdit()
        self.report_view.setReadOnly(True)
        self.report_view.setMaximumHeight(90)
        self.report_view.setPlaceholderText("Import report of the selected file")
        self.report_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.report_button = QPushButton("Report…")
        self.report_button.setToolTip("Show the full import report of the selected file")
        self.use_button = QPushButton("Search this")
        self.use_button.setToolTip("Search the selected library")
        self.remove_button = QPushButton("Close")
        self.remove_button.setToolTip("Close the selected library")
        self.hint = QLabel("Open or drop MGF, MSP, mzML, mzXML or JSON files")
        self.hint.setStyleSheet("color: palette(mid);")

        buttons = QHBoxLayout()
        buttons.addWidget(self.use_button)
        buttons.addWidget(self.report_button)
        buttons.addWidget(self.remove_button)
        box = group_box("Spectra", self.tree, buttons, self.report_view, self.hint)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(box)

        self._files: dict[int, LoadedFile] = {}
        #: Files being read: key -> their row ("Reading x… 40 %") under Libraries.
        self.loading: dict[str, QTreeWidgetItem] = {}
        self.tree.currentItemChanged.connect(self._show_report)
        self.tree.itemDoubleClicked.connect(self._activate_item)
        self.use_button.clicked.connect(lambda: self._activate_item(self.tree.currentItem()))
        self.report_button.clicked.connect(self.show_report_dialog)
        self.remove_button.clicked.connect(self._remove)
        self._update_buttons()

    def set_files(
        self, libraries: list[LoadedFile], active: int, queries: LoadedFile | None
    ) -> None:
        """Show the loaded files."""
        self._files = {}
        self.libraries_item.takeChildren()
        for item in self.loading.values():
            self.libraries_item.addChild(item)
        self.queries_item.takeChildren()
        for k, entry in enumerate(libraries):
            item = self._item(entry)
            item.setData(0, Qt.ItemDataRole.UserRole, ("library", k))
            if k == active:
                font = item.font(0)
                font.setBold(True)
                item.setFont(0, font)
                item.setText(0, f"▶ {entry.name}")
            self.libraries_item.addChild(item)
        if queries is not None:
            item = self._item(queries)
            item.setData(0, Qt.ItemDataRole.UserRole, ("queries", 0))
            self.queries_item.addChild(item)
        self.libraries_item.setText(1, f"{sum(len(e.spectra) for e in libraries):,}")
        self.queries_item.setText(1, f"{len(queries.spectra):,}" if queries else "")
        self.hint.setVisible(not libraries and queries is None)
        self._update_buttons()

    def show_loading(self, key: str, text: str) -> None:
        """Show a file being read as ``text`` in the tree ("": it is done)."""
        item = self.loading.get(key)
        if not text:
            if item is not None:
                self.loading.pop(key)
                parent = item.parent()
                if parent is not None:
                    parent.removeChild(item)
            return
        if item is None:
            item = QTreeWidgetItem([text])
            item.setFlags(Qt.ItemFlag.ItemIsEnabled)
            item.setForeground(0, Qt.GlobalColor.darkBlue)
            self.libraries_item.addChild(item)
            self.loading[key] = item
        item.setText(0, text)
        item.setToolTip(0, text)
        self.hint.hide()

    def _item(self, entry: LoadedFile) -> QTreeWidgetItem:
        skipped, repaired = report_counts(entry.report)
        item = QTreeWidgetItem([entry.name, f"{len(entry.spectra):,}", str(skipped), str(repaired)])
        item.setToolTip(0, str(entry.path))
        for col in (1, 2, 3):
            item.setTextAlignment(col, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if skipped:
            item.setForeground(2, Qt.GlobalColor.darkRed)
        warning = profile_warning(entry.report)
        if warning:
            item.setForeground(1, Qt.GlobalColor.darkYellow)
            item.setToolTip(1, warning)
        item.setData(1, Qt.ItemDataRole.UserRole, entry)
        return item

    def current_entry(self) -> LoadedFile | None:
        """The selected file, if any."""
        item = self.tree.currentItem()
        return None if item is None else item.data(1, Qt.ItemDataRole.UserRole)

    def _show_report(self, *_args) -> None:
        entry = self.current_entry()
        if entry is None:
            self.report_view.clear()
        else:
            report = entry.report
            lines = report_text(report).splitlines()
            self.report_view.setPlainText("\n".join(lines[:50]))
        self._update_buttons()

    def show_report_dialog(self) -> ImportReportDialog | None:
        """Open the full report of the selected file (non-modal)."""
        entry = self.current_entry()
        if entry is None:
            return None
        dialog = ImportReportDialog(entry.name, report_text(entry.report), self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog

    def _activate_item(self, item: QTreeWidgetItem | None, *_args) -> None:
        tag = None if item is None else item.data(0, Qt.ItemDataRole.UserRole)
        if tag and tag[0] == "library":
            self.activeChanged.emit(tag[1])

    def _remove(self) -> None:
        item = self.tree.currentItem()
        tag = None if item is None else item.data(0, Qt.ItemDataRole.UserRole)
        if tag and tag[0] == "library":
            self.removeRequested.emit(tag[1])

    def _update_buttons(self) -> None:
        item = self.tree.currentItem()
        tag = None if item is None else item.data(0, Qt.ItemDataRole.UserRole)
        is_library = bool(tag) and tag[0] == "library"
        self.use_button.setEnabled(is_library)
        self.remove_button.setEnabled(is_library)
        self.report_button.setEnabled(bool(tag))
