"""napari-style Python API: ``viewer = simms_gui.Viewer()``.

Works from scripts and from Jupyter/IPython with ``%gui qt``: the viewer makes
a QApplication when there is none, shows its window and returns at once.
"""

from __future__ import annotations

from pathlib import Path

from PyQt6.QtGui import QIcon
from PyQt6.QtWidgets import QApplication

from engine import ClusterParameters, Repository, SearchParameters, SpectrumLibrary
from engine.analyses.networking import NetworkSettings, network_parameters
from simms_gui.model import ClusterTask, NetworkRequest, NetworkTask, SearchTask, Session
from simms_gui.model.answers import HitList
from simms_gui.resources import resource_path

__all__ = ["Viewer", "get_app"]


def get_app() -> QApplication:
    """The running QApplication, created when there is none."""
    app = QApplication.instance()
    if app is None:
        app = QApplication([])
        app.setApplicationName("SimMS desktop")
        app.setOrganizationName("SimMS")
        app.setDesktopFileName("simms-desktop")
        icon = resource_path("icons/simms.png")
        if icon is not None:
            app.setWindowIcon(QIcon(str(icon)))
    return app  # type: ignore[return-value]


class Viewer:
    """The SimMS window, driven from Python.

    Parameters
    ----------
    show : bool, default True
        Show the window at once.
    demo : bool, default False
        Load the bundled demo library and queries.
    title : str, optional
        Window title.

    Attributes
    ----------
    window : simms_gui._qt.main_window.MainWindow
        The QMainWindow (for tests and customisation).

    Examples
    --------
    >>> viewer = simms_gui.Viewer()                      # doctest: +SKIP
    >>> viewer.open_library("library.mgf")               # doctest: +SKIP
    >>> viewer.open_queries("queries.mgf")               # doctest: +SKIP
    >>> hits = viewer.search(top_n=5).wait()             # doctest: +SKIP
    >>> viewer.search(backend="dask", dask_address="tcp://10.0.0.5:8786")  # doctest: +SKIP
    >>> viewer.export_hits("hits.tsv", which="best")     # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        show: bool = True,
        demo: bool = False,
        title: str | None = None,
        persist_settings: bool = False,
    ) -> None:
        from simms_gui._qt.main_window import MainWindow

        self._app = get_app()
        #: The headless model: files, parameters, search state and hits.
        self.session = Session()
        self.window = MainWindow(self.session, persist_settings=persist_settings)
        # the application asks before quitting with unsaved hits; scripts close quietly
        self.window.confirm_unsaved = persist_settings
        if title:
            self.window.setWindowTitle(title)
        if demo:
            self.window.files.load_demo(background=False)
        if show:
            self.window.show()
            self.window.raise_()

    # -- data -------------------------------------------------------------------------
    def open_library(self, path: str | Path) -> SpectrumLibrary:
        """Read a library file (MGF, MSP, mzML, mzXML, JSON, optionally gzipped) and make it active.

        Parameters
        ----------
        path : str or Path

        Returns
        -------
        SpectrumLibrary

        Raises
        ------
        engine.SpectrumFileError
            When the file cannot be used (no message box is shown).
        """
        return self._open(path, "library")

    def open_queries(self, path: str | Path) -> SpectrumLibrary:
        """Read the query spectra to search (same formats as :meth:`open_library`)."""
        return self._open(path, "queries")

    def open_repository(self, path: str | Path) -> Repository:
        """Open a repository folder (``simms repo build``) as what :meth:`search` searches.

        It stays the search target until :meth:`close_repository`.  Its
        searches stream hits into the table as shards finish and fill the
        Repository summary tab (:meth:`repository_summary`).

        Raises
        ------
        ValueError
            ``path`` holds no repository (the message says why).
        """
        repository = self.session.repositories.open(path)
        self._app.processEvents()
        return repository

    def close_repository(self) -> None:
        """Search the active library again."""
        self.session.repositories.close()

    def repository_summary(self, by: str = "file"):
        """Per query, the repository files (``by="file"``) or datasets holding its hits.

        Returns
        -------
        pandas.DataFrame or None
            ``engine.Repository.summary`` of the last repository search's hits.
        """
        return self.session.repositories.summary(by)

    def _open(self, path: str | Path, kind: str) -> SpectrumLibrary:
        return self.session.open(path, kind)

    @property
    def library(self) -> SpectrumLibrary | None:
        """The active library."""
        return self.session.library

    @property
    def queries(self) -> SpectrumLibrary | None:
        """The query spectra."""
        q = self.session.queries
        return None if q is None else q.spectra

    # -- search -----------------------------------------------------------------------
    def search(
        self, backend: str | None = None, dask_address: str | None = None, **params
    ) -> SearchTask:
        """Start a search of the queries against the active library (or the open
        repository, :meth:`open_repository`); returns at once.

        Parameters
        ----------
        backend : {"auto", "cpu", "cuda", "dask"}, optional
            Default ``"auto"``.  ``"dask"`` runs on a Dask cluster.
        dask_address : str, optional
            The Dask scheduler, ``tcp://HOST:8786``, or ``local:N`` to start N
            local worker processes; needed with ``backend="dask"``.  The client
            is kept for later searches at the same address and closed with the
            window.  An unreachable cluster makes :meth:`SearchTask.wait`
            raise ``RuntimeError`` with the reason.
        **params
            :class:`~engine.SearchParameters` fields
            (``tolerance=0.02, top_n=5, score="modified_cosine"``); the others
            keep :class:`~engine.SearchParameters`' defaults.  What the window's
            panel shows, or saved from an earlier session, never enters a
            scripted search; the panel is set to the parameters used.

        Returns
        -------
        SearchTask
            ``.wait()`` for the hits, ``.cancel()`` to stop, ``.progress``.

        Raises
        ------
        ValueError
            Invalid parameters, or the ``dask`` backend without an address.
        """
        return self.session.search(SearchParameters(**params), backend or "auto", dask_address)

    def cluster(
        self, which: str = "queries", backend: str | None = None, consensus: bool = False, **params
    ) -> ClusterTask:
        """Cluster the query spectra (or the active library) by exact similarity; returns at once.

        Parameters
        ----------
        which : {"queries", "library"}
            The spectra to cluster.
        backend : {"auto", "cpu", "cuda"}, optional
            Where the similarities are computed (default ``"auto"``).
        consensus : bool
            Also build each cluster's consensus spectrum.
        **params
            :class:`~engine.ClusterParameters` fields (``threshold=0.8``,
            ``linkage="single"``, ``precursor_tolerance=0.01, precursor_unit="Da"``).

        Returns
        -------
        ClusterTask
            ``.wait()`` gives the :class:`~engine.ClusterResult` (``.labels``,
            ``.representatives``, ``.to_pandas()``), kept as
            ``viewer.session.clusters``; the window logs its summary.
        """
        params = ClusterParameters(**params)
        return self.session.cluster(which, params, backend or "auto", consensus=consensus)

    @property
    def hits(self) -> HitList:
        """Current hits (all of them) as a :class:`~simms_gui.session.HitList`."""
        return self.session.hit_list()

    # -- networks ---------------------------------------------------------------------
    def network(
        self,
        spectra: str = "queries",
        *,
        label_with_library: bool = False,
        backend: str = "auto",
        top_n: int = 10,
        max_links: int | None = None,
        link_method: str = "single",
        max_component_size: int = 100,
        **params,
    ) -> NetworkTask:
        """Build the molecular network of the queries (or the library) on a worker.

        Shown in the window's Network tab; returns at once.

        Parameters
        ----------
        spectra : {"queries", "library"}
        label_with_library : bool
            Label query nodes with their best hit in the active library.
        backend : str
        top_n, max_links, link_method, max_component_size
            See :class:`engine.analyses.networking.NetworkSettings` (``max_links``
            defaults to ``top_n``).
        **params
            Score settings, :class:`~engine.SearchParameters` fields; the rest as
            :data:`engine.analyses.networking.NETWORK_DEFAULTS`.

        Returns
        -------
        NetworkTask
            ``.wait()`` for the :class:`~engine.SpectrumNetwork`, ``.cancel()`` to stop.
        """
        settings = NetworkSettings(
            top_n=top_n, max_links=top_n if max_links is None else max_links,
            link_method=link_method, max_component_size=max_component_size,
        )  # fmt: skip
        request = NetworkRequest(
            spectra, network_parameters(**params), settings, label_with_library, backend
        )
        self.window.tabs.setCurrentWidget(self.window.network_tab)
        return self.session.request_network(request)

    def select_network_node(self, node: int) -> None:
        """Select spectrum ``node`` of the network shown, as a click on it does."""
        self.window.network_tab.select_node(node)
        self._app.processEvents()

    def show_network_edge(self, edge: int) -> None:
        """Show the mirror plot of edge ``edge`` (a row of ``network.edges``)."""
        self.window.network_tab.show_edge(edge)
        self._app.processEvents()

    # -- views ------------------------------------------------------------------------
    def show_mirror(self, query: int, hit: int) -> None:
        """Show the mirror plot of query ``query`` against library spectrum ``hit``.

        The hit row is selected in the table when it is shown there.
        """
        w = self.window
        w.tabs.setCurrentIndex(0)
        row = w.results.model.find_row(query, hit)
        if row >= 0:
            w.results.select_row(row)
        else:
            w.hits.show_pair(query, hit)
        self._app.processEvents()

    def export_mirror(
        self,
        path: str | Path,
        query: int | None = None,
        hit: int | None = None,
        *,
        dpi: float = 300.0,
    ) -> Path:
        """Write a mirror plot at publication size to PNG, SVG or PDF (by suffix).

        Parameters
        ----------
        path : str or Path
        query, hit : int, optional
            Query and library spectrum (indices, as in the hit table); default
            the pair the window shows now (hit table, heatmap or network tab).
            Nothing needs to be shown on screen.
        dpi : float, default 300
            Resolution of a PNG.

        Returns
        -------
        Path

        Raises
        ------
        ValueError
            No pair given and none shown, or another suffix.
        """
        if query is None and hit is None:
            return self.window.hits.current_pair_view().export_image(path, dpi=dpi)
        if query is None or hit is None:
            raise ValueError("give both query and hit, or neither")
        from simms_gui._qt.mirror_export import export_mirror
        from simms_gui.pairs import compute_pair, mirror_arguments

        s = self.session
        queries = s.hits_queries if s.hits_queries is not None else self.queries
        library = s.hits_library if s.hits_library is not None else s.library
        if queries is None or library is None:
            raise ValueError("open the queries and a library first")
        pair = compute_pair(queries, query, library, hit, s.params)
        args, kwargs = mirror_arguments(pair, s.params)
        return export_mirror(path, args, kwargs, dpi=dpi)

    def export_hits(self, path: str | Path, which: str = "all", format: str | None = None) -> Path:
        """Write the hit list with provenance (TSV, CSV, Parquet or mzTab-M by suffix; GNPS TSV
        with ``format="gnps"``).

        Parameters
        ----------
        path : str or Path
        which : {"all", "filtered", "best"}
            All hits, the rows the table shows, or the best hit of each query.

        Returns
        -------
        Path
        """
        if which == "filtered":  # what the table shows: the view's own filter
            which = self.window.results.model.hit_table(visible=True)
        return self.session.export(path, which, format)

    # -- sessions ---------------------------------------------------------------------
    def save_session(self, path: str | Path) -> Path:
        """Save files (by path and content hash), parameters, hits and selection.

        The format (a zip with a JSON manifest and the hits as TSV) is described
        in ``docs/session-format.md``.

        Returns
        -------
        Path
            The file written (``.simms`` appended when ``path`` has no suffix).
        """
        from simms_gui.model.session_file import save_session

        self.session.table_view = self.window.results.view_state()
        return save_session(self.session, path)

    def open_session(self, path: str | Path) -> list[str]:
        """Open a saved session: its files are read again and its hits restored.

        Returns
        -------
        list of str
            Problems, one line each: a file missing, or changed since the save
            (content hash differs; its hits are then not restored).

        Raises
        ------
        simms_gui.session_file.SessionFileError
            ``path`` is not a session file this version reads.
        """
        from simms_gui.model.session_file import open_session

        return open_session(self.session, path)

    def screenshot(self, path: str | Path) -> Path:
        """Save a PNG of the whole window."""
        self._app.processEvents()
        path = Path(path)
        if not self.window.grab().save(str(path)):
            raise OSError(f"could not write {path}")
        return path

    def close(self) -> None:
        """Stop any search and close the window."""
        self.window.close()

    def __repr__(self) -> str:
        return f"<simms_gui.Viewer: {self.library!r}, {self.queries!r}, {len(self.hits)} hits>"
