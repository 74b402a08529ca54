"""q-values per hit (engine.search.fdr): decoys, estimates, the fdr filter, on real spectra."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import engine
from engine.cli import main
from engine.export import read_hits
from engine.search.decoys import DECOY_PREFIX, NEAR_PRECURSOR, decoy_library, target_decoy_library
from engine.search.fdr import SECOND_BEST_DEPTH, FdrEstimate


# -- an independent reference: brute force over thresholds, in pandas ---------------------
def reference_q(winners: pd.DataFrame, scores: np.ndarray) -> np.ndarray:
    """q of each score: least D(t)/T(t) over every threshold t <= score (T = 0: 1)."""
    t_scores = winners.loc[winners.kind == "target", "score"].to_numpy()
    d_scores = winners.loc[winners.kind == "decoy", "score"].to_numpy()
    candidates = np.unique(np.concatenate([t_scores, d_scores, scores]))
    fdr = {}
    for t in candidates:
        n_t, n_d = (t_scores >= t).sum(), (d_scores >= t).sum()
        fdr[t] = min(n_d / n_t, 1.0) if n_t else 1.0
    out = []
    for s in scores:
        out.append(min(v for t, v in fdr.items() if t <= s))
    return np.array(out)


@pytest.fixture(scope="module")
def split(massbank_library, massbank_queries):
    """300 real queries against every 10th MassBank spectrum, query records left out."""
    queries = massbank_queries.subset(np.arange(300))
    keep = ~np.isin(massbank_library.metadata["id"], queries.metadata["id"])
    rows = np.flatnonzero(keep)[::10]
    return queries, massbank_library.subset(rows)


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["fragments", "shifted"])
def test_target_decoy_q_values_equal_a_pandas_recomputation(split, scheme):
    queries, library = split
    hits = engine.search(queries, library, fdr=1.0, decoys=scheme, backend="cpu")
    # the same pass by hand: a plain search of the target + decoy library
    both = target_decoy_library(library, scheme)
    plain = engine.search(queries, both, top_n=20, backend="cpu").to_pandas(annotated=False)
    plain["kind"] = np.where(plain.library_index >= len(library), "decoy", "target")
    best = plain.groupby(["query_index", "kind"]).score.max().unstack()
    best = best.reindex(columns=["target", "decoy"])
    target_wins = best.target.notna() & ~(best.decoy >= best.target)
    winners = pd.concat(
        [
            pd.DataFrame({"kind": "target", "score": best.target[target_wins]}),
            pd.DataFrame({"kind": "decoy", "score": best.decoy[best.decoy.notna() & ~target_wins]}),
        ]
    )
    assert (winners.kind == "decoy").any() and (winners.kind == "target").any()
    frame = hits.to_pandas()
    expected = reference_q(winners, frame.score.to_numpy())
    lost = ~target_wins.reindex(frame.query_index).fillna(False).to_numpy()
    expected[lost] = 1.0
    np.testing.assert_allclose(frame.q_value.to_numpy(), expected, rtol=0, atol=1e-12)
    # decoys never reach the user; target hits are those of the plain search
    assert not frame.library_id.str.startswith(DECOY_PREFIX).any()
    assert (frame.library_index < len(library)).all()
    alone = engine.search(queries, library, backend="cpu")
    for name in ("query_index", "library_index", "score", "matches"):
        np.testing.assert_array_equal(hits[name], alone[name])


@pytest.mark.slow
def test_second_best_q_values_equal_a_pandas_recomputation(split):
    queries, library = split
    hits = engine.search(queries, library, fdr=1.0, decoys="second", backend="cpu")
    plain = engine.search(queries, library, top_n=SECOND_BEST_DEPTH, backend="cpu").to_pandas()
    skeleton = plain.library_inchikey.str.split("-").str[0].str.strip().str.upper()
    plain["compound"] = np.where(skeleton != "", skeleton, "id:" + plain.library_id)
    plain["top"] = plain.groupby("query_index").compound.transform("first")
    firsts = plain.groupby("query_index").score.first()
    others = plain[plain.compound != plain.top].groupby("query_index").score.max()
    winners = pd.concat(
        [
            pd.DataFrame({"kind": "target", "score": firsts}),
            pd.DataFrame({"kind": "decoy", "score": others}),
        ]
    )
    frame = hits.to_pandas()
    expected = reference_q(winners, frame.score.to_numpy())
    np.testing.assert_allclose(frame.q_value.to_numpy(), expected, rtol=0, atol=1e-12)
    assert 0 < frame.q_value.max() <= 1 and frame.q_value.min() >= 0
    # q never falls as the score falls (the second-best scheme has no lost queries)
    by_score = frame.sort_values("score", ascending=False, kind="stable")
    assert (np.diff(by_score.q_value.to_numpy()) >= 0).all()
    # the fdr filter keeps exactly the hits with q <= fdr
    kept = engine.search(queries, library, fdr=0.05, decoys="second", backend="cpu").to_pandas()
    pd.testing.assert_frame_equal(
        kept.reset_index(drop=True), frame[frame.q_value <= 0.05].reset_index(drop=True)
    )
    assert 0 < len(kept) < len(frame)


def test_q_value_of_a_score_is_monotone_and_least_over_lower_thresholds():
    rng = np.random.default_rng(3)
    estimate = FdrEstimate("test", rng.random(200), rng.random(60) * 0.7)
    # every score where the FDR steps, and points between them
    grid = np.sort(
        np.concatenate([np.linspace(-0.1, 1.1, 1201), estimate.targets, estimate.decoys])
    )
    q = estimate.q_value(grid)
    assert (np.diff(q) <= 0).all() and q.min() >= 0 and q.max() <= 1
    fdr = estimate.fdr(grid)
    np.testing.assert_array_equal(q, np.minimum.accumulate(fdr))
    assert q[-1] == 0.0 and q[0] == pytest.approx(60 / 200)


def test_decoy_spectra_are_deterministic_and_plausible(pesticides):
    a, b = decoy_library(pesticides, "fragments"), decoy_library(pesticides, "fragments")
    np.testing.assert_array_equal(a.mz, b.mz)
    np.testing.assert_array_equal(a.intensity, b.intensity)
    assert not np.array_equal(decoy_library(pesticides, "fragments", seed=1).mz, a.mz)
    assert len(a) == len(pesticides)
    np.testing.assert_array_equal(a.precursor_mz, pesticides.precursor_mz)
    np.testing.assert_array_equal(a.ion_mode, pesticides.ion_mode)
    owner = np.repeat(np.arange(len(a)), np.diff(a.offsets))
    assert (np.diff(a.mz)[owner[1:] == owner[:-1]] > 0).all()  # sorted, no repeated m/z
    assert np.isin(a.mz, pesticides.mz).all()  # every fragment is one of the library's
    moved = ~np.isin(a.mz, pesticides.mz[pesticides.offsets[0] : pesticides.offsets[1]])[
        : a.offsets[1]
    ]
    assert moved.any()
    near = a.mz >= a.precursor_mz[owner] - NEAR_PRECURSOR
    assert (a.mz[~near] < a.precursor_mz[owner][~near]).all()
    shifted = decoy_library(pesticides, "shifted")
    np.testing.assert_array_equal(shifted.mz, pesticides.mz)
    np.testing.assert_allclose(shifted.precursor_mz - pesticides.precursor_mz, 10.0)
    assert all(i.startswith(DECOY_PREFIX) for i in shifted.metadata["id"])
    both = target_decoy_library(pesticides, "fragments")
    assert both is target_decoy_library(pesticides, "fragments")  # kept with the library
    assert len(both) == 2 * len(pesticides)


def test_parameters_check_fdr_and_decoys():
    assert engine.SearchParameters().fdr is None
    assert engine.SearchParameters().decoys == "second"
    for bad in (0, -0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="fdr"):
            engine.SearchParameters(fdr=bad)
    with pytest.raises(ValueError, match="decoys"):
        engine.SearchParameters(fdr=0.05, decoys="reversed")


def test_without_fdr_the_q_value_column_is_empty(pesticides):
    hits = engine.search(pesticides, pesticides, backend="cpu")
    assert np.isnan(hits["q_value"]).all()


@pytest.mark.parametrize("scheme", ["second", "fragments"])
def test_cli_fdr_filters_and_writes_q_values(tmp_path, data_dir, library_cache, scheme):
    path = str(data_dir / "pesticides.mgf")
    every, kept = tmp_path / "all.tsv", tmp_path / "kept.tsv"
    base = ["search", path, path, "-q", "--backend", "cpu", "--decoys", scheme]
    assert main([*base, "--fdr", "1", "-o", str(every)]) == 0
    assert main([*base, "--fdr", "0.05", "-o", str(kept)]) == 0
    a, _ = read_hits(every)
    b, _ = read_hits(kept)
    assert a["q_value"].dtype == np.float64 and not np.isnan(a["q_value"]).any()
    assert (b["q_value"] <= 0.05).all()
    mask = a["q_value"] <= 0.05
    for name in ("query_index", "library_index", "score", "q_value"):
        np.testing.assert_array_equal(b[name], a[name][mask])
    assert not any(str(i).startswith(DECOY_PREFIX) for i in a["library_id"])
    api = engine.search(path, path, fdr=0.05, decoys=scheme, backend="cpu")
    np.testing.assert_array_equal(api["library_index"], b["library_index"])
    np.testing.assert_allclose(api["q_value"], b["q_value"])


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["second", "fragments"])
def test_fdr_on_dask_equals_the_local_search(split, scheme):
    from distributed import Client, LocalCluster

    queries, library = split
    local = engine.search(queries, library, fdr=0.1, decoys=scheme, backend="cpu")
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None)
        as cluster,
        Client(cluster, set_as_default=False) as client,
    ):  # fmt: skip
        remote = engine.search(queries, library, fdr=0.1, decoys=scheme, client=client)
    assert len(local) > 0
    for name in ("query_index", "library_index", "score", "q_value"):
        np.testing.assert_array_equal(remote[name], local[name])
