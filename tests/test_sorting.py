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
