"""Small layout helpers the panels and dialogs share."""

from __future__ import annotations

from PyQt6.QtWidgets import QDialog, QDialogButtonBox, QGroupBox, QLayout, QVBoxLayout, QWidget

__all__ = ["closable", "group_box"]


def closable(dialog: QDialog, content: QWidget, width: int, height: int) -> QDialog:
    """Lay ``content`` out in ``dialog`` above a Close button; size ``width`` x ``height``."""
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(dialog.reject)
    layout = QVBoxLayout(dialog)
    layout.addWidget(content)
    layout.addWidget(buttons)
    dialog.resize(width, height)
    return dialog


def group_box(title: str, *parts: QWidget | QLayout) -> QGroupBox:
    """A titled box holding ``parts`` (widgets or layouts) one under the other."""
    box = QGroupBox(title)
    inner = QVBoxLayout(box)
    for part in parts:
        if isinstance(part, QLayout):
            inner.addLayout(part)
        else:
            inner.addWidget(part)
    return box
