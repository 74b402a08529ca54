"""The Help menu: the chemist's guide, keyboard shortcuts, About (licences, data attribution).

:func:`install_help_menu` also wires the window's keyboard shortcuts and puts
recommended values in the search form's tooltips, so the menu, the shortcut
list and the guide describe one and the same window.
"""

from __future__ import annotations

import html
import importlib.metadata
from pathlib import Path

from PyQt6.QtCore import Qt
from PyQt6.QtGui import QAction, QKeySequence
from PyQt6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QMainWindow,
    QMenu,
    QMessageBox,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from simms_gui._qt.layouts import closable
from simms_gui._qt.parameter_tips import apply_parameter_tips
from simms_gui.resources import resource_path

__all__ = [
    "DEPENDENCIES",
    "GuideDialog",
    "about_html",
    "guide_text",
    "install_help_menu",
    "shortcut_rows",
]

#: Main run-time dependencies: (distribution, licence).
DEPENDENCIES: tuple[tuple[str, str], ...] = (
    ("PyQt6", "GPL-3.0 (or Riverbank commercial licence); Qt itself: LGPL-3.0"),
    ("pyqtgraph", "MIT"),
    ("superqt", "BSD-3-Clause"),
    ("numpy", "BSD-3-Clause"),
    ("numba", "BSD-2-Clause"),
    ("pandas", "BSD-3-Clause"),
    ("pyteomics", "Apache-2.0"),
    ("lxml", "BSD-3-Clause"),
    ("psims", "Apache-2.0"),
    ("pyarrow", "Apache-2.0 (optional: Parquet export)"),
    ("dask", "BSD-3-Clause (optional: clusters)"),
    ("numba-cuda", "BSD-2-Clause (optional: NVIDIA GPUs)"),
)

_DATA_ATTRIBUTION = (
    "The bundled demo spectra are unchanged MassBank records (MassBank/MassBank-data, "
    "release 2025.05.1, <a href='https://github.com/MassBank/MassBank-data'>"
    "github.com/MassBank/MassBank-data</a>) licensed CC0 or CC BY only; CC BY records "
    "are used under <a href='https://creativecommons.org/licenses/by/4.0/'>CC BY 4.0</a>"
    " and need attribution. Every spectrum keeps its accession (SPECTRUMID), AUTHORS "
    "and LICENSE, shown in the hit pane. Libraries you open carry their own licences."
)


def guide_text() -> str:
    """The guide (Markdown): the bundled copy, else ``docs/guide.md`` of a source checkout."""
    for path in (resource_path("guide.md"), Path(__file__).parents[2] / "docs" / "guide.md"):
        if path is not None and path.is_file():
            return path.read_text(encoding="utf-8")
    return "# SimMS guide\n\nThe guide is not installed with this copy of SimMS."


class GuideDialog(QDialog):
    """The guide rendered from Markdown in a :class:`QTextBrowser` (not modal)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("SimMS guide")
        self.browser = QTextBrowser()
        self.browser.setOpenExternalLinks(True)
        self.browser.setMarkdown(guide_text())
        closable(self, self.browser, 820, 680)


def _plain(text: str) -> str:
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip("…").strip()


def shortcut_rows(window: QMainWindow) -> list[tuple[str, str]]:
    """``(what, keys)`` of every action of the window that has a shortcut, menu order."""
    rows, seen = [], set()
    for action in window.findChildren(QAction):
        keys = [k.toString(QKeySequence.SequenceFormat.NativeText) for k in action.shortcuts()]
        keys = [k for k in keys if k]
        if not keys or id(action) in seen:
            continue
        seen.add(id(action))
        rows.append((_plain(action.text()), ", ".join(keys)))
    return rows


def _shortcuts_dialog(window: QMainWindow) -> QDialog:
    dialog = QDialog(window)
    dialog.setWindowTitle("Keyboard shortcuts")
    rows = shortcut_rows(window)
    table = QTableWidget(len(rows), 2)
    table.setHorizontalHeaderLabels(["Action", "Keys"])
    table.verticalHeader().setVisible(False)
    table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    for r, (what, keys) in enumerate(rows):
        table.setItem(r, 0, QTableWidgetItem(what))
        table.setItem(r, 1, QTableWidgetItem(keys))
    table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
    table.resizeColumnToContents(1)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(dialog.close)
    layout = QVBoxLayout(dialog)
    layout.addWidget(table)
    layout.addWidget(buttons)
    dialog.table = table
    dialog.resize(460, 520)
    return dialog


def about_html() -> str:
    """Version, licences of SimMS and its main dependencies, data attribution (HTML)."""
    from simms_gui.version import __version__

    rows = []
    for name, licence in DEPENDENCIES:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "not installed"
        rows.append(
            f"<tr><td>{html.escape(name)}</td><td>{html.escape(version)}</td>"
            f"<td>{html.escape(licence)}</td></tr>"
        )
    return (
        f"<h3>SimMS desktop {html.escape(__version__)}</h3>"
        "<p>Exact MS/MS library search (greedy cosine, modified cosine, spectral entropy "
        "similarity) on the CPU, an NVIDIA GPU or a Dask cluster.</p>"
        "<p><b>Licence:</b> SimMS is MIT-licensed. Builds that bundle PyQt6 are "
        "subject to its GPL-3.0 terms.</p>"
        "<p><b>Main libraries</b></p><table cellspacing='4'>"
        "<tr><th align='left'>Library</th><th align='left'>Version</th>"
        "<th align='left'>Licence</th></tr>" + "".join(rows) + "</table>"
        f"<p><b>Data</b><br>{_DATA_ATTRIBUTION}</p>"
        "<p>Scores equal matchms (Huber et al., JOSS 2020) and ms_entropy (Li et al., "
        "Nat. Methods 2021), which are used as test references only.</p>"
    )


def _help_menu(window: QMainWindow) -> QMenu:
    for action in window.menuBar().actions():
        menu = action.menu()
        if menu is not None and _plain(action.text()) == "Help":
            return menu
    return window.menuBar().addMenu("&Help")


def _menu(window: QMainWindow, title: str) -> QMenu | None:
    for action in window.menuBar().actions():
        if action.menu() is not None and _plain(action.text()) == title:
            return action.menu()
    return None


def _show(window: QMainWindow, name: str, make) -> QDialog:
    dialog = getattr(window, name, None)
    if dialog is None:
        dialog = make()
        setattr(window, name, dialog)
    dialog.show()
    dialog.raise_()
    return dialog


def _find_hits(window: QMainWindow) -> None:
    window.tabs.setCurrentIndex(0)
    edit = window.results.filter_edit
    edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
    edit.selectAll()


def install_help_menu(window: QMainWindow) -> None:
    """Fill the window's Help menu and wire its keyboard shortcuts.

    Adds Help → Guide (F1), Keyboard shortcuts and About SimMS (version,
    licences, data attribution); Search → Find in hits (Ctrl+F); Search with
    Ctrl+Return as well as Ctrl+R; and the search form's parameter tooltips.
    Dialogs are kept as ``window.guide_dialog``, ``window.shortcuts_dialog`` and
    ``window.about_box``.
    """
    window.guide_action = QAction("SimMS &guide", window)
    window.guide_action.setShortcut(QKeySequence(QKeySequence.StandardKey.HelpContents))
    if not window.guide_action.shortcut().toString():
        window.guide_action.setShortcut(QKeySequence("F1"))
    window.guide_action.setToolTip("Search modes, parameters and mirror plots explained")
    window.guide_action.triggered.connect(
        lambda: _show(window, "guide_dialog", lambda: GuideDialog(window))
    )
    window.shortcuts_action = QAction("&Keyboard shortcuts", window)
    window.shortcuts_action.triggered.connect(
        lambda: _show(window, "shortcuts_dialog", lambda: _shortcuts_dialog(window))
    )
    window.about_action.triggered.disconnect()
    window.about_action.triggered.connect(lambda: _about(window))
    window.find_action = QAction("&Find in hits", window)
    window.find_action.setShortcut(QKeySequence(QKeySequence.StandardKey.Find))
    window.find_action.setToolTip("Filter the hits by name, ID or InChIKey")
    window.find_action.triggered.connect(lambda: _find_hits(window))
    window.search_action.setShortcuts(
        [QKeySequence("Ctrl+Return"), QKeySequence("Ctrl+Enter"), QKeySequence("Ctrl+R")]
    )
    window.search_panel.search_button.setToolTip(
        "Search the queries against the active library (Ctrl+Return)"
    )
    search_menu = _menu(window, "Search")
    if search_menu is not None:
        search_menu.addSeparator()
        search_menu.addAction(window.find_action)
    else:
        window.addAction(window.find_action)
    menu = _help_menu(window)
    menu.clear()
    menu.addAction(window.guide_action)
    menu.addAction(window.shortcuts_action)
    menu.addSeparator()
    menu.addAction(window.about_action)
    apply_parameter_tips(window.search_panel)


def _about(window: QMainWindow) -> QMessageBox:
    box = QMessageBox(window)
    box.setWindowTitle("About SimMS")
    box.setTextFormat(Qt.TextFormat.RichText)
    box.setText(about_html())
    box.setStandardButtons(QMessageBox.StandardButton.Close)
    window.about_box = box
    box.open()
    return box
