"""Pairs with a large greedy component, deferred by the pruned search's rows, scored exactly.

The pruned search's row kernel compiles no large-component matcher: a pair with
more candidates in one component than its scratch holds is listed and scored
afterwards by ``resolve_deferred``.  Its hits must be those of the unpruned
search (every pair scored by the resolving cores) and have matchms' scores, for
top-N rows (hits inserted) and rows of every hit (hits merged), for the cosine
(a component deferred) and the modified cosine (a whole pair deferred with its
candidates counted).
"""

from __future__ import annotations

import numpy as np
import pytest

import engine.kernels.deferred as deferred_module
from engine.kernels import SearchOptions, SpectrumSet, prepare_weights, search_block
from tests.references import CosineGreedy, ModifiedCosineGreedy, Spectrum


def _clustered_spectra(rng, n, clusters):
    """``n`` spectra of 20-45 peaks, some in tight clusters (many candidates in one
    component at 0.1 Da), as ``(mz, intensity, precursor)``."""
    out = []
    for s in range(n):
        mz = list(rng.uniform(50, 600, rng.integers(10, 25)))
        for c in range(clusters if s % 3 else 0):
            centre = 100.0 + 120.0 * c + rng.uniform(0, 0.5)
            mz += list(centre + rng.uniform(0, 0.08, rng.integers(8, 12)))
        mz = np.unique(np.round(np.array(mz), 5))
        intensity = rng.uniform(1, 100, mz.size).round(1)
        out.append((mz, intensity, float(rng.uniform(300, 700))))
    return out


def _csr(spectra):
    mz = np.concatenate([s[0] for s in spectra])
    intensity = np.concatenate([s[1] for s in spectra])
    offsets = np.zeros(len(spectra) + 1, dtype=np.int64)
    np.cumsum([s[0].size for s in spectra], out=offsets[1:])
    weight, norm = prepare_weights(mz, intensity, offsets)
    precursor = np.array([s[2] for s in spectra])
    return SpectrumSet(mz, weight, offsets, norm, precursor)


@pytest.fixture(scope="module")
def spectra():
    rng = np.random.default_rng(28)
    library = _clustered_spectra(rng, 60, 3)
    queries = [
        (mz + rng.normal(0, 0.01, mz.size), it * rng.uniform(0.5, 1.5, it.size), p - 30.0 * (k % 2))
        for k, (mz, it, p) in enumerate(library[::4])
    ]  # fmt: skip
    queries = [(np.sort(mz), it, p) for mz, it, p in queries]
    return queries, library


@pytest.fixture
def codes(monkeypatch):
    """The codes of the pairs the rows deferred (-1: a cosine component, else -candidates)."""
    seen = []
    resolve = deferred_module.resolve_deferred

    def spy(deferred, *args):
        seen.extend(deferred[2][: deferred[3][0]].tolist())
        return resolve(deferred, *args)

    monkeypatch.setattr(deferred_module, "resolve_deferred", spy)
    return seen


@pytest.mark.slow  # the first case loads matchms and compiles the resolver (~6 s)
@pytest.mark.parametrize("modified", [False, True])
@pytest.mark.parametrize(
    ("top_n", "min_matches", "threshold"), [(0, 0, 0.0), (2, 0, 0.0), (0, 5, 0.3)]
)
def test_deferred_pairs_scored_as_unpruned_and_as_matchms(
    spectra, codes, modified, top_n, min_matches, threshold
):
    queries, library = spectra
    q, lib = _csr(queries), _csr(library)
    options = SearchOptions(0.1, modified, 0.0, False, min_matches, threshold, top_n)
    args = (q, lib, 0, len(queries), 0, len(library), options)
    pruned = search_block(*args)
    unpruned = search_block(*args, prune=False)
    for a, b in zip(pruned, unpruned, strict=True):
        np.testing.assert_array_equal(a, b)
    assert len(codes) > 5
    assert min(codes) < -1 if modified else set(codes) == {-1}
    reference = (ModifiedCosineGreedy if modified else CosineGreedy)(tolerance=0.1)
    for qi, li, score, matches in zip(*pruned, strict=True):
        (qmz, qit, qp), (lmz, lit, lp) = queries[qi], library[li]
        ref = reference.pair(
            Spectrum(mz=lmz, intensities=lit, metadata={"precursor_mz": lp}),
            Spectrum(mz=qmz, intensities=qit, metadata={"precursor_mz": qp}),
        )
        assert score == pytest.approx(float(ref["score"]), abs=1e-12)
        assert matches == int(ref["matches"])
    assert len(pruned[0]) > 10


def test_a_search_says_when_the_large_component_matcher_compiles(monkeypatch):
    """The matcher compiles on the first search that defers a pair, in its middle: the
    job says so (as the CLI's and the window's message) and keeps the wait out of its
    elapsed time; the hits are those of a search after it."""
    import time

    import engine
    import engine.kernels.compile_note as compile_note
    from engine.search.prepare import COMPILING_MORE, tiny_large_library

    lib = tiny_large_library()
    params = engine.SearchParameters(mode="custom", score="cosine", tolerance=0.1)
    expected = engine.search(lib, lib, params, backend="cpu")  # the matcher compiled
    real = deferred_module.resolve_deferred

    class Uncompiled:  # as numba's dispatcher in a fresh process: no signature yet
        overloads: dict = {}
        compiled: list = []

        def typeof_pyval(self, value):
            return real.typeof_pyval(value)

        def compile(self, types):
            time.sleep(0.3)  # "compiling"
            self.overloads[types] = real.overloads[types]
            self.compiled.append(types)

        def __call__(self, *args):
            return real(*args)

    fake = Uncompiled()
    monkeypatch.setattr(deferred_module, "resolve_deferred", fake)
    monkeypatch.setattr(compile_note, "SAY_AFTER", 0.05)
    job = engine.SearchJob(lib, lib, params, backend="cpu")
    hits = job.run()
    assert len(fake.compiled) == 1  # compiled once, apart from the calls
    assert COMPILING_MORE in job.messages
    ready = [m for m in job.messages if m.startswith("kernels for these spectra ready")]
    assert len(ready) == 1 and job.messages.index(COMPILING_MORE) < job.messages.index(ready[0])
    assert job._compile_pause >= 0.3  # noqa: SLF001 - the wait not timed
    np.testing.assert_array_equal(hits.library_index, expected.library_index)
    np.testing.assert_array_equal(hits.score, expected.score)
    assert compile_note._listeners == []  # noqa: SLF001 - the job stopped listening
