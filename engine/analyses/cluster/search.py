"""Search the clusters: the representatives against a library, hits handed to every member."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.analyses.cluster.result import ClusterResult
from engine.analyses.files import write_table
from engine.analyses.run import RunOptions
from engine.api import as_library, parameters_with
from engine.hits import HitTable
from engine.library import SpectrumLibrary, peak_ranges
from engine.params import SearchParameters
from engine.search import SearchContext

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
        return member, peak_ranges(start[labels], count[labels])

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
        return write_table(path, self.to_pandas(), neutral=True)


def search_clusters(
    clusters: ClusterResult,
    library: SpectrumLibrary | str | os.PathLike,
    params: SearchParameters | None = None,
    *,
    run: RunOptions | None = None,
    **keywords,
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
    run : RunOptions, optional
        Where and how the library search runs (a ``client`` runs it on Dask).
    **keywords
        :class:`RunOptions` fields as keywords, then :class:`SearchParameters`
        fields (``top_n=5``, ``mode="analog"``).

    Returns
    -------
    ClusterHits
        ``.hits`` of the representatives, ``.propagated()`` and ``.to_pandas()``
        for every member, ``.reduction_factor``.

    Raises
    ------
    AnalysisCancelled
        When the cancel token was cancelled.
    """
    run = RunOptions.take(keywords, run)
    params = parameters_with(params, keywords, "search_clusters")
    library = as_library(library)
    queries = clusters.representative_spectra()
    hits = run.search(queries, library, params)
    hits = hits.sorted().with_context(SearchContext(queries, library, params))
    return ClusterHits(clusters, hits)
