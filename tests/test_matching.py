"""The matched peak pairs behind a score (mirror plots) agree with matchms and the kernels."""

from __future__ import annotations

import numpy as np
import pytest

from engine import cosine_greedy_pair, modified_cosine_pair
from engine.matching import greedy_matches


@pytest.mark.slow
@pytest.mark.parametrize("modified", [False, True], ids=["cosine", "modified"])
def test_greedy_matches_equal_matchms(pesticides, modified):
    from matchms import Spectrum
    from matchms.similarity import CosineGreedy, ModifiedCosineGreedy

    def spectrum(i):
        mz, intensity = pesticides.peaks(i)
        return Spectrum(mz, intensity, metadata={"precursor_mz": pesticides.precursor_mz[i]})

    similarity = (ModifiedCosineGreedy if modified else CosineGreedy)(tolerance=0.1)
    for q in range(0, 76, 7):
        for l in range(0, 76, 3):
            kw = {}
            if modified:
                kw = {"precursor_mz1": pesticides.precursor_mz[q],
                      "precursor_mz2": pesticides.precursor_mz[l]}  # fmt: skip
            m = greedy_matches(*pesticides.peaks(q), *pesticides.peaks(l), tolerance=0.1, **kw)
            ref = similarity.pair(reference=spectrum(l), query=spectrum(q))
            assert m.matches == int(ref["matches"])
            assert m.score == pytest.approx(float(ref["score"]), abs=1e-9)
            np.testing.assert_allclose(m.contribution.sum(), m.score)
            # library spectrum = reference (first argument) in the pair kernels
            if modified:
                pair = modified_cosine_pair(
                    *pesticides.peaks(l), pesticides.precursor_mz[l],
                    *pesticides.peaks(q), pesticides.precursor_mz[q], tolerance=0.1,
                )  # fmt: skip
            else:
                pair = cosine_greedy_pair(*pesticides.peaks(l), *pesticides.peaks(q), tolerance=0.1)
            assert pair[1] == m.matches and pair[0] == pytest.approx(m.score, abs=1e-12)


def test_matched_pairs_are_within_tolerance_and_unique(pesticides):
    mz1, i1 = pesticides.peaks(13)
    mz2, i2 = pesticides.peaks(20)
    m = greedy_matches(mz1, i1, mz2, i2, tolerance=0.1)
    assert m.matches > 0
    assert len(set(m.query_peak)) == len(set(m.library_peak)) == m.matches
    assert np.all(np.abs(mz1[m.query_peak] - mz2[m.library_peak]) <= 0.1)
    assert not m.shifted.any()
