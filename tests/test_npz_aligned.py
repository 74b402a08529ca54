"""Library files map their arrays 64-byte aligned; older unaligned files load as aligned copies."""

from __future__ import annotations

import numpy as np
import pytest

from engine.library import SpectrumLibrary
from engine.npz_mapped import ALIGNMENT, load_npz_mapped, save_npz_aligned


def test_saved_arrays_are_mapped_aligned_and_read_by_numpy(tmp_path, pesticides):
    path = tmp_path / "lib.npz"
    pesticides.save(path)
    with open(path, "rb") as fh:
        mapped = load_npz_mapped(fh)
    assert isinstance(mapped["mz"], np.memmap)
    for name, array in mapped.items():
        if array.size:
            assert array.ctypes.data % ALIGNMENT == 0, name
    with np.load(path) as plain:  # any npz reader still reads it
        for name in plain.files:
            np.testing.assert_array_equal(plain[name], mapped[name])
    again = SpectrumLibrary.load(path)
    np.testing.assert_array_equal(again.mz, pesticides.mz)
    np.testing.assert_array_equal(again.intensity, pesticides.intensity)


@pytest.mark.parametrize("sizes", [(0, 1, 7), (13, 1000, 3), (1, 2, 100_003)])
def test_any_sizes_and_dtypes_stay_aligned(tmp_path, sizes):
    arrays = {
        "a": np.arange(sizes[0], dtype=np.uint8),
        "bee": np.linspace(0, 1, sizes[1]),
        "c" * 17: np.arange(sizes[2], dtype=np.int32),
    }
    path = tmp_path / "x.npz"
    with open(path, "wb") as fh:
        save_npz_aligned(fh, arrays)
    with open(path, "rb") as fh:
        mapped = load_npz_mapped(fh)
    for name, array in arrays.items():
        np.testing.assert_array_equal(mapped[name], array)
        if array.size:
            assert mapped[name].ctypes.data % ALIGNMENT == 0


def test_an_unaligned_member_is_copied_aligned(tmp_path):
    path = tmp_path / "old.npz"
    odd = np.arange(3, dtype=np.uint8)  # 3 bytes push the next member off the 8-byte grid
    values = np.linspace(0.5, 9.5, 1000)
    np.savez(path, a=odd, b=values)
    with open(path, "rb") as fh:
        loaded = load_npz_mapped(fh)
    assert loaded["b"].flags.aligned and not loaded["b"].flags.writeable
    np.testing.assert_array_equal(loaded["b"], values)
