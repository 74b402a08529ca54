"""Peak filters on small hand-made libraries with hand-computed results."""

from __future__ import annotations

import numpy as np
import pytest

from engine.library import SpectrumLibrary
from engine.preprocess import (
    Pipeline,
    Step,
    keep_top_k,
    normalize_intensity,
    preset,
    relative_intensity_threshold,
    remove_precursor_peaks,
    scale_intensity,
    select_mz_range,
    window_filter,
)


@pytest.fixture
def lib() -> SpectrumLibrary:
    return SpectrumLibrary.from_peak_lists(
        [
            np.array([10.0, 50.0, 90.0, 100.0, 117.0, 118.0]),
            np.array([], dtype=np.float64),
            np.array([5.0, 200.0, 300.0]),
        ],
        [
            np.array([4.0, 100.0, 0.5, 9.0, 100.0, 2.0]),
            np.array([], dtype=np.float64),
            np.array([1.0, 16.0, 64.0]),
        ],
        precursor_mz=[100.0, 50.0, np.nan],
        metadata={"id": ["a", "b", "c"]},
    )


def _peaks(lib: SpectrumLibrary) -> list[list[float]]:
    return [lib.peaks(i)[0].tolist() for i in range(len(lib))]


def _ints(lib: SpectrumLibrary) -> list[list[float]]:
    return [lib.peaks(i)[1].tolist() for i in range(len(lib))]


def test_select_mz_range(lib):
    out = select_mz_range(lib, 50.0, 200.0)
    assert _peaks(out) == [[50.0, 90.0, 100.0, 117.0, 118.0], [], [200.0]]
    assert list(out.offsets) == [0, 5, 5, 6]
    assert list(out.ids) == ["a", "b", "c"] and out.metadata is lib.metadata
    assert select_mz_range(lib) is lib  # nothing removed
    with pytest.raises(ValueError):
        select_mz_range(lib, 10, 5)


def test_remove_precursor_peaks(lib):
    out = remove_precursor_peaks(lib, tolerance=17.0)
    # |m/z - 100| <= 17 removed: 90, 100, 117; 118 stays; NaN precursor: untouched
    assert _peaks(out) == [[10.0, 50.0, 118.0], [], [5.0, 200.0, 300.0]]
    assert _ints(out)[0] == [4.0, 100.0, 2.0]
    assert _peaks(remove_precursor_peaks(lib, 0.0))[0] == [10.0, 50.0, 90.0, 117.0, 118.0]


def test_relative_intensity_threshold(lib):
    out = relative_intensity_threshold(lib, 0.04)  # 4 and 64*0.04=2.56
    assert _peaks(out) == [[10.0, 50.0, 100.0, 117.0], [], [200.0, 300.0]]
    assert _peaks(relative_intensity_threshold(lib, 1.0)) == [[50.0, 117.0], [], [300.0]]


def test_keep_top_k(lib):
    out = keep_top_k(lib, 2)
    # spectrum 0: two 100s (50 and 117) tie: both kept; order stays m/z-sorted
    assert _peaks(out) == [[50.0, 117.0], [], [200.0, 300.0]]
    one = keep_top_k(lib, 1)
    assert _peaks(one) == [[50.0], [], [300.0]]  # tie goes to the lower m/z
    assert _peaks(keep_top_k(lib, 0)) == [[], [], []]
    assert _peaks(keep_top_k(lib, 10)) == _peaks(lib)


def test_window_filter(lib):
    out = window_filter(lib, k=1, window=20.0)
    # 10 (4): window [-10,30] holds only 10 -> kept; 50 (100): kept;
    # 90 (0.5): [70,110] has 100 (9) above -> dropped; 100 (9): [80,120] has 117 (100) -> dropped
    # 117 (100): kept; 118 (2): 117 above -> dropped
    assert _peaks(out)[0] == [10.0, 50.0, 117.0]
    assert _peaks(out)[2] == [5.0, 200.0, 300.0]
    assert _peaks(window_filter(lib, k=6, window=50.0)) == _peaks(lib)


def test_scale_and_normalize(lib):
    assert _ints(scale_intensity(lib, "sqrt"))[2] == [1.0, 4.0, 8.0]
    np.testing.assert_allclose(scale_intensity(lib, "log").peaks(2)[1], np.log1p([1, 16, 64]))
    assert scale_intensity(lib, "none") is lib
    with pytest.raises(ValueError):
        scale_intensity(lib, "cube")
    out = normalize_intensity(lib)
    assert _ints(out)[2] == [1 / 64, 16 / 64, 1.0]
    assert max(_ints(out)[0]) == 1.0 and _ints(out)[1] == []


def test_pipeline_and_presets(lib):
    assert preset("none")(lib) is lib
    pipe = Pipeline(
        (Step("remove_precursor_peaks", {"tolerance": 17.0}), Step("keep_top_k", {"k": 1}))
    )
    assert _peaks(pipe(lib)) == [[50.0], [], [300.0]]
    assert Pipeline.from_dict(pipe.to_dict()) == pipe
    with pytest.raises(ValueError):
        Step("nope")
    with pytest.raises(ValueError):
        preset("nope")

    gnps = preset("gnps")(lib)
    assert len(gnps) == 3 and list(gnps.ids) == ["a", "b", "c"]
    assert _peaks(gnps)[0] == [10.0, 50.0, 118.0]
    np.testing.assert_allclose(gnps.peaks(0)[1], np.sqrt([4.0, 100.0, 2.0]) / 10.0)

    msas = preset("msas")(lib)
    # m/z 5 < 10 out; 0.5 < 1% of 100 out
    assert _peaks(msas) == [[10.0, 50.0, 100.0, 117.0, 118.0], [], [200.0, 300.0]]
    np.testing.assert_allclose(msas.peaks(2)[1], [0.5, 1.0])


def test_filters_vectorised_on_many_spectra():
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 40, 5000)
    mz = [np.sort(rng.uniform(0, 1000, c)) for c in counts]
    intensity = [rng.uniform(0.1, 10, c) for c in counts]
    lib = SpectrumLibrary.from_peak_lists(mz, intensity, precursor_mz=rng.uniform(100, 900, 5000))
    out = keep_top_k(lib, 5)
    for i in (0, 17, 4999):
        m, x = lib.peaks(i)
        top = np.sort(m[np.argsort(-x, kind="stable")[:5]])
        np.testing.assert_array_equal(out.peaks(i)[0], top)
    thr = relative_intensity_threshold(lib, 0.5)
    for i in (3, 1234):
        m, x = lib.peaks(i)
        np.testing.assert_array_equal(thr.peaks(i)[0], m[x >= 0.5 * x.max()] if len(x) else m)
