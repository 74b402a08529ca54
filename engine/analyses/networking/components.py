"""Connected components of a network, and GNPS-style breaking of too-large ones.

GNPS breaks a component with more than ``max_component_size`` spectra by
removing its weakest edges until every piece is small enough.  Done literally
(remove the weakest edge of a too-large component, look again) that costs a
component search per removed edge; :func:`limit_component_size` gets the same
result in one sweep, from a property of that top-down removal:

    an edge survives if and only if its component in the graph of the edges at
    least as strong as itself has at most ``max_component_size`` nodes.

(While an edge ``e`` and every stronger edge of its component are present, ``e``
is the weakest of that component, so it goes first if the component is too
large; and once the component is small enough nothing of it is removed.)  Edges
of equal score are removed together, so the result does not depend on the order
of ties.  The sweep adds edges strongest first to a union-find structure and
keeps those whose component is small enough when their score level is complete.
"""

from __future__ import annotations

import numpy as np

__all__ = ["component_labels", "limit_component_size"]


class _UnionFind:
    """Disjoint sets of ``0 .. n - 1`` with sizes (path halving, union by size)."""

    def __init__(self, n: int) -> None:
        self.parent = np.arange(n, dtype=np.int64)
        self.size = np.ones(n, dtype=np.int64)

    def find(self, a: int) -> int:
        parent = self.parent
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return int(a)

    def union(self, a: int, b: int) -> None:
        a, b = self.find(a), self.find(b)
        if a == b:
            return
        if self.size[a] < self.size[b]:
            a, b = b, a
        self.parent[b] = a
        self.size[a] += self.size[b]


def limit_component_size(
    edges: np.ndarray, score: np.ndarray, n_nodes: int, max_component_size: int
) -> np.ndarray:
    """Which edges stay when too-large components lose their weakest edges.

    Parameters
    ----------
    edges : ndarray of int, shape (n_edges, 2)
        Undirected edges between nodes ``0 .. n_nodes - 1``.
    score : ndarray of float, shape (n_edges,)
        Edge scores (higher is stronger).
    n_nodes : int
    max_component_size : int
        Largest number of nodes a component may keep; ``0``: no limit.

    Returns
    -------
    ndarray of bool, shape (n_edges,)
        True for the edges kept.
    """
    if max_component_size < 0:
        raise ValueError("max_component_size must be >= 0 (0: no limit)")
    keep = np.ones(len(edges), dtype=bool)
    if max_component_size == 0 or len(edges) == 0:
        return keep
    if max_component_size == 1:
        return ~keep
    sets = _UnionFind(n_nodes)
    order = np.argsort(-np.asarray(score, dtype=np.float64), kind="stable")
    levels = np.flatnonzero(np.diff(score[order]) != 0) + 1
    for level in np.split(order, levels):
        for e in level:
            sets.union(int(edges[e, 0]), int(edges[e, 1]))
        for e in level:
            keep[e] = sets.size[sets.find(int(edges[e, 0]))] <= max_component_size
    return keep


def component_labels(edges: np.ndarray, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Component of every node, numbered from 1 by size (largest first).

    Ties in size go by the lowest node index, so single spectra come last in
    index order.

    Returns
    -------
    label, size : ndarray of int64, shape (n_nodes,)
        Each node's component number and its component's number of nodes.
    """
    sets = _UnionFind(n_nodes)
    for a, b in np.asarray(edges, dtype=np.int64).reshape(-1, 2):
        sets.union(int(a), int(b))
    roots = np.fromiter((sets.find(i) for i in range(n_nodes)), dtype=np.int64, count=n_nodes)
    _, first, inverse, counts = np.unique(
        roots, return_index=True, return_inverse=True, return_counts=True
    )
    rank = np.lexsort((first, -counts))  # component ids ordered by size, then first node
    number = np.empty(len(rank), dtype=np.int64)
    number[rank] = np.arange(1, len(rank) + 1)
    return number[inverse], counts[inverse]
