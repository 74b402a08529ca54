"""Headless model of a SimMS session: files, parameters, hits and the work on them.

No Qt here (napari's ``components`` vs ``_qt``): a :class:`Session` runs all its
work as tasks through one :class:`~simms_gui.model.tasks.TaskRunner` (in the
calling thread for scripts, a thread pool under the window) and announces
every change as a typed event on ``session.events``.  The window listens.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from engine import (
    ClusterParameters,
    ClusterResult,
    HitTable,
    Repository,
    SearchParameters,
    SpectrumLibrary,
    SpectrumNetwork,
    load_library,
)
from simms_gui.dask_connection import DaskConnection, normalize_dask_address
from simms_gui.model.analyses import ClusterTask, HeatmapTask, LoadTask, NetworkTask, SearchTask
from simms_gui.model.answers import (
    HitList,
    QValues,
    best_hits,
    display_columns,
    query_columns,
    write_hits,
)
from simms_gui.model.events import (
    FilesChanged,
    HeatmapReady,
    HitsChanged,
    NetworkFinished,
    Restored,
    SearchFinished,
    SearchStarted,
    Selection,
    SessionEvents,
)
from simms_gui.model.files import SUPPORTED_SUFFIXES, LoadedFile, LoadProgress, is_spectrum_file
from simms_gui.model.repository import RepositorySearches
from simms_gui.model.requests import HeatmapRequest, NetworkRequest, SearchRequest, TableView
from simms_gui.model.session_file import OpenSessionTask
from simms_gui.model.tasks import Task, TaskRunner

__all__ = ["LoadProgress", "SUPPORTED_SUFFIXES", "HitList", "LoadedFile", "SearchRequest"]
__all__ += ["Session", "is_spectrum_file"]


class Session:
    """Everything the user has loaded and searched, and the work running on it.

    Parameters
    ----------
    runner : TaskRunner, optional
        Runs the session's tasks (default: in the calling thread; the window
        gives one with a thread pool).

    Attributes
    ----------
    events : SessionEvents
        Typed signals of every change (:class:`~simms_gui.model.events.SessionEvents`).
    display : bool
        Prepare what a window shows (table columns, network layout) in the tasks' threads.
    libraries, active, queries
        Loaded libraries (``active`` is searched) and query file (:class:`LoadedFile`).
    repositories : RepositorySearches
        The open repository, searched instead of the active library while open.
    params, state, backend, device, cancelled, error
        The last search: parameters, ``"idle"``/``"running"``, where it ran, stopped, why failed.
    hits_queries, hits_library, hits_files
        The spectra (and files) the hits refer to.
    q_values, isomers, incomplete
        The last search's q-value estimate, isomer check and unfinished queries.
    selected_hit, selected_queries
        ``(query, library)`` of the hit looked at; query rows selected.
    clusters, network, network_request, network_state, network_cancelled, network_error
        The last clustering and network build.
    search_task, network_task : Task or None
    """

    def __init__(self, runner: TaskRunner | None = None) -> None:
        self.events = SessionEvents()
        self.runner = runner or TaskRunner()
        self.display = False
        self.dask = DaskConnection()
        self.libraries: list[LoadedFile] = []
        self.active = -1
        self.queries: LoadedFile | None = None
        self.params = SearchParameters()
        self.state = "idle"
        self.backend = self.device = ""
        self.cancelled = False
        self.error: str | None = None
        self.hits_queries: SpectrumLibrary | None = None
        self.hits_library: SpectrumLibrary | None = None
        self.hits_target: object | None = None  # the library or repository searched
        self.hits_files: tuple[LoadedFile | None, LoadedFile | None] = (None, None)
        self.q_values: QValues | None = None
        self.isomers = None
        self.incomplete = np.empty(0, dtype=np.int64)
        self.unsaved = False
        self.selected_hit: tuple[int, int] | None = None
        self.selected_queries: list[int] = []
        #: The hit table's filters and sort (the window keeps it current; saved in sessions).
        self.table_view = TableView()
        self.clusters: ClusterResult | None = None
        self.network: SpectrumNetwork | None = None
        self.network_request: NetworkRequest | None = None
        self.network_state = "idle"
        self.network_cancelled = False
        self.network_error: str | None = None
        self.search_task: SearchTask | None = None
        self.network_task: NetworkTask | None = None
        self.repositories = RepositorySearches(self)
        self._shown_params: SearchParameters | None = None
        self._lock = threading.Lock()
        self._chunks: list[HitTable] = []
        self._hits: HitTable | None = HitTable.empty()

    # -- files ------------------------------------------------------------------------
    @staticmethod
    def read(path: str | Path, progress: LoadProgress | None = None) -> SpectrumLibrary:
        """Read a spectrum file (raises ``engine.SpectrumFileError`` when unusable)."""
        return load_library(Path(path), progress=None if progress is None else progress.update)

    def load(self, path: str | Path, kind: str = "library") -> LoadTask:
        """Read ``path`` as a library (made active) or as the queries, as a task."""
        return self.runner.submit(LoadTask(self, path, kind))

    def open(self, path: str | Path, kind: str = "library") -> SpectrumLibrary:
        """Read ``path`` and add it (:meth:`load`, waited for); ``engine.SpectrumFileError``
        when it cannot be read or holds no usable spectra."""
        return self.load(path, kind).wait(reraise=True)

    @property
    def library(self) -> SpectrumLibrary | None:
        """The active library's spectra."""
        entry = self.library_file
        return None if entry is None else entry.spectra

    @property
    def library_file(self) -> LoadedFile | None:
        """The active library file."""
        return self.libraries[self.active] if 0 <= self.active < len(self.libraries) else None

    def _files_changed(self, queries: bool = False) -> None:
        names = tuple(e.name for e in self.libraries)
        self.events.files.emit(FilesChanged(names, self.active, queries))
        self._stale_changed()

    def add_library(self, path: str | Path, spectra: SpectrumLibrary) -> LoadedFile:
        """Add a loaded library (replacing one of the same path) and make it active."""
        entry = LoadedFile(Path(path), spectra)
        same = [k for k, old in enumerate(self.libraries) if old.path == entry.path]
        if same:
            self.libraries[same[0]] = entry
            self.active = same[0]
        else:
            self.libraries.append(entry)
            self.active = len(self.libraries) - 1
        self._files_changed()
        return entry

    def set_libraries(self, entries: list[LoadedFile], active: int) -> None:
        """Replace all libraries by ``entries``, searching ``entries[active]``."""
        self.libraries = list(entries)
        self.active = active if 0 <= active < len(entries) else len(entries) - 1
        self._files_changed()

    def remove_library(self, index: int) -> None:
        """Forget library ``index``."""
        del self.libraries[index]
        self.active = min(self.active, len(self.libraries) - 1)
        self._files_changed()

    def set_active(self, index: int) -> None:
        """Search library ``index`` from now on."""
        if not 0 <= index < len(self.libraries):
            raise IndexError(f"no library {index}")
        self.active = index
        self._files_changed()

    def set_queries(self, path: str | Path, spectra: SpectrumLibrary) -> LoadedFile:
        """Use ``spectra`` (read from ``path``) as the queries."""
        self.queries = LoadedFile(Path(path), spectra)
        self._files_changed(queries=True)
        return self.queries

    # -- searching --------------------------------------------------------------------
    def search(
        self,
        params: SearchParameters | None = None,
        backend: str = "auto",
        dask_address: str | None = None,
        *,
        client: object | None = None,
    ) -> SearchTask:
        """Search the queries against the active library or open repository (a task).

        ``client`` runs it on a Dask cluster the caller made; ``backend="dask"``
        with ``dask_address`` connects to one (kept).  RuntimeError when a search
        runs or nothing is loaded; ValueError for ``"dask"`` without an address.
        """
        if self.state == "running":
            raise RuntimeError("a search is already running")
        if (self.search_target is None) or self.queries is None:
            raise RuntimeError("open a library and queries first")
        if client is not None:
            backend = "dask"
        elif backend == "dask":
            if not dask_address:
                raise ValueError("backend='dask' needs a dask_address (tcp://HOST:PORT or local:N)")
            dask_address = normalize_dask_address(dask_address)
        request = SearchRequest(params or SearchParameters(), backend, dask_address)
        if self.repository is not None:
            return self.repositories.search(request, client)
        task = self.search_task = SearchTask(self, request, client)
        self._begin_search(request)
        return self.runner.submit(task)

    def _begin_search(self, request: SearchRequest, library: LoadedFile | None = None) -> None:
        self.params, self.backend, self.device = request.params, request.backend, ""
        self.state = "running"
        self.cancelled, self.error = False, None
        with self._lock:
            self._chunks, self._hits = [], HitTable.empty()
        self.set_answers(None)
        library = library or self.library_file
        self.hits_queries = self.queries.spectra if self.queries else None
        self.hits_library, self.hits_target = library.spectra, self.search_target
        self.hits_files = (self.queries, library)
        self.unsaved = False
        self._shown_params = None
        n_q, n_l = len(self.hits_queries), len(self.hits_target)
        self.events.search_started.emit(
            SearchStarted(request.params, request.backend, n_q, n_l, request.dask_address)
        )
        self._announce_hits(HitTable.empty(), replace=True)
        self._stale_changed()

    def _announce_hits(self, hits: HitTable, *, replace: bool, q_values=None, isomers=None):
        columns = None
        if self.display and self.hits_queries is not None and self.hits_library is not None:
            q_values = self.q_values if replace else q_values
            isomers = self.isomers if replace else isomers
            hits, columns = display_columns(
                hits, self.hits_queries, self.hits_library, self.params, q_values, isomers
            )
        library = self.hits_files[1]
        name = library.name if library is not None else ""
        self.events.hits.emit(HitsChanged(hits, columns, name, replace))

    def add_hits(self, chunk: HitTable, q_values: QValues | None = None, isomers=None) -> None:
        """Final hits of the running search (a chunk as the engine streams it)."""
        if len(chunk):
            with self._lock:
                self._chunks.append(chunk)
                self._hits = None
            self._announce_hits(chunk, replace=False, q_values=q_values, isomers=isomers)

    def finish_search(self, task: SearchTask, isomers, error: str | None, seconds: float) -> None:
        """The running search ``task`` ended (called by the task)."""
        job = task.job
        if job is not None:
            self.set_answers(getattr(job, "q_values", None), isomers, task.incomplete_queries())
            self.backend, self.device = task.ran_on()
        self.cancelled = job is not None and task.stopped() and error is None
        self.error = error
        task.settle("failed" if error else "cancelled" if task.token.cancelled else "done")
        self.state = "idle"
        self.unsaved = len(self.hits) > 0
        compiling = float(getattr(job, "compile_seconds", 0.0) or 0.0)
        finished = SearchFinished(
            self.backend, self.device, len(self.hits), self.cancelled, error, seconds, compiling
        )
        self.events.search_finished.emit(finished)
        self._stale_changed()

    def cancel(self) -> None:
        """Stop the running search; its hits so far stay."""
        if self.state == "running" and self.search_task is not None:
            self.search_task.cancel()

    def run_search(
        self, params: SearchParameters | None = None, backend: str = "auto", *, client=None
    ) -> HitTable:
        """Search (:meth:`search`) and wait for the hits; ``client`` runs it on Dask."""
        return self.search(params, backend, client=client).wait(reraise=True)

    def set_answers(self, q_values: QValues | None, isomers=None, incomplete=()) -> None:
        """The q-value estimate, isomer check and cut queries of the search just run."""
        self.q_values, self.isomers = q_values, isomers
        self.incomplete = np.asarray(incomplete, dtype=np.int64)

    def isomer_check(self, backend: str = "cpu"):
        """A new isomer check of the hits' library (None before any search)."""
        if self.hits_library is None:
            return None
        from engine.analyses.qc import IsomerCheck, isomer_parameters

        return IsomerCheck(self.hits_library, isomer_parameters(self.params), backend=backend)

    def restore(
        self,
        params: SearchParameters,
        hits: HitTable | None,
        hits_files: tuple[LoadedFile | None, LoadedFile | None] = (None, None),
        *,
        backend: str = "",
        device: str = "",
        cancelled: bool = False,
        q_values: QValues | None = None,
        path: Path | None = None,
        problems: tuple[str, ...] = (),
    ) -> None:
        """Take the parameters and hits of a saved session (``restored``, then ``hits``)."""
        self.params = params
        self._shown_params = None
        self.backend, self.device, self.cancelled, self.error = backend, device, cancelled, None
        queries, library = hits_files
        if hits is None or queries is None or library is None:
            hits, queries, library = HitTable.empty(), None, None
        self.hits_files = (queries, library)
        self.hits_queries = None if queries is None else queries.spectra
        self.hits_library = self.hits_target = None if library is None else library.spectra
        with self._lock:
            self._chunks, self._hits = [hits], hits
        self.unsaved = False
        self.set_answers(q_values, self.isomer_check()) if len(hits) else self.set_answers(None)
        self.events.restored.emit(Restored(path, tuple(problems), self.table_view))
        self._announce_hits(hits, replace=True)
        self._stale_changed()

    def open_session(self, path: str | Path) -> OpenSessionTask:
        """Open a saved session file (a task): files read again, hits restored."""
        if self.state == "running":
            raise RuntimeError("a search is running: stop it before opening a session")
        return self.runner.submit(OpenSessionTask(self, path))

    # -- what the user looks at and what changed since the search -----------------------
    def select(self, hit: tuple[int, int] | None = None, queries: list[int] | None = None) -> None:
        """Select a hit ``(query_index, library_index)`` and query rows."""
        self.selected_hit = None if hit is None else (int(hit[0]), int(hit[1]))
        self.selected_queries = sorted(int(q) for q in (queries or []))
        self.events.selection.emit(Selection(self.selected_hit, tuple(self.selected_queries)))

    def show_params(self, params: SearchParameters | None) -> None:
        """The parameters the window shows now (``stale`` when they changed)."""
        if params != self._shown_params:
            self._shown_params = params
            self._stale_changed()

    def _stale_changed(self) -> None:
        self.events.stale.emit(tuple(self.stale))

    @property
    def repository(self) -> Repository | None:
        """The open repository (``repositories.open``), or None."""
        return self.repositories.repository

    @property
    def search_target(self) -> Repository | SpectrumLibrary | None:
        """What a search runs against: the open repository, else the active library."""
        return self.repository if self.repository is not None else self.library

    @property
    def stale(self) -> list[str]:
        """Why the hits no longer answer the loaded inputs: ``"queries"``,
        ``"library"``, ``"parameters"`` (empty when they do)."""
        if self.hits_queries is None or self.state == "running":
            return []
        reasons = []
        if self.queries is None or self.queries.spectra is not self.hits_queries:
            reasons.append("queries")
        if self.search_target is not self.hits_target:
            reasons.append("library")
        if self._shown_params is not None and self._shown_params != self.params:
            reasons.append("parameters")
        return reasons

    # -- hits -------------------------------------------------------------------------
    @property
    def hits(self) -> HitTable:
        """All hits of the last (or the running) search, in canonical order."""
        with self._lock:
            if self._hits is None:
                self._hits = HitTable.concat(self._chunks).sorted()
            return self._hits

    def select_hits(self, which: str = "all") -> HitTable:
        """``"all"`` hits, or the ``"best"`` hit of each query."""
        if which == "all":
            return self.hits
        if which == "best":  # a tie decided by order_ties, never by library position
            return best_hits(self.hits, self.hits_queries, self.hits_library, self.params)
        raise ValueError(f"which must be 'all' or 'best', not {which!r}")

    def hit_list(self, hits: HitTable | None = None) -> HitList:
        """``hits`` (default: all current hits) as a :class:`HitList`."""
        return HitList(
            self.hits if hits is None else hits, self.hits_queries, self.hits_library, self.params,
            self.q_values, self.isomers,
        )  # fmt: skip

    def query_columns(self) -> dict[str, np.ndarray] | None:
        """The queries table of the last search (None before any search)."""
        if self.hits_queries is None or self.hits_library is None:
            return None
        return query_columns(
            self.hits_queries, self.hits_library, self.params, self.hits, self.incomplete
        )

    def export(
        self, path: str | Path, hits: HitTable | str | None = None, format: str | None = None
    ) -> Path:
        """Write hits with provenance and the queries table (:func:`write_hits`);
        ``format`` ``"tsv"``, ``"csv"``, ``"parquet"``, ``"mztab"``, ``"gnps"`` or by suffix."""
        out = write_hits(self, path, hits, format)
        self.unsaved = False
        return out

    # -- analyses ---------------------------------------------------------------------
    def cluster(
        self,
        which: str = "queries",
        params: ClusterParameters | None = None,
        backend: str = "auto",
        **options,
    ) -> ClusterTask:
        """Cluster the queries (or the active ``"library"``) as a task (``clusters``).

        ``options`` go to :func:`engine.cluster_spectra` (``consensus``).
        """
        return self.runner.submit(ClusterTask(self, which, params, backend, **options))

    def run_cluster(self, which="queries", params=None, backend="auto", **options) -> ClusterResult:
        """:meth:`cluster`, waited for."""
        return self.cluster(which, params, backend, **options).wait()

    def set_clusters(self, result: ClusterResult) -> None:
        """Keep a clustering and announce it."""
        self.clusters = result
        self.events.clusters.emit(result)

    def request_network(
        self, request: NetworkRequest | None = None, *, cpu_threads: int | None = None
    ) -> NetworkTask:
        """Build a network (a task; ``network_started`` at once).  RuntimeError when
        one is being built or its spectra are not loaded."""
        if self.network_state == "running":
            raise RuntimeError("a network is already being built")
        request = request or NetworkRequest()
        task = NetworkTask(self, request, cpu_threads)  # fails here when inputs are missing
        self.network_request, self.network_task = request, task
        self.network_state = "running"
        self.network_cancelled, self.network_error = False, None
        self.events.network_started.emit(request)
        return self.runner.submit(task)

    def cancel_network(self) -> None:
        """Stop the network being built; nothing is kept."""
        if self.network_state == "running" and self.network_task is not None:
            self.network_task.cancel()

    def run_network(
        self, request: NetworkRequest | None = None, *, cpu_threads: int | None = None
    ) -> SpectrumNetwork | None:
        """:meth:`request_network`, waited for: the network (None when stopped)."""
        return self.request_network(request, cpu_threads=cpu_threads).wait()

    def finish_network(self, task: NetworkTask, net, positions, error: str | None) -> None:
        """A network build ended (called by the task)."""
        if net is not None:
            self.network = net
        self.network_state = "idle"
        self.network_cancelled = net is None and error is None
        self.network_error = error
        self.events.network_finished.emit(
            NetworkFinished(task.request, net, positions, self.network_cancelled, error)
        )

    def heatmap(
        self, request: HeatmapRequest, params: SearchParameters | None = None, backend="auto"
    ) -> Task:
        """Score a heatmap's spectra (a task; ``heatmap_ready`` with the scores)."""
        params = params or self.params
        self.events.heatmap_started.emit(request)
        return self.runner.submit(HeatmapTask(self, request, params, backend))

    def finish_heatmap(self, request: HeatmapRequest, scores, error: str | None) -> None:
        """A heatmap's scores (or why there are none), called by the task."""
        self.events.heatmap_ready.emit(HeatmapReady(request, scores, error))
