"""The window's session files: save, open (as a task), the quit prompt, stale hits, the start.

The format is :mod:`simms_gui.model.session_file`'s; opening one is an
:class:`~simms_gui.model.session_file.OpenSessionTask` in the session's runner,
and what it restores arrives as the session's events (``restored``, ``hits``,
``selection``) like any other change.
"""

from __future__ import annotations

from pathlib import Path

from PyQt6.QtCore import QObject, Qt, QTimer, pyqtBoundSignal
from PyQt6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QComboBox,
    QDoubleSpinBox,
    QMessageBox,
    QSpinBox,
)

from simms_gui._qt.desk import Desk, on_main_thread
from simms_gui._qt.files_controller import FilesController
from simms_gui._qt.results_view import ResultsPanel
from simms_gui._qt.search_panel import SearchPanel
from simms_gui._qt.settings import settings
from simms_gui.model import Session
from simms_gui.model.events import Restored, SearchStarted
from simms_gui.model.session_file import SUFFIX, OpenSessionTask, save_session

__all__ = ["SESSION_FILTER", "SessionsController", "last_session"]

SESSION_FILTER = f"SimMS session (*{SUFFIX});;All files (*)"
_LAST = "session/last"

#: Words for :attr:`Session.stale` reasons in the banner.
_STALE_WORDS = {
    "queries": "the queries",
    "library": "the library",
    "parameters": "the search parameters",
}


def last_session() -> Path | None:
    """The session file the user last saved or opened, if it still exists."""
    value = settings().value(_LAST, "")
    path = Path(str(value)) if value else None
    return path if path is not None and path.is_file() else None


class SessionsController:
    """Saves and opens sessions, and says when the hits are out of date.

    Parameters
    ----------
    session : Session
    desk : Desk
    search_panel : SearchPanel
        Shows a restored session's parameters; its changes make the hits stale.
    results : ResultsPanel
        Its banner says why the hits are stale.
    files : FilesController
        The progress dialog of the files a session reads; the demo at the start.
    opened : pyqtBoundSignal
        The window's ``sessionOpened(str)``.
    parent : QObject
        Owner of the parameters' timer.
    """

    #: Ask "save first?" when the window closes with unsaved hits (the application sets it).
    confirm_unsaved = False

    def __init__(
        self,
        session: Session,
        desk: Desk,
        search_panel: SearchPanel,
        results: ResultsPanel,
        files: FilesController,
        opened: pyqtBoundSignal,
        parent: QObject,
    ) -> None:
        self.session, self.desk, self.panel, self.results = session, desk, search_panel, results
        self.files, self.opened = files, opened
        self._params_at_search = None
        session.events.restored.connect(self.on_restored)
        session.events.search_started.connect(self.on_search_started)
        session.events.stale.connect(self.on_stale)
        self._params_timer = QTimer(parent, singleShot=True, interval=150)
        self._params_timer.timeout.connect(self.show_params_to_session)
        for combo in search_panel.findChildren(QComboBox):
            combo.currentIndexChanged.connect(self._params_timer.start)
        for box in (
            *search_panel.findChildren(QSpinBox),
            *search_panel.findChildren(QDoubleSpinBox),
        ):
            box.valueChanged.connect(self._params_timer.start)
        for button in search_panel.findChildren(QAbstractButton):
            if button.isCheckable():
                button.toggled.connect(self._params_timer.start)

    def _remember(self, path: Path) -> None:
        if self.desk.persist_settings:
            s = settings()
            s.setValue(_LAST, str(Path(path).resolve()))
            s.sync()

    def save(self, path: str | Path | None = None) -> Path | None:
        """Save files, parameters, hits, selection and the table's view (asks where)."""
        if path is None:
            chosen = self.desk.save_path("Save session", f"session{SUFFIX}", SESSION_FILTER)
            if chosen is None:
                return None
            path = chosen[0]
        self.session.table_view = self.results.view_state()
        steps = self.desk.slow_steps
        steps.set_step("save", f"Saving the session ({len(self.session.hits):,} hits)…")
        QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
        QApplication.processEvents()
        try:
            out = save_session(self.session, path)
        except Exception as exc:
            self.desk.error("Cannot save the session", f"{path}: {exc}")
            return None
        finally:
            QApplication.restoreOverrideCursor()
            steps.clear_step("save")
        self._remember(out)
        self.desk.log(f"Saved the session to {out}")
        return out

    def open(self, path: str | Path | None = None, *, background: bool = True) -> list[str] | None:
        """Open a saved session: files read again (with progress), hits restored.

        Returns the problems found when waited for (None in the ``background``:
        ``sessionOpened`` tells the outcome).
        """
        if path is None:
            chosen = self.desk.open_paths("Open session", SESSION_FILTER, many=False)
            if not chosen:
                return None
            path = chosen[0]
        path = Path(path)
        if self.session.state == "running":
            self.desk.log("A search is running: stop it before opening a session")
            return None
        self.desk.log(f"Opening the session {path.name}…")
        task = OpenSessionTask(self.session, path)
        opened = self.files.run_reading(task, path, self._opened, background)
        return None if opened is None else opened.problems

    def _opened(self, task: OpenSessionTask) -> None:
        if task.error is not None:
            self.desk.error("Cannot open the session", task.error)
            return
        if task.result is None:
            return
        opened, s = task.result, self.session
        self._remember(opened.path)
        self.desk.log(
            f"Opened the session {opened.path.name}: {len(s.libraries)} libraries, "
            f"{len(s.hits):,} hits"
        )
        if opened.problems:
            for line in opened.problems:
                self.desk.log(line, status=False)
            QMessageBox.warning(
                self.desk.parent, "Session opened with problems", "\n\n".join(opened.problems)
            )
        self.opened.emit(str(opened.path))

    @on_main_thread
    def on_restored(self, event: Restored) -> None:
        """A saved session's parameters and state, shown (its hits fill the table)."""
        s = self.session
        self.panel.set_parameters(s.params)
        if s.backend in ("auto", "cpu", "cuda", "dask"):
            self.panel.set_backend(s.backend)
        self.snapshot_params()
        if s.hits_queries is not None:
            state = "stopped" if s.cancelled else "done"
            text = f"{state} · {len(s.hits):,} hits (from the session)"
            self.panel.show_done(text, state=state)
        else:
            self.panel.show_done("idle")
        self.show_params_to_session()

    # -- stale hits -------------------------------------------------------------------
    @on_main_thread
    def on_search_started(self, _event: SearchStarted) -> None:
        self.snapshot_params()

    def snapshot_params(self) -> None:
        """Remember what the panel shows for the hits' parameters (a search starts or opens).

        The panel rounds some values (4 decimals): comparing with what it showed
        then, not with the search's exact parameters, keeps a scripted search
        with finer values from looking out of date.
        """
        try:
            self._params_at_search = self.panel.parameters()
        except ValueError:
            self._params_at_search = None
        self.session.show_params(None)

    def show_params_to_session(self) -> None:
        """Tell the session what the panel shows (its ``stale`` follows)."""
        try:
            params = self.panel.parameters()
        except ValueError:
            params = None
        if params is not None and params == self._params_at_search:
            params = None  # as when the hits were found
        self.session.show_params(params)

    @on_main_thread
    def on_stale(self, reasons: tuple) -> None:
        """Grey the hits, and say why, while they no longer answer the inputs."""
        reasons = self.session.stale  # now: a later change may have come since
        text = ""
        if reasons:
            what = " and ".join(_STALE_WORDS.get(r, r) for r in reasons)
            text = (
                f"These hits are from an earlier search: {what} changed since. "
                "Search again to update them."
            )
        self.results.set_stale(text)

    # -- quit, start ------------------------------------------------------------------
    def confirm_close(self) -> bool:
        """Ask to save unsaved hits before closing; False when the user cancels."""
        s = self.session
        if not (self.confirm_unsaved and s.unsaved and len(s.hits)):
            return True
        Button = QMessageBox.StandardButton  # noqa: N806
        answer = QMessageBox.question(
            self.desk.parent,
            "Save the session?",
            f"The {len(s.hits):,} hits of the last search are not saved.\n\n"
            "Save the session (files, parameters and hits) before quitting?",
            Button.Save | Button.Discard | Button.Cancel,
            Button.Save,
        )
        if answer == Button.Cancel:
            return False
        return answer != Button.Save or self.save() is not None

    def restore_on_start(self) -> str:
        """Open the last session (asking first), else the demo: never an empty start.

        Returns ``"session"``, ``"demo"`` or ``""`` (nothing to open).
        """
        path = last_session()
        if path is not None:
            Button = QMessageBox.StandardButton  # noqa: N806
            answer = QMessageBox.question(
                self.desk.parent,
                "Reopen the last session?",
                f"Reopen your last session, {path.name}?\n\n{path.parent}",
                Button.Open | Button.No,
                Button.Open,
            )
            if answer == Button.Open and self.open(path, background=False) is not None:
                return "session"
        return "demo" if self.files.load_demo(background=False) else ""
