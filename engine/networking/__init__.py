"""Molecular networks and library quality checks, on the engine's exact scores.

:func:`network` scores every pair of a spectrum set with the exact all-vs-all
search and links similar spectra as GNPS molecular networking and matchms
``SimilarityNetwork`` do (top-K neighbours, link limit, single or mutual links,
components broken at a size limit); :mod:`engine.networking.export` writes GraphML
and edge lists.  :func:`library_qc` finds near-duplicate and conflicting
library entries and :func:`deduplicate` drops the redundant copies.
"""

from engine.networking.build import NETWORK_DEFAULTS, AnalysisCancelled, network, network_parameters
from engine.networking.components import component_labels, limit_component_size
from engine.networking.edges import LINK_METHODS, select_edges
from engine.networking.export import edges_frame, write_edges, write_graphml
from engine.networking.model import LABEL_FLOOR, NetworkSettings, SpectrumNetwork

__all__ = [
    "LABEL_FLOOR",
    "LINK_METHODS",
    "NETWORK_DEFAULTS",
    "AnalysisCancelled",
    "NetworkSettings",
    "SpectrumNetwork",
    "component_labels",
    "edges_frame",
    "limit_component_size",
    "network",
    "network_parameters",
    "select_edges",
    "write_edges",
    "write_graphml",
]
