"""A library is prepared once per preparation and reused by every later search."""

from __future__ import annotations

import numpy as np

import engine
from engine.backends import PreparedSpectra
from engine.memo import derived, nbytes


def test_prepared_library_is_built_once_and_reused(pesticides, monkeypatch):
    pesticides = pesticides.subset(np.arange(len(pesticides)))  # not prepared by other tests
    calls = []
    original = PreparedSpectra._prepare.__func__

    def counting(cls, library, params):
        if library is pesticides:  # not the tiny spectra a search readies its kernels on
            calls.append(params.score)
        return original(cls, library, params)

    monkeypatch.setattr(PreparedSpectra, "_prepare", classmethod(counting))
    identity = engine.SearchParameters(top_n=3)
    first = engine.search(pesticides, pesticides, identity, backend="cpu")
    assert len(calls) == 1  # queries and library are the same object: one preparation
    again = engine.search(pesticides, pesticides, identity, backend="cpu")
    assert len(calls) == 1
    np.testing.assert_array_equal(first.library_index, again.library_index)
    np.testing.assert_array_equal(first.score, again.score)
    # a different preparation builds its own; the first stays
    cosine = engine.SearchParameters(mode="custom", top_n=3, tolerance=0.02)
    engine.search(pesticides, pesticides, cosine, backend="cpu")
    assert calls == ["entropy", "cosine"]
    a = PreparedSpectra.for_search(pesticides, identity)
    assert a is PreparedSpectra.for_search(pesticides, identity)
    assert calls == ["entropy", "cosine"]


def test_reused_preparation_gives_the_scores_of_a_fresh_one(pesticides):
    params = engine.SearchParameters(mode="custom", top_n=5, precursor_tolerance=50.0)
    pesticides = pesticides.subset(np.arange(len(pesticides)))
    warm = engine.search(pesticides, pesticides, params, backend="cpu")
    warm = engine.search(pesticides, pesticides, params, backend="cpu")
    fresh_lib = pesticides.subset(np.arange(len(pesticides)))  # an equal, distinct object
    fresh = engine.search(fresh_lib, fresh_lib, params, backend="cpu")
    np.testing.assert_array_equal(warm.query_index, fresh.query_index)
    np.testing.assert_array_equal(warm.library_index, fresh.library_index)
    np.testing.assert_array_equal(warm.score, fresh.score)


def test_derived_store_keeps_its_budget():
    class Owner:
        pass

    owner = Owner()
    block = np.zeros(1000)  # 8 kB
    for k in range(5):
        derived(owner, k, lambda: block.copy(), budget=20_000)
    kept = owner.__dict__["_derived"].items
    assert list(kept) == [3, 4]  # the oldest dropped, the newest kept
    assert derived(owner, 4, lambda: None, budget=20_000) is kept[4][0]
    assert nbytes((block, [block])) == 16_000


def test_a_library_with_derived_structures_pickles_without_them(pesticides):
    import pickle

    lib = pesticides.subset(np.arange(len(pesticides)))
    engine.search(lib, lib, engine.SearchParameters(top_n=2), backend="cpu")
    assert lib.__dict__["_derived"].items  # the prepared spectra are kept with it
    copy = pickle.loads(pickle.dumps(lib))
    assert not copy.__dict__["_derived"].items
    np.testing.assert_array_equal(copy.mz, lib.mz)
    hits = engine.search(copy, copy, engine.SearchParameters(top_n=2), backend="cpu")
    np.testing.assert_array_equal(
        hits.score, engine.search(lib, lib, engine.SearchParameters(top_n=2), backend="cpu").score
    )
