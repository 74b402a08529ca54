"""One check that two libraries are the same, bit for bit (fast reader against reference)."""

from __future__ import annotations

from engine import SpectrumLibrary

ARRAYS = ("mz", "intensity", "offsets", "precursor_mz", "charge", "ion_mode")


def assert_same_library(fast: SpectrumLibrary, reference: SpectrumLibrary) -> None:
    """Equal arrays (dtype, shape, bytes), metadata columns (names, order, dtypes, values),
    report and source."""
    for name in ARRAYS:
        a, b = getattr(fast, name), getattr(reference, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert a.tobytes() == b.tobytes(), name
    assert list(fast.metadata) == list(reference.metadata)
    for key, column in fast.metadata.items():
        assert column.dtype == reference.metadata[key].dtype, key
        assert column.tolist() == reference.metadata[key].tolist(), key
    assert fast.report == reference.report
    assert fast.source == reference.source
