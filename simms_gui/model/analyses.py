"""Every analysis of a session as a task: reading a file, a search, a network, a
clustering, a heatmap.

Each task runs in its :class:`~simms_gui.model.tasks.TaskRunner`'s thread,
changes the session it belongs to, and the session announces the change
(``session.events``).  The session makes them (``session.search()``,
``session.load()``...); a task is ``wait()``-ed for its result or ``cancel()``-ed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from engine import (
    AnalysisCancelled,
    ClusterParameters,
    ClusterResult,
    HitTable,
    SearchProgress,
    SpectrumFileError,
    SpectrumLibrary,
    SpectrumNetwork,
    cluster_spectra,
    network,
    search_job,
)
from engine.analyses.qc import IsomerCheck, isomer_parameters
from engine.distributed import ClusterError, describe
from simms_gui.model.files import LoadProgress
from simms_gui.model.requests import HeatmapRequest, NetworkRequest, SearchRequest
from simms_gui.model.tasks import Task
from simms_gui.network_layout import network_layout

__all__ = ["ClusterTask", "HeatmapTask", "LoadTask", "NetworkTask", "SearchTask", "local"]


def local(backend: str) -> str:
    """The backend of work done in this process beside a search: Dask means auto."""
    return "auto" if backend == "dask" else backend


class LoadTask(Task):
    """Read a spectrum file; with ``kind``, add it to the session as a library or the queries.

    Attributes
    ----------
    path : Path
    kind : {"library", "queries"} or None
    load_progress : LoadProgress
        The read's progress (a progress dialog polls it; cancelling it stops the read).
    """

    def __init__(self, session: Any, path: str | Path, kind: str | None = None) -> None:
        if kind not in (None, "library", "queries"):
            raise ValueError(f"kind must be 'library' or 'queries', not {kind!r}")
        super().__init__(f"read {Path(path).name}")
        self.session, self.path, self.kind = session, Path(path), kind
        self.load_progress = LoadProgress(self.report)

    def cancel(self) -> None:
        super().cancel()
        self.load_progress.cancel()

    def read(self, path: Path) -> SpectrumLibrary:
        """Read ``path`` reporting into this task (raises ``SpectrumFileError``)."""
        return self.session.read(path, self.load_progress)

    def run(self) -> SpectrumLibrary:
        spectra = self.read(self.path)
        if self.kind is not None:
            if len(spectra) == 0:
                raise SpectrumFileError(str(self.path), "no usable spectra in the file")
            add = self.session.add_library if self.kind == "library" else self.session.set_queries
            add(self.path, spectra)
        return spectra

    def failed_text(self, exc: BaseException) -> str:
        if isinstance(exc, SpectrumFileError):
            return str(exc)
        if isinstance(exc, OSError):
            return f"{self.path}: {exc.strerror or exc}"
        return f"{self.path}: {type(exc).__name__}: {exc}"


class SearchTask(Task):
    """A search of the session's queries against its active library.

    Attributes
    ----------
    request : SearchRequest
    params : SearchParameters
    job : SearchJob or DaskSearchJob or None
        The engine's job (made in the task's thread).
    """

    def __init__(self, session: Any, request: SearchRequest, client: object | None = None) -> None:
        super().__init__("search")
        self.session, self.request, self.client = session, request, client
        self.params = request.params
        self.queries: SpectrumLibrary = session.queries.spectra
        self.library: SpectrumLibrary = session.library
        self.job = None
        self._last = 0.0

    @property
    def backend(self) -> str:
        """The backend asked for: ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"dask"``."""
        return self.request.backend

    @property
    def device(self) -> str:
        """Where the search ran ("" until it ends)."""
        return self.session.device if self.done else ""

    @property
    def hits(self) -> HitTable:
        """Hits so far (all of them once done)."""
        return self.session.hits

    def cancel(self) -> None:
        super().cancel()
        if self.job is not None:
            self.job.cancel()

    def run(self) -> HitTable:
        s, started = self.session, time.perf_counter()
        isomers = error = None
        try:
            client = self.client
            if self.backend == "dask" and client is None:
                client = s.dask.client(self.request.dask_address)
                s.events.message.emit(f"Connected: {describe(client)}")
            self.job = search_job(
                self.queries, self.library, self.params, client=client,
                backend="auto" if client is not None else self.backend,
                cpu_threads=s.runner.cpu_threads, on_progress=self._progress,
                on_message=s.events.message.emit, cancel_token=self.token,
            )  # fmt: skip
            q_values = getattr(self.job, "q_values", None)  # with fdr: the q-value estimate
            isomers = IsomerCheck(  # in the search's own score: no kernels to compile
                self.library, isomer_parameters(self.params), backend=local(self.backend)
            )
            for chunk in self.job:
                s.add_hits(chunk, q_values, isomers)
            s.events.progress.emit(SearchProgress(**self.job.progress.__dict__))
        except Exception as exc:
            error = self.failed_text(exc)
            raise
        finally:
            s.finish_search(self, isomers, error, time.perf_counter() - started)
        return s.hits

    def failed_text(self, exc: BaseException) -> str:
        if isinstance(exc, ClusterError):  # one line, fit for a status bar
            return str(exc)
        return super().failed_text(exc)

    # -- what the session reads when the search ends ------------------------------------
    def ran_on(self) -> tuple[str, str]:
        """The backend's name and the device the search ran on."""
        return self.job.backend.name or self.session.backend, self.job.backend.device

    def stopped(self) -> bool:
        """True when the search was stopped."""
        return self.job.cancelled

    def incomplete_queries(self):
        """Queries the search did not finish."""
        return self.job.incomplete_queries

    def _progress(self, progress: SearchProgress) -> None:
        now = time.monotonic()
        self.progress = progress.fraction
        if now - self._last >= 0.1 or progress.fraction >= 1.0:
            self._last = now
            self.report(progress.fraction)
            self.session.events.progress.emit(SearchProgress(**progress.__dict__))


class NetworkTask(Task):
    """The molecular network of a request's spectra (laid out when the session shows it)."""

    def __init__(self, session: Any, request: NetworkRequest, cpu_threads: int | None = None):
        super().__init__("network")
        self.session, self.request = session, request
        self.cpu_threads = cpu_threads if cpu_threads is not None else session.runner.cpu_threads
        self.spectra, self.label = network_inputs(session, request)

    @property
    def network(self) -> SpectrumNetwork | None:
        """The network, once built (None while running, or when stopped or failed)."""
        return self.result if self.state == "done" else None

    def run(self) -> SpectrumNetwork | None:
        s, settings = self.session, self.request.settings
        net = positions = None
        error = None
        try:
            net = network(
                self.spectra, self.request.params, top_n=settings.top_n,
                max_links=settings.max_links, link_method=settings.link_method,
                max_component_size=settings.max_component_size, library=self.label,
                backend=self.request.backend, on_progress=lambda p: self.report(p.fraction),
                cancel_token=self.token, cpu_threads=self.cpu_threads,
            )  # fmt: skip
            positions = network_layout(net) if s.display else None
        except AnalysisCancelled:
            raise
        except Exception as exc:
            error = self.failed_text(exc)
            raise
        finally:
            s.finish_network(self, net, positions, error)
        return net


class ClusterTask(Task):
    """Cluster the queries or the active library (:func:`engine.cluster_spectra`)."""

    def __init__(
        self,
        session: Any,
        which: str,
        params: ClusterParameters | None,
        backend: str = "auto",
        **options: Any,
    ) -> None:
        if which not in ("queries", "library"):
            raise ValueError(f"which must be 'queries' or 'library', not {which!r}")
        loaded = session.queries if which == "queries" else session.library_file
        if loaded is None:
            raise RuntimeError(f"open {'query spectra' if which == 'queries' else 'a library'}")
        super().__init__(f"clustering of the {which}")
        self.session, self.spectra = session, loaded.spectra
        self.params, self.backend, self.options = params, backend, options

    def run(self) -> ClusterResult:
        options = {"cpu_threads": self.session.runner.cpu_threads, **self.options}
        result = cluster_spectra(
            self.spectra, self.params, backend=self.backend, cancel_token=self.token,
            on_progress=lambda p: self.report(p.fraction), **options,
        )  # fmt: skip
        self.session.set_clusters(result)
        return result


class HeatmapTask(Task):
    """The dense score matrix of a heatmap request."""

    def __init__(self, session: Any, request: HeatmapRequest, params, backend: str = "auto"):
        super().__init__(f"heatmap: {request.title}")
        self.session, self.request, self.params, self.backend = session, request, params, backend

    def run(self):
        scores = error = None
        try:
            scores = self.request.compute(self.params, local(self.backend))
        except Exception as exc:
            error = self.failed_text(exc)
            raise
        finally:
            self.session.finish_heatmap(self.request, scores, error)
        return scores


def network_inputs(session: Any, request: NetworkRequest) -> tuple[SpectrumLibrary, object]:
    """The spectra a request networks, and the library that labels them (or None)."""
    queries = session.queries
    spectra = queries.spectra if request.source == "queries" and queries else None
    if request.source == "library":
        spectra = session.library
    if spectra is None:
        raise RuntimeError(f"open {request.source} first")
    label = session.library if request.label_with_library and request.source == "queries" else None
    if request.label_with_library and label is None:
        raise RuntimeError("open a library to label the network's spectra with")
    return spectra, label
