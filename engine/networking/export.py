"""Network files: GraphML for Cytoscape, edge lists for pandas; written atomically."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported on first use: ``import engine`` stays quick
    import pandas as pd

from engine.atomic import atomic_path
from engine.networking.model import SpectrumNetwork

__all__ = ["atomic_write", "check_network_output", "write_edges", "write_graphml"]


def check_network_output(path: str | os.PathLike, suffixes: tuple[str, ...]) -> Path:
    """``path`` if a file can be written there with one of ``suffixes``, else a ValueError."""
    path = Path(path)
    if path.suffix.lower() not in suffixes:
        raise ValueError(f"{path}: the file name must end in {' or '.join(suffixes)}")
    if path.is_dir():
        raise ValueError(f"{path} is a directory, not a file name")
    if not path.parent.is_dir():
        raise ValueError(f"{path}: directory {path.parent} does not exist")
    return path


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Call ``write(temporary_path)``, then rename the file onto ``path``.

    Readers never see a half-written file, and a failed write leaves an
    existing ``path`` as it was.
    """
    path = Path(path)
    with atomic_path(path) as tmp:
        write(str(tmp))
    return path


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

    path = check_network_output(path, (".graphml", ".xml"))
    graph = net.to_networkx()
    ids = [str(i) for i in net.spectra.ids]
    if all(ids) and len(set(ids)) == len(ids):
        graph = nx.relabel_nodes(graph, dict(enumerate(ids)), copy=False)
    return atomic_write(path, lambda tmp: nx.write_graphml_xml(graph, tmp))


def edges_frame(net: SpectrumNetwork) -> pd.DataFrame:
    """The network's edges as a :class:`pandas.DataFrame`, one row per edge."""
    import pandas as pd

    return pd.DataFrame(net.edge_columns())


def write_edges(net: SpectrumNetwork, path: str | os.PathLike) -> Path:
    """Write the edge list as TSV (``.tsv``) or CSV (``.csv``).

    Read it back with ``pandas.read_csv(path, sep="\\t")``.
    """
    path = check_network_output(path, (".tsv", ".csv", ".txt"))
    sep = "," if path.suffix.lower() == ".csv" else "\t"
    frame = edges_frame(net)
    return atomic_write(path, lambda tmp: frame.to_csv(tmp, sep=sep, index=False))
