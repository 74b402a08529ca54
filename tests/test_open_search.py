"""Open and analog searches on the CPU: the pruned search finds exactly the unpruned hits.

Real MassBank queries against every 10th MassBank spectrum: the entropy search
without a precursor window (open search) and the modified cosine with and
without a window (analog mode) give the same hits (indices, scores, matches,
order) with the inverted-index pruning as when every pair is scored; the scores
equal ms_entropy's Flash open search and matchms' ``ModifiedCosineGreedy``.
"""

from __future__ import annotations

import ms_entropy  # the entropy reference (test extra)
import numpy as np
import pytest

import engine
from engine.backends.base import PreparedSpectra, search_options
from engine.kernels import library_peak_index, search_block
from tests.references import ModifiedCosineGreedy, Spectrum

P = engine.SearchParameters


@pytest.fixture(scope="module")
def queries(massbank_queries):
    """300 real MassBank queries."""
    return massbank_queries.subset(np.arange(300))


def _both(queries, library, params: P, blocks: int = 2):
    """Hits of the pruned and of the unpruned search, the library in ``blocks`` blocks."""
    q = PreparedSpectra.for_search(queries, params).spectrum_set
    lib = PreparedSpectra.for_search(library, params).spectrum_set
    options = search_options(params)
    n = len(library)
    edges = np.linspace(0, n, blocks + 1).astype(int)
    found = {True: [], False: []}
    for l0, l1 in zip(edges[:-1], edges[1:], strict=True):
        index = library_peak_index(lib, l0, l1, options.kind)
        for prune in (True, False):
            found[prune].append(
                search_block(
                    q, lib, 0, len(queries), l0, l1, options, prune=prune, library_index=index
                )  # fmt: skip
            )
    return found[True], found[False]


def _assert_same(pruned, unpruned):
    total = 0
    for a, b in zip(pruned, unpruned, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
        total += len(a[0])
    return total


@pytest.mark.slow
@pytest.mark.parametrize(
    "params",
    [
        P(precursor_tolerance=None),  # entropy, open search, top 10
        P(precursor_tolerance=None, top_n=0, threshold=0.3, min_matches=2),
        P(precursor_tolerance=None, score="unweighted_entropy", match_ion_mode=False),
        P(mode="analog"),  # modified cosine, shift <= 100 Da, >= 6 matches, >= 0.7
        P(mode="analog", precursor_tolerance=None, top_n=0),
        P(mode="custom", score="modified_cosine", top_n=5),  # no filters at all
    ],
    ids=["open", "open-all-hits", "open-unweighted", "analog", "modcos-open", "modcos-custom"],
)
def test_pruned_open_and_analog_search_equal_unpruned(queries, massbank_sample, params):
    pruned, unpruned = _both(queries, massbank_sample, params)
    assert _assert_same(pruned, unpruned) > 100


@pytest.mark.slow
def test_open_entropy_search_equals_ms_entropy(queries, massbank_sample):
    """Every hit has ms_entropy's score of the pair (Flash's cleaning); every library
    spectrum of the same ion mode that Flash's open search ranks above our 10th hit
    and whose ms_entropy score is above it is among our hits.

    (Flash's open search itself may differ from the pairwise score by a peak pair on
    the float32 tolerance edge, so its candidates are rescored pairwise.)
    """
    qs = queries.subset(np.arange(100))
    hits = engine.search(qs, massbank_sample, P(precursor_tolerance=None), backend="cpu")
    flash = ms_entropy.FlashEntropySearch()
    spectra = [
        {
            "precursor_mz": float(massbank_sample.precursor_mz[i]),
            "peaks": np.column_stack(massbank_sample.peaks(i)).astype(np.float32),
            "row": i,
        }
        for i in range(len(massbank_sample))
    ]
    rows = np.array([s["row"] for s in flash.build_index(spectra)])
    cleaned = {int(s["row"]): s["peaks"] for s in spectra}
    lib_pol, q_pol = massbank_sample.polarity(), qs.polarity()

    def reference(query_peaks, l):
        return ms_entropy.calculate_entropy_similarity(
            query_peaks, cleaned[int(l)], ms2_tolerance_in_da=0.02, clean_spectra=False
        )

    checked = 0
    for q in range(len(qs)):
        peaks = np.column_stack(qs.peaks(q)).astype(np.float32)
        peaks = flash.clean_spectrum_for_search(float(qs.precursor_mz[q]), peaks)
        flash_scores = np.zeros(len(massbank_sample))
        flash_scores[rows] = flash.open_search(peaks=peaks, ms2_tolerance_in_da=0.02)
        mine = hits.query_index == q
        lib, score = hits.library_index[mine], hits.score[mine]
        for l, s in zip(lib, score, strict=True):
            assert s == pytest.approx(reference(peaks, l), abs=1e-6)
        flash_scores[lib_pol * q_pol[q] < 0] = 0.0
        cut = score[-1] if len(score) == 10 else 0.0
        for l in np.flatnonzero(flash_scores > max(cut - 0.05, 0.0)):
            if l not in lib:
                assert reference(peaks, l) <= cut + 1e-9
        checked += len(score)
    assert checked > 500


def _matchms(library, i) -> Spectrum:
    mz, intensity = library.peaks(i)
    return Spectrum(
        mz=np.asarray(mz, dtype=float),
        intensities=np.asarray(intensity, dtype=float),
        metadata={"precursor_mz": float(library.precursor_mz[i])},
    )


@pytest.mark.slow
def test_modified_cosine_open_search_equals_matchms(queries, massbank_sample):
    """Hits of the pruned modified cosine without a precursor window have matchms' scores."""
    qs = queries.subset(np.arange(40))
    params = P(mode="custom", score="modified_cosine", threshold=0.6, top_n=5)
    hits = engine.search(qs, massbank_sample, params, backend="cpu")
    reference = ModifiedCosineGreedy(tolerance=params.tolerance)
    shifted = 0
    for q, l, s, m in zip(
        hits.query_index, hits.library_index, hits.score, hits.matches, strict=True
    ):
        ref = reference.pair(_matchms(massbank_sample, l), _matchms(qs, q))
        assert s == pytest.approx(float(ref["score"]), abs=1e-6)
        assert m == int(ref["matches"])
        shifted += abs(massbank_sample.precursor_mz[l] - qs.precursor_mz[q]) > 1.0
    assert len(hits) > 50 and shifted > 5


@pytest.mark.slow
def test_pruned_modified_cosine_with_unknown_precursors(queries, massbank_sample):
    """Spectra without a precursor have only zero-shift candidates: the pruned search
    (whose shifted index leaves them out) still equals the unpruned one."""
    params = P(mode="custom", score="modified_cosine", threshold=0.2, top_n=0)
    q = PreparedSpectra.for_search(queries.subset(np.arange(60)), params).spectrum_set
    lib = PreparedSpectra.for_search(massbank_sample.subset(np.arange(1500)), params).spectrum_set
    q = q._replace(precursor_mz=np.where(np.arange(60) % 3 == 0, np.nan, q.precursor_mz))
    lib = lib._replace(precursor_mz=np.where(np.arange(1500) % 4 == 0, np.nan, lib.precursor_mz))
    options = search_options(params)
    pruned = search_block(q, lib, 0, 60, 0, 1500, options)
    unpruned = search_block(q, lib, 0, 60, 0, 1500, options, prune=False)
    assert _assert_same([pruned], [unpruned]) > 100
    unknown = np.isnan(lib.precursor_mz[pruned[1]]) | np.isnan(q.precursor_mz[pruned[0]])
    assert unknown.sum() > 10
