"""The SimMS main window: files, search, results, mirror plots, heatmaps."""

from __future__ import annotations

import functools
import gc
import time
from pathlib import Path

from PyQt6.QtCore import QByteArray, Qt, pyqtSignal
from PyQt6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PyQt6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QMainWindow,
    QMessageBox,
    QPlainTextEdit,
    QSplitter,
    QTabWidget,
    QWidget,
)

from engine import HitTable, SearchParameters, SpectrumFileError, SpectrumLibrary
from engine.warmup import warm_up_in_background
from simms_gui._qt.heatmap_panel import HeatmapPanel
from simms_gui._qt.library_panel import LibraryPanel
from simms_gui._qt.query_list import QueryList
from simms_gui._qt.results_view import ResultsPanel
from simms_gui._qt.search_panel import SearchPanel
from simms_gui._qt.settings import add_recent_file, recent_files, settings
from simms_gui._qt.spectrum_view import PairView
from simms_gui._qt.worker import BackgroundTask, SearchController, run_task
from simms_gui.dask_connection import DaskConnection, normalize_dask_address
from simms_gui.heatmap_requests import HeatmapRequest, selection_request, top_hits_request
from simms_gui.pairs import compute_pair
from simms_gui.reports import report_counts, report_text
from simms_gui.resources import demo_library_path, demo_queries_path
from simms_gui.session import Session, is_spectrum_file

__all__ = ["MainWindow"]

SPECTRUM_FILTER = "Spectrum files (*.mgf *.msp *.mzML *.mzml *.gz);;All files (*)"
HITS_FILTER = "Tab-separated (*.tsv);;Comma-separated (*.csv);;Parquet (*.parquet)"
IMAGE_FILTER = "PNG image (*.png);;SVG image (*.svg)"


class MainWindow(QMainWindow):
    """Main window of SimMS desktop.

    Parameters
    ----------
    session : Session, optional
        The headless model shown (a new one when omitted).

    Signals
    -------
    fileLoaded(str, str)
        ``(kind, path)`` after a library or query file was added.
    loadFailed(str)
        A file could not be used; the message shown to the user.
    searchStarted()
    searchFinished(bool)
        A search ended (True when stopped); hits are in ``session.hits``.
    heatmapReady()
    """

    fileLoaded = pyqtSignal(str, str)  # noqa: N815
    loadFailed = pyqtSignal(str)  # noqa: N815
    searchStarted = pyqtSignal()  # noqa: N815
    searchFinished = pyqtSignal(bool)  # noqa: N815
    heatmapReady = pyqtSignal()  # noqa: N815

    def __init__(
        self,
        session: Session | None = None,
        parent: QWidget | None = None,
        *,
        persist_settings: bool = True,
    ) -> None:
        super().__init__(parent)
        #: Whether this window restores and saves the user's settings (parameters,
        #: geometry, recent files).  Scripted windows (the Viewer, the smoke test)
        #: neither read nor write them, so a script runs the same everywhere.
        self.persist_settings = persist_settings
        self.session = session or Session()
        self.controller: SearchController | None = None
        self._tasks: set[BackgroundTask] = set()
        self._search_started = 0.0
        #: The Dask client kept between searches (see :class:`DaskConnection`).
        self.dask = DaskConnection()
        self.setWindowTitle("SimMS — MS/MS library search")
        self.setAcceptDrops(True)

        self.search_panel = SearchPanel(persist_settings=persist_settings)
        self.library_panel = LibraryPanel()
        self.query_list = QueryList()
        self.results = ResultsPanel()
        self.pair_view = PairView()
        self.heatmap_panel = HeatmapPanel()
        self.heatmap_pair_view = PairView()

        left = QSplitter(Qt.Orientation.Vertical)
        left.addWidget(self.search_panel)
        left.addWidget(self.library_panel)
        left.addWidget(self.query_list)
        left.setStretchFactor(2, 1)
        left.setSizes([330, 230, 400])
        left.setChildrenCollapsible(False)
        self.left_splitter = left

        self.results_splitter = QSplitter(Qt.Orientation.Vertical)
        self.results_splitter.addWidget(self.results)
        self.results_splitter.addWidget(self.pair_view)
        self.results_splitter.setSizes([380, 480])
        self.heatmap_splitter = QSplitter(Qt.Orientation.Vertical)
        self.heatmap_splitter.addWidget(self.heatmap_panel)
        self.heatmap_splitter.addWidget(self.heatmap_pair_view)
        self.heatmap_splitter.setSizes([560, 340])

        self.tabs = QTabWidget()
        self.tabs.addTab(self.results_splitter, "Results")
        self.tabs.addTab(self.heatmap_splitter, "Heatmap")
        self.tabs.setDocumentMode(True)

        self.main_splitter = QSplitter(Qt.Orientation.Horizontal)
        self.main_splitter.addWidget(left)
        self.main_splitter.addWidget(self.tabs)
        self.main_splitter.setStretchFactor(1, 1)
        self.main_splitter.setSizes([430, 1170])
        self.main_splitter.setChildrenCollapsible(False)
        self.setCentralWidget(self.main_splitter)

        self.log_view = QPlainTextEdit()
        self.log_view.setReadOnly(True)
        self.log_view.setMaximumBlockCount(5000)
        self.log_dock = QDockWidget("Log", self)
        self.log_dock.setObjectName("log_dock")
        self.log_dock.setWidget(self.log_view)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.log_dock)
        self.log_dock.hide()

        self._make_actions()
        self._connect()
        self.statusBar().showMessage("Open a library and queries, or drop files here", 0)
        self.resize(1600, 1000)
        self._restore_state()
        self.session.connect(self._on_session_event)
        self._refresh_files()
        # compile the search kernels while the user looks around, not on first Search
        warm_up_in_background(_local_backend(self.search_panel.backend_name()))

    # ------------------------------------------------------------------ building
    def _action(self, text: str, slot, shortcut=None, tip: str = "") -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        if tip:
            action.setToolTip(tip)
            action.setStatusTip(tip)
        action.triggered.connect(lambda _checked=False: slot())
        return action

    def _make_actions(self) -> None:
        a = self._action
        self.open_library_action = a(
            "Open &library…",
            lambda: self.open_dialog("library"),
            QKeySequence.StandardKey.Open,
            "Open an MGF, MSP or mzML spectral library",
        )
        self.open_queries_action = a(
            "Open &queries…",
            lambda: self.open_dialog("queries"),
            "Ctrl+Shift+O",
            "Open the query spectra to search",
        )
        self.demo_action = a("Load &demo data", self.load_demo, None, "Load the bundled demo")
        self.search_action = a("&Search", self.start_search, "Ctrl+R", "Search queries vs library")
        self.stop_action = a("S&top", self.stop_search, "Esc", "Stop; hits found so far are kept")
        self.stop_action.setEnabled(False)
        self.export_all_action = a(
            "Export &all hits…", lambda: self.export_hits(None, "all"), "Ctrl+E"
        )
        self.export_filtered_action = a(
            "Export &filtered hits…", lambda: self.export_hits(None, "filtered")
        )
        self.export_best_action = a(
            "Export &best hit per query…", lambda: self.export_hits(None, "best")
        )
        self.export_mirror_action = a("Export &mirror plot…", lambda: self.export_mirror(None))
        self.export_heatmap_action = a("Export &heatmap…", lambda: self.export_heatmap(None))
        self.quit_action = a("&Quit", self.close, QKeySequence.StandardKey.Quit)
        self.heatmap_top_action = a("Heatmap of &top hits", self.heatmap_top_hits, "Ctrl+H")
        self.heatmap_selection_action = a(
            "Heatmap of &selection", self.heatmap_selection, "Ctrl+Shift+H"
        )
        self.about_action = a("&About SimMS", self._about)

        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        file_menu.addAction(self.open_library_action)
        file_menu.addAction(self.open_queries_action)
        self.recent_menu = file_menu.addMenu("Open &recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        file_menu.addAction(self.demo_action)
        file_menu.addSeparator()
        export_menu = file_menu.addMenu("&Export")
        for action in (
            self.export_all_action,
            self.export_filtered_action,
            self.export_best_action,
        ):
            export_menu.addAction(action)
        export_menu.addSeparator()
        export_menu.addAction(self.export_mirror_action)
        export_menu.addAction(self.export_heatmap_action)
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)
        search_menu = menu.addMenu("&Search")
        search_menu.addAction(self.search_action)
        search_menu.addAction(self.stop_action)
        view_menu = menu.addMenu("&View")
        view_menu.addAction(self.heatmap_top_action)
        view_menu.addAction(self.heatmap_selection_action)
        view_menu.addSeparator()
        view_menu.addAction(self.log_dock.toggleViewAction())
        help_menu = menu.addMenu("&Help")
        help_menu.addAction(self.about_action)

        toolbar = self.addToolBar("Main")
        toolbar.setObjectName("main_toolbar")
        toolbar.setMovable(False)
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        for action in (self.open_library_action, self.open_queries_action):
            toolbar.addAction(action)
        toolbar.addSeparator()
        toolbar.addAction(self.search_action)
        toolbar.addAction(self.stop_action)
        toolbar.addSeparator()
        toolbar.addAction(self.export_all_action)
        toolbar.addAction(self.export_mirror_action)

    def _connect(self) -> None:
        self.search_panel.searchRequested.connect(self.start_search)
        self.search_panel.stopRequested.connect(self.stop_search)
        self.search_panel.dask_address.editingFinished.connect(self._dask_address_edited)
        self.library_panel.activeChanged.connect(self._set_active_library)
        self.library_panel.removeRequested.connect(self._remove_library)
        self.results.hitSelected.connect(self.show_hit)
        self.query_list.queryActivated.connect(self._filter_to_query)
        self.query_list.heatmapRequested.connect(lambda _rows: self.heatmap_selection())
        self.heatmap_panel.topHitsRequested.connect(self.heatmap_top_hits)
        self.heatmap_panel.selectionRequested.connect(self.heatmap_selection)
        self.heatmap_panel.pairClicked.connect(self._show_heatmap_pair)
        self.heatmap_panel.export_button.clicked.connect(lambda: self.export_heatmap(None))

    # ------------------------------------------------------------------ messages
    def log(self, text: str, *, status: bool = True) -> None:
        """Append ``text`` to the log (and show it in the status bar)."""
        self.log_view.appendPlainText(f"{time.strftime('%H:%M:%S')}  {text}")
        if status:
            self.statusBar().showMessage(text, 15000)

    def _error(self, title: str, text: str) -> None:
        self.log(f"{title}: {text}")
        QMessageBox.critical(self, title, text)

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

            def done(spectra, path=path, kind=kind):
                QApplication.restoreOverrideCursor()
                self._loaded(kind, path, spectra)

            def failed(exc, path=path):
                QApplication.restoreOverrideCursor()
                self._load_failed(path, exc)

            self._start_task(lambda: self.session.read(path), done, failed)
            return None
        try:
            spectra = self.session.read(path)
        except Exception as exc:  # every failure becomes a message box, never a crash
            self._load_failed(path, exc)
            return None
        return spectra if self._loaded(kind, path, spectra) else None

    def _start_task(self, function, on_done, on_error) -> BackgroundTask:
        task = run_task(function, on_done, on_error)
        self._tasks.add(task)
        task.worker.finished.connect(functools.partial(self._task_finished, task))
        return task

    def _task_finished(self, task: BackgroundTask) -> None:
        self._tasks.discard(task)

    def _load_failed(self, path: Path, exc: BaseException) -> None:
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
        if any(u.isLocalFile() and is_spectrum_file(u.toLocalFile()) for u in urls):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        paths = [p for p in paths if is_spectrum_file(p)]
        event.acceptProposedAction()
        for path in paths:
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

    # ------------------------------------------------------------------ search
    def start_search(
        self,
        params: SearchParameters | None = None,
        backend: str | None = None,
        dask_address: str | None = None,
    ) -> SearchController | None:
        """Search the queries against the active library in a worker thread.

        Parameters
        ----------
        params : SearchParameters, optional
            Default: the search panel's parameters (the panel shows what runs).
        backend : {"auto", "cpu", "cuda", "dask"}, optional
            Default: the panel's choice.  ``"dask"`` runs on the Dask cluster at
            ``dask_address``; the connection is made in the worker thread and
            kept for later searches while the address stays the same.
        dask_address : str, optional
            ``tcp://HOST:PORT`` or ``local:N`` (default: the panel's field).

        Returns
        -------
        SearchController or None
            None when a search is running or nothing is loaded.
        """
        s = self.session
        if self.controller is not None and self.controller.running:
            self.log("A search is already running")
            return None
        if s.library is None or s.queries is None:
            QMessageBox.information(
                self,
                "Nothing to search",
                "Open a library and query spectra first (File menu, or drop files here).",
            )
            return None
        if params is None:
            params = self.search_panel.parameters()
        else:
            self.search_panel.set_parameters(params)
        if backend is None:
            backend = self.search_panel.backend_name()
        else:
            self.search_panel.set_backend(backend)
        if dask_address is not None:
            self.search_panel.set_dask_address(dask_address)
        dask_client = None
        if backend == "dask":
            try:
                address = normalize_dask_address(self.search_panel.dask_address_text())
            except ValueError as exc:
                QMessageBox.information(self, "Dask cluster", f"{str(exc).capitalize()}.")
                return None
            dask_client = functools.partial(self.dask.client, address)
        self.search_panel.save_settings()
        s.begin_search(params, backend)
        self.pair_view.clear()
        self.results.model.clear(s.library_file.name if s.library_file else "")
        controller = SearchController(
            s.queries.spectra, s.library, params, backend, self, dask_client=dask_client
        )
        controller.chunk.connect(self._on_chunk)
        controller.progress.connect(self.search_panel.show_progress)
        controller.message.connect(self.log)
        controller.failed.connect(self._on_search_failed)
        controller.finished.connect(self._on_search_finished)
        self.controller = controller
        self.search_panel.set_running(True)
        self.search_action.setEnabled(False)
        self.stop_action.setEnabled(True)
        self._search_started = time.perf_counter()
        where = ""
        if backend == "dask":
            connected = self.dask.address == address
            where = f" on the Dask cluster at {address}" + ("" if connected else " (connecting…)")
        self.log(
            f"Searching {len(s.queries.spectra):,} queries against {len(s.library):,} spectra "
            f"({params.score}, tolerance {params.tolerance} Da, top {params.top_n or 'all'}){where}"
        )
        controller.start()
        self.searchStarted.emit()
        return controller

    def stop_search(self) -> None:
        """Stop the running search; hits found so far stay in the table."""
        if self.controller is not None and self.controller.running:
            self.controller.cancel()
            self.search_panel.stop_button.setEnabled(False)
            self.log("Stopping the search after the batch in flight…")

    def _on_chunk(self, chunk: HitTable, columns: dict) -> None:
        self.session.add_hits(chunk)
        self.results.model.append_columns(columns)
        if self.results.current_row() < 0 and self.results.model.rowCount():
            self.results.select_row(0)

    def _on_search_failed(self, text: str) -> None:
        dask = self.controller is not None and self.controller.backend == "dask"
        self._error("Dask cluster" if dask else "Search failed", text)

    def _dask_address_edited(self) -> None:
        """Close the kept Dask client when the address changed (in the background)."""
        try:
            address = normalize_dask_address(self.search_panel.dask_address_text())
        except ValueError:
            address = None
        old = self.dask.address
        if old is None or old == address or self.searching:
            return  # a running search closes the old client when the next one starts
        self._start_task(
            self.dask.close,
            lambda _result, old=old: self.log(f"Closed the connection to {old}"),
            lambda exc: self.log(f"Closing {old}: {exc}"),
        )

    def _on_search_finished(self, cancelled: bool) -> None:
        controller = self.controller
        s = self.session
        name, device = controller.backend_device if controller is not None else ("", "")
        error = controller.error if controller is not None else None
        s.finish_search(name, device, cancelled=cancelled, error=error)
        model = self.results.model
        if model._sort_column >= 0:
            model.sort(model._sort_column, model._sort_order)
        elapsed = time.perf_counter() - self._search_started
        where = f" on {s.device}" if s.device else ""
        if controller is not None and controller.error:
            state = "failed"
        elif cancelled:
            state = "stopped"
        else:
            state = "done"
        self.search_panel.set_running(False)
        self.search_panel.show_done(f"{state} · {len(s.hits):,} hits")
        self.search_action.setEnabled(True)
        self.stop_action.setEnabled(False)
        if state == "failed":  # the status bar keeps the reason
            self.log(f"Search failed after {elapsed:.1f} s: {controller.error}")
        else:
            self.log(f"Search {state}: {len(s.hits):,} hits in {elapsed:.1f} s{where}")
        self.searchFinished.emit(cancelled)

    @property
    def searching(self) -> bool:
        """True while a search runs."""
        return self.controller is not None and self.controller.running

    # ------------------------------------------------------------------ hits
    def show_hit(self, view_row: int) -> None:
        """Show the mirror plot and matched peaks of visible row ``view_row``."""
        model = self.results.model
        s = self.session
        if view_row < 0 or view_row >= model.rowCount() or s.hits_queries is None:
            self.pair_view.clear()
            return
        row = model.row_of(view_row)
        self.show_pair(int(row["query_index"]), int(row["library_index"]))

    def show_pair(self, query_index: int, library_index: int) -> None:
        """Mirror plot of query ``query_index`` against library spectrum ``library_index``."""
        s = self.session
        queries = s.hits_queries if s.hits_queries is not None else s.queries.spectra
        library = s.hits_library if s.hits_library is not None else s.library
        pair = compute_pair(queries, query_index, library, library_index, s.params)
        self.pair_view.show_pair(
            pair, title=pair.library_label.split(" (")[0], score_name=_score_name(s.params)
        )

    def _show_heatmap_pair(self, rows, r: int, columns, c: int) -> None:
        pair = compute_pair(rows, r, columns, c, self.session.params)
        self.heatmap_pair_view.show_pair(
            pair,
            title=pair.library_label.split(" (")[0],
            score_name=_score_name(self.session.params),
        )

    def _filter_to_query(self, row: int) -> None:
        spectra = self.session.queries.spectra if self.session.queries else None
        if spectra is not None:
            self.tabs.setCurrentIndex(0)
            self.results.filter_edit.setText(str(spectra.metadata["id"][row]))

    def hits_for_export(self, which: str = "all") -> HitTable:
        """``"all"`` hits, the ``"filtered"`` rows as shown, or the ``"best"`` per query."""
        if which == "filtered":
            return self.results.model.hit_table(visible=True)
        return self.session.select_hits(which)

    # ------------------------------------------------------------------ export
    def _save_path(self, caption: str, suggested: str, filters: str) -> Path | None:
        start = Path(str(settings().value("last_dir", str(Path.home())))) / suggested
        path, _ = QFileDialog.getSaveFileName(self, caption, str(start), filters)
        if not path:
            return None
        self._remember_dir(path)
        return Path(path)

    def export_hits(self, path: str | Path | None = None, which: str = "all") -> Path | None:
        """Write hits (``which``: all, filtered or best) to TSV/CSV/Parquet with provenance."""
        if self.session.hits_queries is None:
            QMessageBox.information(self, "No hits", "Run a search first.")
            return None
        if path is None:
            path = self._save_path("Export hits", f"hits_{which}.tsv", HITS_FILTER)
            if path is None:
                return None
        try:
            out = self.session.export(path, self.hits_for_export(which))
        except Exception as exc:
            self._error("Export failed", f"{path}: {exc}")
            return None
        self.log(f"Wrote {which} hits to {out}")
        return out

    def export_mirror(self, path: str | Path | None = None) -> Path | None:
        """Write the current mirror plot to PNG or SVG."""
        view = self.heatmap_pair_view if self.tabs.currentIndex() == 1 else self.pair_view
        if view.pair is None:
            QMessageBox.information(self, "No mirror plot", "Select a hit first.")
            return None
        if path is None:
            path = self._save_path("Export mirror plot", "mirror.png", IMAGE_FILTER)
            if path is None:
                return None
        try:
            out = view.export_image(path)
        except Exception as exc:
            self._error("Export failed", f"{path}: {exc}")
            return None
        self.log(f"Wrote the mirror plot to {out}")
        return out

    def export_heatmap(self, path: str | Path | None = None) -> Path | None:
        """Write the heatmap to PNG or SVG."""
        if self.heatmap_panel.request is None:
            QMessageBox.information(self, "No heatmap", "Compute a heatmap first.")
            return None
        if path is None:
            path = self._save_path("Export heatmap", "heatmap.png", IMAGE_FILTER)
            if path is None:
                return None
        try:
            out = self.heatmap_panel.export_image(path)
        except Exception as exc:
            self._error("Export failed", f"{path}: {exc}")
            return None
        self.log(f"Wrote the heatmap to {out}")
        return out

    # ------------------------------------------------------------------ heatmaps
    def heatmap_top_hits(
        self, query_rows: list[int] | None = None, top_n: int | None = None
    ) -> None:
        """Heatmap of queries (default: selected, else the current hit's) × their top hits."""
        s = self.session
        if s.hits_queries is None or not len(s.hits):
            QMessageBox.information(self, "No hits", "Run a search first.")
            return
        rows = query_rows if query_rows is not None else self.query_list.selected_rows()
        if not rows:
            current = self.results.current_row()
            if current >= 0:
                rows = [int(self.results.model.row_of(current)["query_index"])]
            else:
                rows = sorted(set(s.hits.query_index.tolist()))[:20]
        n = top_n or min(s.params.top_n or 10, 20)
        request = top_hits_request(s.hits, s.hits_queries, s.hits_library, rows, n)
        if request is None:
            QMessageBox.information(self, "No hits", "The selected queries have no hits.")
            return
        self._compute_heatmap(request)

    def heatmap_selection(self, rows: list[int] | None = None) -> None:
        """All-vs-all heatmap of the selected queries (at least two)."""
        s = self.session
        if s.queries is None:
            return
        rows = rows if rows is not None else self.query_list.selected_rows()
        request = selection_request(s.queries.spectra, rows)
        if request is None:
            QMessageBox.information(
                self, "Select queries", "Select at least two queries in the query list."
            )
            return
        self._compute_heatmap(request)

    def _compute_heatmap(self, request: HeatmapRequest) -> None:
        params = (
            self.search_panel.parameters()
            if self.session.hits_queries is None
            else self.session.params
        )
        backend = _local_backend(self.search_panel.backend_name())
        self.tabs.setCurrentIndex(1)
        self.heatmap_panel.set_busy(f"Computing {request.title}…")

        def done(scores, request=request):
            self.heatmap_panel.show_matrix(request, scores)
            self.heatmap_pair_view.clear()
            self.log(f"Heatmap: {request.title}", status=True)
            self.heatmapReady.emit()

        def failed(exc):
            self.heatmap_panel.show_error(f"Heatmap failed: {exc}")
            self._error("Heatmap failed", f"{type(exc).__name__}: {exc}")

        self._start_task(lambda: request.compute(params, backend), done, failed)

    # ------------------------------------------------------------------ state
    def _restore_state(self) -> None:
        if not self.persist_settings:
            return
        s = settings()
        geometry = s.value("window/geometry")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        for name in ("main_splitter", "left_splitter", "results_splitter", "heatmap_splitter"):
            state = s.value(f"window/{name}")
            if isinstance(state, QByteArray):
                getattr(self, name).restoreState(state)

    def save_state(self) -> None:
        """Store window geometry, splitters and search settings (if this window persists)."""
        if not self.persist_settings:
            return
        s = settings()
        s.setValue("window/geometry", self.saveGeometry())
        for name in ("main_splitter", "left_splitter", "results_splitter", "heatmap_splitter"):
            s.setValue(f"window/{name}", getattr(self, name).saveState())
        self.search_panel.save_settings()
        s.sync()

    def _remember_dir(self, path: str | Path) -> None:
        if self.persist_settings:
            settings().setValue("last_dir", str(Path(path).parent))

    def shutdown(self) -> None:
        """Stop the search and background tasks (waits for their threads)."""
        if self.controller is not None and self.controller.running:
            self.controller.cancel()
            self.controller.wait(30000)
        for runner in list(self._tasks):
            runner.wait(30000)
        self.dask.close()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        self.save_state()
        self.shutdown()
        super().closeEvent(event)

    def _about(self) -> None:
        from simms_gui.version import __version__

        QMessageBox.about(
            self,
            "About SimMS",
            f"SimMS desktop {__version__}\n\nExact greedy-cosine search of MS/MS spectral "
            "libraries (the score of matchms CosineGreedy), on the CPU or an NVIDIA GPU.",
        )


def _local_backend(name: str) -> str:
    """The backend of work done in this process (heatmaps, warm-up): Dask means auto."""
    return "auto" if name == "dask" else name


def _score_name(params: SearchParameters) -> str:
    return "modified cosine" if params.modified else "cosine"


def first_start() -> bool:
    """True the first time the application starts (then remembers it)."""
    s = settings()
    first = not s.value("first_start_done", False, type=bool)
    if first:
        s.setValue("first_start_done", True)
        s.sync()
    return first
