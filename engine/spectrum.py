"""One spectrum of a :class:`~engine.library.SpectrumLibrary`, as ``library[i]`` gives it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Spectrum"]


@dataclass(frozen=True, eq=False)
class Spectrum:
    """One spectrum of a library: views of its peaks, its precursor and its metadata.

    Made by ``library[i]``; the peak arrays are read-only views into the
    library's arrays (nothing is copied).

    Attributes
    ----------
    mz, intensity : ndarray of float64
        Peaks, sorted by m/z.
    precursor_mz : float
        NaN when unknown.
    charge : int
        Signed charge, 0 when unknown.
    ion_mode : int
        +1 positive, -1 negative, 0 unknown.
    metadata : dict of str to str
        The library's metadata of this spectrum (``id``, ``name``, ``smiles``, ...).
    library : SpectrumLibrary
        The library it belongs to.
    index : int
        Its position there (``library[spectrum.index]`` is this spectrum again).
    """

    mz: np.ndarray
    intensity: np.ndarray
    precursor_mz: float
    charge: int
    ion_mode: int
    metadata: dict[str, str]
    library: Any = field(repr=False)  # SpectrumLibrary (not imported: it imports this)
    index: int

    @classmethod
    def of(cls, library: Any, index: int) -> Spectrum:
        """Spectrum ``index`` of ``library`` (negative counts from the end)."""
        n = len(library)
        if not -n <= index < n:
            raise IndexError(f"spectrum index {index} out of range for {n} spectra")
        index = int(index) % n
        mz, intensity = library.peaks(index)
        return cls(
            mz=mz,
            intensity=intensity,
            precursor_mz=float(library.precursor_mz[index]),
            charge=int(library.charge[index]),
            ion_mode=int(library.ion_mode[index]),
            metadata={k: str(v[index]) for k, v in library.metadata.items()},
            library=library,
            index=index,
        )

    @property
    def id(self) -> str:
        """The spectrum's identifier (``metadata["id"]``)."""
        return self.metadata.get("id", "")

    @property
    def name(self) -> str:
        """The compound's name (``metadata["name"]``)."""
        return self.metadata.get("name", "")

    def __len__(self) -> int:
        return len(self.mz)

    def to_library(self) -> Any:
        """A one-spectrum library of this spectrum (what searches and pair functions take)."""
        return self.library.subset([self.index])

    def __repr__(self) -> str:
        label = self.name or self.id or f"#{self.index}"
        return (
            f"<Spectrum {self.index} {label!r}: {len(self)} peaks, "
            f"precursor m/z {self.precursor_mz:.4f}>"
        )
