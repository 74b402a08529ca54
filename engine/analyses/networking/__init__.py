"""Molecular networks, on the engine's exact scores.

:func:`network` scores every pair of a spectrum set with the exact all-vs-all
search and links similar spectra as GNPS molecular networking and matchms
``SimilarityNetwork`` do (top-K neighbours, link limit, single or mutual links,
components broken at a size limit); :mod:`engine.analyses.networking.export`
writes GraphML and edge lists.
"""

from engine.analyses.networking.build import NETWORK_DEFAULTS, network, network_parameters
from engine.analyses.networking.components import component_labels, limit_component_size
from engine.analyses.networking.edges import LINK_METHODS, select_edges
from engine.analyses.networking.export import edges_frame, write_edges, write_graphml
from engine.analyses.networking.model import LABEL_FLOOR, NetworkSettings, SpectrumNetwork
from engine.analyses.run import AnalysisCancelled

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
