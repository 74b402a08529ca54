"""``library[i]`` gives one spectrum; slices, index arrays and masks give libraries."""

from __future__ import annotations

import numpy as np
import pytest

from engine import Spectrum, SpectrumLibrary


def test_int_index_gives_the_spectrum(pesticides):
    spectrum = pesticides[53]
    assert isinstance(spectrum, Spectrum)
    mz, intensity = pesticides.peaks(53)
    np.testing.assert_array_equal(spectrum.mz, mz)
    np.testing.assert_array_equal(spectrum.intensity, intensity)
    assert np.shares_memory(spectrum.mz, pesticides.mz)  # a view, nothing copied
    assert not spectrum.mz.flags.writeable
    assert spectrum.precursor_mz == pesticides.precursor_mz[53]
    assert spectrum.id == "CCMSLIB00001058382" and "Doramectin" in spectrum.name
    assert spectrum.metadata["id"] == pesticides.record(53)["id"]
    assert spectrum.ion_mode == -1 and len(spectrum) == len(mz)
    assert pesticides[-1].index == len(pesticides) - 1
    assert pesticides[np.int64(53)].id == spectrum.id
    one = spectrum.to_library()
    assert isinstance(one, SpectrumLibrary) and len(one) == 1 and one.ids[0] == spectrum.id
    with pytest.raises(IndexError):
        pesticides[len(pesticides)]
    with pytest.raises(TypeError):
        pesticides["CCMSLIB00001058382"]


def test_slices_arrays_and_masks_give_libraries(pesticides):
    n = len(pesticides)
    part = pesticides[10:20:3]
    assert isinstance(part, SpectrumLibrary)
    assert list(part.ids) == list(pesticides.ids[10:20:3])
    np.testing.assert_array_equal(part.peaks(1)[0], pesticides.peaks(13)[0])
    picked = pesticides[[5, -1, 5]]
    assert list(picked.ids) == [pesticides.ids[5], pesticides.ids[n - 1], pesticides.ids[5]]
    negative = pesticides.ion_mode < 0
    masked = pesticides[negative]
    assert len(masked) == int(negative.sum())
    np.testing.assert_array_equal(masked.precursor_mz, pesticides.precursor_mz[negative])
    assert len(pesticides[np.array([], dtype=np.int64)]) == 0
    with pytest.raises(IndexError):
        pesticides[[0, n]]
    with pytest.raises(IndexError):
        pesticides[np.ones(3, dtype=bool)]
    with pytest.raises(TypeError):
        pesticides[[0.5, 1.5]]
