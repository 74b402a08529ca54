"""What a :class:`~simms_gui.model.session.Session` announces: typed events.

Each change has its own signal with its own payload type, grouped on
``session.events`` (napari's ``layer.events``): a listener connects to the
signal it cares about, a misspelt name fails at once, and a payload carries
what a listener needs, so a listener in another thread never reads the
session half-way through a change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine import ClusterResult, HitTable, SearchParameters, SearchProgress, SpectrumNetwork
from engine.repository import RepositoryProgress
from simms_gui.model.requests import HeatmapRequest, NetworkRequest, TableView
from simms_gui.model.signal import Signal

__all__ = [
    "FilesChanged",
    "HeatmapReady",
    "HitsChanged",
    "NetworkFinished",
    "RepositoryOpened",
    "RepositorySummary",
    "SearchFinished",
    "SearchStarted",
    "Selection",
    "SessionEvents",
]


@dataclass(frozen=True)
class FilesChanged:
    """The loaded files changed: ``queries_changed`` when the query spectra did."""

    names: tuple[str, ...]
    active: int
    queries_changed: bool = False


@dataclass(frozen=True)
class SearchStarted:
    """A search of ``n_queries`` against ``n_library`` spectra started."""

    params: SearchParameters
    backend: str
    n_queries: int
    n_library: int
    dask_address: str | None = None


@dataclass(frozen=True)
class HitsChanged:
    """Hits arrived (``replace=False``: appended) or replaced all hits (``replace=True``).

    One event for a streamed search (a reset, then chunks) and for a restored
    session (one reset with all hits): the hit table listens to this alone.

    Attributes
    ----------
    hits : HitTable
        The hits added (or all of them).
    columns : dict or None
        Their display columns (:func:`simms_gui.model.answers.display_columns`),
        made in the task's thread when the session prepares them
        (``session.display``); None otherwise.
    library_name : str
        The searched library's file name.
    replace : bool
    """

    hits: HitTable
    columns: dict[str, np.ndarray] | None
    library_name: str
    replace: bool = False


@dataclass(frozen=True)
class SearchFinished:
    """The search ended: done, ``cancelled`` or failed (``error``)."""

    backend: str
    device: str
    n_hits: int
    cancelled: bool = False
    error: str | None = None
    seconds: float = 0.0  # the task's wall time, waits for numba included
    compile_seconds: float = 0.0  # of which the search waited for numba (first runs)

    @property
    def search_seconds(self) -> float:
        """The search's own time: :attr:`seconds` less the waits for numba."""
        return max(self.seconds - self.compile_seconds, 0.0)

    @property
    def outcome(self) -> str:
        """``"failed"``, ``"stopped"`` or ``"done"``."""
        return "failed" if self.error else "stopped" if self.cancelled else "done"


@dataclass(frozen=True)
class Selection:
    """The selected hit ``(query, library)`` and query rows."""

    hit: tuple[int, int] | None
    queries: tuple[int, ...] = ()


@dataclass(frozen=True)
class NetworkFinished:
    """A network build ended: ``network`` (None when stopped or failed) and its layout."""

    request: NetworkRequest
    network: SpectrumNetwork | None
    positions: np.ndarray | None = None
    cancelled: bool = False
    error: str | None = None


@dataclass(frozen=True)
class HeatmapReady:
    """The scores of a heatmap (``error``: why there are none)."""

    request: HeatmapRequest
    scores: np.ndarray | None
    error: str | None = None


@dataclass(frozen=True)
class Restored:
    """A saved session was opened (its hits come as :class:`HitsChanged` after this)."""

    path: Path | None
    problems: tuple[str, ...] = field(default=())
    table_view: TableView = field(default_factory=TableView)


@dataclass(frozen=True)
class RepositoryOpened:
    """A repository became the search target (:meth:`RepositorySearches.open`).

    Attributes
    ----------
    path : Path
    info : str
        Its lines of ``Repository.info()`` (the first says SYNTHETIC when it is).
    spectra, shards, files, datasets : int
    synthetic : bool
    prepared : int
        Shards with stored prepared spectra (the most of any preparation).
    """

    path: Path
    info: str
    spectra: int
    shards: int
    files: int
    datasets: int
    synthetic: bool
    prepared: int = 0

    @property
    def name(self) -> str:
        """The repository folder's name."""
        return self.path.name


@dataclass(frozen=True, eq=False)
class RepositorySummary:
    """Per query, which files and datasets of the repository hold its hits.

    ``Repository.summary(hits, queries, by="file")`` and ``by="dataset"`` of
    the hits so far (``final``: of all the search's hits, made when it ended).

    Attributes
    ----------
    files, datasets : pandas.DataFrame
    repository : str
        The repository folder's name.
    synthetic : bool
    final : bool
    """

    files: object
    datasets: object
    repository: str
    synthetic: bool = False
    final: bool = False


class SessionEvents:
    """The signals of a session (``session.events``).

    Signals
    -------
    files(FilesChanged)
    search_started(SearchStarted)
    progress(SearchProgress)
        The running search's progress.
    hits(HitsChanged)
    search_finished(SearchFinished)
    restored(Restored)
    selection(Selection)
    stale(tuple)
        Why the hits no longer answer the inputs (:attr:`Session.stale`).
    network_started(NetworkRequest), network_finished(NetworkFinished)
    clusters(ClusterResult)
    heatmap_started(HeatmapRequest), heatmap_ready(HeatmapReady)
    message(str)
        A notice for the log (a GPU fallback, a Dask connection).
    repository(RepositoryOpened or None)
        A repository became the search target (None: it was closed).
    repository_progress(RepositoryProgress)
        Shards done of the running repository search, first-hits time.
    repository_summary(RepositorySummary)
        The per-file and per-dataset summary (as shards finish, then final).
    """

    files = Signal(FilesChanged)
    search_started = Signal(SearchStarted)
    progress = Signal(SearchProgress)
    hits = Signal(HitsChanged)
    search_finished = Signal(SearchFinished)
    restored = Signal(Restored)
    selection = Signal(Selection)
    stale = Signal(tuple)
    network_started = Signal(NetworkRequest)
    network_finished = Signal(NetworkFinished)
    clusters = Signal(ClusterResult)
    heatmap_started = Signal(HeatmapRequest)
    heatmap_ready = Signal(HeatmapReady)
    message = Signal(str)
    repository = Signal(RepositoryOpened)
    repository_progress = Signal(RepositoryProgress)
    repository_summary = Signal(RepositorySummary)
