"""Several libraries searched as one, and libraries narrowed to what a search needs.

Chemists search GNPS, MassBank and an in-house library together, and want each
hit to say where it came from; they also search only the spectra of one ion
mode, instrument type or licence, or only spectra with a structure.  Both give
an ordinary :class:`~engine.library.SpectrumLibrary`, so every search, export and
view works on them unchanged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from engine.library import LibrarySource, SpectrumLibrary

__all__ = ["LIBRARY_FILE_KEY", "combine_libraries", "filter_library", "library_label"]

#: Metadata column naming the library file each spectrum comes from.
LIBRARY_FILE_KEY = "library_file"


def library_label(library: SpectrumLibrary) -> str:
    """The file name a library was read from ("" for one built in memory)."""
    return Path(library.source.path).name if library.source is not None else ""


def combine_libraries(
    libraries: Sequence[SpectrumLibrary], names: Sequence[str] | None = None
) -> SpectrumLibrary:
    """One library holding the spectra of ``libraries``, in order.

    Parameters
    ----------
    libraries : sequence of SpectrumLibrary
        At least one.
    names : sequence of str, optional
        What each spectrum's ``library_file`` metadata says (default: each
        library's file name, or its existing ``library_file`` values).

    Returns
    -------
    SpectrumLibrary
        Spectrum ``i`` of the second library is spectrum ``len(first) + i``.  Its
        source names every file and carries a key made of their content hashes;
        metadata columns missing from one library are empty strings there.
    """
    if not libraries:
        raise ValueError("combine_libraries needs at least one library")
    if names is not None and len(names) != len(libraries):
        raise ValueError(f"{len(names)} names for {len(libraries)} libraries")
    keys = list(dict.fromkeys(k for lib in libraries for k in lib.metadata))
    if LIBRARY_FILE_KEY not in keys:
        keys.append(LIBRARY_FILE_KEY)
    metadata = {}
    for key in keys:
        parts = []
        for k, lib in enumerate(libraries):
            column = lib.metadata.get(key)
            if key == LIBRARY_FILE_KEY and (names is not None or column is None):
                column = _filled(len(lib), names[k] if names is not None else library_label(lib))
            parts.append(column if column is not None else _filled(len(lib), ""))
        metadata[key] = np.concatenate(parts) if parts else _filled(0, "")
    sizes = np.array([lib.n_peaks for lib in libraries], dtype=np.int64)
    shift = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    offsets = np.concatenate(
        [[0]] + [lib.offsets[1:] + s for lib, s in zip(libraries, shift, strict=True)]
    ).astype(np.int64)
    return SpectrumLibrary(
        mz=np.concatenate([lib.mz for lib in libraries]),
        intensity=np.concatenate([lib.intensity for lib in libraries]),
        offsets=offsets,
        precursor_mz=np.concatenate([lib.precursor_mz for lib in libraries]),
        charge=np.concatenate([lib.charge for lib in libraries]),
        ion_mode=np.concatenate([lib.ion_mode for lib in libraries]),
        metadata=metadata,
        source=_combined_source(libraries, names),
    )


def filter_library(
    library: SpectrumLibrary,
    *,
    ion_mode: str | None = None,
    instrument_type: str | Iterable[str] | None = None,
    license: str | Iterable[str] | None = None,
    has_structure: bool | None = None,
) -> SpectrumLibrary:
    """The spectra of ``library`` that pass every filter given.

    Parameters
    ----------
    library : SpectrumLibrary
    ion_mode : {"positive", "negative"}, optional
        Spectra of that ion mode (from the file, else the adduct's or charge's
        sign; see :meth:`SpectrumLibrary.polarity`).  Unknown ones are left out.
    instrument_type : str or iterable of str, optional
        Spectra whose instrument type contains one of these (any case), e.g.
        ``"QTOF"`` or ``["QFT", "ITFT"]``.
    license : str or iterable of str, optional
        Spectra whose licence is one of these exactly (e.g. ``"CC0"``,
        ``["CC BY", "CC0"]``): the licence text is a legal statement, not a pattern.
    has_structure : bool, optional
        True: spectra with a SMILES, InChI or InChIKey; False: those without.

    Returns
    -------
    SpectrumLibrary
        A new library (spectra in their original order); its ``library_index``
        positions refer to it, its ``id`` column to the original records.
    """
    keep = np.ones(len(library), dtype=bool)
    if ion_mode is not None:
        sign = {"positive": 1, "negative": -1}.get(str(ion_mode).lower())
        if sign is None:
            raise ValueError(f"ion_mode must be 'positive' or 'negative', not {ion_mode!r}")
        keep &= library.polarity() == sign
    if instrument_type is not None:
        wanted = [w.lower() for w in _as_list(instrument_type)]
        column = _column(library, ("instrument_type", "instrumenttype"))
        keep &= np.array([any(w in str(v).lower() for w in wanted) for v in column], dtype=bool)
    if license is not None:
        column = _column(library, ("license", "licence"))
        keep &= np.isin(column.astype(str), _as_list(license))
    if has_structure is not None:
        known = np.zeros(len(library), dtype=bool)
        for key in ("smiles", "inchi", "inchikey"):
            column = library.metadata.get(key)
            if column is not None:
                known |= np.array([bool(str(v).strip()) for v in column], dtype=bool)
        keep &= known if has_structure else ~known
    return library.subset(np.flatnonzero(keep))


def _as_list(value: str | Iterable[str]) -> list[str]:
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _column(library: SpectrumLibrary, keys: tuple[str, ...]) -> np.ndarray:
    for key in keys:
        if key in library.metadata:
            return library.metadata[key]
    return _filled(len(library), "")


def _filled(n: int, value: str) -> np.ndarray:
    column = np.empty(n, dtype=object)
    column[:] = value
    return column


def _combined_source(
    libraries: Sequence[SpectrumLibrary], names: Sequence[str] | None
) -> LibrarySource | None:
    if all(lib.source is None for lib in libraries):
        return None
    labels = list(names) if names is not None else [library_label(lib) for lib in libraries]
    digest = hashlib.sha256()
    for lib in libraries:
        digest.update((lib.source.sha256 if lib.source else f"memory:{id(lib)}").encode() + b";")
    paths = " + ".join(
        lib.source.path if lib.source else (label or "(in memory)")
        for lib, label in zip(libraries, labels, strict=True)
    )
    return LibrarySource(path=paths, sha256=digest.hexdigest(), format="combined")
