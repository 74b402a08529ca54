"""The window's repository: File → Open repository…, its info, its searches' summary.

A repository (a folder with ``repository.json``, see ``docs/repository.md``)
opened here becomes what Search searches (``session.repositories.open``); the
search runs through the session like any other (the Search panel's backend:
CPU, GPU, or the Dask cluster at the typed address).  This controller only
listens: ``repository`` (the Spectra panel shows its info), ``repository_progress``
(shards done, first hits), ``repository_summary`` (the Repository summary tab).
"""

from __future__ import annotations

from pathlib import Path

from PyQt6.QtGui import QAction
from PyQt6.QtWidgets import QFileDialog, QTabWidget

from engine import Repository, SearchProgress
from engine.repository import RepositoryProgress
from simms_gui._qt.desk import Desk, on_main_thread
from simms_gui._qt.library_panel import LibraryPanel
from simms_gui._qt.progress_text import duration
from simms_gui._qt.repository_panel import RepositorySummaryPanel
from simms_gui._qt.search_panel import SearchPanel
from simms_gui.model import Session
from simms_gui.model.events import RepositoryOpened, RepositorySummary, SearchFinished
from simms_gui.model.repository import RepositorySearchTask

__all__ = ["SUMMARY_FILTER", "RepositoryController", "install_repository"]

SUMMARY_FILTER = "Comma-separated (*.csv);;Excel workbook (*.xlsx)"


class RepositoryController:
    """Opens repositories and shows their searches' progress and summary.

    Parameters
    ----------
    session : Session
    desk : Desk
    library_panel : LibraryPanel
    search_panel : SearchPanel
    tabs : QTabWidget
        The window's central tabs; ``panel`` is one of them (hidden until a
        repository is opened).
    panel : RepositorySummaryPanel
    """

    def __init__(
        self,
        session: Session,
        desk: Desk,
        library_panel: LibraryPanel,
        search_panel: SearchPanel,
        tabs: QTabWidget,
        panel: RepositorySummaryPanel,
    ) -> None:
        self.session, self.desk = session, desk
        self.library_panel, self.search_panel = library_panel, search_panel
        self.tabs, self.panel = tabs, panel
        self._progress: RepositoryProgress | None = None
        events = session.events
        events.repository.connect(self.on_opened)
        events.repository_progress.connect(self.on_progress)
        events.repository_summary.connect(self.on_summary)
        events.search_finished.connect(self.on_finished)
        library_panel.repositoryCloseRequested.connect(self.close)
        panel.exportRequested.connect(lambda: self.export(None))
        self._show_tab(False)

    # -- asking ---------------------------------------------------------------------
    def open_dialog(self) -> Repository | None:
        """Ask for a repository folder and open it."""
        start = str(self.desk.last_dir())
        path = QFileDialog.getExistingDirectory(self.desk.parent, "Open repository", start)
        if not path:
            return None
        self.desk.remember_dir(Path(path) / "repository.json")
        return self.open(path)

    def open(self, path: str | Path) -> Repository | None:
        """Open the repository at ``path`` as the search target (None: an error box says why)."""
        try:
            repository = self.session.repositories.open(path)
        except (ValueError, RuntimeError) as exc:
            self.desk.error("Cannot open repository", str(exc))
            return None
        return repository

    def close(self) -> None:
        """Search the active library again."""
        if self.session.state == "running":
            self.desk.inform("Repository", "Stop the search before closing the repository.")
            return
        self.session.repositories.close()

    def export(self, path: str | Path | None = None, by: str | None = None) -> Path | None:
        """Write the summary shown (or grouped ``by``) to CSV or XLSX; asks where without a path."""
        by = by or self.panel.by
        if self.session.repositories.hits is None:
            self.desk.inform("Nothing to export", "Search a repository first.")
            return None
        if path is None:
            name = f"repository-summary-per-{by}.csv"
            answer = self.desk.save_path("Export repository summary", name, SUMMARY_FILTER)
            if answer is None:
                return None
            path, chosen = answer
            if path.suffix.lower() not in (".csv", ".xlsx"):
                path = path.with_name(path.name + (".xlsx" if "xlsx" in chosen else ".csv"))
        return self.desk.write(
            f"the repository summary per {by}", path,
            lambda: self.session.repositories.export_summary(path, by),
        )  # fmt: skip

    # -- what the session announces -------------------------------------------------
    @on_main_thread
    def on_opened(self, opened: RepositoryOpened | None) -> None:
        """Show the repository in the Spectra panel, and its tab."""
        self.library_panel.set_repository(opened)
        if opened is None:
            self.desk.log("Repository closed: searches run against the active library")
            self.search_panel.search_button.setToolTip("Search the queries (Ctrl+R)")
            return
        label = "SYNTHETIC repository" if opened.synthetic else "Repository"
        self.desk.log(
            f"Opened {label.lower() if not opened.synthetic else label} {opened.name}: "
            f"{opened.spectra:,} spectra in {opened.shards} shards from {opened.files:,} files"
        )
        for line in opened.info.splitlines():
            self.desk.log(line, status=False)
        self.panel.set_title(
            f"{label} {opened.name}: {opened.spectra:,} spectra, {opened.files:,} files in "
            f"{opened.datasets:,} datasets"
            + (" — generated spectra, benchmarks and tests only" if opened.synthetic else ""),
            opened.synthetic,
        )
        self.search_panel.search_button.setToolTip(
            f"Search the queries against the repository {opened.name} (Ctrl+R)"
        )
        self._show_tab(True)

    @on_main_thread
    def on_progress(self, progress: RepositoryProgress) -> None:
        """Shards done, queries final, first hits: under the Search button."""
        if not isinstance(self.session.search_task, RepositorySearchTask):
            return
        self._progress = progress
        view = self.search_panel.progress_view
        # the view's own bookkeeping (a search under way, not starting), then our words
        view.show_progress(
            SearchProgress(progress.shards_done, progress.shards_total, 0, progress.seconds)
        )
        if view.bar.format() != "idle":
            view.bar.setFormat(f"{progress.shards_done} / {progress.shards_total} shards")
        view.label.setText(_progress_text(progress, len(self.session.hits)))

    @on_main_thread
    def on_summary(self, summary: RepositorySummary) -> None:
        """Show the summary so far (or the final one)."""
        self.panel.set_summary(summary)
        self._show_tab(True)

    @on_main_thread
    def on_finished(self, event: SearchFinished) -> None:
        """A repository search ended: how far it got, in words."""
        if not isinstance(self.session.search_task, RepositorySearchTask):
            return
        job = self.session.search_task.job
        progress = job.progress if job is not None else self._progress
        if progress is None or event.error:
            return
        text = _progress_text(progress, event.n_hits)
        label = self.search_panel.progress_view.label
        label.setText(text if event.outcome == "done" else f"Stopped: {text}; hits kept")
        self.desk.log(f"Repository search {event.outcome}: {text}", status=False)
        summary = self.session.repositories.summary_event
        if summary is not None:
            files, datasets = summary.files, summary.datasets
            self.desk.log(
                f"Repository summary: {files['query_index'].nunique():,} queries found in "
                f"{files['file'].nunique():,} files of {datasets['dataset'].nunique():,} "
                "datasets (Repository summary tab)",
                status=False,
            )

    def _show_tab(self, visible: bool) -> None:
        self.tabs.setTabVisible(self.tabs.indexOf(self.panel), visible)


def _progress_text(progress: RepositoryProgress, hits: int) -> str:
    first = progress.first_hits_seconds
    return (
        f"{progress.shards_done} / {progress.shards_total} shards · "
        f"{progress.queries_done:,} queries final · {hits:,} hits · "
        + ("no hits yet" if first is None else f"first hits after {_seconds(first)}")
        + f" · {_seconds(progress.seconds)}"
    )


def _seconds(seconds: float) -> str:
    """Seconds to the hundredth under 10 s (a warm repository search takes well under one)."""
    return f"{seconds:.2f} s" if seconds < 10 else duration(seconds)


def install_repository(window) -> RepositoryController:
    """Give ``window`` (a MainWindow) its Repository summary tab, File → Open repository…
    and the controller joining them to its session."""
    panel = RepositorySummaryPanel()
    window.repository_panel = panel
    window.tabs.addTab(panel, "Repository summary")
    controller = RepositoryController(
        window.session, window.desk, window.library_panel, window.search_panel, window.tabs, panel
    )
    action = QAction("Open re&pository…", window)
    action.setToolTip("Open a repository folder (simms repo build) and search it")
    action.triggered.connect(lambda _checked=False: controller.open_dialog())
    window.open_repository_action = action
    # an opened repository's info is in the Spectra panel: show it (tabbed on a small screen)
    window.session.events.repository.connect(
        on_main_thread(lambda opened: window.files_dock.raise_() if opened else None)
    )
    file_menu = window.recent_menu.menuAction().associatedObjects()[0]
    file_menu.insertAction(window.recent_menu.menuAction(), action)
    return controller
