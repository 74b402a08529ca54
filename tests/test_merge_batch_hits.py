"""A batch's GPU hits merged with rescored pairs: the same top-N as one full selection."""

from __future__ import annotations

import numpy as np
import pytest

from engine.backends.rescore import merge_batch_hits
from engine.hits import HitTable
from engine.params import SearchParameters


def device_and_rescored(seed: int, n_queries: int, extra: int, top_n: int):
    """Each query's device top-N (at most ``top_n`` rows) and ``extra`` rescored rows."""
    rng = np.random.default_rng(seed)
    per = np.minimum(rng.geometric(min(1.0, 1 / (0.7 * top_n)), n_queries), top_n)
    q = np.repeat(np.arange(n_queries), per)
    scores = [0.7, 0.75, 0.8, 0.8000000000000002, 0.9, 1.0]  # ties decided by rank
    device = HitTable.from_arrays(
        q, rng.integers(0, 500, len(q)), rng.choice(scores, len(q)), rng.integers(1, 9, len(q))
    )
    rescored = HitTable.from_arrays(
        rng.integers(0, n_queries, extra), rng.integers(500, 600, extra),
        rng.choice(scores, extra), rng.integers(1, 9, extra),
    )  # fmt: skip
    return device, rescored


@pytest.mark.parametrize(("extra", "top_n"), [(40, 10), (3000, 10), (0, 10), (200, 1)])
def test_merge_equals_one_full_selection(extra: int, top_n: int) -> None:
    device, rescored = device_and_rescored(extra + top_n, 400, extra, top_n)
    params = SearchParameters(mode="custom", threshold=0.5, top_n=top_n)
    ranks = np.arange(600)[::-1].copy()  # ties ranked against the library index
    parts = [device, rescored] if extra else [device, HitTable.empty()]
    got = merge_batch_hits(parts, params, wide=True, ranks=ranks)
    want = HitTable.concat(parts).top_per_query(top_n, library_rank=ranks)
    g, w = got.sorted(), want.sorted()
    assert len(g) == len(w)
    for column in HitTable.columns():
        assert np.array_equal(getattr(g, column), getattr(w, column)), column
    assert np.bincount(got.query_index).max() <= top_n


def test_without_cut_every_row_is_kept_for_the_caller() -> None:
    """Across batches the caller selects the top-N once: the batch's rows are only stacked."""
    device, rescored = device_and_rescored(7, 400, 300, 10)
    params = SearchParameters(mode="custom", threshold=0.5, top_n=10)
    ranks = np.arange(600)
    got = merge_batch_hits([device, rescored], params, wide=True, ranks=ranks, cut=False)
    assert len(got) == len(device) + len(rescored)
    g = got.sorted()
    w = HitTable.concat([device, rescored]).sorted()
    for column in HitTable.columns():
        assert np.array_equal(getattr(g, column), getattr(w, column)), column


def test_rescore_threads_follow_the_process_share(monkeypatch):
    """A process given a share of the cores (a Dask worker per GPU) rescores on that share."""
    import os

    import numba

    from engine.backends.rescore import rescore_threads

    monkeypatch.setenv("SIMMS_RESCORE_THREADS", "3")
    assert rescore_threads() == 3
    monkeypatch.delenv("SIMMS_RESCORE_THREADS")
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 6)
    assert rescore_threads() == max(1, min(6, os.cpu_count() or 2) - 2)
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 1)
    assert rescore_threads() == 1
