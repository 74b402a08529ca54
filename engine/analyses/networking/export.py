"""Network files: GraphML for Cytoscape, edge lists for pandas; written atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported on first use: ``import engine`` stays quick
    import pandas as pd

from engine.analyses.files import TABLE_SUFFIXES, write_atomic, write_table
from engine.analyses.networking.model import SpectrumNetwork

__all__ = ["GRAPHML_SUFFIXES", "edges_frame", "write_edges", "write_graphml"]

#: File name endings of GraphML files.
GRAPHML_SUFFIXES = (".graphml", ".xml")


def write_graphml(net: SpectrumNetwork, path: str | os.PathLike) -> Path:
    """Write ``net`` as GraphML (Cytoscape: File → Import → Network from File).

    Node ids are the spectrum ids of hit exports (``query_id`` / ``library_id``)
    when every spectrum has its own; otherwise (ids missing or repeated) the
    spectrum indexes.  Nodes carry ``index``, ``spectrum_id``, ``precursor_mz``,
    ``name``, ``inchikey``, ``component``, the best library hit (``library_name``,
    ``library_score`` ...) and ``label``; edges carry ``score``, ``matches`` and
    ``precursor_mz_delta``.  Read it back with ``networkx.read_graphml(path)``.
    """
    import networkx as nx

    graph = net.to_networkx()
    ids = [str(i) for i in net.spectra.ids]
    if all(ids) and len(set(ids)) == len(ids):
        graph = nx.relabel_nodes(graph, dict(enumerate(ids)), copy=False)
    return write_atomic(path, lambda tmp: nx.write_graphml_xml(graph, tmp), GRAPHML_SUFFIXES)


def edges_frame(net: SpectrumNetwork) -> pd.DataFrame:
    """The network's edges as a :class:`pandas.DataFrame`, one row per edge."""
    import pandas as pd

    return pd.DataFrame(net.edge_columns())


def write_edges(net: SpectrumNetwork, path: str | os.PathLike) -> Path:
    """Write the edge list as TSV (``.tsv``) or CSV (``.csv``), atomically.

    Read it back with ``pandas.read_csv(path, sep="\\t")``.
    """
    return write_table(path, edges_frame(net), TABLE_SUFFIXES)
