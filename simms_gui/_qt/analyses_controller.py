"""The window's analyses beside the search: heatmaps and clusterings, as session tasks.

A heatmap is asked of the session (``session.heatmap()``, a task in its
runner); ``heatmap_started`` and ``heatmap_ready`` are shown here.  Networks
have their tab (:class:`~simms_gui._qt.network_view.NetworkTab`), which
listens to the session the same way.
"""

from __future__ import annotations

from pathlib import Path

from PyQt6.QtCore import pyqtBoundSignal
from PyQt6.QtWidgets import QTabWidget

from engine import ClusterResult
from simms_gui._qt.desk import Desk, on_main_thread
from simms_gui._qt.heatmap_panel import HeatmapPanel
from simms_gui._qt.query_list import QueryList
from simms_gui._qt.results_view import ResultsPanel
from simms_gui._qt.search_panel import SearchPanel
from simms_gui._qt.spectrum_view import PairView
from simms_gui.model import Session, Task
from simms_gui.model.analyses import local
from simms_gui.model.events import HeatmapReady
from simms_gui.model.requests import HeatmapRequest, selection_request, top_hits_request
from simms_gui.pairs import compute_pair, pair_row

__all__ = ["IMAGE_FILTER", "AnalysesController"]

IMAGE_FILTER = "PNG image (*.png);;SVG image (*.svg)"


class AnalysesController:
    """Heatmaps (top hits, all vs all) and the log of clusterings.

    Parameters
    ----------
    session : Session
    desk : Desk
    panel : HeatmapPanel
    pair_view : PairView
        The mirror plot of a clicked heatmap cell.
    search_panel : SearchPanel
        The parameters and backend of a heatmap before any search.
    results : ResultsPanel
    query_list : QueryList
    tabs : QTabWidget
        The heatmap is its second tab.
    ready : pyqtBoundSignal
        The window's ``heatmapReady()``.
    """

    def __init__(
        self,
        session: Session,
        desk: Desk,
        panel: HeatmapPanel,
        pair_view: PairView,
        search_panel: SearchPanel,
        results: ResultsPanel,
        query_list: QueryList,
        tabs: QTabWidget,
        ready: pyqtBoundSignal,
    ) -> None:
        self.session, self.desk, self.panel, self.pair_view = session, desk, panel, pair_view
        self.search_panel, self.results, self.query_list = search_panel, results, query_list
        self.tabs, self.ready = tabs, ready
        session.events.heatmap_started.connect(self.on_heatmap_started)
        session.events.heatmap_ready.connect(self.on_heatmap_ready)
        session.events.clusters.connect(self.on_clusters)
        panel.topHitsRequested.connect(self.heatmap_top_hits)
        panel.selectionRequested.connect(self.heatmap_selection)
        panel.pairClicked.connect(self.show_heatmap_pair)
        panel.export_button.clicked.connect(lambda: self.export_heatmap(None))
        query_list.heatmapRequested.connect(lambda _rows: self.heatmap_selection())

    def heatmap_top_hits(
        self, query_rows: list[int] | None = None, top_n: int | None = None
    ) -> Task | None:
        """Heatmap of queries (default: selected, else the current hit's) × their top hits."""
        s = self.session
        if s.hits_queries is None or not len(s.hits):
            self.desk.inform("No hits", "Run a search first.")
            return None
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
            self.desk.inform("No hits", "The selected queries have no hits.")
            return None
        return self.compute(request)

    def heatmap_selection(self, rows: list[int] | None = None) -> Task | None:
        """All-vs-all heatmap of the selected queries (at least two)."""
        s = self.session
        if s.queries is None:
            return None
        rows = rows if rows is not None else self.query_list.selected_rows()
        request = selection_request(s.queries.spectra, rows)
        if request is None:
            self.desk.inform("Select queries", "Select at least two queries in the query list.")
            return None
        return self.compute(request)

    def compute(self, request: HeatmapRequest) -> Task:
        """Score a heatmap in the session's runner (the search's parameters, else the panel's)."""
        s = self.session
        params = self.search_panel.parameters() if s.hits_queries is None else s.params
        return s.heatmap(request, params, local(self.search_panel.backend_name()))

    @on_main_thread
    def on_heatmap_started(self, request: HeatmapRequest) -> None:
        """Show the heatmap tab, busy."""
        self.tabs.setCurrentIndex(1)
        self.panel.set_busy(f"Computing {request.title}…")

    @on_main_thread
    def on_heatmap_ready(self, event: HeatmapReady) -> None:
        """Show a heatmap's scores, or why there are none."""
        if event.error is not None:
            self.panel.show_error(f"Heatmap failed: {event.error}")
            self.desk.error("Heatmap failed", event.error)
            return
        self.panel.show_matrix(event.request, event.scores)
        self.pair_view.clear()
        self.desk.log(f"Heatmap: {event.request.title}", status=True)
        self.ready.emit()

    @on_main_thread
    def on_clusters(self, result: ClusterResult) -> None:
        """Log a clustering's summary."""
        self.desk.log(f"Clustered: {result.summary()}")

    def show_heatmap_pair(self, rows, r: int, columns, c: int) -> None:
        """The mirror plot of a heatmap cell."""
        params = self.session.params
        pair = compute_pair(rows, r, columns, c, params)
        request = self.panel.request
        sides = ("query", "library")
        if request is not None and request.column_title == "query":  # all vs all queries
            sides = (f"query {r}", f"query {c}")
        row = pair_row(rows, r, columns, c, params, pair)
        self.pair_view.show_pair(pair, params, sides=sides, row=row)

    def export_heatmap(self, path: str | Path | None = None) -> Path | None:
        """Write the heatmap to PNG or SVG."""
        if self.panel.request is None:
            self.desk.inform("No heatmap", "Compute a heatmap first.")
            return None
        if path is None:
            chosen = self.desk.save_path("Export heatmap", "heatmap.png", IMAGE_FILTER)
            if chosen is None:
                return None
            path = chosen[0]
        return self.desk.write("the heatmap", path, lambda: self.panel.export_image(path))
