"""Starting, following and stopping the search of the main window.

A mixin of :class:`~simms_gui._qt.main_window.MainWindow` (it uses the window's
widgets, session and signals).
"""

from __future__ import annotations

import functools
import time

from PyQt6.QtWidgets import (
    QMessageBox,
)

from engine import HitTable, SearchParameters
from simms_gui._qt.worker import SearchController
from simms_gui.dask_connection import normalize_dask_address
from simms_gui.reports import query_summary

__all__ = ["LARGE_RESULT_ROWS", "SearchControl"]

#: A search keeping every hit (top N "all") asks first when it could give more rows.
LARGE_RESULT_ROWS = 1_000_000


class SearchControl:
    """Starting, following and stopping the search of the main window."""

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
            if not self._confirm_all_hits(params, len(s.queries.spectra), len(s.library)):
                return None
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
            f"({params.score}, tolerance {params.tolerance} Da, top {params.top_n or 'all'}"
            + (f", q ≤ {params.fdr:g}" if params.fdr is not None else "")
            + f"){where}"
        )
        controller.start()
        self.searchStarted.emit()
        return controller

    def _confirm_all_hits(self, params: SearchParameters, n_queries: int, n_library: int) -> bool:
        """Ask before a search that keeps every hit could fill the table with millions of rows."""
        bound = n_queries * n_library
        if params.top_n != 0 or bound <= LARGE_RESULT_ROWS:
            return True
        answer = QMessageBox.question(
            self,
            "Keep every hit?",
            f"Top N is 'all': this search keeps every hit that passes the filters, up to "
            f"{bound:,} rows for {n_queries:,} queries × {n_library:,} library spectra.\n\n"
            "More than about a million rows need a lot of memory. Search anyway?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes

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
        job = controller.job if controller is not None else None
        if job is not None:  # q-values, isomers and cut queries for exports and the queries table
            s.set_answers(
                getattr(job, "q_values", None), controller.isomers, job.incomplete_queries
            )
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
        self.search_panel.show_done(f"{state} · {len(s.hits):,} hits", len(s.hits), state)
        self.search_action.setEnabled(True)
        self.stop_action.setEnabled(False)
        if state == "failed":  # the status bar keeps the reason
            self.log(f"Search failed after {elapsed:.1f} s: {controller.error}")
        else:
            self.log(f"Search {state}: {len(s.hits):,} hits in {elapsed:.1f} s{where}")
            if s.hits_queries is not None and s.hits_library is not None:
                summary = query_summary(s.hits_queries, s.hits_library, s.params, s.hits)
                self.log(summary, status=False)
                label = self.search_panel.progress_view.label
                label.setText(f"{label.text()}\n{summary}" if label.text() else summary)
        self.searchFinished.emit(cancelled)

    @property
    def searching(self) -> bool:
        """True while a search runs."""
        return self.controller is not None and self.controller.running


def local_backend(name: str) -> str:
    """The backend of work done in this process (heatmaps, warm-up): Dask means auto."""
    return "auto" if name == "dask" else name
