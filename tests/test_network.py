"""Molecular networks against matchms ``SimilarityNetwork`` and networkx on real spectra."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pandas as pd
import pytest

import engine
from engine.analyses.networking import (
    AnalysisCancelled,
    limit_component_size,
    network,
    write_edges,
    write_graphml,
)
from engine.collection import combine_libraries

N_SPECTRA = 200
SCORE = {"mode": "custom", "score": "modified_cosine", "tolerance": 0.1, "threshold": 0.7}


@pytest.fixture(scope="module")
def spectra(massbank_queries):
    """The first 200 MassBank queries (several contributors' series: many similar pairs)."""
    return massbank_queries.subset(range(N_SPECTRA))


@pytest.fixture(scope="module")
def matchms_scores(spectra):
    """matchms ``ModifiedCosineGreedy`` of every pair, pairs with < 6 matched peaks removed."""
    from matchms import Spectrum, calculate_scores
    from matchms.similarity import ModifiedCosineGreedy

    objects = [
        Spectrum(
            mz=spectra.peaks(i)[0].copy(),
            intensities=spectra.peaks(i)[1].copy(),
            metadata={"precursor_mz": float(spectra.precursor_mz[i]), "spectrum_id": str(i)},
            metadata_harmonization=False,
        )
        for i in range(len(spectra))
    ]
    scores = calculate_scores(
        objects, objects, ModifiedCosineGreedy(tolerance=0.1), is_symmetric=True
    )
    scores.filter_by_range(name="ModifiedCosineGreedy_matches", low=6, above_operator=">=")
    return scores


def matchms_edges(scores, top_n, max_links, link_method) -> set[tuple[int, int]]:
    from matchms.networking import SimilarityNetwork

    net = SimilarityNetwork(
        identifier_key="spectrum_id", top_n=top_n, max_links=max_links, score_cutoff=0.7,
        link_method=link_method,
    )  # fmt: skip
    net.create_network(scores, score_name="ModifiedCosineGreedy_score")
    return {tuple(sorted((int(a), int(b)))) for a, b in net.graph.edges()}


@pytest.mark.parametrize("link_method", ["single", "mutual"])
@pytest.mark.parametrize(("top_n", "max_links"), [(10, 10), (3, 2)])
def test_edges_equal_matchms_similarity_network(
    spectra, matchms_scores, link_method, top_n, max_links
):
    net = network(
        spectra, top_n=top_n, max_links=max_links, link_method=link_method, min_matches=6,
        max_component_size=0, backend="cpu", **SCORE,
    )  # fmt: skip
    expected = matchms_edges(matchms_scores, top_n, max_links, link_method)
    got = {(int(a), int(b)) for a, b in net.edges}
    assert len(got) > 20  # a real network, not an empty one
    assert got == expected
    # edge scores and matches are matchms's too
    for (a, b), s, m in zip(net.edges, net.score, net.matches, strict=True):
        ref = matchms_scores.scores[int(b), int(a)]  # row = matchms reference = library
        assert abs(s - ref["ModifiedCosineGreedy_score"]) <= 1e-6
        assert m == ref["ModifiedCosineGreedy_matches"]
    # components are networkx's
    graph = nx.Graph(list(got))
    graph.add_nodes_from(range(len(spectra)))
    for component in nx.connected_components(graph):
        members = np.fromiter(component, dtype=np.int64)
        assert len(set(net.component[members])) == 1
        assert (net.component_size[members] == len(members)).all()
    assert len(set(net.component)) == nx.number_connected_components(graph)


def _break_components_literally(graph: nx.Graph, limit: int) -> nx.Graph:
    """GNPS' rule done step by step: while a component is too large, drop its weakest edges."""
    graph = graph.copy()
    while True:
        big = [c for c in nx.connected_components(graph) if len(c) > limit]
        if not big:
            return graph
        for component in big:
            edges = graph.subgraph(component).edges(data="score")
            weakest = min(s for _, _, s in edges)
            graph.remove_edges_from([(a, b) for a, b, s in edges if s == weakest])


@pytest.mark.parametrize("limit", [2, 3, 5, 8])
def test_component_size_limit_equals_removing_weakest_edges(spectra, limit):
    full = network(spectra, max_component_size=0, min_matches=6, backend="cpu", **SCORE)
    graph = nx.Graph()
    graph.add_nodes_from(range(len(spectra)))
    for (a, b), s in zip(full.edges, full.score, strict=True):
        graph.add_edge(int(a), int(b), score=float(s))
    assert max(len(c) for c in nx.connected_components(graph)) > limit
    expected = _break_components_literally(graph, limit)
    keep = limit_component_size(full.edges, full.score, len(spectra), limit)
    got = {(int(a), int(b)) for a, b in full.edges[keep]}
    assert got == {tuple(sorted(e)) for e in expected.edges()}
    limited = network(spectra, max_component_size=limit, min_matches=6, backend="cpu", **SCORE)
    assert {(int(a), int(b)) for a, b in limited.edges} == got
    assert limited.component_size.max() <= limit
    assert limited.removed_edges == len(full.edges) - len(got)


def test_graphml_and_edge_list_round_trip(spectra, massbank_library, tmp_path):
    library = massbank_library.subset(range(0, len(massbank_library), 5))
    net = network(spectra, min_matches=6, backend="cpu", library=library, **SCORE)
    path = write_graphml(net, tmp_path / "net.graphml")
    graph = nx.read_graphml(path)
    assert graph.number_of_nodes() == len(spectra)
    assert graph.number_of_edges() == net.n_edges
    nodes = net.node_columns()
    # node ids are the spectrum ids of hit exports (unique in this file)
    assert set(graph.nodes) == set(spectra.ids)
    for i in (0, int(net.edges[0, 0]), len(spectra) - 1):
        attrs = graph.nodes[spectra.ids[i]]
        assert attrs["index"] == i and attrs["spectrum_id"] == spectra.ids[i]
        assert attrs["precursor_mz"] == pytest.approx(spectra.precursor_mz[i])
        assert attrs["name"] == spectra.metadata["name"][i]
        assert attrs["inchikey"] == spectra.metadata["inchikey"][i]
        assert attrs["component"] == net.component[i]
        assert attrs["label"] == nodes["label"][i]
        assert attrs["library_id"] == nodes["library_id"][i]
    for (a, b), s, m, d in zip(
        net.edges, net.score, net.matches, net.precursor_mz_delta(), strict=True
    ):
        attrs = graph.edges[spectra.ids[a], spectra.ids[b]]
        assert attrs["score"] == pytest.approx(s, abs=1e-12)
        assert attrs["matches"] == m
        assert attrs["precursor_mz_delta"] == pytest.approx(d, abs=1e-9)
    # node labels: each spectrum's best library hit, as engine.search finds it
    best = engine.search(spectra, library, top_n=1, backend="cpu")
    assert (nodes["library_index"][best.query_index] == best.library_index).all()
    no_hit = np.setdiff1d(np.arange(len(spectra)), best.query_index)
    assert (nodes["library_index"][no_hit] == -1).all()
    # labelled by it only from GNPS's floor (0.7, 6 peaks); weaker ones keep their own name
    q, l = best.query_index, best.library_index
    passing = (best.score >= 0.7) & (best.matches >= 6)
    assert passing.any() and (~passing).any()
    assert (nodes["label"][q[passing]] == library.metadata["name"][l[passing]]).all()
    own = np.where(spectra.metadata["name"] != "", spectra.metadata["name"], spectra.ids)
    assert (nodes["label"][q[~passing]] == own[q[~passing]]).all()
    for node, attrs in graph.nodes(data=True):  # every label in the GraphML passes the floor
        if attrs["label"] != own[attrs["index"]]:
            assert attrs["library_score"] >= 0.7 and attrs["library_matches"] >= 6, node
    lax = network(spectra, min_matches=6, backend="cpu", library=library, label_floor=(0, 0),
                  **SCORE)  # fmt: skip
    assert (lax.node_columns()["label"][q] == library.metadata["name"][l]).all()

    table = pd.read_csv(write_edges(net, tmp_path / "edges.tsv"), sep="\t")
    assert len(table) == net.n_edges
    assert (table["source_id"].to_numpy() == spectra.ids[net.edges[:, 0]]).all()
    assert np.allclose(table["score"], net.score, atol=1e-12)
    assert (table["matches"].to_numpy() == net.matches).all()


def test_bad_settings_and_cancel(spectra, tmp_path):
    with pytest.raises(ValueError, match="link_method"):
        network(spectra, link_method="both")
    with pytest.raises(ValueError, match="max_links"):
        network(spectra, top_n=3, max_links=5)
    with pytest.raises(TypeError, match="thresold"):
        network(spectra, thresold=0.5)
    net = network(spectra.subset(range(20)), min_matches=6, backend="cpu", **SCORE)
    with pytest.raises(ValueError, match="graphml"):
        write_graphml(net, tmp_path / "net.txt")
    with pytest.raises(ValueError, match="does not exist"):
        write_edges(net, tmp_path / "missing" / "edges.tsv")
    token = engine.CancelToken()
    token.cancel()
    with pytest.raises(AnalysisCancelled):
        network(spectra, cancel_token=token, backend="cpu", **SCORE)


def test_graphml_falls_back_to_indexes_when_ids_repeat(spectra, tmp_path):
    twice = combine_libraries([spectra.subset(range(30)), spectra.subset(range(30))])
    net = network(twice, min_matches=1, backend="cpu", **SCORE)
    graph = nx.read_graphml(write_graphml(net, tmp_path / "twice.graphml"))
    assert set(graph.nodes) == {str(i) for i in range(60)}
    assert graph.nodes["31"]["spectrum_id"] == spectra.ids[1]
