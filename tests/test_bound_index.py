"""The host side of the GPU's bound pruning: a device peak index's pieces, built in parallel.

:func:`~engine.backends.cuda_index.host_peak_index` gathers, sorts and writes
each piece of columns in one parallel pass; checked against a plain numpy build
(a stable sort of every piece's keys) on the real MassBank library, plain and
shifted keys, ranges that start mid-library, and spectra without a precursor
(no shifted peaks).
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.backends import PreparedSpectra
from engine.backends.cuda_index import host_peak_index
from engine.params import SearchParameters


def numpy_index(mz, weight, offsets, precursor_mz, l0, l1, shifted, chunk):
    """The reference: every piece's keys sorted by numpy (stable), peaks in column order."""
    offsets = np.asarray(offsets, dtype=np.int64)
    p0, p1 = offsets[l0], offsets[l1]
    column = np.repeat(np.arange(l1 - l0, dtype=np.int32), np.diff(offsets[l0 : l1 + 1]))
    key = np.asarray(mz[p0:p1], dtype=np.float64)
    w = np.asarray(weight[p0:p1], dtype=np.float64)
    if shifted:
        key = key - np.asarray(precursor_mz[l0:l1], dtype=np.float64)[column]
        keep = ~np.isnan(key)
        key, column, w = key[keep], column[keep], w[keep]
    start = np.searchsorted(column, np.arange(-(-(l1 - l0) // chunk) + 1) * chunk)
    pieces = zip(start[:-1], start[1:], strict=True)
    order = np.concatenate(
        [a + np.argsort(key[a:b], kind="stable") for a, b in pieces] or [np.zeros(0, np.int64)]
    )
    return key[order], column[order], w[order], start.astype(np.int64)


@pytest.fixture(scope="module")
def library(massbank_library):
    prepared = PreparedSpectra.for_search(massbank_library, SearchParameters(mode="custom"))
    precursor = np.array(prepared.precursor_mz, dtype=np.float64)
    precursor[::7] = np.nan  # spectra without a precursor: no shifted peaks
    return prepared, precursor


@pytest.mark.parametrize("shifted", [False, True])
@pytest.mark.parametrize(("l0", "l1", "chunk"), [(0, None, 2048), (13, 9000, 512), (5, 5, 64)])
def test_host_peak_index_equals_numpy(library, shifted, l0, l1, chunk) -> None:
    prepared, precursor = library
    l1 = len(prepared) if l1 is None else l1
    args = (prepared.mz, prepared.weight, prepared.offsets, precursor, l0, l1, shifted, chunk)
    got, ref = host_peak_index(*args), numpy_index(*args)
    assert [a.dtype for a in got] == [np.float64, np.int32, np.float64, np.int64]
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_array_equal(a, b)
    if l1 > l0:
        assert len(got[3]) - 1 == -(-(l1 - l0) // chunk) > 1 and len(got[0]) > 0
        if shifted:  # peaks of spectra without a precursor are left out
            assert len(got[0]) < prepared.offsets[l1] - prepared.offsets[l0]


def test_stable_order_sorts_like_numpys_stable_sort() -> None:
    """Negative and positive keys, -0.0 beside 0.0, ties, float32 values and full float64."""
    from engine.kernels.sorting import radix_order

    rng = np.random.default_rng(0)
    edge = np.array([0.0, -0.0, 1.5, -1.5, 1.5, -0.0, 0.0, -1e-300, 1e-300, -1e300, 1e300])
    for keys in (
        edge,
        np.repeat(rng.normal(size=300).astype(np.float32), 3).astype(np.float64),
        rng.normal(scale=500.0, size=5000),
        np.zeros(0),
        np.array([7.0]),
    ):
        keys = rng.permutation(keys)
        np.testing.assert_array_equal(radix_order(keys), np.argsort(keys, kind="stable"))
