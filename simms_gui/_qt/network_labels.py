"""Network node labels: the best library hit's name, only where it passes the label floor."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PyQt6 import QtGui

from engine import SpectrumNetwork

__all__ = ["MAX_LABELS", "MAX_SINGLE_LABELS", "NodeLabels", "library_labels"]

#: At most this many labels are drawn (the most confident hits); more hide the network.
MAX_LABELS = 300
#: At most this many spectra without an edge are labelled (they lie in a tight grid).
MAX_SINGLE_LABELS = 40
#: Longer names are cut (the full name is the label's tooltip).
MAX_CHARS = 22


def library_labels(net: SpectrumNetwork) -> tuple[np.ndarray, np.ndarray]:
    """The nodes to label and their labels: each node whose best library hit reaches
    ``net.label_floor`` (score and matched peaks; GNPS: 0.7 and 6) is labelled with
    that hit's compound name; other nodes get none.  Of the spectra alone (no
    edge), at most :data:`MAX_SINGLE_LABELS` are labelled, and of all at most
    :data:`MAX_LABELS`, the highest-scoring hits first; in node order.
    """
    empty = np.empty(0, dtype=np.int64), np.empty(0, dtype=object)
    if net.library is None or net.library_hits is None or not len(net):
        return empty
    columns = net.node_columns()
    score_floor, matches_floor = net.label_floor
    score = columns["library_score"]
    passing = (
        (columns["library_index"] >= 0)
        & (columns["library_name"] != "")
        & (np.nan_to_num(score, nan=-np.inf) >= score_floor)
        & (columns["library_matches"] >= matches_floor)
    )
    nodes = np.flatnonzero(passing)
    alone = net.component_size[nodes] < 2
    if alone.sum() > MAX_SINGLE_LABELS:  # a grid of lone spectra: only the surest named
        singles = nodes[alone]
        singles = singles[np.argsort(-score[singles], kind="stable")[:MAX_SINGLE_LABELS]]
        nodes = np.sort(np.concatenate([nodes[~alone], singles]))
    if len(nodes) > MAX_LABELS:
        nodes = np.sort(nodes[np.argsort(-score[nodes], kind="stable")[:MAX_LABELS]])
    return nodes, columns["library_name"][nodes]


class NodeLabels:
    """Text items beside the nodes of a network plot."""

    def __init__(self, plot_item: pg.PlotItem) -> None:
        self.plot_item = plot_item
        self.items: list[pg.TextItem] = []
        self.nodes = np.empty(0, dtype=np.int64)

    @property
    def texts(self) -> list[str]:
        """The labels drawn, in node order."""
        return [item.toPlainText() for item in self.items]

    def show(self, net: SpectrumNetwork, positions: np.ndarray) -> None:
        """Label ``net``'s nodes drawn at ``positions`` (see :func:`library_labels`)."""
        self.clear()
        self.nodes, names = library_labels(net)
        font = QtGui.QFont()
        font.setPointSizeF(max(font.pointSizeF() - 1.5, 6.5))
        for k, (node, name) in enumerate(zip(self.nodes.tolist(), names.tolist(), strict=True)):
            name = str(name)
            text = name if len(name) <= MAX_CHARS else name[: MAX_CHARS - 1] + "…"
            # neighbours' labels alternate above and below their nodes: fewer overlaps
            anchor = (0.5, 1.2) if k % 2 == 0 else (0.5, -0.2)
            item = pg.TextItem(text, color="#202020", anchor=anchor)
            item.setFont(font)
            item.setToolTip(name)
            item.setPos(float(positions[node, 0]), float(positions[node, 1]))
            item.setZValue(5)
            self.plot_item.addItem(item)
            self.items.append(item)

    def clear(self) -> None:
        """Remove every label."""
        for item in self.items:
            self.plot_item.removeItem(item)
        self.items = []
        self.nodes = np.empty(0, dtype=np.int64)
