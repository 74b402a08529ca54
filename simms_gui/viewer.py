"""napari-style Python API: ``viewer = simms_gui.Viewer()``.

Works from scripts and from Jupyter/IPython with ``%gui qt``: the viewer makes
a QApplication when there is none, shows its window and returns at once.
"""

from __future__ import annotations

import time
from pathlib import Path

from PyQt6.QtCore import QEventLoop, QTimer
from PyQt6.QtGui import QIcon
from PyQt6.QtWidgets import QApplication

from engine import HitTable, SearchParameters, SpectrumLibrary
from simms_gui.resources import resource_path
from simms_gui.session import HitList

__all__ = ["Viewer", "SearchHandle", "get_app"]


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


class SearchHandle:
    """A search started by :meth:`Viewer.search`.

    Attributes
    ----------
    params : SearchParameters
        The parameters the search runs with.
    """

    def __init__(self, viewer: Viewer, controller) -> None:
        self._viewer = viewer
        self._controller = controller
        self.params: SearchParameters = controller.params
        self._done = False
        self._cancelled = False
        controller.finished.connect(self._finished)

    def _finished(self, cancelled: bool) -> None:
        self._done, self._cancelled = True, cancelled

    @property
    def done(self) -> bool:
        """True once the search has ended (finished, stopped or failed)."""
        return self._done

    @property
    def cancelled(self) -> bool:
        """True when the search was stopped."""
        return self._cancelled

    @property
    def error(self) -> str | None:
        """The error message when the search failed."""
        return self._controller.error

    @property
    def backend(self) -> str:
        """The backend asked for: ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"dask"``."""
        return self._controller.backend

    @property
    def device(self) -> str:
        """Where the search runs (e.g. the Dask cluster and its workers; "" before it starts)."""
        return self._controller.backend_device[1]

    @property
    def hits(self) -> HitTable:
        """Hits so far (all of them once :attr:`done`)."""
        if self._done:
            return self._viewer.window.session.hits
        return self._viewer.window.results.model.hit_table(visible=False).sorted()

    def cancel(self) -> None:
        """Stop the search after the batch in flight; hits found so far are kept."""
        self._controller.cancel()

    def wait(self, timeout: float | None = None) -> HitTable:
        """Process Qt events until the search ends, then return its hits.

        Parameters
        ----------
        timeout : float, optional
            Seconds to wait at most.

        Returns
        -------
        HitTable

        Raises
        ------
        TimeoutError
            When the search is still running after ``timeout`` seconds.
        RuntimeError
            When the search failed.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._done:
            loop = QEventLoop()
            self._controller.finished.connect(loop.quit)
            QTimer.singleShot(50, loop.quit)
            loop.exec()
            try:
                self._controller.finished.disconnect(loop.quit)
            except TypeError:
                pass
            if deadline is not None and time.monotonic() > deadline and not self._done:
                raise TimeoutError(f"search still running after {timeout} s")
        if self.error:
            raise RuntimeError(f"search failed: {self.error}")
        return self.hits

    def __repr__(self) -> str:
        state = "done" if self._done else "running"
        return f"<SearchHandle {state}, {len(self.hits)} hits>"


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
        self.window = MainWindow(persist_settings=persist_settings)
        if title:
            self.window.setWindowTitle(title)
        if demo:
            self.window.load_demo(background=False)
        if show:
            self.window.show()
            self.window.raise_()

    # -- data -------------------------------------------------------------------------
    def open_library(self, path: str | Path) -> SpectrumLibrary:
        """Read a library file (MGF, MSP, mzML, optionally gzipped) and make it active.

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

    def _open(self, path: str | Path, kind: str) -> SpectrumLibrary:
        from engine import SpectrumFileError

        path = Path(path)
        spectra = self.window.session.read(path)
        if len(spectra) == 0:
            raise SpectrumFileError(str(path), "no usable spectra in the file")
        self.window._loaded(kind, path, spectra)
        return spectra

    @property
    def library(self) -> SpectrumLibrary | None:
        """The active library."""
        return self.window.session.library

    @property
    def queries(self) -> SpectrumLibrary | None:
        """The query spectra."""
        q = self.window.session.queries
        return None if q is None else q.spectra

    # -- search -----------------------------------------------------------------------
    def search(
        self, backend: str | None = None, dask_address: str | None = None, **params
    ) -> SearchHandle:
        """Start a search of the queries against the active library; returns at once.

        Parameters
        ----------
        backend : {"auto", "cpu", "cuda", "dask"}, optional
            Default ``"auto"``.  ``"dask"`` runs on a Dask cluster.
        dask_address : str, optional
            The Dask scheduler, ``tcp://HOST:8786``, or ``local:N`` to start N
            local worker processes; needed with ``backend="dask"``.  The client
            is kept for later searches at the same address and closed with the
            window.  An unreachable cluster makes :meth:`SearchHandle.wait`
            raise ``RuntimeError`` with the reason.
        **params
            :class:`~engine.SearchParameters` fields
            (``tolerance=0.02, top_n=5, score="modified_cosine"``); the others
            keep :class:`~engine.SearchParameters`' defaults.  What the window's
            panel shows, or saved from an earlier session, never enters a
            scripted search; the panel is set to the parameters used.

        Returns
        -------
        SearchHandle
            ``.wait()`` for the hits, ``.cancel()`` to stop.

        Raises
        ------
        ValueError
            Invalid parameters, or the ``dask`` backend without an address.
        """
        if self.window.searching:
            raise RuntimeError("a search is already running")
        if self.library is None or self.queries is None:
            raise RuntimeError("open a library and queries first")
        backend = backend or "auto"
        if backend == "dask":
            from simms_gui._qt.worker import normalize_dask_address

            if not dask_address:
                raise ValueError("backend='dask' needs a dask_address (tcp://HOST:PORT or local:N)")
            normalize_dask_address(dask_address)
        p = SearchParameters(**params)
        self.window.search_panel.set_parameters(p)
        controller = self.window.start_search(p, backend, dask_address)
        if controller is None:
            raise RuntimeError("the search could not start")
        return SearchHandle(self, controller)

    @property
    def hits(self) -> HitList:
        """Current hits (all of them) as a :class:`~simms_gui.session.HitList`."""
        s = self.window.session
        table = s.hits if not self.window.searching else self.window.hits_for_export("all")
        return s.hit_list(table)

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
            w.show_pair(query, hit)
        self._app.processEvents()

    def export_hits(self, path: str | Path, which: str = "all") -> Path:
        """Write the hit list with provenance (TSV, CSV or Parquet, by suffix).

        Parameters
        ----------
        path : str or Path
        which : {"all", "filtered", "best"}
            All hits, the rows the table shows, or the best hit of each query.

        Returns
        -------
        Path
        """
        w = self.window
        if w.session.hits_queries is None:
            raise RuntimeError("no search has been run yet")
        return w.session.export(path, w.hits_for_export(which))

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
