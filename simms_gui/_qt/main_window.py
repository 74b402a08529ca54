"""The SimMS main window: files, search, results, mirror plots, heatmaps."""

from __future__ import annotations

import time

from PyQt6.QtCore import QByteArray, QEvent, Qt, QTimer, pyqtSignal
from PyQt6.QtGui import (
    QAction,
    QCloseEvent,
    QDragEnterEvent,
    QDropEvent,
    QGuiApplication,
    QKeySequence,
)
from PyQt6.QtWidgets import (
    QDockWidget,
    QGroupBox,
    QMainWindow,
    QPlainTextEdit,
    QSplitter,
    QTabWidget,
    QWidget,
)

from engine.backends import interactive_threads
from engine.warmup import warm_up_in_background, warming_up
from simms_gui._qt.analyses_controller import AnalysesController
from simms_gui._qt.desk import Desk, pump_events
from simms_gui._qt.files_controller import FilesController, droppable
from simms_gui._qt.heatmap_panel import HeatmapPanel
from simms_gui._qt.help_menu import install_help_menu
from simms_gui._qt.hits_controller import HitsController
from simms_gui._qt.library_panel import LibraryPanel
from simms_gui._qt.network_view import NetworkTab
from simms_gui._qt.query_list import QueryList
from simms_gui._qt.query_status_view import QueryStatusPanel
from simms_gui._qt.repository_controller import install_repository
from simms_gui._qt.results_view import ResultsPanel
from simms_gui._qt.search_controller import SearchController
from simms_gui._qt.search_panel import SearchPanel
from simms_gui._qt.sessions_controller import SessionsController
from simms_gui._qt.settings import first_start, settings
from simms_gui._qt.spectrum_view import PairView
from simms_gui._qt.status_line import SlowSteps
from simms_gui.model import Session, TaskRunner
from simms_gui.model.analyses import local

__all__ = ["MainWindow", "first_start"]


#: Below this screen height the Spectra and Queries panels share one tabbed dock.
COMPACT_HEIGHT = 1000
#: The kernels' note, while numba compiles them (or loads them from its cache).
KERNELS_NOTE = "Preparing the search kernels (first run only)…"
#: Threads of the session's runner under the window: a file read that blocks (a slow
#: disk, a FIFO) never holds back a search.
RUNNER_THREADS = 16


class MainWindow(QMainWindow):
    """Main window of SimMS desktop: widgets, and the controllers that join them to a session.

    The session runs its work in a thread pool (its runner) and announces
    changes; the controllers show them: ``files``, ``searches``, ``hits``,
    ``sessions`` and ``analyses`` (plain objects, each given what it uses).

    Parameters
    ----------
    session : Session, optional
        The headless model shown (a new one when omitted); its runner becomes a
        thread pool, and it prepares what the window shows (``display``).

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
    sessionOpened(str)
        A session file was opened (its path).
    """

    fileLoaded = pyqtSignal(str, str)  # noqa: N815
    loadFailed = pyqtSignal(str)  # noqa: N815
    searchStarted = pyqtSignal()  # noqa: N815
    searchFinished = pyqtSignal(bool)  # noqa: N815
    heatmapReady = pyqtSignal()  # noqa: N815
    sessionOpened = pyqtSignal(str)  # noqa: N815

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
        self.session.runner = TaskRunner(RUNNER_THREADS, pump_events, interactive_threads())
        self.session.display = True
        self.setWindowTitle("SimMS — MS/MS library search")
        self.setAcceptDrops(True)

        self.search_panel = SearchPanel(persist_settings=persist_settings)
        self.library_panel = LibraryPanel()
        self.query_list = QueryList()
        self.results = ResultsPanel()
        self.pair_view = PairView()
        self.heatmap_panel = HeatmapPanel()
        self.heatmap_pair_view = PairView()

        self.results_splitter = QSplitter(Qt.Orientation.Vertical)
        self.results_splitter.addWidget(self.results)
        self.results_splitter.addWidget(self.pair_view)
        self.results_splitter.setSizes([380, 480])
        self.heatmap_splitter = QSplitter(Qt.Orientation.Vertical)
        self.heatmap_splitter.addWidget(self.heatmap_panel)
        self.heatmap_splitter.addWidget(self.heatmap_pair_view)
        self.heatmap_splitter.setSizes([560, 340])
        for splitter in (self.results_splitter, self.heatmap_splitter):
            splitter.setCollapsible(1, False)  # the mirror plot keeps its minimum height

        self.tabs = QTabWidget()
        self.tabs.addTab(self.results_splitter, "Results")
        self.tabs.addTab(self.heatmap_splitter, "Heatmap")
        self.network_tab = NetworkTab(self.session, self.query_list)
        self.tabs.addTab(self.network_tab, "Network")
        self.query_status = QueryStatusPanel(self.session)
        self.tabs.addTab(self.query_status, "Query status")
        self.tabs.setDocumentMode(True)
        self.setCentralWidget(self.tabs)
        self._make_docks()

        self.log_view = QPlainTextEdit()
        self.log_view.setReadOnly(True)
        self.log_view.setMaximumBlockCount(5000)
        self.log_dock = QDockWidget("Log", self)
        self.log_dock.setObjectName("log_dock")
        self.log_dock.setWidget(self.log_view)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.log_dock)
        self.log_dock.hide()

        self.slow_steps = SlowSteps()
        self.statusBar().addPermanentWidget(self.slow_steps)
        self.desk = Desk(self, self.log_view, self.statusBar(), self.slow_steps, persist_settings)
        self._make_controllers()
        self._make_actions()
        self.repositories = install_repository(self)
        install_help_menu(self)
        self.statusBar().showMessage("Open a library and queries, or drop files here", 0)
        if self.search_panel.settings_note:
            self.log(self.search_panel.settings_note)
        self.resize(1600, 1000)
        self.arrange_docks()
        self._restore_state()
        # compile the search kernels while the user looks around, not on first Search
        warm_up_in_background(local(self.search_panel.backend_name()))
        self._warm_up_started = time.perf_counter()
        self._warm_up_timer = QTimer(self, interval=250, timeout=self._check_warm_up)
        self._warm_up_timer.start()
        self._check_warm_up()

    def _check_warm_up(self) -> None:
        """Say, beside the status messages, while the kernels compile, and when they are ready.

        The note has its own place in the status bar, so it never replaces a
        later message such as "Search done", nor is it replaced by one.
        """
        seconds = time.perf_counter() - self._warm_up_started
        if warming_up():
            if seconds > 2.0:  # loading them from numba's cache takes about a second
                self.slow_steps.set_step("kernels", f"{KERNELS_NOTE} {seconds:.0f} s")
            return
        self._warm_up_timer.stop()
        if seconds > 2.0:
            self.slow_steps.clear_step("kernels", "Search kernels ready")
            if self.session.search_task is None:  # else the search said its own wait
                self.log(f"Search kernels compiled and cached in {seconds:.0f} s", status=False)
        else:
            self.slow_steps.clear_step("kernels")

    def _make_controllers(self) -> None:
        s, desk = self.session, self.desk
        self.files = FilesController(
            s, desk, self.library_panel, self.query_list, self.search_panel,
            self.fileLoaded, self.loadFailed,
        )  # fmt: skip
        self.searches = SearchController(
            s, desk, self.search_panel, self.results, self.pair_view,
            (QAction("&Search", self), QAction("S&top", self)),
            self.searchStarted, self.searchFinished,
        )  # fmt: skip
        self.hits = HitsController(
            s, desk, self.results, self.pair_view, self.query_list, self.tabs,
            {1: self.heatmap_pair_view, 2: self.network_tab.pair_view},
        )  # fmt: skip
        self.query_status.queryActivated.connect(self.hits.filter_to_query)
        self.sessions = SessionsController(
            s, desk, self.search_panel, self.results, self.files, self.sessionOpened, self
        )
        self.analyses = AnalysesController(
            s, desk, self.heatmap_panel, self.heatmap_pair_view, self.search_panel,
            self.results, self.query_list, self.tabs, self.heatmapReady,
        )  # fmt: skip

    @property
    def confirm_unsaved(self) -> bool:
        """Ask "save first?" when the window closes with unsaved hits (the application)."""
        return self.sessions.confirm_unsaved

    @confirm_unsaved.setter
    def confirm_unsaved(self, value: bool) -> None:
        self.sessions.confirm_unsaved = bool(value)

    def _make_docks(self) -> None:
        """Search, Spectra and Queries as dock panels: closable, movable, floatable."""
        self.search_dock = self._dock("Search", "search_dock", self.search_panel)
        self.files_dock = self._dock("Spectra", "files_dock", self.library_panel)
        self.queries_dock = self._dock("Queries", "queries_dock", self.query_list)

    def _dock(self, title: str, name: str, widget: QWidget) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        for box in widget.findChildren(QGroupBox):  # the dock's title names the panel
            if box.title() == title:
                box.setTitle("")
                box.setFlat(True)
        dock.setAllowedAreas(
            Qt.DockWidgetArea.LeftDockWidgetArea | Qt.DockWidgetArea.RightDockWidgetArea
        )
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, dock)
        return dock

    def fit_to_screen(self, width: int = 1600, height: int = 1000) -> None:
        """Start at ``width`` x ``height``, or the screen's free area where that is smaller.

        Without this a 1366 x 768 laptop (or a window manager that does not
        shrink new windows) gets a window whose status bar and hit pane lie
        off screen.  The frame (title bar, borders) counts: until a window
        manager has framed the window its size is unknown, so the fit is made
        again once the window is shown.
        """
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is None:
            self.resize(width, height)
            return
        free = screen.availableGeometry()
        frame, inner = self.frameGeometry(), self.geometry()
        extra_w, extra_h = frame.width() - inner.width(), frame.height() - inner.height()
        self.resize(min(width, free.width() - extra_w), min(height, free.height() - extra_h))
        if width + extra_w > free.width() or height + extra_h > free.height():
            self.move(free.topLeft())  # moves the frame: the title bar on screen
        self._fit_when_framed = (extra_w, extra_h) == (0, 0) and not self.isVisible()

    def showEvent(self, event) -> None:  # noqa: N802  (Qt naming)
        super().showEvent(event)
        if getattr(self, "_fit_when_framed", False):
            self._fit_when_framed = False
            QTimer.singleShot(300, self.keep_on_screen)  # once the window manager framed it

    def keep_on_screen(self) -> None:
        """Shrink and move the window so that its frame lies in the screen's free area."""
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is not None and not screen.availableGeometry().contains(self.frameGeometry()):
            self.fit_to_screen(self.width(), self.height())

    def arrange_docks(self, compact: bool | None = None) -> None:
        """Lay the side panels out for the screen: stacked, or Spectra/Queries tabbed.

        ``compact`` (default: a screen under :data:`COMPACT_HEIGHT` pixels high)
        puts Spectra and Queries in one tabbed dock so both lists show many rows.
        """
        if compact is None:
            screen = self.screen() or QGuiApplication.primaryScreen()
            height = screen.availableGeometry().height() if screen is not None else 1080
            compact = height < COMPACT_HEIGHT
        # docks re-added only for a new layout: taking tabbed docks apart and tabbing
        # them again leaves Qt's old tab bar drawn over the status bar
        relayout = getattr(self, "compact_docks", None) != compact
        if relayout:
            for dock in (self.search_dock, self.files_dock, self.queries_dock):
                self.removeDockWidget(dock)
                self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, dock)
                dock.show()
        Vertical, Horizontal = Qt.Orientation.Vertical, Qt.Orientation.Horizontal  # noqa: N806
        # the search form whole when there is room (it scrolls when there is not)
        search = self.search_panel.preferred_height()
        if compact:
            if relayout:
                self.tabifyDockWidget(self.files_dock, self.queries_dock)
                self.queries_dock.raise_()
            self.resizeDocks([self.search_dock, self.queries_dock], [42, 58], Vertical)
        else:
            rest = max(self.height() - search - 120, 300)
            self.resizeDocks(
                [self.search_dock, self.files_dock, self.queries_dock],
                [search, int(0.4 * rest), int(0.6 * rest)],
                Vertical,
            )
        self.resizeDocks([self.search_dock], [400 if compact else 470], Horizontal)
        self.compact_docks = compact

    # ------------------------------------------------------------------ building
    def _action(self, text: str, slot, shortcut=None, tip: str = "", action=None) -> QAction:
        action = action or QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        if tip:
            action.setToolTip(tip)  # no status tip: it would hide the status message
        action.triggered.connect(lambda _checked=False: slot())
        return action

    def _make_actions(self) -> None:
        a = self._action
        self.open_library_action = a(
            "Open &library…",
            lambda: self.files.open_dialog("library"),
            QKeySequence.StandardKey.Open,
            "Open an MGF, MSP, mzML, mzXML or JSON spectral library",
        )
        self.open_queries_action = a(
            "Open &queries…",
            lambda: self.files.open_dialog("queries"),
            "Ctrl+Shift+O",
            "Open the query spectra to search",
        )
        self.demo_action = a("Load &demo data", self.files.load_demo, None, "Load the bundled demo")
        search, stop = self.searches.search_action, self.searches.stop_action
        self.search_action = a(
            "", self.searches.start, "Ctrl+R", "Search queries vs library", search
        )
        self.stop_action = a(
            "", self.searches.stop, "Esc", "Stop; hits found so far are kept", stop
        )
        self.stop_action.setEnabled(False)
        self.export_all_action = a(
            "Export &all hits…", lambda: self.hits.export_hits(None, "all"), "Ctrl+E"
        )
        self.export_filtered_action = a(
            "Export &filtered hits…", lambda: self.hits.export_hits(None, "filtered")
        )
        self.export_best_action = a(
            "Export &best hit per query…", lambda: self.hits.export_hits(None, "best")
        )
        self.export_mirror_action = a("Export &mirror plot…", lambda: self.hits.export_mirror(None))
        self.export_heatmap_action = a(
            "Export &heatmap…", lambda: self.analyses.export_heatmap(None)
        )
        self.save_session_action = a(
            "&Save session…",
            lambda: self.sessions.save(None),
            QKeySequence.StandardKey.Save,
            "Save the files (by path and content hash), parameters, hits and selection",
        )
        self.open_session_action = a(
            "Open s&ession…",
            lambda: self.sessions.open(None),
            "Ctrl+Alt+O",
            "Open a saved session: its files are read again and its hits restored",
        )
        self.quit_action = a("&Quit", self.close, QKeySequence.StandardKey.Quit)
        self.heatmap_top_action = a(
            "Heatmap of &top hits", self.analyses.heatmap_top_hits, "Ctrl+H"
        )
        self.heatmap_selection_action = a(
            "Heatmap of &selection", self.analyses.heatmap_selection, "Ctrl+Shift+H"
        )
        self.about_action = QAction("&About SimMS", self)  # help_menu connects it

        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        _fill(file_menu, self.open_library_action, self.open_queries_action)
        self.recent_menu = file_menu.addMenu("Open &recent")
        self.recent_menu.aboutToShow.connect(lambda: self.files.fill_recent_menu(self.recent_menu))
        _fill(file_menu, self.demo_action, None, self.open_session_action, self.save_session_action)
        file_menu.addSeparator()
        _fill(
            file_menu.addMenu("&Export"), self.export_all_action, self.export_filtered_action,
            self.export_best_action, None, self.export_mirror_action, self.export_heatmap_action,
        )  # fmt: skip
        _fill(file_menu, None, self.quit_action)
        _fill(menu.addMenu("&Search"), self.search_action, self.stop_action)
        docks = (self.search_dock, self.files_dock, self.queries_dock, self.log_dock)
        _fill(
            menu.addMenu("&View"), self.heatmap_top_action, self.heatmap_selection_action, None,
            *(dock.toggleViewAction() for dock in docks),
        )  # fmt: skip
        _fill(menu.addMenu("&Help"), self.about_action)
        toolbar = self.addToolBar("Main")
        toolbar.setObjectName("main_toolbar")
        toolbar.setMovable(False)
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        _fill(
            toolbar, self.open_library_action, self.open_queries_action, None, self.search_action,
            self.stop_action, None, self.export_all_action, self.export_mirror_action,
        )  # fmt: skip

    # ------------------------------------------------------------------ messages
    def log(self, text: str, *, status: bool = True) -> None:
        """Append ``text`` to the log (and show it in the status bar)."""
        self.desk.log(text, status=status)

    # ------------------------------------------------------------------ state
    def _restore_state(self) -> None:
        if not self.persist_settings:
            return
        s = settings()
        geometry = s.value("window/geometry")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        else:  # first start: never larger than the screen
            self.fit_to_screen()
            self.arrange_docks()
        docks = s.value("window/docks")
        if isinstance(docks, QByteArray):
            self.restoreState(docks)
        for name in ("results_splitter", "heatmap_splitter"):
            state = s.value(f"window/{name}")
            if isinstance(state, QByteArray):
                getattr(self, name).restoreState(state)

    def save_state(self) -> None:
        """Store window geometry, splitters and search settings (if this window persists)."""
        if not self.persist_settings:
            return
        s = settings()
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/docks", self.saveState())
        for name in ("results_splitter", "heatmap_splitter"):
            s.setValue(f"window/{name}", getattr(self, name).saveState())
        self.search_panel.save_settings()
        s.sync()

    def shutdown(self) -> None:
        """Stop the session's tasks (waits for their threads) and its Dask client."""
        self.session.runner.shutdown(30.0)
        self.session.dask.close()

    # drag and drop
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        urls = event.mimeData().urls() if event.mimeData().hasUrls() else []
        if any(u.isLocalFile() and droppable(u.toLocalFile()) for u in urls):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        event.acceptProposedAction()
        for path in self.files.drop(paths):
            self.sessions.open(path)

    def event(self, event: QEvent) -> bool:
        # Status tips (a menu or toolbar entry under the mouse) would replace, and on
        # leaving clear, the status message ("Reading…", "Search done"); tooltips say
        # the same, so the status bar keeps the window's messages only.
        if event.type() == QEvent.Type.StatusTip:
            return True
        return super().event(event)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        if not self.sessions.confirm_close():
            event.ignore()
            return
        self.save_state()
        self.shutdown()
        super().closeEvent(event)


def _fill(menu, *actions: QAction | None) -> None:
    """Add ``actions`` to a menu or toolbar, None as a separator."""
    for action in actions:
        if action is None:
            menu.addSeparator()
        else:
            menu.addAction(action)
