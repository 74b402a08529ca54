"""The window's files: opening spectrum files as tasks, the file lists, recent files, drops."""

from __future__ import annotations

import gc
from pathlib import Path

from PyQt6.QtCore import Qt, pyqtBoundSignal
from PyQt6.QtWidgets import QApplication, QMenu, QMessageBox

from engine import SpectrumLibrary
from simms_gui._qt.desk import Desk, on_main_thread
from simms_gui._qt.library_panel import LibraryPanel
from simms_gui._qt.load_progress import LoadProgressDialog
from simms_gui._qt.query_list import QueryList
from simms_gui._qt.search_panel import SearchPanel
from simms_gui._qt.settings import add_recent_file, recent_files
from simms_gui.model import LoadTask, Session, Task
from simms_gui.model.events import FilesChanged
from simms_gui.model.files import LoadProgress, is_spectrum_file
from simms_gui.model.session_file import SUFFIX as SESSION_SUFFIX
from simms_gui.reports import report_counts, report_text
from simms_gui.resources import demo_library_path, demo_queries_path

__all__ = ["FilesController", "SPECTRUM_FILTER", "droppable"]

SPECTRUM_FILTER = (
    "Spectrum files (*.mgf *.msp *.msl *.mzML *.mzml *.mzXML *.mzxml *.json *.gz);;All files (*)"
)


def droppable(path: str) -> bool:
    """A spectrum file or a session file."""
    return is_spectrum_file(path) or path.lower().endswith(SESSION_SUFFIX)


class FilesController:
    """Opens spectrum files through the session's runner and keeps the file lists current.

    Parameters
    ----------
    session : Session
    desk : Desk
    library_panel : LibraryPanel
    query_list : QueryList
    search_panel : SearchPanel
        Its Search button says what is missing.
    loaded, failed : pyqtBoundSignal
        The window's ``fileLoaded(kind, path)`` and ``loadFailed(text)``.
    """

    def __init__(
        self,
        session: Session,
        desk: Desk,
        library_panel: LibraryPanel,
        query_list: QueryList,
        search_panel: SearchPanel,
        loaded: pyqtBoundSignal,
        failed: pyqtBoundSignal,
    ) -> None:
        self.session, self.desk = session, desk
        self.library_panel, self.query_list, self.search_panel = (
            library_panel,
            query_list,
            search_panel,
        )
        self.loaded, self.failed = loaded, failed
        #: Progress dialogs of files being read (newest last).
        self.load_dialogs: list[LoadProgressDialog] = []
        session.events.files.connect(self.on_files)
        library_panel.activeChanged.connect(self.set_active_library)
        library_panel.removeRequested.connect(session.remove_library)
        self.refresh()

    # -- opening ----------------------------------------------------------------------
    def open_dialog(self, kind: str) -> None:
        """Ask for files to open as ``kind`` (``"library"`` or ``"queries"``)."""
        caption = "Open library" if kind == "library" else "Open queries"
        for path in self.desk.open_paths(caption, SPECTRUM_FILTER):
            self.open_file(path, kind)

    def open_file(
        self, path: str | Path, kind: str = "library", *, background: bool = True
    ) -> SpectrumLibrary | None:
        """Open a spectrum file as a library or as the queries (a :class:`LoadTask`).

        In the ``background`` (the default) this returns None at once and
        ``fileLoaded``/``loadFailed`` tell the outcome; else it waits and
        returns the spectra (None when unusable: a message says why).
        """
        if kind not in ("library", "queries"):
            raise ValueError(f"kind must be 'library' or 'queries', not {kind!r}")
        path = Path(path)
        self.desk.log(f"Reading {path.name}…")
        QApplication.setOverrideCursor(Qt.CursorShape.BusyCursor)
        task = LoadTask(self.session, path, kind)

        def ended(task: LoadTask) -> None:
            QApplication.restoreOverrideCursor()
            self._ended(task)

        return self.run_reading(task, path, ended, background)

    def run_reading(self, task: Task, path: Path, ended, background: bool = True):
        """Run a task that reads files (its ``load_progress`` in a dialog) in the runner.

        ``ended(task)`` runs on the GUI thread once it ends.  In the ``background``
        returns None at once; else waits and returns its result (None when it failed).
        """
        dialog = self.progress_dialog(path, task.load_progress)

        @on_main_thread
        def finish(task: Task) -> None:
            dialog.finish()
            ended(task)

        task.finished.connect(finish)
        self.session.runner.submit(task)
        if background:
            return None
        try:
            return task.wait()
        except Exception:  # noqa: BLE001 - ended() told the user why
            return None

    def _ended(self, task: LoadTask) -> None:
        path, kind = task.path, task.kind
        if task.cancelled:
            self.desk.log(f"Reading {path.name} cancelled")
            self.failed.emit(f"{path}: cancelled")
            return
        if task.error is not None:
            self.failed.emit(task.error)
            self.desk.error("Cannot open file", task.error)
            return
        spectra = task.result
        if self.desk.persist_settings:
            add_recent_file(kind, path)
        skipped, repaired = report_counts(spectra.report)
        note = f" ({skipped} skipped, {repaired} repaired: see the import report)"
        self.desk.log(
            f"Opened {kind} {path.name}: {len(spectra):,} spectra"
            + (note if skipped or repaired else "")
        )
        if spectra.report is not None and (skipped or repaired):
            for line in report_text(spectra.report).splitlines()[1:200]:
                self.desk.log(line.strip(), status=False)
        self.loaded.emit(kind, str(path))

    def progress_dialog(self, path: Path, progress: LoadProgress) -> LoadProgressDialog:
        """A progress dialog (with Cancel) and a status-bar note of ``path`` being read."""
        dialog = LoadProgressDialog(self.desk.parent, path.name, progress)
        self.load_dialogs.append(dialog)
        key = f"load:{id(dialog)}"

        def show(fraction: float, name=path.name) -> None:
            text = f"Reading {name}… {100 * fraction:.0f} %"
            self.desk.slow_steps.set_step(key, text, fraction)
            self.library_panel.show_loading(key, text)

        def finished() -> None:
            self.load_dialogs.remove(dialog)
            self.desk.slow_steps.clear_step(key)
            self.library_panel.show_loading(key, "")

        show(0.0)
        dialog.progressed.connect(show)
        dialog.finished_loading.connect(finished)
        return dialog

    def load_demo(self, *, background: bool = False) -> bool:
        """Open the bundled demo library and queries; False when they are not installed."""
        lib, queries = demo_library_path(), demo_queries_path()
        if lib is None or queries is None:
            self.desk.log("The demo data are not installed")
            return False
        self.open_file(lib, "library", background=background)
        self.open_file(queries, "queries", background=background)
        return True

    # -- the lists --------------------------------------------------------------------
    @on_main_thread
    def on_files(self, event: FilesChanged) -> None:
        """The session's files changed: show them."""
        s = self.session
        if event.queries_changed and s.queries is not None:
            self.query_list.set_spectra(s.queries.spectra)
        # A library's metadata is millions of long-lived objects; keep them out of the
        # cyclic garbage collector, whose full passes would freeze the window for ~100 ms.
        gc.collect()
        gc.freeze()
        self.refresh()

    def refresh(self) -> None:
        """Show the session's files and whether a search can start."""
        s = self.session
        self.library_panel.set_files(s.libraries, s.active, s.queries)
        ready = s.search_target is not None and s.queries is not None
        self.search_panel.search_button.setToolTip(
            f"Search the queries against the {'repository' if s.repository else 'active library'}"
            " (Ctrl+R)"
            if ready
            else "Open a library and query spectra first"
        )

    def set_active_library(self, index: int) -> None:
        """Search library ``index`` from now on."""
        self.session.set_active(index)
        self.desk.log(f"Searching {self.session.libraries[index].name} from now on")

    def fill_recent_menu(self, menu: QMenu) -> None:
        """The recent files, as entries of ``menu``."""
        menu.clear()
        items = recent_files()
        if not items:
            menu.addAction("(none)").setEnabled(False)
            return
        for kind, path in items:
            action = menu.addAction(f"{Path(path).name}  [{kind}]")
            action.setToolTip(path)
            action.triggered.connect(lambda _c=False, k=kind, p=path: self.open_file(p, k))

    def drop(self, paths: list[str]) -> list[str]:
        """Open dropped spectrum files (asking library or queries); the session files dropped."""
        for path in [p for p in paths if is_spectrum_file(p)]:
            kind = self.ask_kind(path)
            if kind:
                self.open_file(path, kind)
        return [p for p in paths if p.lower().endswith(SESSION_SUFFIX)][:1]

    def ask_kind(self, path: str | Path) -> str | None:
        """Ask whether a dropped file is a library or the queries (None: cancel)."""
        box = QMessageBox(self.desk.parent)
        box.setWindowTitle("Open file")
        box.setText(f"Open {Path(path).name} as a library or as the query spectra?")
        library = box.addButton("Library", QMessageBox.ButtonRole.AcceptRole)
        queries = box.addButton("Queries", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(library if self.session.library is None else queries)
        box.exec()
        clicked = box.clickedButton()
        return "library" if clicked is library else "queries" if clicked is queries else None
