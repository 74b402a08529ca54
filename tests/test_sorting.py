"""The kernels' stable argsort gives numpy's stable order (ties and NaN included)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.kernels.sorting import stable_order


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 2, 15, 16, 17, 33, 100, 5000])
def test_stable_order_is_numpys_stable_argsort(dtype, n):
    rng = np.random.default_rng(n)
    for keys in (
        rng.random(n),
        rng.integers(0, 4, n).astype(np.float64),  # many ties: the original order decides
        np.where(rng.random(n) < 0.2, np.nan, rng.integers(-3, 3, n)),  # NaN sorts last
        np.arange(n, 0, -1, dtype=np.float64),
    ):
        keys = keys.astype(dtype)
        np.testing.assert_array_equal(stable_order(keys), np.argsort(keys, kind="stable"))


def _radix_cases(rng, n):
    """Keys that exercise every radix pass: spread, ties, NaN, -0.0, float32, extremes."""
    edge = np.array([0.0, -0.0, 1.5, -1.5, -1e-300, 1e-300, -1e300, 1e300, np.inf, -np.inf])
    return (
        rng.normal(scale=500.0, size=n),
        rng.integers(0, 5, n).astype(np.float64),
        np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n)),
        np.where(rng.random(n) < 0.1, -np.nan, rng.normal(size=n)),  # a NaN with its sign set
        rng.normal(size=n).astype(np.float32),
        rng.choice(edge, n) if n else np.zeros(0),
    )


@pytest.mark.parametrize("n", [0, 1, 2, 17, 5000])
def test_radix_orders_are_numpys_stable_argsort(n, monkeypatch):
    from engine.kernels import sorting

    monkeypatch.setattr(sorting, "_KEYS_PER_THREAD", 16)  # many chunks, even for short keys
    monkeypatch.setattr(sorting.numba, "get_num_threads", lambda: 7)
    rng = np.random.default_rng(n)
    for keys in _radix_cases(rng, n):
        expected = np.argsort(keys, kind="stable")
        np.testing.assert_array_equal(sorting.radix_order(keys), expected)
        np.testing.assert_array_equal(sorting.parallel_radix_order(keys), expected)


def test_peak_index_is_the_same_sorted_by_radix_or_numpy(massbank_library, monkeypatch):
    """The pruned search's peak index of real spectra, sorted in threads or by numpy."""
    from engine.backends import PreparedSpectra
    from engine.kernels import sorting
    from engine.kernels.peak_index import library_peak_index
    from engine.kernels.spectrum_set import COSINE, ENTROPY, MODIFIED_COSINE
    from engine.params import SearchParameters

    spectra = PreparedSpectra.for_search(massbank_library, SearchParameters()).spectrum_set
    n = len(massbank_library)
    for kind in (COSINE, ENTROPY, MODIFIED_COSINE):
        by_numpy = library_peak_index(spectra, 0, n, kind)
        monkeypatch.setattr(sorting, "PARALLEL_SORT_KEYS", 0)
        by_radix = library_peak_index(spectra, 0, n, kind)
        monkeypatch.undo()
        for name, a in by_numpy._asdict().items():
            np.testing.assert_array_equal(getattr(by_radix, name), a, err_msg=name)
            assert np.asarray(getattr(by_radix, name)).dtype == np.asarray(a).dtype, name
