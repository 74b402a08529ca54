"""The best-partner bound of the greedy cosine: never below the score, and no hit lost."""

from __future__ import annotations

import numpy as np
import pytest

from engine.backends import PreparedSpectra
from engine.backends.rescore import submit_rescore
from engine.kernels.spectrum_set import COSINE, MODIFIED_COSINE
from engine.params import SearchParameters


def rescore_pairs(*args):
    """The exact scores of listed pairs, waited for."""
    return submit_rescore(*args).result()


def long_pairs(queries, library, params, min_product=1 << 14, limit=6000):
    """Pairs of long real spectra (those a GPU tile hands to the host), prepared."""
    q = PreparedSpectra.for_search(queries, params)
    lib = PreparedSpectra.for_search(library, params)
    qc, lc = np.diff(q.offsets), np.diff(lib.offsets)
    long_l = np.flatnonzero(lc >= 64)
    qi, li = [], []
    for k in np.flatnonzero(qc >= 32):
        m = long_l[lc[long_l] * qc[k] > min_product]
        qi.append(np.full(len(m), k))
        li.append(m)
    qi, li = np.concatenate(qi).astype(np.int64), np.concatenate(li).astype(np.int64)
    pick = np.random.default_rng(3).permutation(len(qi))[:limit]
    return q, lib, qi[pick], li[pick]


@pytest.mark.parametrize("tolerance", [0.02, 0.1, 0.5])
def test_bound_never_below_the_score(massbank_queries, massbank_library, tolerance):
    from engine.kernels.pair_bound import best_partner_bound

    params = SearchParameters(mode="custom", tolerance=tolerance)
    q, lib, qi, li = long_pairs(massbank_queries, massbank_library, params)
    assert len(qi) > 1000
    scores, _ = rescore_pairs(q, lib, qi, li, tolerance, COSINE)
    colmax = np.empty(int(np.diff(q.offsets).max()))
    for k in range(len(qi)):
        a, b = li[k], qi[k]
        top = best_partner_bound(
            lib.mz, lib.weight, lib.offsets[a], lib.offsets[a + 1],
            q.mz, q.weight, q.offsets[b], q.offsets[b + 1], tolerance, colmax,
        )  # fmt: skip
        den = lib.norm[a] * q.norm[b]
        assert scores[k] * den <= top * (1 + 1e-12), (a, b)


@pytest.mark.parametrize("threshold", [0.3, 0.7])
def test_bounded_rescoring_keeps_every_hit(massbank_queries, massbank_library, threshold):
    """Pairs scored with a threshold: the same hits (scores, matches) as scoring them all."""
    tolerance = 0.1
    params = SearchParameters(mode="custom", tolerance=tolerance)
    q, lib, qi, li = long_pairs(massbank_queries, massbank_library, params)
    all_s, all_m = rescore_pairs(q, lib, qi, li, tolerance, COSINE)
    got_s, got_m = rescore_pairs(q, lib, qi, li, tolerance, COSINE, threshold)
    hits = (all_s >= threshold) & (all_m >= 1)
    assert hits.any()
    np.testing.assert_array_equal((got_s >= threshold) & (got_m >= 1), hits)
    np.testing.assert_array_equal(got_s[hits], all_s[hits])
    np.testing.assert_array_equal(got_m[hits], all_m[hits])
    skipped = (got_m == 0) & (all_m > 0)
    assert skipped.sum() > len(qi) // 2  # the bound rules most of them out unscored


def test_rescoring_with_a_threshold_per_pair(massbank_queries, massbank_library):
    """Per-pair thresholds (a query's running top-N floor): every pair reaching its own
    threshold keeps its exact score and matches, whatever the other pairs' thresholds."""
    tolerance = 0.1
    params = SearchParameters(mode="custom", tolerance=tolerance)
    q, lib, qi, li = long_pairs(massbank_queries, massbank_library, params)
    all_s, all_m = rescore_pairs(q, lib, qi, li, tolerance, COSINE)
    floors = np.random.default_rng(5).choice([0.0, 0.3, 0.5, 0.7, 0.9], len(qi))
    got_s, got_m = rescore_pairs(q, lib, qi, li, tolerance, COSINE, floors)
    reach = (all_s >= floors) & (all_m >= 1)
    assert reach.any() and (~reach).any()
    np.testing.assert_array_equal(got_s[reach], all_s[reach])
    np.testing.assert_array_equal(got_m[reach], all_m[reach])
    assert np.all((got_s[~reach] < floors[~reach]) | (got_m[~reach] == 0))
    unbounded = floors == 0.0  # no threshold: scored in full
    np.testing.assert_array_equal(got_s[unbounded], all_s[unbounded])
    # pairs skipped unscored, more where the threshold is higher
    skipped = [np.mean((got_m == 0)[(floors == f) & (all_m > 0)]) for f in (0.3, 0.9)]
    assert skipped[1] > skipped[0] > 0, skipped


def test_other_scores_are_not_bounded(massbank_queries, massbank_library):
    params = SearchParameters(mode="custom", score="modified_cosine", tolerance=0.1)
    q, lib, qi, li = long_pairs(massbank_queries, massbank_library, params, limit=500)
    all_s, all_m = rescore_pairs(q, lib, qi, li, 0.1, MODIFIED_COSINE)
    got_s, got_m = rescore_pairs(q, lib, qi, li, 0.1, MODIFIED_COSINE, 0.7)
    np.testing.assert_array_equal(got_s, all_s)
    np.testing.assert_array_equal(got_m, all_m)


@pytest.mark.parametrize("top_n", [0, 10])
def test_cpu_search_of_long_spectra_keeps_every_hit(massbank_queries, massbank_library, top_n):
    """The CPU search checks long pairs against the bound: its hits equal the dense scores'."""
    from engine import score_matrix, search
    from engine.kernels.peak_index import LONG_PAIR

    q_counts = np.diff(massbank_queries.offsets)
    l_counts = np.diff(massbank_library.offsets)
    queries = massbank_queries.subset(np.argsort(q_counts)[-24:])  # the longest
    library = massbank_library.subset(
        np.concatenate([np.argsort(l_counts)[-600:], np.arange(0, len(l_counts), 90)])
    )
    qc, lc = np.diff(queries.offsets), np.diff(library.offsets)
    assert (np.outer(qc, lc) > LONG_PAIR).sum() > 5000  # many pairs take the bound's path
    params = SearchParameters(mode="custom", tolerance=0.1, threshold=0.6, top_n=top_n)
    scores, matches = score_matrix(queries, library, params, backend="cpu")
    hits = search(queries, library, params, backend="cpu")
    ok = (scores >= params.threshold) & (matches >= params.min_matches)
    if top_n == 0:
        qi, li = np.nonzero(ok)
        assert len(hits) == len(qi) > 0
        got = set(zip(hits.query_index.tolist(), hits.library_index.tolist(), strict=True))
        assert got == set(zip(qi.tolist(), li.tolist(), strict=True))
    else:  # each query's top-N: as many as it has, none better left out
        for q in range(len(queries)):
            mine = hits.take(np.flatnonzero(hits.query_index == q))
            assert len(mine) == min(top_n, ok[q].sum())
            if len(mine) and ok[q].sum() > len(mine):
                assert scores[q][ok[q]].max() == mine.score.max()
    np.testing.assert_array_equal(hits.score, scores[hits.query_index, hits.library_index])
    np.testing.assert_array_equal(hits.matches, matches[hits.query_index, hits.library_index])


def _sweep_bound(mzA, wA, mzB, wB, tol):
    """The best-partner bound by its definition: every candidate's product (numpy)."""
    cand = (mzB[None, :] >= mzA[:, None] - tol) & (mzB[None, :] <= mzA[:, None] + tol)
    prods = np.where(cand, wA[:, None] * wB[None, :], 0.0)
    rows = cols = 0.0
    for x in prods.max(axis=1, initial=0.0):  # summed in peak order, as the kernel sums
        rows += x
    for x in prods.max(axis=0, initial=0.0):
        cols += x
    return min(rows, cols)


@pytest.mark.parametrize("tolerance", [0.02, 0.5])
def test_bound_equals_its_definition_bit_for_bit(massbank_queries, massbank_library, tolerance):
    # the kernel finds each row's and column's best partner by sliding-window maxima
    from engine.kernels.pair_bound import best_partner_bound

    params = SearchParameters(mode="custom", tolerance=tolerance)
    q, lib, qi, li = long_pairs(massbank_queries, massbank_library, params, limit=300)
    colmax = np.empty(int(np.diff(q.offsets).max()))
    for a, b in zip(li, qi, strict=True):
        sa = slice(lib.offsets[a], lib.offsets[a + 1])
        sb = slice(q.offsets[b], q.offsets[b + 1])
        args = (lib.mz[sa], lib.weight[sa], q.mz[sb], q.weight[sb], tolerance)
        mzA, wA, mzB, wB, tol = args
        got = best_partner_bound(mzA, wA, 0, len(mzA), mzB, wB, 0, len(mzB), tol, colmax)
        assert got == _sweep_bound(*args)
