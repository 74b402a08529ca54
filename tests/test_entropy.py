"""Spectral entropy similarity equals ms_entropy on real spectra, pairwise and in searches."""

from __future__ import annotations

import ms_entropy  # the reference (test extra)
import numpy as np
import pytest

import engine
from engine.kernels import ENTROPY, dense_block, spectrum_set

TOLERANCE = 0.02


def _peaks(library, i) -> np.ndarray:
    return np.column_stack(library.peaks(i)).astype(np.float32)


@pytest.fixture(scope="module")
def massbank_200(massbank_library):
    """200 MassBank spectra: the 10 largest, the 10 most densely spaced, 180 at random."""
    lib = massbank_library
    sizes = lib.peak_counts
    largest = list(np.argsort(sizes, kind="stable")[::-1][:10])
    spacing = np.array(
        [np.median(np.diff(lib.peaks(i)[0])) if sizes[i] >= 40 else np.inf for i in range(len(lib))]
    )
    densest = [i for i in np.argsort(spacing, kind="stable")[:30] if i not in largest][:10]
    rng = np.random.default_rng(20261124)
    chosen = list(dict.fromkeys([*largest, *densest, *rng.choice(len(lib), 200, replace=False)]))
    subset = lib.subset(np.array(chosen[:200]))
    assert subset.peak_counts.max() == sizes.max()
    return subset


def _reference_matrix(library, weighted: bool) -> np.ndarray:
    score = (
        ms_entropy.calculate_entropy_similarity
        if weighted
        else ms_entropy.calculate_unweighted_entropy_similarity
    )
    peaks = [_peaks(library, i) for i in range(len(library))]
    n = len(peaks)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = score(peaks[i], peaks[j], ms2_tolerance_in_da=TOLERANCE)
    return out


def _pair_matrix(library, weighted: bool) -> np.ndarray:
    n = len(library)
    out = np.zeros((n, n))
    for i in range(n):
        mz1, int1 = library.peaks(i)
        for j in range(n):
            mz2, int2 = library.peaks(j)
            out[i, j], _ = engine.entropy_similarity_pair(
                mz1, int1, mz2, int2, tolerance=TOLERANCE, weighted=weighted
            )
    return out


@pytest.mark.slow
@pytest.mark.parametrize("weighted", [True, False])
def test_pair_equals_ms_entropy_on_pesticides_all_vs_all(pesticides, weighted):
    ours = _pair_matrix(pesticides, weighted)
    reference = _reference_matrix(pesticides, weighted)
    assert np.abs(ours - reference).max() < 1e-6
    assert (reference > 0.5).sum() > len(pesticides)  # real, non-trivial similarities


@pytest.mark.parametrize("weighted", [True, False])
def test_pair_equals_ms_entropy_on_200_massbank_spectra(massbank_200, weighted):
    """All 40,000 ordered pairs, including the largest and the densest spectra."""
    reference = _reference_matrix(massbank_200, weighted)
    # the same pairs through the batch kernel (cleaning as ms_entropy's pairwise default)
    lib = massbank_200
    mz, intensity, offsets = engine.kernels.clean_spectra(
        lib.mz, lib.intensity, lib.offsets, min_difference=2 * TOLERANCE
    )
    weight = engine.kernels.entropy_weights(intensity, offsets) if weighted else intensity
    spectra = spectrum_set(
        mz, weight, offsets, (np.diff(offsets) > 0).astype(float), lib.precursor_mz
    )
    n = len(lib)
    tol = engine.kernels.float32_tolerance(TOLERANCE)
    scores, matches = dense_block(spectra, spectra, 0, n, 0, n, tol, kind=ENTROPY)
    assert np.abs(scores - reference).max() < 1e-6
    assert ((matches > 0) == (scores > 0)).all()
    # and the public pair function on a slice (it is slower per pair)
    for i in range(0, n, 17):
        for j in range(0, n, 13):
            mz1, int1 = lib.peaks(i)
            mz2, int2 = lib.peaks(j)
            s, m = engine.entropy_similarity_pair(
                mz1, int1, mz2, int2, tolerance=TOLERANCE, weighted=weighted
            )
            assert s == pytest.approx(reference[i, j], abs=1e-6)
            assert m == matches[i, j]


def test_pair_without_cleaning_takes_peaks_as_given(pesticides):
    """``clean=False`` is ms_entropy's ``clean_spectra=False`` on cleaned peaks."""
    cleaned = [ms_entropy.clean_spectrum(_peaks(pesticides, i)) for i in range(0, 76, 5)]
    for a in cleaned:
        for b in cleaned:
            ref = ms_entropy.calculate_entropy_similarity(a, b, clean_spectra=False)
            ours, _ = engine.entropy_similarity_pair(
                a[:, 0], a[:, 1], b[:, 0], b[:, 1], clean=False
            )
            assert ours == pytest.approx(ref, abs=1e-6)


def test_pair_edges():
    empty = np.empty(0)
    assert engine.entropy_similarity_pair(empty, empty, [100.0], [1.0]) == (0.0, 0)
    # peaks at or below 0 m/z or intensity are dropped, as ms_entropy drops them
    s, m = engine.entropy_similarity_pair([0.0, 100.0], [5.0, 0.0], [100.0], [1.0])
    assert (s, m) == (0.0, 0)
    s, m = engine.entropy_similarity_pair([100.0, 150.0], [1.0, 1.0], [100.0, 150.0], [1.0, 1.0])
    assert s == pytest.approx(1.0) and m == 2
    with pytest.raises(ValueError, match="tolerance"):
        engine.entropy_similarity_pair([1.0], [1.0], [1.0], [1.0], tolerance=0)
    with pytest.raises(ValueError, match="differ in length"):
        engine.entropy_similarity_pair([1.0, 2.0], [1.0], [1.0], [1.0])


def test_float32_tolerance_edge_follows_ms_entropy():
    """Two peaks 0.02 Da apart in float64 are within float32(0.02) or not as in ms_entropy.

    ms_entropy holds peaks as float32 and compares with a float32 tolerance; we do
    the same, so a pair on the edge is decided the same way.
    """
    for base in (100.0, 250.123, 799.9871, 1234.5):
        for delta in (0.0199999, 0.02, 0.0200001, 0.02000003):
            a = np.array([[base, 1.0]], dtype=np.float32)
            b = np.array([[base + delta, 1.0]], dtype=np.float32)
            ref = ms_entropy.calculate_entropy_similarity(a, b, clean_spectra=False)
            ours, _ = engine.entropy_similarity_pair(
                a[:, 0], a[:, 1], b[:, 0], b[:, 1], clean=False
            )
            assert ours == pytest.approx(ref, abs=1e-6), (base, delta)


def test_entropy_search_equals_flash_entropy_scores(massbank_library, massbank_queries):
    """Identity search hits have Flash entropy search's scores (its cleaning, 0.01 Da window)."""
    queries = massbank_queries.subset(np.arange(60))
    params = engine.SearchParameters(top_n=0)
    assert params.score == "entropy" and params.precursor_tolerance == 0.01
    hits = engine.search(queries, massbank_library, params, backend="cpu")
    flash = ms_entropy.FlashEntropySearch()
    sub = np.unique(hits.library_index)
    spectra = [
        {
            "precursor_mz": float(massbank_library.precursor_mz[i]),
            "peaks": _peaks(massbank_library, i),
            "row": int(i),
        }
        for i in sub
    ]
    ordered = flash.build_index(spectra)
    rows = np.array([s["row"] for s in ordered])
    checked = 0
    for q in range(len(queries)):
        precursor = float(queries.precursor_mz[q])
        peaks = flash.clean_spectrum_for_search(precursor, _peaks(queries, q))
        ref = flash.identity_search(
            precursor_mz=precursor, peaks=peaks, ms1_tolerance_in_da=0.01, ms2_tolerance_in_da=0.02
        )
        expected = {int(rows[k]): ref[k] for k in np.flatnonzero(ref > 0)}
        mine = hits.query_index == q
        got = dict(zip(hits.library_index[mine].tolist(), hits.score[mine].tolist(), strict=True))
        for lib_index, score in got.items():
            assert score == pytest.approx(expected[lib_index], abs=1e-5)
            checked += 1
    assert checked > 100


def test_cleaning_packs_large_sets_on_threads_as_numpy_does(massbank_library, monkeypatch):
    """Big sets are packed by a threaded kernel: the same peaks as numpy's packing."""
    from engine.kernels import entropy

    lib = massbank_library
    args = (lib.mz, lib.intensity, lib.offsets, np.asarray(lib.precursor_mz) - 1.6)
    by_numpy = entropy.clean_spectra(*args)
    monkeypatch.setattr(entropy, "PARALLEL_PACK_PEAKS", 0)
    threaded = entropy.clean_spectra(*args)
    assert len(by_numpy[0]) > 800_000  # MassBank after cleaning
    for a, b in zip(by_numpy, threaded, strict=True):
        np.testing.assert_array_equal(a, b)
