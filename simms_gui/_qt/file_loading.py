"""Opening spectrum files (in the background), the file list, drag and drop, recent files.

A mixin of :class:`~simms_gui._qt.main_window.MainWindow` (it uses the window's
widgets, session and signals).
"""

from __future__ import annotations

import functools
import gc
from pathlib import Path

from PyQt6.QtCore import Qt
from PyQt6.QtGui import QDragEnterEvent, QDropEvent
from PyQt6.QtWidgets import (
    QApplication,
    QFileDialog,
    QMessageBox,
)

from engine import LoadCancelled, SpectrumFileError, SpectrumLibrary
from simms_gui._qt.load_progress import LoadProgressDialog
from simms_gui._qt.settings import add_recent_file, recent_files, settings
from simms_gui._qt.worker import BackgroundTask
from simms_gui.files import LoadProgress, is_spectrum_file
from simms_gui.reports import report_counts, report_text
from simms_gui.resources import demo_library_path, demo_queries_path
from simms_gui.session_file import SUFFIX as SESSION_SUFFIX

__all__ = ["FileLoading"]

SPECTRUM_FILTER = (
    "Spectrum files (*.mgf *.msp *.msl *.mzML *.mzml *.mzXML *.mzxml *.json *.gz);;All files (*)"
)


class FileLoading:
    """Opening spectrum files (in the background), the file list, drag and drop, recent files."""

    # ------------------------------------------------------------------ files
    def open_dialog(self, kind: str) -> None:
        """Ask for files to open as ``kind`` (``"library"`` or ``"queries"``)."""
        caption = "Open library" if kind == "library" else "Open queries"
        start = str(settings().value("last_dir", str(Path.home())))
        paths, _ = QFileDialog.getOpenFileNames(self, caption, start, SPECTRUM_FILTER)
        for path in paths:
            self._remember_dir(path)
            self.open_file(path, kind)

    def open_file(
        self, path: str | Path, kind: str = "library", *, background: bool | None = None
    ) -> SpectrumLibrary | None:
        """Open a spectrum file as a library or as the queries.

        Parameters
        ----------
        path : str or Path
        kind : {"library", "queries"}
        background : bool, optional
            Read in a worker thread (the default for the window: even a small
            file can be slow, a FIFO or a decompression bomb).  Returns None
            then; ``fileLoaded``/``loadFailed`` tell the outcome.

        Returns
        -------
        SpectrumLibrary or None
            The spectra when read in the foreground and usable.
        """
        if kind not in ("library", "queries"):
            raise ValueError(f"kind must be 'library' or 'queries', not {kind!r}")
        path = Path(path)
        if background is None:
            background = True
        if background:
            self.log(f"Reading {path.name}…")
            QApplication.setOverrideCursor(Qt.CursorShape.BusyCursor)
            progress = LoadProgress()
            dialog = self._load_progress_dialog(path, progress)

            def done(spectra, path=path, kind=kind):
                dialog.finish()
                QApplication.restoreOverrideCursor()
                self._loaded(kind, path, spectra)

            def failed(exc, path=path):
                dialog.finish()
                QApplication.restoreOverrideCursor()
                self._load_failed(path, exc)

            self._start_task(lambda: self.session.read(path, progress), done, failed)
            return None
        try:
            spectra = self.session.read(path)
        except Exception as exc:  # every failure becomes a message box, never a crash
            self._load_failed(path, exc)
            return None
        return spectra if self._loaded(kind, path, spectra) else None

    def _start_task(self, function, on_done, on_error) -> BackgroundTask:
        task = BackgroundTask(function, on_done, on_error)
        self._tasks.add(task)
        settle = functools.partial(self._task_finished, task)
        task.worker.finished.connect(settle)  # connected before the worker starts
        return task.start()

    def _task_finished(self, task: BackgroundTask) -> None:
        self._tasks.discard(task)

    def _load_progress_dialog(self, path: Path, progress: LoadProgress) -> LoadProgressDialog:
        dialog = LoadProgressDialog(self, path.name, progress)
        self.load_dialogs.append(dialog)
        key = f"load:{id(dialog)}"

        def show(fraction: float, name=path.name) -> None:
            text = f"Reading {name}… {100 * fraction:.0f} %"
            self.slow_steps.set_step(key, text, fraction)
            self.library_panel.show_loading(key, text)

        def finished() -> None:
            self.load_dialogs.remove(dialog)
            self.slow_steps.clear_step(key)
            self.library_panel.show_loading(key, "")

        show(0.0)
        dialog.progressed.connect(show)
        dialog.finished_loading.connect(finished)
        return dialog

    def _load_failed(self, path: Path, exc: BaseException) -> None:
        if isinstance(exc, LoadCancelled):
            self.log(f"Reading {path.name} cancelled")
            self.loadFailed.emit(f"{path}: cancelled")
            return
        if isinstance(exc, SpectrumFileError):
            text = str(exc)
        elif isinstance(exc, OSError):
            text = f"{path}: {exc.strerror or exc}"
        else:
            text = f"{path}: {type(exc).__name__}: {exc}"
        self.loadFailed.emit(text)
        self._error("Cannot open file", text)

    def _loaded(self, kind: str, path: Path, spectra: SpectrumLibrary) -> bool:
        report = spectra.report
        if len(spectra) == 0:
            text = f"{path.name} holds no usable spectra.\n\n{report_text(report)}"
            self.loadFailed.emit(text)
            self.log(f"{path.name}: no usable spectra")
            QMessageBox.warning(self, "No spectra", text)
            return False
        if kind == "library":
            self.session.add_library(path, spectra)
        else:
            self.session.set_queries(path, spectra)
        if self.persist_settings:
            add_recent_file(kind, path)
        skipped, repaired = report_counts(report)
        note = ""
        if skipped or repaired:
            note = f" ({skipped} skipped, {repaired} repaired: see the import report)"
        self.log(f"Opened {kind} {path.name}: {len(spectra):,} spectra{note}")
        if report is not None and (skipped or repaired):
            for line in report_text(report).splitlines()[1:200]:
                self.log(line.strip(), status=False)
        self.fileLoaded.emit(kind, str(path))
        return True

    def _on_session_event(self, what: str) -> None:
        """Follow the session: files, a search asked for from a script, a stop."""
        s = self.session
        if what in ("libraries", "active", "queries"):
            if what == "queries" and s.queries is not None:
                self.query_list.set_spectra(s.queries.spectra)
            if what != "active":
                # A library's metadata is millions of long-lived objects; keep them out
                # of the cyclic garbage collector, whose full passes over them would
                # freeze the window for ~100 ms at random moments during searches.
                gc.collect()
                gc.freeze()
            self._refresh_files()
        elif what == "search_requested" and s.request is not None:
            r = s.request
            self.start_search(r.params, r.backend, r.dask_address)
        elif what == "cancel_requested":
            self.stop_search()
        elif what == "search_started":
            self.snapshot_params()
        elif what == "restored":
            self._on_restored()
        elif what == "selection":
            self._apply_selection()
        if what in (
            "libraries", "active", "queries", "stale", "restored", "search_started",
            "search_finished",
        ):  # fmt: skip
            self._update_stale()
        elif what == "clusters" and s.clusters is not None:
            self.log(f"Clustered: {s.clusters.summary()}")

    def _refresh_files(self) -> None:
        s = self.session
        self.library_panel.set_files(s.libraries, s.active, s.queries)
        ready = s.library is not None and s.queries is not None
        self.search_panel.search_button.setToolTip(
            "Search the queries against the active library (Ctrl+R)"
            if ready
            else "Open a library and query spectra first"
        )

    def _set_active_library(self, index: int) -> None:
        self.session.set_active(index)
        self.log(f"Searching {self.session.libraries[index].name} from now on")

    def _remove_library(self, index: int) -> None:
        self.session.remove_library(index)

    def load_demo(self, *, background: bool = False) -> bool:
        """Open the bundled demo library and queries; False when they are not installed."""
        lib, queries = demo_library_path(), demo_queries_path()
        if lib is None or queries is None:
            self.log("The demo data are not installed")
            return False
        self.open_file(lib, "library", background=background)
        self.open_file(queries, "queries", background=background)
        return True

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        items = recent_files()
        if not items:
            self.recent_menu.addAction("(none)").setEnabled(False)
            return
        for kind, path in items:
            action = self.recent_menu.addAction(f"{Path(path).name}  [{kind}]")
            action.setToolTip(path)
            action.triggered.connect(lambda _c=False, k=kind, p=path: self.open_file(p, k))

    # drag and drop
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        urls = event.mimeData().urls() if event.mimeData().hasUrls() else []
        if any(u.isLocalFile() and _droppable(u.toLocalFile()) for u in urls):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        event.acceptProposedAction()
        for path in [p for p in paths if p.lower().endswith(SESSION_SUFFIX)][:1]:
            self.open_session(path)
        for path in [p for p in paths if is_spectrum_file(p)]:
            kind = self.ask_kind(path)
            if kind:
                self.open_file(path, kind)

    def ask_kind(self, path: str | Path) -> str | None:
        """Ask whether a dropped file is a library or the queries (None: cancel)."""
        box = QMessageBox(self)
        box.setWindowTitle("Open file")
        box.setText(f"Open {Path(path).name} as a library or as the query spectra?")
        library = box.addButton("Library", QMessageBox.ButtonRole.AcceptRole)
        queries = box.addButton("Queries", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(library if self.session.library is None else queries)
        box.exec()
        clicked = box.clickedButton()
        return "library" if clicked is library else "queries" if clicked is queries else None


def _droppable(path: str) -> bool:
    """A spectrum file or a session file."""
    return is_spectrum_file(path) or path.lower().endswith(SESSION_SUFFIX)
