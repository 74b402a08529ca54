"""Help: the guide (bundled, rendered), About (licences, data), keyboard shortcuts that work."""

from __future__ import annotations

from pathlib import Path

import pytest
from PyQt6.QtCore import Qt
from PyQt6.QtGui import QKeySequence
from PyQt6.QtWidgets import QApplication, QFileDialog

from simms_gui._qt.help_menu import DEPENDENCIES, guide_text, shortcut_rows
from simms_gui._qt.parameter_tips import PARAMETER_TIPS
from simms_gui.version import __version__

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def window(qtbot, boxes):
    from simms_gui._qt.main_window import MainWindow

    w = MainWindow(persist_settings=False)
    qtbot.addWidget(w)
    w.show()
    w.activateWindow()
    qtbot.waitActive(w)
    yield w
    w.shutdown()


def test_guide_is_bundled_and_equals_the_docs():
    docs = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    bundled = (ROOT / "resources" / "guide.md").read_text(encoding="utf-8")
    assert bundled == docs, "resources/guide.md is the shipped copy of docs/guide.md"
    assert guide_text() == docs
    # packaged: resources/*.md is package data and in the PyInstaller spec
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"*.md"' in pyproject.split("[tool.setuptools.package-data]")[1].splitlines()[1]
    assert '"*.md"' in (ROOT / "packaging" / "simms.spec").read_text(encoding="utf-8")
    for words in ("Identity", "Analog", "modified cosine", "0.01 Da", "Reading a mirror plot"):
        assert words in docs


def test_f1_opens_the_rendered_guide(qtbot, window):
    qtbot.keyClick(window, Qt.Key.Key_F1)
    qtbot.waitUntil(lambda: getattr(window, "guide_dialog", None) is not None)
    dialog = window.guide_dialog
    qtbot.waitUntil(dialog.isVisible)
    text = dialog.browser.toPlainText()
    assert "SimMS guide for chemists" in text and "Reading a mirror plot" in text
    assert "## " not in text  # rendered Markdown, not the source
    assert "Tolerance (Da)" in text and "Flash entropy" in text
    dialog.close()


def test_about_names_version_licences_and_data(qtbot, window):
    window.about_action.trigger()
    box = window.about_box
    qtbot.waitUntil(box.isVisible)
    text = box.text()
    assert __version__ in text and "MIT" in text
    for name, licence in DEPENDENCIES:
        assert name in text and licence.split(" ")[0] in text
    assert "MassBank" in text and "CC BY" in text and "AUTHORS" in text
    box.close()


def test_shortcut_list_is_the_real_one(qtbot, window):
    rows = dict(shortcut_rows(window))
    native = QKeySequence.SequenceFormat.NativeText

    def key(text: str) -> str:
        return QKeySequence(text).toString(native)

    assert rows["Open library"] == key("Ctrl+O")
    assert key("Ctrl+Return") in rows["Search"].split(", ")
    assert rows["Stop"] == key("Esc")
    assert rows["Export all hits"] == key("Ctrl+E")
    assert rows["Find in hits"] == key("Ctrl+F")
    assert rows["SimMS guide"] == key("F1")
    # no key is bound twice (Qt fires neither of two ambiguous shortcuts)
    keys = [k for row in shortcut_rows(window) for k in row[1].split(", ")]
    assert len(keys) == len(set(keys))
    window.shortcuts_action.trigger()
    table = window.shortcuts_dialog.table
    shown = {table.item(r, 0).text(): table.item(r, 1).text() for r in range(table.rowCount())}
    assert shown == rows
    window.shortcuts_dialog.close()


def test_shortcuts_are_wired(qtbot, window, boxes, monkeypatch):
    ctrl = Qt.KeyboardModifier.ControlModifier
    # Ctrl+F: focus the hits filter
    qtbot.keyClick(window, Qt.Key.Key_F, ctrl)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is window.results.filter_edit)
    window.results.table.setFocus()
    # Ctrl+Return: search (no library yet: a message says so)
    fired = []
    window.search_action.triggered.connect(lambda: fired.append("search"))
    window.export_all_action.triggered.connect(lambda: fired.append("export"))
    window.open_library_action.triggered.connect(lambda: fired.append("open"))
    qtbot.keyClick(window, Qt.Key.Key_Return, ctrl)
    qtbot.keyClick(window, Qt.Key.Key_E, ctrl)
    opened = []
    monkeypatch.setattr(
        QFileDialog, "getOpenFileNames", lambda *a, **k: (opened.append(a), ([], ""))[1]
    )
    qtbot.keyClick(window, Qt.Key.Key_O, ctrl)
    assert fired == ["search", "export", "open"] and opened
    assert boxes  # search and export told the user what is missing


def test_search_form_tooltips_give_recommended_values(window):
    panel = window.search_panel
    for name, tip in PARAMETER_TIPS.items():
        assert getattr(panel, name).toolTip() == tip
    assert (
        "0.02 Da" in panel.tolerance.toolTip() and "0.01 Da" in panel.precursor_tolerance.toolTip()
    )
    label = panel.form.labelForField(panel.min_matches)
    assert label is not None and label.toolTip() == PARAMETER_TIPS["min_matches"]
