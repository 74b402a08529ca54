"""Where to draw a network's nodes: each component laid out alone, components tiled.

Headless (no Qt), as GNPS and Cytoscape show molecular networks: the largest
components first, row by row, each in a cell sized to it; single spectra last in
a compact grid.
"""

from __future__ import annotations

import math

import numpy as np

from engine import SpectrumNetwork

__all__ = ["network_layout"]


def network_layout(net: SpectrumNetwork, *, seed: int = 0) -> np.ndarray:
    """Node positions, shape ``(n_nodes, 2)``, deterministic for a given ``seed``.

    Components of two or more nodes get a force-directed layout
    (:func:`networkx.spring_layout`, weighted by score) scaled with the square
    root of their size; they are tiled left to right in rows, largest first.
    """
    import networkx as nx

    n = len(net)
    pos = np.zeros((n, 2))
    if n == 0:
        return pos
    order = np.lexsort((np.arange(n), net.component))
    boundaries = np.flatnonzero(np.diff(net.component[order])) + 1
    groups = [g for g in np.split(order, boundaries)]
    multi = [g for g in groups if len(g) > 1]
    singles = np.concatenate([g for g in groups if len(g) == 1] or [np.empty(0, np.int64)])
    by_node: dict[int, list[tuple[int, float]]] = {}
    for (a, b), s in zip(net.edges, net.score, strict=True):
        by_node.setdefault(int(a), []).append((int(b), float(s)))
    row_width = max(8.0, 2.2 * math.sqrt(n))
    x = y = row_height = 0.0
    for members in multi:
        graph = nx.Graph()
        graph.add_nodes_from(members.tolist())
        for a in members.tolist():
            for b, s in by_node.get(a, ()):
                graph.add_edge(a, b, weight=s)
        radius = 0.5 * math.sqrt(len(members)) + 0.5
        layout = nx.spring_layout(graph, seed=seed, weight="weight", scale=radius)
        if x > 0 and x + 2 * radius > row_width:
            x, y, row_height = 0.0, y - row_height - 1.0, 0.0
        for node, (px, py) in layout.items():
            pos[node] = (x + radius + px, y - radius + py)
        x += 2 * radius + 1.0
        row_height = max(row_height, 2 * radius)
    if len(singles):
        y -= row_height + 1.5
        columns = max(1, int(row_width / 0.8))
        k = np.arange(len(singles))
        pos[singles, 0] = 0.4 + 0.8 * (k % columns)
        pos[singles, 1] = y - 0.8 * (k // columns)
    return pos
