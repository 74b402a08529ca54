"""The clusters of a spectrum set: labels, sizes, representatives, tables and files."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.analyses.cluster.mgf import write_mgf
from engine.analyses.cluster.pairs import LinkedPairs
from engine.analyses.cluster.params import ClusterParameters
from engine.analyses.files import write_table
from engine.library import SpectrumLibrary

__all__ = ["TABLE_COLUMNS", "ClusterResult"]

#: Columns of :meth:`ClusterResult.to_pandas`, in order.
TABLE_COLUMNS = (
    "index",
    "id",
    "name",
    "inchikey",
    "precursor_mz",
    "charge",
    "cluster",
    "cluster_size",
    "representative",
    "representative_index",
    "similarity_to_representative",
)


@dataclass(frozen=True, eq=False)
class ClusterResult:
    """Clusters of ``spectra``.

    Attributes
    ----------
    spectra : SpectrumLibrary
        The clustered spectra, peaks as read (not preprocessed).
    params : ClusterParameters
        How they were clustered.
    labels : ndarray of int64
        Cluster of each spectrum, numbered 0, 1, ... by smallest member index.
    representatives : ndarray of int64
        Each cluster's representative (its medoid), by cluster number.
    pairs : LinkedPairs
        The linked pairs the clusters were made from.
    consensus : SpectrumLibrary or None
        Each cluster's consensus spectrum, when asked for.
    timings : dict of str to float
        Seconds of each stage (``preprocess``, ``pairs``, ``linkage``, ...).
    device : str
        Where the similarities were computed.
    """

    spectra: SpectrumLibrary
    params: ClusterParameters
    labels: np.ndarray
    representatives: np.ndarray
    pairs: LinkedPairs
    consensus: SpectrumLibrary | None = None
    timings: dict[str, float] = field(default_factory=dict)
    device: str = ""

    # -- figures ----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.labels)

    @property
    def n_clusters(self) -> int:
        """Number of clusters (singletons included)."""
        return len(self.representatives)

    @property
    def sizes(self) -> np.ndarray:
        """Spectra in each cluster, by cluster number."""
        return np.bincount(self.labels, minlength=self.n_clusters)

    @property
    def n_singletons(self) -> int:
        """Clusters of one spectrum."""
        return int(np.count_nonzero(self.sizes == 1))

    @property
    def reduction_factor(self) -> float:
        """Spectra per representative (how much less a search of the representatives scores)."""
        return len(self) / self.n_clusters if self.n_clusters else 1.0

    @property
    def is_representative(self) -> np.ndarray:
        """True for each cluster's representative."""
        flag = np.zeros(len(self), dtype=bool)
        flag[self.representatives] = True
        return flag

    @property
    def representative_of(self) -> np.ndarray:
        """Index of each spectrum's representative."""
        return self.representatives[self.labels]

    def similarity_to_representative(self) -> np.ndarray:
        """Each spectrum's similarity to its representative (1 for itself, NaN if not linked)."""
        rep = self.representative_of
        out = np.full(len(self), np.nan)
        out[self.representatives] = 1.0
        p = self.pairs
        for a, b in ((p.first, p.second), (p.second, p.first)):
            hit = rep[a] == b
            out[a[hit]] = p.score[hit]
        return out

    def members(self, cluster: int) -> np.ndarray:
        """Spectrum indexes of one cluster, ascending."""
        return np.flatnonzero(self.labels == cluster)

    def summary(self) -> str:
        """One line: spectra, clusters, singletons, largest cluster, reduction factor."""
        largest = int(self.sizes.max(initial=0))
        return (
            f"{len(self):,} spectra in {self.n_clusters:,} clusters ({self.n_singletons:,} "
            f"singletons, largest {largest:,}); reduction factor {self.reduction_factor:.2f}"
        )

    def __repr__(self) -> str:
        return f"<ClusterResult: {self.summary()}>"

    # -- tables and files -------------------------------------------------------------
    def to_pandas(self):
        """One row per spectrum (:data:`TABLE_COLUMNS`) as a ``pandas.DataFrame``."""
        import pandas as pd

        meta = self.spectra.metadata
        columns = {
            "index": np.arange(len(self)),
            "id": meta["id"],
            "name": meta["name"],
            "inchikey": meta["inchikey"],
            "precursor_mz": np.asarray(self.spectra.precursor_mz),
            "charge": np.asarray(self.spectra.charge, dtype=np.int64),
            "cluster": self.labels,
            "cluster_size": self.sizes[self.labels],
            "representative": self.is_representative,
            "representative_index": self.representative_of,
            "similarity_to_representative": self.similarity_to_representative(),
        }
        return pd.DataFrame(columns, columns=list(TABLE_COLUMNS))

    def representative_spectra(self) -> SpectrumLibrary:
        """The representatives as a library, in cluster order (peaks as read)."""
        return self.spectra.subset(self.representatives)

    def write_table(self, path: str | os.PathLike) -> Path:
        """Write :meth:`to_pandas` as TSV (``.csv``: CSV), atomically."""
        return write_table(path, self.to_pandas(), neutral=True)

    def write_representatives(self, path: str | os.PathLike, consensus: bool = False) -> Path:
        """Write the representatives (or the consensus spectra) as MGF, atomically.

        Each record carries ``CLUSTER``, ``CLUSTER_SIZE`` and
        ``REPRESENTATIVE_INDEX`` (the medoid's 0-based index in the input).
        """
        if consensus and self.consensus is None:
            raise ValueError("no consensus spectra: cluster with consensus=True")
        spectra = self.consensus if consensus else self.representative_spectra()
        extra = {
            "CLUSTER": np.arange(self.n_clusters),
            "CLUSTER_SIZE": self.sizes,
            "REPRESENTATIVE_INDEX": self.representatives,
        }
        return write_mgf(path, spectra, extra)
