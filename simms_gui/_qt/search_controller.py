"""The window's search: asks the session for one, and shows what the session announces.

The path of a search: the Search button (or a script) calls
:meth:`SearchController.start`, which asks ``session.search()``; the session
runs a :class:`~simms_gui.model.SearchTask` in its runner's thread and
announces ``search_started``, ``progress``, ``hits`` and ``search_finished``;
this controller (and the hit table's model, for ``hits``) shows them on the
GUI thread.  Nothing reports back to the session.
"""

from __future__ import annotations

from PyQt6.QtCore import pyqtBoundSignal
from PyQt6.QtGui import QAction
from PyQt6.QtWidgets import QMessageBox

from engine import SearchParameters, SearchProgress
from simms_gui._qt.desk import Desk, on_main_thread
from simms_gui._qt.results_view import ResultsPanel
from simms_gui._qt.search_panel import SearchPanel
from simms_gui._qt.spectrum_view import PairView
from simms_gui.dask_connection import normalize_dask_address
from simms_gui.model import CallTask, SearchTask, Session
from simms_gui.model.events import SearchFinished, SearchStarted
from simms_gui.reports import query_summary

__all__ = ["LARGE_RESULT_ROWS", "SearchController"]

#: A search keeping every hit (top N "all") asks first when it could give more rows.
LARGE_RESULT_ROWS = 1_000_000


class SearchController:
    """Starts and stops searches; shows their start, progress and end.

    Parameters
    ----------
    session : Session
    desk : Desk
    panel : SearchPanel
    results : ResultsPanel
    pair_view : PairView
        The mirror plot under the table (cleared when a search starts).
    actions : tuple of (QAction, QAction)
        The window's Search and Stop actions.
    started, finished : pyqtBoundSignal
        The window's ``searchStarted()`` and ``searchFinished(bool)``.
    """

    def __init__(
        self,
        session: Session,
        desk: Desk,
        panel: SearchPanel,
        results: ResultsPanel,
        pair_view: PairView,
        actions: tuple[QAction, QAction],
        started: pyqtBoundSignal,
        finished: pyqtBoundSignal,
    ) -> None:
        self.session, self.desk, self.panel = session, desk, panel
        self.results, self.pair_view = results, pair_view
        self.search_action, self.stop_action = actions
        self.started, self.finished = started, finished
        events = session.events
        events.search_started.connect(self.on_started)
        events.progress.connect(self.on_progress)
        events.search_finished.connect(self.on_finished)
        events.message.connect(self.on_message)
        panel.searchRequested.connect(self.start)
        panel.stopRequested.connect(self.stop)
        panel.dask_address.editingFinished.connect(self.dask_address_edited)

    @property
    def searching(self) -> bool:
        """True while a search runs."""
        return self.session.state == "running"

    @property
    def task(self) -> SearchTask | None:
        """The last search."""
        return self.session.search_task

    def start(
        self,
        params: SearchParameters | None = None,
        backend: str | None = None,
        dask_address: str | None = None,
    ) -> SearchTask | None:
        """Search the queries against the active library (default: as the panel says).

        Returns the :class:`SearchTask`, or None when a search runs, nothing is
        loaded or the user declined.
        """
        s = self.session
        if self.searching:
            self.desk.log("A search is already running")
            return None
        if s.search_target is None or s.queries is None:
            self.desk.inform(
                "Nothing to search",
                "Open a library (or a repository) and query spectra first "
                "(File menu, or drop files here).",
            )
            return None
        if params is None:
            params = self.panel.parameters()
            if not self._confirm_all_hits(params, len(s.queries.spectra), len(s.search_target)):
                return None
        backend = backend or self.panel.backend_name()
        if backend == "dask":
            try:
                dask_address = normalize_dask_address(
                    dask_address if dask_address is not None else self.panel.dask_address_text()
                )
            except ValueError as exc:
                self.desk.inform("Dask cluster", f"{str(exc).capitalize()}.")
                return None
        self.panel.save_settings()
        return s.search(params, backend, dask_address)

    def _confirm_all_hits(self, params: SearchParameters, n_queries: int, n_library: int) -> bool:
        """Ask before a search that keeps every hit could fill the table with millions of rows."""
        bound = n_queries * n_library
        if params.top_n != 0 or bound <= LARGE_RESULT_ROWS:
            return True
        answer = QMessageBox.question(
            self.desk.parent,
            "Keep every hit?",
            f"Top N is 'all': this search keeps every hit that passes the filters, up to "
            f"{bound:,} rows for {n_queries:,} queries × {n_library:,} library spectra.\n\n"
            "More than about a million rows need a lot of memory. Search anyway?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes

    def stop(self) -> None:
        """Stop the running search; hits found so far stay in the table."""
        if self.searching:
            self.session.cancel()
            self.panel.stop_button.setEnabled(False)
            self.desk.log("Stopping the search after the batch in flight…")

    def dask_address_edited(self) -> None:
        """Close the kept Dask client when the address changed (as a task)."""
        try:
            address = normalize_dask_address(self.panel.dask_address_text())
        except ValueError:
            address = None
        dask = self.session.dask
        old = dask.address
        if old is None or old == address or self.searching:
            return  # a running search closes the old client when the next one starts
        task = CallTask(f"close {old}", dask.close)
        task.finished.connect(on_main_thread(lambda t: self.desk.log(f"Closed {old}: {t.state}")))
        self.session.runner.submit(task)

    # -- what the session announces ---------------------------------------------------
    @on_main_thread
    def on_started(self, event: SearchStarted) -> None:
        """Show the search as running, with its parameters."""
        if self.panel.parameters() != event.params:
            self.panel.set_parameters(event.params)
        self.panel.set_backend(event.backend)
        if event.dask_address is not None:
            self.panel.set_dask_address(event.dask_address)
        self.pair_view.clear()
        self.panel.set_running(True)
        self.search_action.setEnabled(False)
        self.stop_action.setEnabled(True)
        p = event.params
        where = ""
        if event.backend == "dask":
            connected = self.session.dask.address == event.dask_address
            where = f" on the Dask cluster at {event.dask_address}" + (
                "" if connected else " (connecting…)"
            )
        self.desk.log(
            f"Searching {event.n_queries:,} queries against {event.n_library:,} spectra "
            f"({p.score}, tolerance {p.tolerance} Da, top {p.top_n or 'all'}"
            + (f", q ≤ {p.fdr:g}" if p.fdr is not None else "")
            + f"){where}"
        )
        self.started.emit()

    @on_main_thread
    def on_progress(self, progress: SearchProgress) -> None:
        """Show the running search's progress (it comes before ``search_finished``)."""
        self.panel.show_progress(progress)

    @on_main_thread
    def on_message(self, text: str) -> None:
        """A notice of the engine (a GPU fallback, a Dask connection)."""
        self.desk.log(text)

    @on_main_thread
    def on_finished(self, event: SearchFinished) -> None:
        """Show how the search ended and the summary of its queries."""
        s, state = self.session, event.outcome
        self.results.model.resort()
        self.panel.set_running(False)
        self.panel.show_done(f"{state} · {event.n_hits:,} hits", event.n_hits, state)
        self.search_action.setEnabled(True)
        self.stop_action.setEnabled(False)
        if event.error:  # the status bar keeps the reason
            dask = event.backend == "dask"
            self.desk.error("Dask cluster" if dask else "Search failed", event.error)
            self.desk.log(f"Search failed after {event.seconds:.1f} s: {event.error}")
        else:
            where = f" on {event.device}" if event.device else ""
            waited = ""
            if event.compile_seconds >= 1.0:
                waited = f" (and {event.compile_seconds:.0f} s compiling kernels, first run only)"
            self.desk.log(
                f"Search {state}: {event.n_hits:,} hits in {event.search_seconds:.1f} s{where}"
                f"{waited}"
            )
            if s.hits_queries is not None and s.hits_library is not None:
                summary = query_summary(s.hits_queries, s.hits_library, s.params, s.hits)
                self.desk.log(summary, status=False)
                label = self.panel.progress_view.label
                label.setText(f"{label.text()}\n{summary}" if label.text() else summary)
        self.finished.emit(event.cancelled)
