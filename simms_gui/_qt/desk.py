"""What every controller of the window may use: the log, errors, file dialogs, the
main thread.

A :class:`Desk` is handed to each controller (:mod:`simms_gui._qt.controllers`)
in its constructor; controllers never reach into the window.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from PyQt6.QtCore import QCoreApplication, QThread
from PyQt6.QtWidgets import QFileDialog, QMessageBox, QPlainTextEdit, QStatusBar, QWidget

from simms_gui._qt.main_thread import main_thread_calls, on_main_thread
from simms_gui._qt.settings import settings
from simms_gui._qt.status_line import SlowSteps

__all__ = ["Desk", "on_main_thread", "pump_events"]


def pump_events() -> None:
    """Process the window's events while a task is waited for (GUI thread only)."""
    app = QCoreApplication.instance()
    if app is not None and QThread.currentThread() is app.thread():
        QCoreApplication.processEvents()


class Desk:
    """The window's log, status bar, slow-step line and file dialogs.

    Parameters
    ----------
    parent : QWidget
        Parent of message boxes and dialogs.
    log_view : QPlainTextEdit
    status_bar : QStatusBar
    slow_steps : SlowSteps
    persist_settings : bool
        Remember folders (and recent files) in the user's settings.
    """

    def __init__(
        self,
        parent: QWidget,
        log_view: QPlainTextEdit,
        status_bar: QStatusBar,
        slow_steps: SlowSteps,
        persist_settings: bool,
    ) -> None:
        self.parent, self.log_view, self.status_bar = parent, log_view, status_bar
        self.slow_steps = slow_steps
        self.persist_settings = persist_settings
        main_thread_calls()  # made here, on the GUI thread, before any task calls it

    def log(self, text: str, *, status: bool = True) -> None:
        """Append ``text`` to the log (and show it in the status bar)."""
        self.log_view.appendPlainText(f"{time.strftime('%H:%M:%S')}  {text}")
        if status:
            self.status_bar.showMessage(text, 15000)

    def error(self, title: str, text: str) -> None:
        """Log and show an error."""
        self.log(f"{title}: {text}")
        QMessageBox.critical(self.parent, title, text)

    def inform(self, title: str, text: str) -> None:
        """Tell the user something (why an action does nothing)."""
        QMessageBox.information(self.parent, title, text)

    def write(self, what: str, path: str | Path, write: Callable[[], Path]) -> Path | None:
        """``write()`` a file, logging it; an error box (and None) when it fails."""
        try:
            out = write()
        except Exception as exc:
            self.error("Export failed", f"{path}: {exc}")
            return None
        self.log(f"Wrote {what} to {out}")
        return out

    def last_dir(self) -> Path:
        """The folder of the last file chosen."""
        return Path(str(settings().value("last_dir", str(Path.home()))))

    def remember_dir(self, path: str | Path) -> None:
        """Start the next file dialog in ``path``'s folder."""
        if self.persist_settings:
            settings().setValue("last_dir", str(Path(path).parent))

    def save_path(self, caption: str, suggested: str, filters: str) -> tuple[Path, str] | None:
        """Ask where to save; ``(path, chosen filter)`` or None."""
        path, kind = QFileDialog.getSaveFileName(
            self.parent, caption, str(self.last_dir() / suggested), filters
        )
        if not path:
            return None
        self.remember_dir(path)
        return Path(path), kind

    def open_paths(self, caption: str, filters: str, many: bool = True) -> list[Path]:
        """Ask for files to open (none when cancelled)."""
        start = str(self.last_dir())
        if many:
            paths, _ = QFileDialog.getOpenFileNames(self.parent, caption, start, filters)
        else:
            path, _ = QFileDialog.getOpenFileName(self.parent, caption, start, filters)
            paths = [path] if path else []
        for path in paths:
            self.remember_dir(path)
        return [Path(p) for p in paths]
