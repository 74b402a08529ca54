"""Search the clusters: the representatives against a library, hits handed to every member."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.api import as_library, parameters_with, search_job
from engine.backends import Backend
from engine.cluster.files import write_table
from engine.cluster.job import ClusterCancelled
from engine.cluster.result import ClusterResult
from engine.distributed import STALL_TIMEOUT
from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search import CancelToken, SearchContext, SearchProgress

__all__ = ["ClusterHits", "search_clusters"]


@dataclass(frozen=True, eq=False)
class ClusterHits:
    """Library hits of a clustered set: its representatives searched, members given theirs.

    Attributes
    ----------
    clusters : ClusterResult
        The clusters searched.
    hits : HitTable
        Hits of the representatives (query ``k`` is cluster ``k``'s
        representative), annotated: ``hits.to_pandas()``.
    """

    clusters: ClusterResult
    hits: HitTable

    @property
    def reduction_factor(self) -> float:
        """Spectra per representative: the search scored this many times fewer queries."""
        return self.clusters.reduction_factor

    def propagated(self) -> HitTable:
        """Every member's hits: its representative's, with ``query_index`` the member's index.

        Scores and matches are the representative's (never the member's own).
        """
        member, rows = self._member_rows()
        hits = self.hits
        return HitTable(member, hits.library_index[rows], hits.score[rows], hits.matches[rows])

    def _member_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """For each output row: the member, and the row of its representative's hit."""
        labels = self.clusters.labels
        query = self.hits.query_index  # canonical order: grouped by representative (= cluster)
        clusters = np.arange(self.clusters.n_clusters)
        start = np.searchsorted(query, clusters, side="left")
        count = np.searchsorted(query, clusters, side="right") - start
        member = np.repeat(np.arange(len(labels)), count[labels])
        return member, _ranges(start[labels], count[labels])

    def to_pandas(self):
        """One row per member and hit of its representative, as a ``pandas.DataFrame``.

        Columns: ``index``, ``id`` (the member), ``cluster``, ``representative``
        (whether the member is it), ``representative_index``, then the
        representative's hit columns (``query_*`` columns renamed
        ``representative_*``).
        """
        import pandas as pd

        labels = self.clusters.labels
        member, rows = self._member_rows()
        out = {
            "index": member,
            "id": self.clusters.spectra.ids[member],
            "cluster": labels[member],
            "representative": self.clusters.is_representative[member],
            "representative_index": self.clusters.representatives[labels[member]],
        }
        for name, values in self.hits.annotated().items():
            if name == "query_index":
                continue
            key = "representative_" + name[6:] if name.startswith("query_") else name
            out[key] = np.asarray(values)[rows]
        return pd.DataFrame(out)

    def write(self, path: str | os.PathLike) -> Path:
        """Write :meth:`to_pandas` as TSV (``.csv``: CSV), atomically."""
        from engine.export.cells import neutralise

        frame = self.to_pandas()
        for name in frame.columns:
            if frame[name].dtype == object:
                frame[name] = neutralise(frame[name].to_numpy())
        return write_table(path, frame)


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, s + c)``, vectorised."""
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    offsets = np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(starts, counts) + np.arange(total) - offsets


def search_clusters(
    clusters: ClusterResult,
    library: SpectrumLibrary | str | os.PathLike,
    params: SearchParameters | None = None,
    *,
    backend: str | Backend = "auto",
    client: object | None = None,
    on_progress: Callable[[SearchProgress], None] | None = None,
    on_message: Callable[[str], None] | None = None,
    cancel_token: CancelToken | None = None,
    stall_timeout: float = STALL_TIMEOUT,
    **param_overrides,
) -> ClusterHits:
    """Search only the clusters' representatives against ``library``.

    Parameters
    ----------
    clusters : ClusterResult
        From :func:`cluster_spectra`.
    library : SpectrumLibrary or path
        The library to search.
    params : SearchParameters, optional
        The search (default: identity mode, as :func:`engine.search`).
    backend, client, on_progress, on_message, cancel_token, stall_timeout
        As for :func:`engine.search_job` (``client``: a ``dask.distributed.Client``
        runs the search on its cluster).
    **param_overrides
        Fields of :class:`SearchParameters` (``top_n=5``, ``mode="analog"``).

    Returns
    -------
    ClusterHits
        ``.hits`` of the representatives, ``.propagated()`` and ``.to_pandas()``
        for every member, ``.reduction_factor``.

    Raises
    ------
    ClusterCancelled
        When ``cancel_token`` was cancelled.
    """
    params = parameters_with(params, param_overrides, "search_clusters")
    library = as_library(library)
    queries = clusters.representative_spectra()
    job = search_job(
        queries, library, params, client=client, backend=backend, on_progress=on_progress,
        on_message=on_message, cancel_token=cancel_token, stall_timeout=stall_timeout,
    )  # fmt: skip
    hits = job.run()
    if job.cancelled:
        raise ClusterCancelled("search of the representatives cancelled")
    hits = hits.sorted().with_context(SearchContext(queries, library, params))
    return ClusterHits(clusters, hits)
