"""Analyses of a spectrum set against itself: clusters, molecular networks, library checks.

All three score every pair of a set with the engine's exact all-against-all
search (:func:`~engine.analyses.run.self_search`), run it as one
:class:`RunOptions` says (backend, Dask client, progress, cancellation ...),
raise :class:`AnalysisCancelled` when cancelled, and write their files
atomically after one writability check (:mod:`engine.analyses.files`).

* :mod:`engine.analyses.cluster`: :func:`cluster_spectra` groups redundant
  spectra and :func:`search_clusters` searches only their representatives;
* :mod:`engine.analyses.networking`: :func:`network`, GNPS-style molecular
  networks, GraphML and edge lists;
* :mod:`engine.analyses.qc`: :func:`library_qc` finds near-duplicate and
  conflicting library entries, :func:`deduplicate` drops the redundant copies;
  :class:`IsomerCheck` flags hits the library cannot tell from an isomer.
"""

from engine.analyses.cluster import (
    ClusterCancelled,
    ClusterHits,
    ClusterParameters,
    ClusterResult,
    cluster_spectra,
    search_clusters,
)
from engine.analyses.files import OutputPathError, check_writable
from engine.analyses.networking import (
    NETWORK_DEFAULTS,
    NetworkSettings,
    SpectrumNetwork,
    network,
    network_parameters,
    write_edges,
    write_graphml,
)
from engine.analyses.qc import (
    IsomerCheck,
    LibraryQC,
    complete_ties,
    deduplicate,
    isomer_parameters,
    library_qc,
    write_qc_report,
)
from engine.analyses.run import AnalysisCancelled, RunOptions, self_search

__all__ = [
    "NETWORK_DEFAULTS",
    "AnalysisCancelled",
    "ClusterCancelled",
    "ClusterHits",
    "ClusterParameters",
    "ClusterResult",
    "IsomerCheck",
    "LibraryQC",
    "NetworkSettings",
    "OutputPathError",
    "RunOptions",
    "SpectrumNetwork",
    "check_writable",
    "cluster_spectra",
    "complete_ties",
    "deduplicate",
    "isomer_parameters",
    "library_qc",
    "network",
    "network_parameters",
    "search_clusters",
    "self_search",
    "write_edges",
    "write_graphml",
    "write_qc_report",
]
