"""Session files in the window: save, open, the quit prompt, stale hits, the start.

A mixin of :class:`~simms_gui._qt.main_window.MainWindow` (it uses the window's
widgets, session and signals); the format is :mod:`simms_gui.session_file`'s.
"""

from __future__ import annotations

from pathlib import Path

from PyQt6.QtCore import Qt, QTimer
from PyQt6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QComboBox,
    QFileDialog,
    QMessageBox,
    QSpinBox,
)
from PyQt6.QtWidgets import QDoubleSpinBox as _DoubleSpin

from simms_gui._qt.settings import settings
from simms_gui.files import LoadProgress
from simms_gui.session_file import (
    SUFFIX,
    OpenedSession,
    apply_session,
    read_session,
    save_session,
)

__all__ = ["RESTORE_IN_BACKGROUND", "SESSION_FILTER", "SessionActions", "last_session"]

#: Hits of an opened session above this count get their table columns in a worker thread.
RESTORE_IN_BACKGROUND = 200_000

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


class SessionActions:
    """Session files in the window: save, open, the quit prompt, stale hits, the start."""

    #: Ask "save first?" when the window closes with unsaved hits (the application
    #: sets it; scripted windows close without asking).
    confirm_unsaved = False
    #: The hits whose table columns are being prepared in the background (None: none).
    _restoring = None
    _restored_path = ""
    _params_at_search = None

    # ------------------------------------------------------------------ save / open
    def _remember_session(self, path: Path) -> None:
        if self.persist_settings:
            s = settings()
            s.setValue(_LAST, str(Path(path).resolve()))
            s.sync()

    def save_session(self, path: str | Path | None = None) -> Path | None:
        """Save files, parameters, hits and selection (asks where when ``path`` is None)."""
        if path is None:
            start = Path(str(settings().value("last_dir", str(Path.home())))) / f"session{SUFFIX}"
            chosen, _ = QFileDialog.getSaveFileName(
                self, "Save session", str(start), SESSION_FILTER
            )
            if not chosen:
                return None
            path = chosen
            self._remember_dir(path)
        self.slow_steps.set_step("save", f"Saving the session ({len(self.session.hits):,} hits)…")
        QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
        QApplication.processEvents()
        try:
            out = save_session(self.session, path)
        except Exception as exc:
            self._error("Cannot save the session", f"{path}: {exc}")
            return None
        finally:
            QApplication.restoreOverrideCursor()
            self.slow_steps.clear_step("save")
        self._remember_session(out)
        self.log(f"Saved the session to {out}")
        return out

    def open_session(
        self, path: str | Path | None = None, *, background: bool = True
    ) -> list[str] | None:
        """Open a saved session: files read again (with progress), hits restored.

        Returns the problems found when read in the foreground (None in the
        background: ``sessionOpened`` tells the outcome).
        """
        if path is None:
            start = str(settings().value("last_dir", str(Path.home())))
            chosen, _ = QFileDialog.getOpenFileName(self, "Open session", start, SESSION_FILTER)
            if not chosen:
                return None
            path = chosen
            self._remember_dir(path)
        path = Path(path)
        if not background:
            try:
                opened = read_session(path)
            except Exception as exc:
                self._error("Cannot open the session", str(exc))
                return None
            self._session_read(opened)
            return opened.problems
        self.log(f"Opening the session {path.name}…")
        progress = LoadProgress()
        dialog = self._load_progress_dialog(path, progress)
        read = lambda p: self.session.read(p, progress)  # noqa: E731

        def done(opened: OpenedSession) -> None:
            dialog.finish()
            self._session_read(opened)

        def failed(exc: BaseException) -> None:
            dialog.finish()
            self._error("Cannot open the session", str(exc))

        self._start_task(lambda: read_session(path, read), done, failed)
        return None

    def _session_read(self, opened: OpenedSession) -> None:
        if self.searching:
            self.log("A search is running: stop it before opening a session")
            return
        apply_session(self.session, opened)
        self._remember_session(opened.path)
        s = self.session
        self.log(
            f"Opened the session {opened.path.name}: {len(s.libraries)} libraries, "
            f"{len(s.hits):,} hits"
        )
        if opened.problems:
            for line in opened.problems:
                self.log(line, status=False)
            QMessageBox.warning(
                self,
                "Session opened with problems",
                "\n\n".join(opened.problems),
            )
        if self._restoring is None:
            self.sessionOpened.emit(str(opened.path))
        else:  # when the table is filled
            self._restored_path = str(opened.path)

    def _on_restored(self) -> None:
        """The session took a saved session's hits: show them and their parameters."""
        s = self.session
        self.search_panel.set_parameters(s.params)
        if s.backend in ("auto", "cpu", "cuda", "dask"):
            self.search_panel.set_backend(s.backend)
        self.snapshot_params()
        library = s.hits_files[1]
        self.pair_view.clear()
        self.results.model.clear(library.name if library is not None else "")
        self._restoring = None
        if len(s.hits) > RESTORE_IN_BACKGROUND:
            # the table's columns of millions of hits take seconds: off the GUI thread
            hits = self._restoring = s.hits
            self.slow_steps.set_step("restore", f"Preparing {len(hits):,} hits for the table…")

            def done(columns, hits=hits, name=library.name) -> None:
                if self._restoring is not hits:
                    return
                self._restoring = None
                self.slow_steps.clear_step("restore")
                if self.session.hits is hits and not self.searching:
                    self._fill_restored(columns, name)
                    self._apply_selection()
                if self._restored_path:
                    self.sessionOpened.emit(self._restored_path)
                    self._restored_path = ""

            def failed(exc, hits=hits) -> None:
                if self._restoring is hits:
                    self._restoring = None
                    self.slow_steps.clear_step("restore")
                self._error("Cannot show the hits", f"{type(exc).__name__}: {exc}")

            self._start_task(lambda: s.hit_list(hits).columns, done, failed)
        elif len(s.hits):
            self._fill_restored(s.hit_list().columns, library.name)
        if s.hits_queries is not None:
            state = "stopped" if s.cancelled else "done"
            self.search_panel.show_done(
                f"{state} · {len(s.hits):,} hits (from the session)", state=state
            )
        else:
            self.search_panel.show_done("idle")
        self._show_params_to_session()
        self._update_stale()

    def _fill_restored(self, columns: dict, library_name: str) -> None:
        self.results.model.set_columns(columns, library_name)
        self.results.fit_columns()

    def _apply_selection(self) -> None:
        """Show the session's selection (set from a script or a session file)."""
        if self._restoring is not None:
            return  # once the table is filled
        s = self.session
        self.query_list.select_rows(s.selected_queries)
        if s.selected_hit is not None:
            row = self.results.model.find_row(*s.selected_hit)
            if row >= 0:
                self.results.select_row(row)

    def _follow_selection(self) -> None:
        """Keep the session's selection equal to what the user selects."""
        s = self.session

        def hit(view_row: int) -> None:
            model = self.results.model
            if 0 <= view_row < model.rowCount():
                row = model.row_of(view_row)
                s.selected_hit = (int(row["query_index"]), int(row["library_index"]))

        def queries(*_args) -> None:
            s.selected_queries = self.query_list.selected_rows()

        self.results.hitSelected.connect(hit)
        self.query_list.table.selectionModel().selectionChanged.connect(queries)

    # ------------------------------------------------------------------ stale hits
    def _watch_parameters(self) -> None:
        """Tell the session what the search panel shows, shortly after every change."""
        self._params_timer = QTimer(self, singleShot=True, interval=150)
        self._params_timer.timeout.connect(self._show_params_to_session)
        panel = self.search_panel
        for combo in panel.findChildren(QComboBox):
            combo.currentIndexChanged.connect(self._params_timer.start)
        for box in (*panel.findChildren(QSpinBox), *panel.findChildren(_DoubleSpin)):
            box.valueChanged.connect(self._params_timer.start)
        for button in panel.findChildren(QAbstractButton):
            if button.isCheckable():
                button.toggled.connect(self._params_timer.start)

    def snapshot_params(self) -> None:
        """Remember what the panel shows for the hits' parameters (a search starts or opens).

        The panel rounds some values (4 decimals): comparing with what it showed
        then, not with the search's exact parameters, keeps a scripted search
        with finer values from looking out of date.
        """
        try:
            self._params_at_search = self.search_panel.parameters()
        except ValueError:
            self._params_at_search = None
        self.session.show_params(None)

    def _show_params_to_session(self) -> None:
        try:
            params = self.search_panel.parameters()
        except ValueError:
            params = None
        if params is not None and params == self._params_at_search:
            params = None  # as when the hits were found
        self.session.show_params(params)

    def _update_stale(self) -> None:
        reasons = self.session.stale
        if reasons:
            what = " and ".join(_STALE_WORDS.get(r, r) for r in reasons)
            text = (
                f"These hits are from an earlier search: {what} changed since. "
                "Search again to update them."
            )
        else:
            text = ""
        self.results.set_stale(text)

    # ------------------------------------------------------------------ quit, start
    def confirm_close(self) -> bool:
        """Ask to save unsaved hits before closing; False when the user cancels."""
        s = self.session
        if not (self.confirm_unsaved and s.unsaved and len(s.hits)):
            return True
        Button = QMessageBox.StandardButton  # noqa: N806
        answer = QMessageBox.question(
            self,
            "Save the session?",
            f"The {len(s.hits):,} hits of the last search are not saved.\n\n"
            "Save the session (files, parameters and hits) before quitting?",
            Button.Save | Button.Discard | Button.Cancel,
            Button.Save,
        )
        if answer == Button.Cancel:
            return False
        if answer == Button.Save:
            return self.save_session() is not None
        return True

    def restore_on_start(self) -> str:
        """Open the last session (asking first), else the demo: never an empty start.

        Returns ``"session"``, ``"demo"`` or ``""`` (nothing to open).
        """
        path = last_session()
        if path is not None:
            Button = QMessageBox.StandardButton  # noqa: N806
            answer = QMessageBox.question(
                self,
                "Reopen the last session?",
                f"Reopen your last session, {path.name}?\n\n{path.parent}",
                Button.Open | Button.No,
                Button.Open,
            )
            if answer == Button.Open and self.open_session(path, background=False) is not None:
                return "session"
        return "demo" if self.load_demo(background=False) else ""
