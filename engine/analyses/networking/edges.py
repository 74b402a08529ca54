"""Which scored pairs become network edges: top-K neighbours, link limit, link method.

The rules are those of matchms ``SimilarityNetwork`` (matchms 0.33), applied to the
pairs an all-vs-all search returned (score >= threshold, matches >= min_matches,
self pairs dropped):

* each spectrum ranks its candidate neighbours by score (ties: lower index first);
  its *top list* holds the first ``top_n`` of them (``0``: all);
* it proposes links to the first ``max_links`` of its top list;
* ``single``: every proposed link is an edge; ``mutual``: a proposed link from
  ``i`` to ``j`` is an edge only when ``i`` is in ``j``'s top list (not
  necessarily among ``j``'s own proposals);
* edges are undirected: a link proposed from both ends is one edge.

A spectrum can therefore end up with more than ``max_links`` edges (links
proposed by others), as in matchms and GNPS.  Equal scores are ranked by index
here; matchms ranks them in the order of numpy's unstable ``argsort``, so the two
can differ only where exactly equal scores straddle a top-list or link limit
(on the 1,000 MassBank queries they never do: the edge sets are identical).
"""

from __future__ import annotations

import numpy as np

__all__ = ["LINK_METHODS", "select_edges"]

#: Link methods of :func:`select_edges`.
LINK_METHODS = ("single", "mutual")


def select_edges(
    source: np.ndarray,
    target: np.ndarray,
    score: np.ndarray,
    n_nodes: int,
    *,
    top_n: int = 10,
    max_links: int = 10,
    link_method: str = "single",
) -> tuple[np.ndarray, np.ndarray]:
    """The undirected edges chosen from directed candidate pairs.

    Parameters
    ----------
    source, target : ndarray of int
        Candidate pairs: ``target`` is a candidate neighbour of ``source``
        (self pairs are ignored).
    score : ndarray of float
        The pair's score.
    n_nodes : int
        Number of spectra (node indexes are ``0 .. n_nodes - 1``).
    top_n, max_links : int
        Top-list length and links proposed per spectrum (``0``: no limit; a
        spectrum proposes at most ``top_n`` links either way); ``top_n`` may
        not be below ``max_links``, as in matchms.
    link_method : {"single", "mutual"}

    Returns
    -------
    rows, edge_index : ndarray of int64
        ``rows``: for each edge, the row of the candidate pair that carries it
        (the direction with the lower source index when both were proposed);
        edges are sorted by (lower node, higher node).
    """
    if link_method not in LINK_METHODS:
        raise ValueError(f"link_method must be 'single' or 'mutual', not {link_method!r}")
    if top_n < 0 or max_links < 0:
        raise ValueError("top_n and max_links must be >= 0 (0: no limit)")
    if top_n and max_links and top_n < max_links:
        raise ValueError(f"top_n ({top_n}) must be >= max_links ({max_links}), as in matchms")
    source = np.asarray(source, dtype=np.int64)
    target = np.asarray(target, dtype=np.int64)
    score = np.asarray(score, dtype=np.float64)
    rows = np.flatnonzero(source != target)
    # rank each spectrum's candidates: score descending, then the lower index first
    rows = rows[np.lexsort((target[rows], -score[rows], source[rows]))]
    src, dst = source[rows], target[rows]
    starts = np.searchsorted(src, src, side="left")
    rank = np.arange(len(rows)) - starts
    big = np.iinfo(np.int64).max
    in_top = rank < (top_n or big)
    proposed = in_top & (rank < (max_links or big))
    if link_method == "mutual":
        top_keys = np.sort(src[in_top] * n_nodes + dst[in_top])
        back = dst * n_nodes + src
        at = np.searchsorted(top_keys, back)
        found = at < len(top_keys)
        found[found] = top_keys[at[found]] == back[found]
        proposed &= found
    rows, src, dst = rows[proposed], src[proposed], dst[proposed]
    low, high = np.minimum(src, dst), np.maximum(src, dst)
    order = np.lexsort((src, high, low))  # per edge, the proposal from the lower source first
    key = low[order] * n_nodes + high[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    chosen = order[first]
    return rows[chosen], np.stack([low[chosen], high[chosen]], axis=1)
