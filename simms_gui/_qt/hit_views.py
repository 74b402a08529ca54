"""Showing hits: mirror plots of a hit or a heatmap cell, heatmaps, and their exports.

A mixin of :class:`~simms_gui._qt.main_window.MainWindow` (it uses the window's
widgets, session and signals).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
from PyQt6.QtWidgets import (
    QFileDialog,
    QMessageBox,
)

from engine import HitTable
from simms_gui._qt.hit_export import HITS_FILTER, format_of
from simms_gui._qt.search_control import local_backend
from simms_gui._qt.settings import settings
from simms_gui.answers import best_hits
from simms_gui.heatmap_requests import HeatmapRequest, selection_request, top_hits_request
from simms_gui.pairs import compute_pair, pair_row, spectrum_label

__all__ = ["HitViews"]

#: Why Parquet is not offered when it cannot be written.
PARQUET_MISSING = "Parquet export needs pyarrow: pip install 'simms-desktop[parquet]'"
IMAGE_FILTER = "PNG image (*.png);;SVG image (*.svg)"
#: Mirror plots also export to PDF (vector, page of the figure's size).
FIGURE_FILTER = "PNG image, 300 dpi (*.png);;SVG image (*.svg);;PDF document (*.pdf)"


class HitViews:
    """Showing hits: mirror plots of a hit or a heatmap cell, heatmaps, and their exports."""

    # ------------------------------------------------------------------ hits
    def show_hit(self, view_row: int) -> None:
        """Show the mirror plot, hit details and matched peaks of visible row ``view_row``."""
        model = self.results.model
        s = self.session
        if view_row < 0 or view_row >= model.rowCount() or s.hits_queries is None:
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

    def _show_heatmap_pair(self, rows, r: int, columns, c: int) -> None:
        params = self.session.params
        pair = compute_pair(rows, r, columns, c, params)
        request = self.heatmap_panel.request
        sides = ("query", "library")
        if request is not None and request.column_title == "query":  # all vs all queries
            sides = (f"query {r}", f"query {c}")
        row = pair_row(rows, r, columns, c, params, pair)
        self.heatmap_pair_view.show_pair(pair, params, sides=sides, row=row)

    def _filter_to_query(self, row: int) -> None:
        spectra = self.session.queries.spectra if self.session.queries else None
        if spectra is not None:
            self.tabs.setCurrentIndex(0)
            self.results.filter_to_query(row, spectrum_label(spectra, row))
            self.log(f"Hits of query {spectrum_label(spectra, row)} only", status=True)

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

    def export_hits(
        self, path: str | Path | None = None, which: str = "all", format: str | None = None
    ) -> Path | None:
        """Write hits (``which``: all, filtered or best) with provenance and q-values.

        ``format``: ``"tsv"``, ``"csv"``, ``"parquet"``, ``"mztab"`` (mzTab-M) or
        ``"gnps"`` (GNPS-style TSV); default by the suffix, or the dialog's file type.
        """
        if self.session.hits_queries is None:
            QMessageBox.information(self, "No hits", "Run a search first.")
            return None
        if path is None:
            if not parquet_writable():
                self.log(PARQUET_MISSING, status=True)
            folder = Path(str(settings().value("last_dir", str(Path.home()))))
            start = folder / f"hits_{which}.tsv"
            chosen, kind = QFileDialog.getSaveFileName(
                self, "Export hits", str(start), hits_filter()
            )
            if not chosen:
                return None
            self._remember_dir(chosen)
            path, format = format_of(chosen, kind)
        try:
            out = self.session.export(path, self.hits_for_export(which), format)
        except Exception as exc:
            self._error("Export failed", f"{path}: {exc}")
            return None
        self.log(f"Wrote {which} hits to {out}")
        return out

    def current_pair_view(self):
        """The pair view of the tab shown: hit table, heatmap or network."""
        views = {1: self.heatmap_pair_view, 2: self.network_tab.pair_view}
        return views.get(self.tabs.currentIndex(), self.pair_view)

    def export_mirror(self, path: str | Path | None = None) -> Path | None:
        """Write the current mirror plot at publication size to PNG (300 dpi), SVG or PDF."""
        view = self.current_pair_view()
        if view.pair is None:
            QMessageBox.information(self, "No mirror plot", "Select a hit first.")
            return None
        if path is None:
            path = self._save_path("Export mirror plot", "mirror.png", FIGURE_FILTER)
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
        backend = local_backend(self.search_panel.backend_name())
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


def parquet_writable() -> bool:
    """True when pyarrow can be imported (pandas writes Parquet with it)."""
    return importlib.util.find_spec("pyarrow") is not None


def hits_filter() -> str:
    """File types of the hit export dialog: Parquet only where it can be written."""
    if parquet_writable():
        return HITS_FILTER
    return ";;".join(f for f in HITS_FILTER.split(";;") if "parquet" not in f)
