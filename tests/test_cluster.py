"""Clustering: exact complete linkage against a brute-force reference, similarities against
matchms, medoids, consensus spectra, outputs read back by pandas and the MGF readers, and the
representatives' search handed to every member."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import engine
from engine.analyses.cluster import (
    ClusterCancelled,
    ClusterParameters,
    LinkedPairs,
    complete_linkage,
    consensus_spectra,
    medoids,
    single_linkage,
)
from engine.preprocess import pipeline_from_spec
from engine.search import CancelToken


def brute_force_complete(n: int, first, second, score, cut: float) -> np.ndarray:
    """Textbook agglomerative complete linkage on a dense matrix (pairs not given: 0).

    Each step merges the two clusters whose smallest cross similarity is largest,
    ties to the pair with the smaller smallest members, while it reaches ``cut``.
    Returns each spectrum's cluster as its smallest member.
    """
    sim = np.zeros((n, n))
    sim[first, second] = score
    sim[second, first] = score
    clusters = [[i] for i in range(n)]
    while True:
        best = None
        for a in range(len(clusters)):
            for b in range(a + 1, len(clusters)):
                s = sim[np.ix_(clusters[a], clusters[b])].min()
                key = (-s, min(clusters[a]), min(clusters[b]))
                if s >= cut and (best is None or key < best[0]):
                    best = (key, a, b)
        if best is None:
            break
        _, a, b = best
        clusters[a] = sorted(clusters[a] + clusters[b])
        del clusters[b]
    out = np.empty(n, dtype=np.int64)
    for c in clusters:
        out[c] = min(c)
    return out


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """True when the two labelings group the spectra the same way."""
    pairs = set(zip(a.tolist(), b.tolist(), strict=True))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


@pytest.fixture(scope="module")
def compounds(massbank_library):
    """~120 real MassBank spectra of 12 compounds with many spectra each (rich clusters)."""
    blocks = np.array([k[:14] for k in massbank_library.metadata["inchikey"]])
    names, counts = np.unique(blocks[blocks != ""], return_counts=True)
    chosen = names[np.argsort(-counts, kind="stable")][:12]
    picked = np.concatenate([np.flatnonzero(blocks == c)[:10] for c in chosen])
    return massbank_library.subset(np.sort(picked))


@pytest.fixture(scope="module")
def clustered(compounds):
    return engine.cluster_spectra(compounds, threshold=0.6, backend="cpu")


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_complete_linkage_equals_brute_force_with_ties(seed):
    """Random sparse graphs whose similarities take few values (many ties)."""
    rng = np.random.default_rng(seed)
    n = 40
    first, second = np.triu_indices(n, 1)
    keep = rng.random(len(first)) < 0.25
    first, second = first[keep], second[keep]
    score = rng.choice([0.7, 0.8, 0.9, 1.0], size=len(first))
    pairs = LinkedPairs(n, first.astype(np.int64), second.astype(np.int64), score)
    got = complete_linkage(pairs)
    want = brute_force_complete(n, first, second, score, 0.7)
    assert same_partition(got, want)
    # canonical numbering: clusters counted in the order of their smallest member
    firsts = [np.flatnonzero(got == c)[0] for c in range(got.max() + 1)]
    assert firsts == sorted(firsts)


def test_complete_linkage_of_real_spectra(clustered):
    p = clustered.pairs
    want = brute_force_complete(p.n, p.first, p.second, p.score, 0.6)
    assert same_partition(clustered.labels, want)
    assert clustered.n_clusters < len(clustered) - 20  # real clusters, not all singletons
    linked = {(a, b) for a, b in zip(p.first.tolist(), p.second.tolist(), strict=True)}
    for c in range(clustered.n_clusters):
        m = clustered.members(c).tolist()
        for i, a in enumerate(m):
            for b in m[i + 1 :]:
                assert (a, b) in linked  # every pair of a complete-linkage cluster is linked


def test_single_linkage_is_connected_components(clustered):
    nx = pytest.importorskip("networkx")
    p = clustered.pairs
    g = nx.Graph()
    g.add_nodes_from(range(p.n))
    g.add_edges_from(zip(p.first.tolist(), p.second.tolist(), strict=True))
    want = np.empty(p.n, dtype=np.int64)
    for k, comp in enumerate(nx.connected_components(g)):
        want[list(comp)] = k
    assert same_partition(single_linkage(p), want)


@pytest.mark.slow  # matchms's import and its pair-by-pair scores: over 2 s
def test_linked_pairs_equal_matchms_and_miss_none(compounds, clustered):
    """Every pair within the window and the cut is found, with matchms CosineGreedy's score."""
    from matchms import Spectrum
    from matchms.similarity import CosineGreedy

    prepared = pipeline_from_spec("msas")(compounds)
    spectra = [
        Spectrum(mz=prepared.peaks(i)[0].copy(), intensities=prepared.peaks(i)[1].copy())
        for i in range(len(prepared))
    ]
    cosine = CosineGreedy(tolerance=0.02)
    found = {
        (a, b): s
        for a, b, s in zip(
            clustered.pairs.first.tolist(),
            clustered.pairs.second.tolist(),
            clustered.pairs.score.tolist(),
            strict=True,
        )
    }
    mz, charge, mode = compounds.precursor_mz, compounds.charge, compounds.polarity()
    want = {}
    for a in range(len(compounds)):
        for b in range(a + 1, len(compounds)):
            if abs(mz[a] - mz[b]) > 20e-6 * mz[a] or mode[a] * mode[b] < 0:
                continue
            if charge[a] and charge[b] and charge[a] != charge[b]:
                continue
            r = cosine.pair(spectra[b], spectra[a])
            if r["score"] >= 0.6 and r["matches"] >= 1:
                want[(a, b)] = float(r["score"])
    assert set(found) == set(want)
    for key, s in want.items():
        assert abs(found[key] - s) <= 1e-6


def test_medoid_has_largest_summed_similarity(clustered):
    p, labels = clustered.pairs, clustered.labels
    reps, within = medoids(labels, p)
    assert np.array_equal(reps, clustered.representatives)
    for c in range(clustered.n_clusters):
        m = clustered.members(c)
        sums = [
            sum(
                s
                for a, b, s in zip(p.first, p.second, p.score, strict=True)
                if (a == i and b in m) or (b == i and a in m)
            )
            for i in m
        ]
        assert reps[c] == m[int(np.argmax(sums))]
        assert np.allclose(within[m], sums)


def test_table_and_representatives_read_back(tmp_path, clustered):
    frame = clustered.to_pandas()
    path = clustered.write_table(tmp_path / "clusters.tsv")
    back = pd.read_csv(path, sep="\t", keep_default_na=False)
    assert list(back.columns) == list(frame.columns)
    assert np.array_equal(back.cluster, clustered.labels)
    assert np.array_equal(back.cluster_size, clustered.sizes[clustered.labels])
    assert back.representative.sum() == clustered.n_clusters
    assert np.array_equal(back.representative_index, clustered.representatives[clustered.labels])
    assert (back.similarity_to_representative >= 0.6).all()
    assert not list(tmp_path.glob(".*part"))
    mgf = clustered.write_representatives(tmp_path / "reps.mgf")
    reps = engine.read_library(mgf)
    assert len(reps) == clustered.n_clusters
    for c, i in enumerate(clustered.representatives.tolist()):
        assert np.array_equal(reps.peaks(c)[0], clustered.spectra.peaks(i)[0])
        assert np.array_equal(reps.peaks(c)[1], clustered.spectra.peaks(i)[1])
        assert reps.precursor_mz[c] == pytest.approx(clustered.spectra.precursor_mz[i])
    from pyteomics import mgf as pyteomics_mgf

    records = list(pyteomics_mgf.read(str(mgf), use_index=False))
    assert [int(r["params"]["cluster"]) for r in records] == list(range(clustered.n_clusters))


def test_consensus_keeps_shared_peaks():
    lib = engine.SpectrumLibrary.from_peak_lists(
        [np.array([100.0, 150.0, 200.0]), np.array([100.01, 200.0]), np.array([100.0, 300.0])],
        [np.array([10.0, 5.0, 10.0]), np.array([1.0, 2.0]), np.array([4.0, 4.0])],
        precursor_mz=[400.0, 400.0, 400.0],
    )
    out = consensus_spectra(lib, np.array([0, 0, 0]), np.array([0]), tolerance=0.02)
    mz, intensity = out.peaks(0)
    # 100 in all three (scaled 1.0, 0.5, 1.0), 200 in two (1.0, 1.0); 150 and 300 in one
    assert np.allclose(mz, [(100 * 1.0 + 100.01 * 0.5 + 100 * 1.0) / 2.5, 200.0])
    assert np.allclose(intensity, [2.5 / 3, 2.0 / 3])


def test_cancelled_clustering_raises(compounds):
    token = CancelToken()
    token.cancel()
    with pytest.raises(ClusterCancelled):
        engine.cluster_spectra(compounds, cancel_token=token, backend="cpu")


def test_parameters_are_checked():
    with pytest.raises(ValueError, match="linkage"):
        ClusterParameters(linkage="average")
    with pytest.raises(ValueError, match="threshold"):
        ClusterParameters(threshold=0)
    with pytest.raises(TypeError, match="did you mean 'threshold'"):
        engine.cluster_spectra(engine.SpectrumLibrary.from_peak_lists([], []), treshold=0.5)


def test_propagated_hits_equal_direct_search_of_representatives(clustered, massbank_library):
    library = massbank_library.subset(np.arange(0, len(massbank_library), 7))
    found = engine.search_clusters(clustered, library, top_n=3, backend="cpu")
    direct = engine.search(clustered.representative_spectra(), library, top_n=3, backend="cpu")
    assert found.reduction_factor == pytest.approx(len(clustered) / clustered.n_clusters)
    for name in ("query_index", "library_index", "score", "matches"):
        assert np.array_equal(found.hits[name], direct[name])
    spread = found.propagated()
    labels = clustered.labels
    for member in range(len(clustered)):
        rows = spread.query_index == member
        rep_rows = direct.query_index == labels[member]
        assert np.array_equal(spread.library_index[rows], direct.library_index[rep_rows])
        assert np.array_equal(spread.score[rows], direct.score[rep_rows])
    frame = found.to_pandas()
    assert len(frame) == len(spread)
    assert np.array_equal(frame["index"], spread.query_index)
    assert np.array_equal(
        frame.representative_index, clustered.representatives[labels[spread.query_index]]
    )


@pytest.mark.parametrize("dense_limit", [0, 8192])
def test_sparse_and_dense_complete_linkage_agree(monkeypatch, dense_limit):
    """Both ways of linking a component (sparse maps, dense compiled matrix) give the reference."""
    import engine.analyses.cluster.linkage as linkage

    monkeypatch.setattr(linkage, "DENSE_LIMIT", dense_limit)
    rng = np.random.default_rng(7)
    n = 60
    first, second = np.triu_indices(n, 1)
    keep = rng.random(len(first)) < 0.3
    first, second = first[keep], second[keep]
    score = rng.choice([0.75, 0.8, 0.95, 1.0], size=len(first))
    pairs = LinkedPairs(n, first.astype(np.int64), second.astype(np.int64), score)
    assert same_partition(
        complete_linkage(pairs), brute_force_complete(n, first, second, score, 0.75)
    )
