"""Clustering of spectrum sets: redundant MS/MS spectra grouped, one representative each.

Instruments record many spectra of the same compound; clustering them (as
falcon, MaRaCluster, msCRUSH and MS-Cluster do) leaves one representative per
cluster to search.  :func:`cluster_spectra` links spectra whose exact
similarity, computed by the engine's search within a precursor window, reaches
a cut, and clusters them by complete (default) or single linkage;
:func:`search_clusters` searches only the representatives against a library
and hands each member its representative's hits.
"""

from engine.analyses.cluster.consensus import consensus_spectra
from engine.analyses.cluster.job import cluster_parameters, cluster_spectra
from engine.analyses.cluster.linkage import complete_linkage, components, medoids, single_linkage
from engine.analyses.cluster.pairs import LinkedPairs, linked_pairs
from engine.analyses.cluster.params import LINKAGES, ClusterParameters
from engine.analyses.cluster.result import TABLE_COLUMNS, ClusterResult
from engine.analyses.cluster.search import ClusterHits, search_clusters
from engine.analyses.run import AnalysisCancelled

#: The old name of :class:`~engine.analyses.run.AnalysisCancelled`.
ClusterCancelled = AnalysisCancelled

__all__ = [
    "LINKAGES",
    "TABLE_COLUMNS",
    "ClusterCancelled",
    "ClusterHits",
    "ClusterParameters",
    "ClusterResult",
    "LinkedPairs",
    "cluster_parameters",
    "cluster_spectra",
    "complete_linkage",
    "components",
    "consensus_spectra",
    "linked_pairs",
    "medoids",
    "search_clusters",
    "single_linkage",
]
