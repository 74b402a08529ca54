"""Flat clusters from linked pairs: single linkage and exact complete linkage, and medoids.

Distances are ``1 - similarity``; a pair that is not linked (outside the
precursor window, or under the similarity cut) is at distance 1, beyond any
cut, so it can never join two clusters under complete linkage.  Both linkages
therefore work on the sparse linked pairs only, one connected component of
them at a time.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numba
import numpy as np

from engine.analyses.cluster.pairs import LinkedPairs

__all__ = ["DENSE_LIMIT", "complete_linkage", "components", "medoids", "single_linkage"]

#: Components of up to this many spectra are linked on a dense similarity matrix in
#: compiled code (512 MiB at most); larger ones on sparse maps.
DENSE_LIMIT = 8192


@numba.njit(cache=True, nogil=True)
def _union_find(n, first, second):  # pragma: no cover - numba
    parent = np.arange(n)
    for k in range(len(first)):
        a, b = first[k], second[k]
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        while parent[b] != b:
            parent[b] = parent[parent[b]]
            b = parent[b]
        if a != b:
            if a < b:
                parent[b] = a
            else:
                parent[a] = b
    for i in range(n):  # roots are the smallest members; parents come before children
        parent[i] = parent[parent[i]]
    return parent


def _canonical(labels: np.ndarray) -> np.ndarray:
    """Labels renumbered 0, 1, ... in the order of each cluster's smallest member."""
    _, first_seen, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first_seen), dtype=np.int64)
    rank[np.argsort(first_seen, kind="stable")] = np.arange(len(first_seen))
    return rank[inverse]


def components(pairs: LinkedPairs) -> np.ndarray:
    """Connected component of each spectrum, numbered by smallest member (0, 1, ...)."""
    root = _union_find(pairs.n, pairs.first, pairs.second)
    return _canonical(root)


def single_linkage(pairs: LinkedPairs) -> np.ndarray:
    """Single linkage at the cut: the connected components of the linked pairs."""
    return components(pairs)


def complete_linkage(pairs: LinkedPairs, check: Callable[[], None] | None = None) -> np.ndarray:
    """Exact complete linkage at the cut: every two spectra of a cluster are linked.

    Agglomerative clustering as in hierarchical complete linkage cut at a
    distance: repeatedly merge the two clusters whose farthest members are
    closest, while that distance is within the cut.  Ties go to the pair of
    clusters with the smaller smallest members (lexicographically), so the
    result is one well-defined clustering.

    Parameters
    ----------
    pairs : LinkedPairs
        The linked pairs; any other pair is at distance 1.
    check : callable, optional
        Called now and then; raise from it to stop (cancellation).

    Returns
    -------
    ndarray of int64
        Cluster of each spectrum, numbered by smallest member (0, 1, ...).

    Notes
    -----
    Two clusters can merge only when every pair across them is linked, so each
    connected component is clustered on its own, with the counts of linked
    pairs between neighbouring clusters and their smallest similarity kept in
    sparse maps (merging the smaller map into the larger) and a heap of
    mergeable cluster pairs with stale entries skipped; a component of up to
    :data:`DENSE_LIMIT` spectra does the same on a dense matrix in compiled
    code (a merged cluster's similarity to another is the smaller of its two
    parts', -1 where any pair is not linked).  Both give the same clusters.
    Components of one or two spectra need no work.
    """
    comp = components(pairs)
    labels = np.arange(pairs.n, dtype=np.int64)
    size = np.bincount(comp, minlength=int(comp.max(initial=-1)) + 1)
    # a component of two spectra has one linked pair: they merge
    in_two = size[comp[pairs.first]] == 2
    labels[pairs.second[in_two]] = pairs.first[in_two]
    big = np.flatnonzero(size > 2)
    if len(big):
        edge_comp = comp[pairs.first]
        chosen = np.isin(edge_comp, big)
        e_order = np.flatnonzero(chosen)[np.argsort(edge_comp[chosen], kind="stable")]
        e_bounds = np.searchsorted(edge_comp[e_order], big, side="left")
        e_ends = np.searchsorted(edge_comp[e_order], big, side="right")
        members = np.argsort(comp, kind="stable")
        m_starts = np.concatenate(([0], np.cumsum(size)))
        for k, c in enumerate(big.tolist()):
            nodes = members[m_starts[c] : m_starts[c + 1]]  # ascending
            edges = e_order[e_bounds[k] : e_ends[k]]
            first = np.searchsorted(nodes, pairs.first[edges])
            second = np.searchsorted(nodes, pairs.second[edges])
            if len(nodes) <= DENSE_LIMIT:
                local = _complete_dense(len(nodes), first, second, pairs.score[edges])
            else:
                local = _complete_component(
                    len(nodes), first.tolist(), second.tolist(), pairs.score[edges].tolist(), check
                )
            labels[nodes] = nodes[local]
            if check is not None:
                check()
    return _canonical(labels)


@numba.njit(cache=True, nogil=True)
def _complete_dense(n, first, second, score):  # pragma: no cover - numba
    """:func:`_complete_component` on a dense matrix (same merges, same ties)."""
    sim = np.full((n, n), -1.0)
    heap = [(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)]
    heap.pop()
    for k in range(len(first)):
        a, b, s = first[k], second[k], score[k]
        sim[a, b] = s
        sim[b, a] = s
        heap.append((-s, float(a), float(b), float(a), float(b), 0.0, 0.0))
    heapq.heapify(heap)
    alive = np.ones(n, dtype=np.bool_)
    version = np.zeros(n, dtype=np.int64)
    smallest = np.arange(n)
    into = np.arange(n)
    while len(heap):
        entry = heapq.heappop(heap)
        a, b = int(entry[3]), int(entry[4])
        if not (alive[a] and alive[b]) or version[a] != entry[5] or version[b] != entry[6]:
            continue
        alive[b] = False
        into[b] = a
        smallest[a] = min(smallest[a], smallest[b])
        version[a] += 1
        for x in range(n):
            if alive[x] and x != a:
                s = min(sim[a, x], sim[b, x])  # -1 when any pair across is not linked
                sim[a, x] = s
                sim[x, a] = s
                if s >= 0.0:
                    lo, hi = min(smallest[a], smallest[x]), max(smallest[a], smallest[x])
                    va, vx = float(version[a]), float(version[x])
                    heapq.heappush(heap, (-s, float(lo), float(hi), float(a), float(x), va, vx))
    root = np.empty(n, dtype=np.int64)
    for i in range(n):
        r = i
        while not alive[r]:
            r = into[r]
        root[i] = smallest[r]
    return root


def _complete_component(
    n: int,
    first: list[int],
    second: list[int],
    score: list[float],
    check: Callable[[], None] | None,
) -> np.ndarray:
    """Complete linkage of one component of ``n`` spectra (local indexes, ascending order).

    Returns each spectrum's cluster as the local index of its smallest member.
    """
    # links[a][b] is one shared [count, smallest similarity] list of linked pairs
    # between clusters a and b; a cluster keeps the id of the member it grew from.
    links: list[dict[int, list]] = [{} for _ in range(n)]
    size = [1] * n
    smallest = list(range(n))
    version = [0] * n
    heap = []
    for a, b, s in zip(first, second, score, strict=True):
        rel = [1, s]
        links[a][b] = rel
        links[b][a] = rel
        heap.append((-s, a, b, a, b, 0, 0))
    heapq.heapify(heap)
    merges = 0
    while heap:
        _, _, _, a, b, va, vb = heapq.heappop(heap)
        if version[a] != va or version[b] != vb or size[a] == 0 or size[b] == 0:
            continue  # stale: one of the clusters changed (or was merged away) since
        keep, drop = (a, b) if len(links[a]) >= len(links[b]) else (b, a)
        del links[keep][drop], links[drop][keep]
        full = []
        for x, rel in links[drop].items():
            del links[x][drop]
            kept = links[keep].get(x)
            if kept is None:
                links[keep][x] = rel
                links[x][keep] = rel
            else:
                kept[0] += rel[0]
                if rel[1] < kept[1]:
                    kept[1] = rel[1]
                full.append(x)
        links[drop] = {}
        size[keep] += size[drop]
        size[drop] = 0
        smallest[keep] = min(smallest[keep], smallest[drop])
        smallest[drop] = keep  # forwarding: the cluster it went into
        version[keep] += 1
        for x in full:
            count, s = links[keep][x]
            if count == size[keep] * size[x]:  # every pair across linked: mergeable
                lo, hi = sorted((smallest[keep], smallest[x]))
                heapq.heappush(heap, (-s, lo, hi, keep, x, version[keep], version[x]))
        merges += 1
        if check is not None and merges % 4096 == 0:
            check()
    # follow the forwarding of merged-away clusters to the surviving one
    root = np.arange(n)
    for i in range(n):
        r = i
        while size[r] == 0:
            r = smallest[r]
        root[i] = smallest[r]
    return root


def medoids(labels: np.ndarray, pairs: LinkedPairs) -> tuple[np.ndarray, np.ndarray]:
    """Each cluster's medoid: the member of largest summed similarity to its other members.

    Only linked pairs count (under complete linkage every pair in a cluster is
    linked); ties go to the smallest index; a singleton is its own medoid.

    Returns
    -------
    representative : ndarray of int64
        Medoid index of each cluster (by cluster number).
    within : ndarray of float64
        Each spectrum's summed similarity to the other members of its cluster.
    """
    same = labels[pairs.first] == labels[pairs.second]
    within = np.bincount(pairs.first[same], pairs.score[same], minlength=len(labels))
    within += np.bincount(pairs.second[same], pairs.score[same], minlength=len(labels))
    order = np.lexsort((np.arange(len(labels)), -within, labels))
    starts = np.flatnonzero(np.diff(labels[order], prepend=-1))
    return order[starts].astype(np.int64), within
