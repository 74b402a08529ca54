"""The molecular network of a spectrum set: nodes are spectra, edges similar pairs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search.annotate import ION_MODE_NAMES

__all__ = ["LABEL_FLOOR", "NetworkSettings", "SpectrumNetwork"]


#: Score and matched peaks a best library hit needs to label its node (GNPS's library
#: search reports hits from cosine 0.7 and 6 matched peaks).
LABEL_FLOOR = (0.7, 6)


@dataclass(frozen=True)
class NetworkSettings:
    """How edges are chosen among the scored pairs (GNPS defaults).

    Parameters
    ----------
    top_n : int
        Each spectrum's top list: its ``top_n`` best neighbours (0: all).
    max_links : int
        Links each spectrum proposes, from the top of its top list (0: no limit).
    link_method : {"single", "mutual"}
        ``single``: every proposed link is an edge; ``mutual``: only links whose
        other end has this spectrum in its top list (matchms ``SimilarityNetwork``).
    max_component_size : int
        Components larger than this lose their weakest edges until they fall
        apart into pieces this small (GNPS); 0: no limit.
    """

    top_n: int = 10
    max_links: int = 10
    link_method: str = "single"
    max_component_size: int = 100

    def __post_init__(self) -> None:
        for name in ("top_n", "max_links", "max_component_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
                raise ValueError(f"{name} must be a whole number >= 0 (0: no limit), not {value!r}")
            object.__setattr__(self, name, int(value))
        if self.link_method not in ("single", "mutual"):
            raise ValueError(f"link_method must be 'single' or 'mutual', not {self.link_method!r}")
        if self.top_n and self.max_links and self.top_n < self.max_links:
            raise ValueError(f"top_n ({self.top_n}) must be >= max_links ({self.max_links})")


@dataclass(frozen=True, eq=False)
class SpectrumNetwork:
    """A molecular network: spectra as nodes, pairs above the score threshold as edges.

    Attributes
    ----------
    spectra : SpectrumLibrary
        The nodes, in order (node ``i`` is spectrum ``i``).
    edges : ndarray of int64, shape (n_edges, 2)
        Node pairs, lower index first, sorted.
    score, matches : ndarray
        Each edge's score and matched peaks.
    component, component_size : ndarray of int64, shape (n_nodes,)
        Each node's component (numbered from 1, largest first) and its size.
    params : SearchParameters
        The scores' parameters (``top_n`` 0: every pair above the threshold).
    settings : NetworkSettings
        How edges were chosen.
    library, library_hits : SpectrumLibrary and HitTable, or None
        The library searched for node labels and each node's best hit in it.
    removed_edges : int
        Edges removed to keep components within ``settings.max_component_size``.
    label_floor : tuple of (float, int)
        A node is labelled with its best library hit only when the hit reaches
        this score and this many matched peaks (GNPS: 0.7 and 6); otherwise with
        its own name or id.  The ``library_*`` columns give the best hit anyway.
    """

    spectra: SpectrumLibrary
    edges: np.ndarray
    score: np.ndarray
    matches: np.ndarray
    component: np.ndarray
    component_size: np.ndarray
    params: SearchParameters
    settings: NetworkSettings = field(default_factory=NetworkSettings)
    library: SpectrumLibrary | None = None
    library_hits: HitTable | None = None
    removed_edges: int = 0
    label_floor: tuple[float, int] = LABEL_FLOOR

    def __len__(self) -> int:
        return len(self.spectra)

    def __repr__(self) -> str:
        n_comp = int((np.bincount(self.component)[1:] > 1).sum()) if len(self) else 0
        return (
            f"<SpectrumNetwork of {len(self)} spectra, {len(self.edges)} edges, "
            f"{n_comp} components of 2 or more>"
        )

    @property
    def n_edges(self) -> int:
        """Number of edges."""
        return len(self.edges)

    def precursor_mz_delta(self) -> np.ndarray:
        """Per edge, precursor m/z of the higher node minus that of the lower."""
        prec = self.spectra.precursor_mz
        return prec[self.edges[:, 1]] - prec[self.edges[:, 0]]

    def best_hit(self) -> np.ndarray:
        """Per node, the row of its best library hit in :attr:`library_hits` (-1: none)."""
        rows = np.full(len(self), -1, dtype=np.int64)
        if self.library_hits is not None and len(self.library_hits):
            q = self.library_hits.query_index
            first = np.ones(len(q), dtype=bool)
            first[1:] = q[1:] != q[:-1]
            rows[q[first]] = np.flatnonzero(first)
        return rows

    def node_columns(self) -> dict[str, np.ndarray]:
        """Node attributes: spectrum id, precursor m/z, compound, component, library hit."""
        s = self.spectra
        meta = s.metadata
        columns: dict[str, Any] = {
            "index": np.arange(len(s), dtype=np.int64),
            "spectrum_id": meta["id"],
            "name": meta["name"],
            "precursor_mz": s.precursor_mz,
            "inchikey": meta["inchikey"],
            "smiles": meta["smiles"],
            "formula": meta["formula"],
            "adduct": meta["adduct"],
            "ion_mode": ION_MODE_NAMES[s.polarity().astype(np.int64) + 1],
            "component": self.component,
            "component_size": self.component_size,
            "degree": np.bincount(self.edges.ravel(), minlength=len(s)).astype(np.int64),
        }
        label = np.where(meta["name"] != "", meta["name"], meta["id"]).astype(object)
        if self.library is not None and self.library_hits is not None:
            rows = self.best_hit()
            has = rows >= 0
            lib_index = np.where(has, self.library_hits.library_index[np.maximum(rows, 0)], -1)
            lm = self.library.metadata
            pick = np.maximum(lib_index, 0)

            def from_library(column: np.ndarray) -> np.ndarray:
                return np.where(has, column[pick], "").astype(object)

            columns["library_index"] = lib_index
            columns["library_id"] = from_library(lm["id"])
            columns["library_name"] = from_library(lm["name"])
            columns["library_inchikey"] = from_library(lm["inchikey"])
            columns["library_score"] = np.where(
                has, self.library_hits.score[np.maximum(rows, 0)], np.nan
            )
            columns["library_matches"] = np.where(
                has, self.library_hits.matches[np.maximum(rows, 0)], 0
            ).astype(np.int64)
            score_floor, matches_floor = self.label_floor
            named = (
                has
                & (columns["library_name"] != "")
                & (columns["library_score"] >= score_floor)
                & (columns["library_matches"] >= matches_floor)
            )
            label = np.where(named, columns["library_name"], label).astype(object)
        columns["label"] = label
        return columns

    def edge_columns(self) -> dict[str, np.ndarray]:
        """Edge attributes: both spectra, score, matches, precursor m/z delta, component."""
        a, b = self.edges[:, 0], self.edges[:, 1]
        ids, prec = self.spectra.ids, self.spectra.precursor_mz
        return {
            "source_index": a,
            "target_index": b,
            "source_id": ids[a],
            "target_id": ids[b],
            "score": self.score,
            "matches": self.matches,
            "precursor_mz_delta": prec[b] - prec[a],
            "source_precursor_mz": prec[a],
            "target_precursor_mz": prec[b],
            "component": self.component[a],
        }

    def to_networkx(self):
        """The network as a :class:`networkx.Graph` (nodes keyed by spectrum index).

        Every node carries :meth:`node_columns`, every edge ``score``,
        ``matches`` and ``precursor_mz_delta``, all as plain Python values.
        """
        import networkx as nx

        graph = nx.Graph(score=self.params.score, threshold=self.params.threshold)
        nodes = self.node_columns()
        names = list(nodes)
        for i, values in enumerate(zip(*(nodes[k] for k in names), strict=True)):
            graph.add_node(i, **{k: _plain(v) for k, v in zip(names, values, strict=True)})
        delta = self.precursor_mz_delta()
        for (a, b), s, m, d in zip(self.edges, self.score, self.matches, delta, strict=True):
            graph.add_edge(
                int(a), int(b), score=float(s), matches=int(m), precursor_mz_delta=float(d)
            )
        return graph


def _plain(value: object) -> object:
    """A numpy scalar as the Python value GraphML writers know."""
    if isinstance(value, np.generic):
        return value.item()
    return value
