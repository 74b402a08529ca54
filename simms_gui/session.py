"""Headless model of a SimMS session: libraries, queries, parameters and hits.

No Qt here (napari's ``components`` vs ``_qt``): the window observes a
:class:`Session` and scripts can use one without a display.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine import (
    ClusterResult,
    HitTable,
    SearchParameters,
    SpectrumFileError,
    SpectrumLibrary,
    load_library,
    search_job,
)
from engine.export import open_writer
from simms_gui.answers import AnswersMixin, HitList, QValues, best_hits
from simms_gui.cluster_session import ClusterSessionMixin
from simms_gui.dask_connection import normalize_dask_address
from simms_gui.files import SUPPORTED_SUFFIXES, LoadProgress, is_spectrum_file
from simms_gui.network_session import NetworkSessionMixin

__all__ = [
    "LoadProgress",
    "SUPPORTED_SUFFIXES",
    "HitList",
    "LoadedFile",
    "SearchRequest",
    "Session",
    "is_spectrum_file",
]


@dataclass
class LoadedFile:
    """A spectrum file loaded into the session.

    Attributes
    ----------
    path : Path
        The file.
    spectra : SpectrumLibrary
        Its spectra (``.report`` says what was skipped or repaired).
    """

    path: Path
    spectra: SpectrumLibrary

    @property
    def name(self) -> str:
        """File name without folders."""
        return self.path.name

    @property
    def report(self):
        """The engine's import report (or None)."""
        return self.spectra.report


@dataclass(frozen=True)
class SearchRequest:
    """A search asked for through :meth:`Session.search`, for whoever runs searches.

    Attributes
    ----------
    params : SearchParameters
    backend : str
        ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"dask"``.
    dask_address : str or None
        ``tcp://HOST:PORT`` or ``local:N`` with the ``"dask"`` backend.
    """

    params: SearchParameters
    backend: str = "auto"
    dask_address: str | None = None


class Session(AnswersMixin, ClusterSessionMixin, NetworkSessionMixin):
    """Everything the user has loaded and searched: the model the window observes.

    No Qt: scripts and notebooks use a session directly; the desktop window
    listens to its events (:meth:`connect`) and feeds it the hits its worker
    thread finds.  Events are plain names passed to each listener:
    ``"libraries"``, ``"active"``, ``"queries"``, ``"search_requested"``,
    ``"search_started"``, ``"hits"`` (hits added or replaced),
    ``"cancel_requested"``, ``"search_finished"``, ``"restored"`` (a saved
    session was opened: files, parameters and hits at once), ``"selection"``
    (:meth:`select` from a script or a session file) and ``"stale"`` (the
    parameters shown differ from the hits', :meth:`show_params`); clustering and
    molecular networks add theirs (:mod:`simms_gui.cluster_session`,
    :mod:`simms_gui.network_session`).

    Attributes
    ----------
    libraries : list of LoadedFile
        Loaded libraries; ``active`` picks the one searched.
    active : int
        Index of the searched library (-1 when none).
    queries : LoadedFile or None
        The query spectra.
    params : SearchParameters
        Parameters of the last search (or the defaults).
    state : {"idle", "running"}
        Whether a search runs.
    request : SearchRequest or None
        The search asked for and not yet started.
    backend, device : str
        Where the last search ran (``backend`` is the one asked for until it starts).
    cancelled : bool
        The last search was stopped (its hits so far are kept).
    error : str or None
        Why the last search failed.
    hits_queries, hits_library : SpectrumLibrary or None
        The spectra the hits refer to (they may differ from the loaded ones after
        a reload).
    hits_files : tuple of (LoadedFile or None, LoadedFile or None)
        The query and library files of the hits (saved in session files).
    unsaved : bool
        Hits were found since the session was last saved or exported.
    selected_hit : tuple of (int, int) or None
        ``(query_index, library_index)`` of the hit the user looks at.
    selected_queries : list of int
        Query rows selected in the query list.
    clusters : ClusterResult or None
        The last clustering (:meth:`run_cluster`) of the queries or a library.
    """

    def __init__(self) -> None:
        self.libraries: list[LoadedFile] = []
        self.active = -1
        self.queries: LoadedFile | None = None
        self.params = SearchParameters()
        self.state = "idle"
        self.request: SearchRequest | None = None
        self.backend = ""
        self.device = ""
        self.cancelled = False
        self.error: str | None = None
        self.hits_queries: SpectrumLibrary | None = None
        self.hits_library: SpectrumLibrary | None = None
        self.hits_files: tuple[LoadedFile | None, LoadedFile | None] = (None, None)
        self.unsaved = False
        self.selected_hit: tuple[int, int] | None = None
        self.selected_queries: list[int] = []
        self._shown_params: SearchParameters | None = None
        self.listeners: list[Callable[[str], None]] = []
        self._chunks: list[HitTable] = []
        self._hits: HitTable | None = HitTable.empty()
        self._init_network()
        self._init_answers()
        self.clusters: ClusterResult | None = None

    # -- events -----------------------------------------------------------------------
    def connect(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(event)`` after every change (see the class docstring)."""
        self.listeners.append(listener)

    def disconnect(self, listener: Callable[[str], None]) -> None:
        """Stop calling ``listener``."""
        if listener in self.listeners:
            self.listeners.remove(listener)

    def _emit(self, what: str) -> None:
        for listener in list(self.listeners):
            listener(what)

    # -- loading ----------------------------------------------------------------------
    @staticmethod
    def read(path: str | Path, progress: LoadProgress | None = None) -> SpectrumLibrary:
        """Read a spectrum file (raises ``engine.SpectrumFileError`` when unusable).

        ``progress`` follows the read and can cancel it (``engine.LoadCancelled``).
        """
        return load_library(Path(path), progress=None if progress is None else progress.update)

    def open(self, path: str | Path, kind: str = "library") -> SpectrumLibrary:
        """Read ``path`` and add it as a library (made active) or as the queries.

        Raises
        ------
        engine.SpectrumFileError
            The file cannot be read, or holds no usable spectra.
        ValueError
            ``kind`` is neither ``"library"`` nor ``"queries"``.
        """
        if kind not in ("library", "queries"):
            raise ValueError(f"kind must be 'library' or 'queries', not {kind!r}")
        spectra = self.read(path)
        if len(spectra) == 0:
            raise SpectrumFileError(str(path), "no usable spectra in the file")
        if kind == "library":
            self.add_library(path, spectra)
        else:
            self.set_queries(path, spectra)
        return spectra

    @property
    def library(self) -> SpectrumLibrary | None:
        """The active library's spectra."""
        if 0 <= self.active < len(self.libraries):
            return self.libraries[self.active].spectra
        return None

    @property
    def library_file(self) -> LoadedFile | None:
        """The active library file."""
        if 0 <= self.active < len(self.libraries):
            return self.libraries[self.active]
        return None

    def add_library(self, path: str | Path, spectra: SpectrumLibrary) -> LoadedFile:
        """Add a loaded library (replacing one of the same path) and make it active."""
        path = Path(path)
        entry = LoadedFile(path, spectra)
        for k, old in enumerate(self.libraries):
            if old.path == path:
                self.libraries[k] = entry
                self.active = k
                break
        else:
            self.libraries.append(entry)
            self.active = len(self.libraries) - 1
        self._emit("libraries")
        return entry

    def set_libraries(self, entries: list[LoadedFile], active: int) -> None:
        """Replace all libraries by ``entries``, searching ``entries[active]``."""
        self.libraries = list(entries)
        self.active = active if 0 <= active < len(entries) else len(entries) - 1
        self._emit("libraries")

    def remove_library(self, index: int) -> None:
        """Forget library ``index``."""
        del self.libraries[index]
        self.active = min(self.active, len(self.libraries) - 1)
        self._emit("libraries")

    def set_active(self, index: int) -> None:
        """Search library ``index`` from now on."""
        if not 0 <= index < len(self.libraries):
            raise IndexError(f"no library {index}")
        self.active = index
        self._emit("active")

    def set_queries(self, path: str | Path, spectra: SpectrumLibrary) -> LoadedFile:
        """Use ``spectra`` (read from ``path``) as the queries."""
        self.queries = LoadedFile(Path(path), spectra)
        self._emit("queries")
        return self.queries

    # -- searching --------------------------------------------------------------------
    def search(
        self,
        params: SearchParameters | None = None,
        backend: str = "auto",
        dask_address: str | None = None,
    ) -> SearchRequest:
        """Ask for a search of the queries against the active library.

        The window (the listener of ``"search_requested"``) runs it in a worker
        thread; without a window, :meth:`run_search` runs one here.

        Raises
        ------
        RuntimeError
            A search is running, or no library or queries are loaded.
        ValueError
            ``backend="dask"`` without a valid ``dask_address``.
        """
        if self.state == "running":
            raise RuntimeError("a search is already running")
        if self.library is None or self.queries is None:
            raise RuntimeError("open a library and queries first")
        if backend == "dask":
            if not dask_address:
                raise ValueError("backend='dask' needs a dask_address (tcp://HOST:PORT or local:N)")
            dask_address = normalize_dask_address(dask_address)
        self.request = SearchRequest(params or SearchParameters(), backend, dask_address)
        self._emit("search_requested")
        return self.request

    def cancel(self) -> None:
        """Ask the running search to stop (``"cancel_requested"``); its hits so far stay."""
        if self.state == "running":
            self._emit("cancel_requested")

    def begin_search(self, params: SearchParameters, backend: str) -> None:
        """A search of the current queries and library starts: hits are reset."""
        self.request = None
        self.params = params
        self.backend, self.device = backend, ""
        self.state = "running"
        self.cancelled, self.error = False, None
        self._chunks, self._hits = [], HitTable.empty()
        self.set_answers(None)
        self.hits_queries = self.queries.spectra if self.queries else None
        self.hits_library = self.library
        self.hits_files = (self.queries, self.library_file)
        self.unsaved = False
        self._emit("search_started")
        self._emit("hits")

    def add_hits(self, chunk: HitTable) -> None:
        """Final hits of the running search (a chunk as the engine streams it)."""
        if len(chunk):
            self._chunks.append(chunk)
            self._hits = None
            self._emit("hits")

    def finish_search(
        self, backend: str, device: str, *, cancelled: bool = False, error: str | None = None
    ) -> None:
        """The running search ended (``cancelled``: stopped; ``error``: failed)."""
        self.backend, self.device = backend or self.backend, device
        self.cancelled, self.error = cancelled, error
        self.state = "idle"
        self.unsaved = len(self.hits) > 0
        self._emit("search_finished")

    def run_search(
        self,
        params: SearchParameters | None = None,
        backend: str = "auto",
        *,
        client=None,
    ) -> HitTable:
        """Run a search here, in this thread, streaming its hits into the session.

        For scripts without a window; ``client`` runs it on a Dask cluster.
        """
        if self.library is None or self.queries is None:
            raise RuntimeError("open a library and queries first")
        params = params or SearchParameters()
        self.begin_search(params, "dask" if client is not None else backend)
        job = search_job(
            self.queries.spectra, self.library, params, client=client,
            backend="auto" if client is not None else backend,
        )  # fmt: skip
        error = None
        try:
            for chunk in job:
                self.add_hits(chunk)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            isomers = self.isomer_check("auto" if client is not None else backend)
            self.set_answers(getattr(job, "q_values", None), isomers, job.incomplete_queries)
            self.finish_search(
                job.backend.name, job.backend.device, cancelled=job.cancelled, error=error
            )
        return self.hits

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
    ) -> None:
        """Take the parameters and hits of a saved session (``"restored"``).

        ``hits`` (None: no search was saved) refer to the spectra of ``hits_files``;
        ``q_values`` gives their saved q-values (:class:`~simms_gui.answers.SavedQValues`).
        """
        self.params = params
        self._shown_params = None
        self.backend, self.device, self.cancelled, self.error = backend, device, cancelled, None
        queries, library = hits_files
        if hits is None or queries is None or library is None:
            hits, queries, library = HitTable.empty(), None, None
        self.hits_files = (queries, library)
        self.hits_queries = None if queries is None else queries.spectra
        self.hits_library = None if library is None else library.spectra
        self._chunks, self._hits = [hits], hits
        self.unsaved = False
        if len(hits):
            self.set_answers(q_values, self.isomer_check())
        else:
            self.set_answers(None)
        self._emit("restored")

    # -- what the user looks at and what changed since the search -----------------------
    def select(self, hit: tuple[int, int] | None = None, queries: list[int] | None = None) -> None:
        """Select a hit ``(query_index, library_index)`` and query rows (``"selection"``)."""
        self.selected_hit = None if hit is None else (int(hit[0]), int(hit[1]))
        self.selected_queries = sorted(int(q) for q in (queries or []))
        self._emit("selection")

    def show_params(self, params: SearchParameters | None) -> None:
        """The parameters the window shows now (``"stale"`` when they changed)."""
        if params != self._shown_params:
            self._shown_params = params
            self._emit("stale")

    @property
    def stale(self) -> list[str]:
        """Why the hits no longer answer the loaded inputs (empty when they do).

        Reasons: ``"queries"`` or ``"library"`` differ from the searched ones,
        ``"parameters"`` shown (:meth:`show_params`) differ from the search's.
        """
        if self.hits_queries is None or self.state == "running":
            return []
        reasons = []
        if self.queries is None or self.queries.spectra is not self.hits_queries:
            reasons.append("queries")
        if self.library is not self.hits_library:
            reasons.append("library")
        if self._shown_params is not None and self._shown_params != self.params:
            reasons.append("parameters")
        return reasons

    # -- hits -------------------------------------------------------------------------
    @property
    def hits(self) -> HitTable:
        """All hits of the last (or the running) search, in canonical order."""
        if self._hits is None:
            self._hits = HitTable.concat(self._chunks).sorted()
        return self._hits

    def set_hits(self, hits: HitTable) -> None:
        """Replace the hits (canonical order)."""
        self._chunks, self._hits = [hits], hits
        self._emit("hits")

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

    def export(
        self, path: str | Path, hits: HitTable | str | None = None, format: str | None = None
    ) -> Path:
        """Write hits with provenance (``engine.export.open_writer``), the queries table beside.

        ``hits`` is a :class:`~engine.HitTable`, ``"all"``/``"best"``
        (:meth:`select_hits`), or None for all; ``format`` ``"tsv"``, ``"csv"``,
        ``"parquet"``, ``"mztab"`` or ``"gnps"`` (default: by the suffix).  The
        q-values and isomers of the search go with the hits.
        """
        if self.hits_queries is None or self.hits_library is None:
            raise RuntimeError("no search has been run yet")
        table = self.select_hits(hits or "all") if hits is None or isinstance(hits, str) else hits
        writer = open_writer(
            path, self.hits_queries, self.hits_library, self.params, format=format,
            backend=self.backend, device=self.device, isomers=self.isomers,
            q_values=self.q_values,
        )  # fmt: skip
        try:
            writer.write(table)
        except BaseException:
            writer.abort()
            raise
        note = "the search was stopped" if self.cancelled else ""
        out = writer.close(complete=not note, note=note, incomplete=self.incomplete)
        self.unsaved = False
        return out
