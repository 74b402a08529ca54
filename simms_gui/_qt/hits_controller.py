"""The window's hits: the mirror plot of a hit or query, the selection, the exports."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
from PyQt6.QtWidgets import QTabWidget

from engine import HitTable
from simms_gui._qt.desk import Desk, on_main_thread
from simms_gui._qt.hit_export import HITS_FILTER, format_of
from simms_gui._qt.query_list import QueryList
from simms_gui._qt.results_view import ResultsPanel
from simms_gui._qt.spectrum_view import PairView
from simms_gui.model import Session
from simms_gui.model.answers import best_hits
from simms_gui.model.events import Restored, Selection
from simms_gui.pairs import compute_pair, pair_row, spectrum_label

__all__ = ["FIGURE_FILTER", "HitsController", "PARQUET_MISSING", "hits_filter"]

#: Why Parquet is not offered when it cannot be written.
PARQUET_MISSING = "Parquet export needs pyarrow: pip install 'simms-desktop[parquet]'"
#: Mirror plots export to PNG, SVG and PDF (vector, page of the figure's size).
FIGURE_FILTER = "PNG image, 300 dpi (*.png);;SVG image (*.svg);;PDF document (*.pdf)"


def parquet_writable() -> bool:
    """True when pyarrow can be imported (pandas writes Parquet with it)."""
    return importlib.util.find_spec("pyarrow") is not None


def hits_filter() -> str:
    """File types of the hit export dialog: Parquet only where it can be written."""
    if parquet_writable():
        return HITS_FILTER
    return ";;".join(f for f in HITS_FILTER.split(";;") if "parquet" not in f)


class HitsController:
    """Shows the hit or query picked, keeps the session's selection and table view, exports.

    Parameters
    ----------
    session : Session
    desk : Desk
    results : ResultsPanel
        The hit table (its model listens to the session's ``hits`` itself).
    pair_view : PairView
        The mirror plot under the table.
    query_list : QueryList
    tabs : QTabWidget
        The window's tabs (the hit table is the first).
    pair_views : dict of int to PairView
        The mirror plots of the other tabs, by tab index (exports take the one shown).
    """

    def __init__(
        self,
        session: Session,
        desk: Desk,
        results: ResultsPanel,
        pair_view: PairView,
        query_list: QueryList,
        tabs: QTabWidget,
        pair_views: dict[int, PairView],
    ) -> None:
        self.session, self.desk, self.results, self.pair_view = session, desk, results, pair_view
        self.query_list, self.tabs, self.pair_views = query_list, tabs, pair_views
        session.events.hits.connect(results.model.show_hits)  # one path: stream and restore
        session.events.selection.connect(self.on_selection)
        session.events.restored.connect(self.on_restored)
        results.hitSelected.connect(self.show_hit)
        results.hitSelected.connect(self._selected)
        results.viewChanged.connect(self._view_changed)
        query_list.queryActivated.connect(self.filter_to_query)
        query_list.querySelected.connect(self.show_query)
        query_list.table.selectionModel().selectionChanged.connect(self._queries_selected)

    # -- showing ----------------------------------------------------------------------
    def show_hit(self, view_row: int) -> None:
        """Show the mirror plot, hit details and matched peaks of visible row ``view_row``."""
        model = self.results.model
        if view_row < 0 or view_row >= model.rowCount() or self.session.hits_queries is None:
            self.pair_view.clear()
            return
        row = model.row_of(view_row)
        self.show_pair(int(row["query_index"]), int(row["library_index"]), row=row)

    def show_pair(self, query_index: int, library_index: int, *, row=None) -> None:
        """Mirror plot and details of a query against a library spectrum (their indices)."""
        s = self.session
        queries = s.hits_queries if s.hits_queries is not None else s.queries.spectra
        library = s.hits_library if s.hits_library is not None else s.library
        pair = compute_pair(queries, query_index, library, library_index, s.params)
        if row is None:  # not a row of the table (a query's best hit, a script)
            row = pair_row(queries, query_index, library, library_index, s.params, pair)
        self.pair_view.show_pair(pair, s.params, row=row)

    def filter_to_query(self, row: int) -> None:
        """List the hits of query ``row`` only."""
        spectra = self.session.queries.spectra if self.session.queries else None
        if spectra is not None:
            self.tabs.setCurrentIndex(0)
            self.results.filter_to_query(row, spectrum_label(spectra, row))
            self.desk.log(f"Hits of query {spectrum_label(spectra, row)} only", status=True)

    def show_query(self, row: int) -> None:
        """Show the best hit of query ``row`` (selected in the table when it is listed)."""
        s = self.session
        spectra = s.queries.spectra if s.queries else None
        if spectra is None or not 0 <= row < len(spectra):
            return
        hits = s.hits if s.hits_queries is not None else None
        mine = np.flatnonzero(hits.query_index == row) if hits is not None else np.empty(0)
        if not mine.size:
            self.pair_view.clear()
            self.pair_view.mirror.hint.setText(
                f"No hits for query {spectrum_label(spectra, row)}"
                + ("" if hits is not None else ": run a search first")
            )
            return
        # a tie decided as in the table (order_ties), never by library position
        best = best_hits(hits.take(mine), s.hits_queries, s.hits_library, s.params)
        library_index = int(best.library_index[0])
        self.tabs.setCurrentIndex(0)
        view_row = self.results.model.find_row(row, library_index)
        if view_row >= 0:
            self.results.select_row(view_row)
        else:
            self.show_pair(row, library_index)

    def current_pair_view(self) -> PairView:
        """The pair view of the tab shown: hit table, heatmap or network."""
        return self.pair_views.get(self.tabs.currentIndex(), self.pair_view)

    # -- the session's selection and table view ---------------------------------------
    def _selected(self, view_row: int) -> None:
        model = self.results.model
        if 0 <= view_row < model.rowCount():
            row = model.row_of(view_row)
            self.session.selected_hit = (int(row["query_index"]), int(row["library_index"]))

    def _queries_selected(self, *_args) -> None:
        self.session.selected_queries = self.query_list.selected_rows()

    def _view_changed(self, view) -> None:
        self.session.table_view = view

    @on_main_thread
    def on_restored(self, event: Restored) -> None:
        """A session was opened: its table filters and sort (its hits follow)."""
        spectra = self.session.hits_queries
        query = event.table_view.query
        name = "" if spectra is None or query is None else spectrum_label(spectra, query)
        self.results.set_view_state(event.table_view, name)

    @on_main_thread
    def on_selection(self, event: Selection) -> None:
        """Show the session's selection (set from a script or a session file)."""
        self.query_list.select_rows(list(event.queries))
        if event.hit is not None:
            row = self.results.model.find_row(*event.hit)
            if row >= 0:
                self.results.select_row(row)

    # -- export -----------------------------------------------------------------------
    def hits_for_export(self, which: str = "all") -> HitTable:
        """``"all"`` hits, the ``"filtered"`` rows as shown, or the ``"best"`` per query."""
        if which == "filtered":
            return self.results.model.hit_table(visible=True)
        return self.session.select_hits(which)

    def export_hits(
        self, path: str | Path | None = None, which: str = "all", format: str | None = None
    ) -> Path | None:
        """Write hits (``which``: all, filtered or best) with provenance and q-values.

        ``format``: ``"tsv"``, ``"csv"``, ``"parquet"``, ``"mztab"`` (mzTab-M) or
        ``"gnps"`` (GNPS-style TSV); default by the suffix, or the dialog's file type.
        """
        if self.session.hits_queries is None:
            self.desk.inform("No hits", "Run a search first.")
            return None
        if path is None:
            if not parquet_writable():
                self.desk.log(PARQUET_MISSING, status=True)
            chosen = self.desk.save_path("Export hits", f"hits_{which}.tsv", hits_filter())
            if chosen is None:
                return None
            path, format = format_of(*chosen)
        return self.desk.write(
            f"{which} hits",
            path,
            lambda: self.session.export(path, self.hits_for_export(which), format),
        )

    def export_mirror(self, path: str | Path | None = None) -> Path | None:
        """Write the mirror plot shown at publication size to PNG (300 dpi), SVG or PDF."""
        view = self.current_pair_view()
        if view.pair is None:
            self.desk.inform("No mirror plot", "Select a hit first.")
            return None
        if path is None:
            chosen = self.desk.save_path("Export mirror plot", "mirror.png", FIGURE_FILTER)
            if chosen is None:
                return None
            path = chosen[0]
        return self.desk.write("the mirror plot", path, lambda: view.export_image(path))
