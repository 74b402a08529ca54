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
from simms_gui.model.events import RepositoryOpened
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
    repositoryCloseRequested()
        The user closed the repository (libraries are searched again).
    """

    activeChanged = pyqtSignal(int)  # noqa: N815
    removeRequested = pyqtSignal(int)  # noqa: N815
    repositoryCloseRequested = pyqtSignal()  # noqa: N815

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["File", "Spectra", "Skipped", "Repaired"])
        self.tree.setRootIsDecorated(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setColumnWidth(0, 190)
        for col in (1, 2, 3):
            self.tree.setColumnWidth(col, 62)
        self.repository_item = QTreeWidgetItem(["Repository"])
        self.libraries_item = QTreeWidgetItem(["Libraries"])
        self.queries_item = QTreeWidgetItem(["Queries"])
        for item in (self.repository_item, self.libraries_item, self.queries_item):
            font = item.font(0)
            font.setBold(True)
            item.setFont(0, font)
            item.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.tree.addTopLevelItem(item)
            item.setExpanded(True)
        self.repository_item.setHidden(True)
        self.repository: RepositoryOpened | None = None
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
            if k == active and self.repository is None:
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

    def set_repository(self, opened: RepositoryOpened | None) -> None:
        """Show the repository searched (None: none, the active library is searched)."""
        self.repository = opened
        self.repository_item.takeChildren()
        self.repository_item.setHidden(opened is None)
        if opened is not None:
            item = QTreeWidgetItem([f"▶ {opened.name}", f"{opened.spectra:,}", "", ""])
            font = item.font(0)
            font.setBold(True)
            item.setFont(0, font)
            item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            item.setToolTip(0, opened.info)
            item.setData(0, Qt.ItemDataRole.UserRole, ("repository", 0))
            prepared = f", {opened.prepared:,} prepared on disk" if opened.prepared else ""
            lines = [
                f"{opened.shards:,} shards{prepared}",
                f"{opened.files:,} files in {opened.datasets:,} datasets",
            ]
            if opened.synthetic:
                lines.append("SYNTHETIC: generated spectra, benchmarks and tests only")
            for line in lines:
                child = QTreeWidgetItem([line])
                child.setToolTip(0, line)
                child.setFlags(Qt.ItemFlag.ItemIsEnabled)
                if line.startswith("SYNTHETIC"):
                    child.setForeground(0, Qt.GlobalColor.darkRed)
                item.addChild(child)
            if opened.synthetic:
                item.setForeground(0, Qt.GlobalColor.darkRed)
            self.repository_item.addChild(item)
            item.setExpanded(True)
            for k in range(item.childCount()):  # a line of words, not a file's counts
                item.child(k).setFirstColumnSpanned(True)
            self.repository_item.setText(1, f"{opened.spectra:,}")
            self.hint.hide()
            self.tree.setCurrentItem(item)
        self._show_report()

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

    def _tag(self) -> tuple | None:
        item = self.tree.currentItem()
        return None if item is None else item.data(0, Qt.ItemDataRole.UserRole)

    def _show_report(self, *_args) -> None:
        entry = self.current_entry()
        tag = self._tag()
        if tag and tag[0] == "repository" and self.repository is not None:
            self.report_view.setPlainText(self.repository.info)
        elif entry is None:
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
        tag = self._tag()
        if tag and tag[0] == "library":
            self.removeRequested.emit(tag[1])
        elif tag and tag[0] == "repository":
            self.repositoryCloseRequested.emit()

    def _update_buttons(self) -> None:
        tag = self._tag()
        is_library = bool(tag) and tag[0] == "library"
        self.use_button.setEnabled(is_library and self.repository is None)
        self.remove_button.setEnabled(is_library or (bool(tag) and tag[0] == "repository"))
        self.report_button.setEnabled(bool(tag) and tag[0] != "repository")
