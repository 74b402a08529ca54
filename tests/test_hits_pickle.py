"""Hit tables pickle compactly (Dask workers send them so) and come back unchanged."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from engine.hits import HitTable


def _tables() -> list[HitTable]:
    rng = np.random.default_rng(0)
    n = 50_000
    ordered = HitTable(
        np.repeat(np.arange(n // 100, dtype=np.int64) + 70_000, 100),
        rng.integers(0, 1_500_000, n),
        rng.random(n),
        rng.integers(1, 50, n).astype(np.int32),
    )
    return [
        ordered,
        HitTable.empty(),
        HitTable.from_arrays([5, 3, 3], [1, 2**40, 3], [0.5, np.nan, -0.0], [1, 70_000, 2]),
        HitTable.from_arrays([1], [2], [0.3], [4]),
        HitTable(
            np.array([1, 1, 2], np.int32),
            np.array([0, 1, 2], np.int64),
            np.array([0.1, 0.2, 0.3]),
            np.array([-1, 2, 3], np.int32),
        ),  # fmt: skip
    ]


@pytest.mark.parametrize("protocol", [4, 5])
def test_round_trip_keeps_values_and_dtypes(protocol: int) -> None:
    for table in _tables():
        back = pickle.loads(pickle.dumps(table, protocol=protocol))
        for column in HitTable.columns():
            a, b = getattr(table, column), getattr(back, column)
            assert a.dtype == b.dtype, column
            np.testing.assert_array_equal(a, b)
        assert copy.deepcopy(table).score.tobytes() == table.score.tobytes()


def test_a_block_of_ordered_hits_pickles_in_half_the_bytes() -> None:
    table = _tables()[0]
    columns = sum(getattr(table, c).nbytes for c in HitTable.columns())
    assert len(pickle.dumps(table, protocol=5)) < 0.55 * columns
