"""Hit row order (query ascending, score descending, library ascending, top N): both paths agree."""

from __future__ import annotations

import numpy as np
import pytest

from engine import hits


def _reference(query, library, score, top_n):
    rows = sorted(range(len(query)), key=lambda k: (query[k], -score[k], library[k], k))
    if top_n <= 0:
        return np.array(rows, dtype=np.int64)
    kept, seen = [], {}
    for k in rows:
        seen[query[k]] = seen.get(query[k], 0) + 1
        if seen[query[k]] <= top_n:
            kept.append(k)
    return np.array(kept, dtype=np.int64)


@pytest.mark.parametrize("top_n", [0, 1, 3])
@pytest.mark.parametrize("seed", [1, 2])
def test_small_and_parallel_paths_give_the_reference_order(monkeypatch, seed, top_n):
    rng = np.random.default_rng(seed)
    n = 2_000
    query = rng.integers(5, 60, n)
    library = rng.integers(0, 40, n)  # repeated (query, library) pairs: ties kept in row order
    score = rng.choice([0.0, -0.0, 0.25, 0.5, 0.5000000000000001, 1.0], n)
    expected = _reference(query.tolist(), library.tolist(), score.tolist(), top_n)
    small = hits.top_n_order(query, library, score, top_n)
    monkeypatch.setattr(hits, "SMALL_ORDER_ROWS", 0)
    parallel = hits.top_n_order(query, library, score, top_n)
    np.testing.assert_array_equal(small, expected)
    np.testing.assert_array_equal(parallel, expected)


@pytest.mark.parametrize("top_n", [0, 2, 100])
def test_queries_already_in_order_give_the_reference_order(monkeypatch, top_n):
    """A device top-N arrives ordered per query (its sort is skipped); rows appended
    after it (rescored pairs, repeated pairs, NaN scores) still sort as the reference."""
    rng = np.random.default_rng(3)
    n = 3_000
    query = rng.integers(0, 80, n)
    library = rng.integers(0, 50, n)
    score = rng.choice([0.25, 0.5, 0.5000000000000001, 0.75, 1.0], n)
    first = hits._top_n_order_small(query, library, score, 0)
    extra = rng.integers(0, n, 300)
    query = np.r_[query[first], query[extra]]
    library = np.r_[library[first], library[extra]]
    score = np.r_[score[first], score[extra]]
    score[-5:] = np.nan
    expected = hits._top_n_order_small(query, library, score, top_n)
    monkeypatch.setattr(hits, "SMALL_ORDER_ROWS", 0)
    np.testing.assert_array_equal(hits.top_n_order(query, library, score, top_n), expected)
    q, lib, s = query[:n], library[:n], score[:n]  # every group in order: none sorted again
    np.testing.assert_array_equal(
        hits.top_n_order(q, lib, s, top_n), hits._top_n_order_small(q, lib, s, top_n)
    )


def test_a_row_is_sorted_by_score_then_library_index():
    """The kernels' row sort: score descending, ties by the library's original index,
    the row's tail beyond ``n`` untouched (many tied scores)."""
    from engine.kernels.rows import sort_row

    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(0, 40))
        cap = n + int(rng.integers(0, 5))
        hs = rng.integers(0, 5, cap).astype(np.float64) / 4
        hl = rng.permutation(cap).astype(np.int64)
        hm = rng.integers(0, 9, cap).astype(np.int32)
        index = rng.permutation(cap).astype(np.int64)
        order = np.lexsort((index[hl[:n]], -hs[:n]))
        row = (hs, hl, hm)
        expected = [a[:n][order].copy() for a in row] + [a[n:].copy() for a in row]
        sort_row(hs, hl, hm, n, index)
        got = [a[:n] for a in row] + [a[n:] for a in row]
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_array_equal(g, e)
