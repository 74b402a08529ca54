"""What a user asks the session for: a search, a network, a heatmap (frozen requests)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine import HitTable, SearchParameters, SpectrumLibrary, score_matrix
from engine.analyses.networking import NetworkSettings, network_parameters

__all__ = [
    "MAX_SIDE",
    "HeatmapRequest",
    "NetworkRequest",
    "SearchRequest",
    "TableView",
    "selection_request",
    "spectrum_labels",
    "top_hits_request",
]

#: Largest side of an all-vs-all heatmap.
MAX_SIDE = 3000


@dataclass(frozen=True)
class SearchRequest:
    """A search: parameters and where it runs.

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


@dataclass(frozen=True)
class TableView:
    """How the hit table is looked at: its filters and sort (saved in session files).

    Attributes
    ----------
    text : str
        The text filter ("" none).
    score_min, score_max : float
        The score range shown.
    best_only : bool
        The best hit of each query only.
    sort_key : str or None
        The column key sorted by (None: query order, best hits first).
    descending : bool
    query : int or None
        The query whose hits alone are listed.
    """

    text: str = ""
    score_min: float = 0.0
    score_max: float = 1.0
    best_only: bool = False
    sort_key: str | None = None
    descending: bool = False
    query: int | None = None

    def to_dict(self) -> dict[str, object]:
        """The fields, for JSON."""
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict | None) -> TableView:
        """From :meth:`to_dict`'s output (unknown keys ignored, missing ones default)."""
        known = {k: v for k, v in (data or {}).items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass(frozen=True)
class NetworkRequest:
    """A network asked for: of which spectra, scored how, linked how.

    Attributes
    ----------
    source : {"queries", "library"}
        The session's query spectra or its active library.
    params : SearchParameters
        Score settings (:func:`engine.analyses.networking.network_parameters`).
    settings : NetworkSettings
        Top-K, link limit, link method, component size limit.
    label_with_library : bool
        Label nodes with their best hit in the active library (queries only).
    backend : str
    """

    source: str = "queries"
    params: SearchParameters = None  # type: ignore[assignment]
    settings: NetworkSettings = NetworkSettings()
    label_with_library: bool = False
    backend: str = "auto"

    def __post_init__(self) -> None:
        if self.source not in ("queries", "library"):
            raise ValueError(f"source must be 'queries' or 'library', not {self.source!r}")
        if self.params is None:
            object.__setattr__(self, "params", network_parameters())


@dataclass(frozen=True)
class HeatmapRequest:
    """Rows and columns of a heatmap: spectra of two libraries, by index."""

    rows: SpectrumLibrary
    row_index: np.ndarray
    columns: SpectrumLibrary
    column_index: np.ndarray
    title: str
    row_title: str = "query"
    column_title: str = "library hit"

    def compute(self, params: SearchParameters, backend: str = "auto") -> np.ndarray:
        """The dense score matrix (runs ``engine.score_matrix``; call off the GUI thread)."""
        scores, _ = score_matrix(
            self.rows.subset(self.row_index),
            self.columns.subset(self.column_index),
            params,
            backend=backend,
        )
        return np.asarray(scores, dtype=np.float64)


def spectrum_labels(spectra: SpectrumLibrary, index: np.ndarray) -> list[str]:
    names, ids = spectra.metadata["name"], spectra.metadata["id"]
    out = []
    for i in index:
        name = str(names[i]) or str(ids[i]) or f"#{i}"
        out.append(name if len(name) <= 40 else name[:39] + "…")
    return out


def top_hits_request(
    hits: HitTable,
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    query_rows: list[int],
    top_n: int = 10,
) -> HeatmapRequest | None:
    """Queries ``query_rows`` × the union of their ``top_n`` best hits."""
    if not len(hits) or not query_rows:
        return None
    q = np.asarray(sorted(set(query_rows)), dtype=np.int64)
    table = hits.take(np.isin(hits.query_index, q)).top_per_query(top_n)
    if not len(table):
        return None
    # columns ordered by the best score any selected query gives them
    best: dict[int, float] = {}
    for li, s in zip(table.library_index.tolist(), table.score.tolist(), strict=True):
        best[li] = max(best.get(li, -1.0), s)
    cols = np.array(sorted(best, key=lambda k: -best[k]), dtype=np.int64)
    title = f"{len(q)} quer{'y' if len(q) == 1 else 'ies'} × top {top_n} hits"
    return HeatmapRequest(queries, q, library, cols, title)


def selection_request(spectra: SpectrumLibrary, rows: list[int]) -> HeatmapRequest | None:
    """All-vs-all of the spectra at ``rows`` (at most :data:`MAX_SIDE`)."""
    if len(rows) < 2:
        return None
    index = np.asarray(sorted(set(rows))[:MAX_SIDE], dtype=np.int64)
    title = f"All vs all: {len(index)} spectra"
    return HeatmapRequest(spectra, index, spectra, index, title, column_title="query")
