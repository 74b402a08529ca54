"""Columnar spectrum library: CSR peak arrays plus a metadata table.

A :class:`SpectrumLibrary` holds every spectrum of a file in a handful of flat
numpy arrays, so memory grows with the number of peaks and kernels can work on
plain arrays.  Spectrum ``i`` has peaks ``mz[offsets[i]:offsets[i + 1]]``
(sorted ascending) and ``intensity[offsets[i]:offsets[i + 1]]``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from engine.atomic import atomic_path
from engine.kernels.checks import INTENSITY_INVALID, MZ_INVALID, UNSORTED, peak_problems
from engine.npz_mapped import load_npz_mapped, save_npz_aligned
from engine.report import ImportReport
from engine.spectrum import Spectrum

__all__ = ["LibrarySource", "SpectrumLibrary", "ION_MODE_CODES"]

#: Ion mode codes stored in :attr:`SpectrumLibrary.ion_mode`.
ION_MODE_CODES = {"positive": 1, "negative": -1, "unknown": 0}

#: Metadata columns every library has (empty string when a record lacks it).
STANDARD_COLUMNS = ("id", "title", "name", "smiles", "inchikey", "formula", "adduct")


@dataclass(frozen=True)
class LibrarySource:
    """Where a library came from.

    Attributes
    ----------
    path : str
        The file as the user named it.
    sha256 : str
        Hex digest of the file's bytes (the cache key and provenance).
    format : str
        ``"mgf"``, ``"msp"`` or ``"mzml"``.
    """

    path: str
    sha256: str
    format: str


@dataclass(frozen=True, eq=False)
class SpectrumLibrary:
    """Spectra in columnar (CSR) form, immutable.

    The peak and per-spectrum arrays are read-only views: searches keep what
    they derive from a library (prepared peaks, precursor order, pruning
    indexes, device copies) with the library object and reuse it.

    Attributes
    ----------
    mz : ndarray of float64, shape (n_peaks,)
        Peak m/z of all spectra, each spectrum's slice sorted ascending.
    intensity : ndarray of float64, shape (n_peaks,)
        Peak intensities, finite and > 0.
    offsets : ndarray of int64, shape (n_spectra + 1,)
        Spectrum ``i`` owns peaks ``offsets[i]:offsets[i + 1]``.
    precursor_mz : ndarray of float64, shape (n_spectra,)
        Precursor m/z, NaN when unknown.
    charge : ndarray of int16, shape (n_spectra,)
        Signed charge, 0 when unknown.
    ion_mode : ndarray of int8, shape (n_spectra,)
        +1 positive, -1 negative, 0 unknown (see :data:`ION_MODE_CODES`).
    metadata : dict of str to ndarray of object
        One column per field, each an object array of ``str`` (``""`` when
        missing).  Always holds :data:`STANDARD_COLUMNS`.
    source : LibrarySource or None
        The file the spectra were read from.
    report : ImportReport or None
        What the reader kept, skipped and repaired.
    """

    mz: np.ndarray
    intensity: np.ndarray
    offsets: np.ndarray
    precursor_mz: np.ndarray
    charge: np.ndarray
    ion_mode: np.ndarray
    metadata: dict[str, np.ndarray] = field(default_factory=dict)
    source: LibrarySource | None = None
    report: object | None = None

    def __post_init__(self) -> None:
        # Read-only views: what is derived from a library (prepared peaks, indexes,
        # GPU copies; see engine.memo) is kept with it and must never go stale.
        for name in ("mz", "intensity", "offsets", "precursor_mz", "charge", "ion_mode"):
            view = np.asarray(getattr(self, name)).view()
            view.flags.writeable = False
            object.__setattr__(self, name, view)
        n = len(self.offsets) - 1
        if n < 0 or self.offsets[0] != 0 or self.offsets[-1] != len(self.mz):
            raise ValueError("offsets must start at 0 and end at the number of peaks")
        if len(self.intensity) != len(self.mz):
            raise ValueError("mz and intensity must have the same length")
        for name in ("precursor_mz", "charge", "ion_mode"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} must have one entry per spectrum")
        for key in STANDARD_COLUMNS:
            if key not in self.metadata:  # not setdefault: it would build the column every time
                self.metadata[key] = _empty_column(n)
        for key, column in self.metadata.items():
            if len(column) != n:
                raise ValueError(f"metadata column {key!r} must have one entry per spectrum")

    # -- construction -----------------------------------------------------------------
    @classmethod
    def from_peak_lists(
        cls,
        mz: Sequence[np.ndarray],
        intensity: Sequence[np.ndarray],
        *,
        precursor_mz: Iterable[float] | None = None,
        charge: Iterable[int] | None = None,
        ion_mode: Iterable[int] | None = None,
        metadata: Mapping[str, Sequence[str]] | None = None,
        source: LibrarySource | None = None,
        report: object | None = None,
    ) -> SpectrumLibrary:
        """Build a library from per-spectrum peak arrays (each sorted by m/z).

        Parameters
        ----------
        mz, intensity : sequence of array_like
            Peaks of each spectrum.
        precursor_mz, charge, ion_mode : iterable, optional
            One value per spectrum (NaN / 0 / 0 when omitted).
        metadata : mapping of str to sequence of str, optional
            Metadata columns, one value per spectrum.
        source, report : optional
            Provenance, see the class attributes.
        """
        n = len(mz)
        if len(intensity) != n:
            raise ValueError("mz and intensity must list the same number of spectra")
        lengths = np.fromiter((len(m) for m in mz), dtype=np.int64, count=n)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat_mz = (
            np.concatenate([np.asarray(m, dtype=np.float64) for m in mz]) if n else np.empty(0)
        )
        flat_int = (
            np.concatenate([np.asarray(i, dtype=np.float64) for i in intensity])
            if n
            else np.empty(0)
        )
        columns = {k: _object_column(v) for k, v in (metadata or {}).items()}
        return cls(
            mz=flat_mz,
            intensity=flat_int,
            offsets=offsets,
            precursor_mz=_column(precursor_mz, n, np.float64, np.nan),
            charge=_column(charge, n, np.int16, 0),
            ion_mode=_column(ion_mode, n, np.int8, 0),
            metadata=columns,
            source=source,
            report=report,
        )

    # -- access -----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __repr__(self) -> str:
        where = f" from {Path(self.source.path).name!r}" if self.source else ""
        return f"<SpectrumLibrary of {len(self)} spectra, {self.n_peaks} peaks{where}>"

    @property
    def n_peaks(self) -> int:
        """Total number of peaks."""
        return len(self.mz)

    @property
    def peak_counts(self) -> np.ndarray:
        """Number of peaks of each spectrum."""
        return np.diff(self.offsets)

    @property
    def ids(self) -> np.ndarray:
        """Spectrum identifiers (the ``id`` metadata column)."""
        return self.metadata["id"]

    def polarity(self) -> np.ndarray:
        """Ion mode of each spectrum as searches judge it: +1, -1 or 0 (unknown).

        The file's ion mode where given; else the sign the adduct ends with
        (``[M+H]+``, ``[M-H]-``); else the sign of the charge.  Computed once.
        """
        cached = self.__dict__.get("_polarity")
        if cached is not None:
            return cached
        polarity = np.asarray(self.ion_mode, dtype=np.int8).copy()
        unknown = polarity == 0
        if unknown.any():
            adducts = self.metadata.get("adduct", _empty_column(len(self)))[unknown]
            text = np.char.strip(adducts.astype(str))
            sign = np.where(
                np.char.endswith(text, "+"), 1, np.where(np.char.endswith(text, "-"), -1, 0)
            )
            sign = np.where(sign == 0, np.sign(self.charge[unknown]), sign)
            polarity[unknown] = sign
        self.__dict__["_polarity"] = polarity
        return polarity

    def __getitem__(
        self, key: int | slice | Sequence[int] | np.ndarray
    ) -> Spectrum | SpectrumLibrary:
        """``library[i]``: a :class:`~engine.Spectrum`; a slice, index array or mask: a library.

        Raises
        ------
        IndexError
            An index out of range.
        TypeError
            Another kind of key.
        """
        if isinstance(key, (int, np.integer)):
            return Spectrum.of(self, int(key))
        if isinstance(key, slice):
            return self.subset(np.arange(len(self))[key])
        if isinstance(key, (str, bytes)):
            raise TypeError(f"spectra are indexed by position, not by {type(key).__name__}")
        idx = np.asarray(key)
        if idx.dtype == bool:
            if idx.shape != (len(self),):
                raise IndexError(f"boolean index of length {idx.size} for {len(self)} spectra")
            idx = np.flatnonzero(idx)
        elif idx.size and not np.issubdtype(idx.dtype, np.integer):
            raise TypeError(f"spectrum indices must be integers, not {idx.dtype}")
        idx = idx.astype(np.int64).ravel()
        if idx.size and (idx.min() < -len(self) or idx.max() >= len(self)):
            raise IndexError(f"spectrum index out of range for {len(self)} spectra")
        return self.subset(idx % max(len(self), 1))

    def peaks(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(mz, intensity)`` views of spectrum ``index``."""
        if not -len(self) <= index < len(self):
            raise IndexError(f"spectrum index {index} out of range for {len(self)} spectra")
        index %= len(self)
        start, stop = self.offsets[index], self.offsets[index + 1]
        return self.mz[start:stop], self.intensity[start:stop]

    def record(self, index: int) -> dict[str, object]:
        """All metadata of one spectrum as a plain dict (plus precursor, charge, ion mode)."""
        out: dict[str, object] = {k: v[index] for k, v in self.metadata.items()}
        out["precursor_mz"] = float(self.precursor_mz[index])
        out["charge"] = int(self.charge[index])
        out["ion_mode"] = {1: "positive", -1: "negative"}.get(int(self.ion_mode[index]), "unknown")
        return out

    # -- derived libraries ------------------------------------------------------------
    def subset(self, indices: Sequence[int] | np.ndarray) -> SpectrumLibrary:
        """A new library with the spectra at ``indices`` (in that order)."""
        idx = np.asarray(indices, dtype=np.int64)
        offsets, take = spectra_peaks(self.offsets, idx)
        return replace(
            self, mz=self.mz[take], intensity=self.intensity[take], offsets=offsets,
            precursor_mz=self.precursor_mz[idx], charge=self.charge[idx],
            ion_mode=self.ion_mode[idx], metadata={k: v[idx] for k, v in self.metadata.items()},
        )  # fmt: skip

    def with_peaks(
        self, mz: np.ndarray, intensity: np.ndarray, offsets: np.ndarray
    ) -> SpectrumLibrary:
        """The same spectra (metadata, precursors) with new peak arrays."""
        return replace(self, mz=mz, intensity=intensity, offsets=offsets)

    # -- persistence ------------------------------------------------------------------
    def save(self, path: str | Path, *, extra: Mapping[str, object] | None = None) -> None:
        """Write the library to an ``.npz`` file (no pickles), atomically.

        The file is written through a temporary file that this call creates
        itself (unique name, never an existing path or link) in the target's
        directory, then renamed over ``path``.  The header records a SHA-256
        digest of the arrays, which :meth:`load` checks.

        Parameters
        ----------
        path : str or Path
            The ``.npz`` file.
        extra : mapping, optional
            More JSON-ready header items (the cache stores its key here).
        """
        path = Path(path)
        arrays = self._arrays()
        columns, codes = _encode_metadata(self.metadata, len(self))
        arrays["metadata_codes"] = codes
        header = {
            "source": None if self.source is None else self.source.__dict__,
            "metadata": columns,
            "report": None if self.report is None else _report_to_json(self.report),
            "digest": _digest(arrays),
            **(extra or {}),
        }
        arrays["header"] = np.frombuffer(json.dumps(header).encode(), np.uint8)
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            save_npz_aligned(fh, arrays)

    @classmethod
    def load(cls, path: str | Path) -> SpectrumLibrary:
        """Read and check a library written by :meth:`save`.

        Raises
        ------
        ValueError
            The file is not such a library: a link, a broken archive, arrays of
            the wrong type or shape, offsets out of range, peaks that are not
            finite, sorted and positive, or contents that do not match the
            digest in its header.
        """
        return cls._from_npz(path)[0]

    @classmethod
    def _from_npz(cls, path: str | Path) -> tuple[SpectrumLibrary, dict]:
        """:meth:`load`, also returning the header (the cache reads its key there)."""
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            data = load_npz_mapped(fh)  # the maps stay valid after the file is closed
        if set(data) != {*_ARRAY_TYPES, "metadata_codes", "header"}:
            raise ValueError(f"unexpected arrays {sorted(data)}")
        header = json.loads(np.asarray(data["header"]).tobytes().decode())
        arrays = {k: data[k] for k in (*_ARRAY_TYPES, "metadata_codes")}
        codes = arrays["metadata_codes"]
        _check_arrays(arrays)
        if not isinstance(header, dict) or header.get("digest") != _digest(arrays):
            raise ValueError("contents do not match the digest in the header")
        del arrays["metadata_codes"]
        metadata = _decode_metadata(header.get("metadata"), codes, len(arrays["offsets"]) - 1)
        source = LibrarySource(**header["source"]) if header.get("source") else None
        report = _report_from_json(header["report"]) if header.get("report") else None
        library = cls(**arrays, metadata=metadata, source=source, report=report)
        return library, header

    def _arrays(self) -> dict[str, np.ndarray]:
        return {
            k: np.ascontiguousarray(getattr(self, k), dtype=dtype)
            for k, dtype in _ARRAY_TYPES.items()
        }


#: Arrays of a saved library and their types.
_ARRAY_TYPES = {
    "mz": np.float64,
    "intensity": np.float64,
    "offsets": np.int64,
    "precursor_mz": np.float64,
    "charge": np.int16,
    "ion_mode": np.int8,
}


def _digest(arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 over every array's name, type, shape and bytes."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = arrays[name]
        h.update(f"{name}:{a.dtype.str}:{a.shape};".encode())
        h.update(memoryview(np.ascontiguousarray(a)).cast("B"))
    return h.hexdigest()


def _check_arrays(arrays: Mapping[str, np.ndarray]) -> None:
    """Everything the kernels rely on, checked before any array is used."""
    for name, dtype in _ARRAY_TYPES.items():
        a = arrays[name]
        if a.dtype != dtype or a.ndim != 1:
            raise ValueError(f"{name} is {a.dtype}[{a.ndim}-D], not 1-D {np.dtype(dtype)}")
    mz, intensity, offsets = arrays["mz"], arrays["intensity"], arrays["offsets"]
    n = len(offsets) - 1
    if n < 0 or offsets[0] != 0 or offsets[-1] != len(mz) or np.any(np.diff(offsets) < 0):
        raise ValueError("offsets do not run from 0 to the number of peaks")
    if len(intensity) != len(mz):
        raise ValueError("mz and intensity differ in length")
    for name in ("precursor_mz", "charge", "ion_mode"):
        if len(arrays[name]) != n:
            raise ValueError(f"{name} does not have one value per spectrum")
    problems = peak_problems(mz, intensity, offsets)
    if problems & MZ_INVALID:
        raise ValueError("m/z values that are not finite and >= 0")
    if problems & INTENSITY_INVALID:
        raise ValueError("intensities that are not finite and > 0")
    if problems & UNSORTED:
        raise ValueError("m/z values not sorted within a spectrum")
    precursor = arrays["precursor_mz"]
    if (precursor[~np.isnan(precursor)] <= 0).any() or np.isinf(precursor).any():
        raise ValueError("precursor m/z values that are not NaN or positive")
    if (np.abs(arrays["ion_mode"].astype(np.int16)) > 1).any():
        raise ValueError("ion modes other than -1, 0 and 1")


def _encode_metadata(
    metadata: Mapping[str, np.ndarray], n: int
) -> tuple[dict[str, list[str]], np.ndarray]:
    """Metadata as each column's distinct strings and one row of codes per column.

    Library metadata repeats a lot (licences, authors, instruments, adducts,
    the compound of every replicate spectrum), and the codes load as one array:
    a million-spectrum library's metadata reads in a fraction of a second.
    """
    import pandas as pd  # only when saving; a runtime dependency (hit tables)

    columns: dict[str, list[str]] = {}
    codes = np.zeros((len(metadata), n), dtype=np.int32)
    for row, (name, column) in enumerate(metadata.items()):
        values = ["" if v is None else str(v) for v in column]
        codes[row], uniques = pd.factorize(pd.Series(values, dtype=object), sort=False)
        columns[str(name)] = [str(u) for u in uniques]
    return columns, codes


def _decode_metadata(columns: object, codes: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """Inverse of :func:`_encode_metadata`, checking every code before use."""
    if (
        not isinstance(columns, dict)
        or codes.dtype != np.int32
        or codes.shape != (len(columns), n)
        or not all(
            isinstance(v, list) and all(isinstance(x, str) for x in v) for v in columns.values()
        )
    ):
        raise ValueError("metadata columns do not match their codes")
    metadata = {}
    for row, (name, uniques) in enumerate(columns.items()):
        if n and (codes[row].min() < 0 or codes[row].max() >= len(uniques)):
            raise ValueError(f"metadata column {name!r} has codes out of range")
        table = np.empty(len(uniques), dtype=object)
        table[:] = uniques
        metadata[str(name)] = table[codes[row]]
    return metadata


def _empty_column(n: int) -> np.ndarray:
    column = np.empty(n, dtype=object)
    column[:] = ""
    return column


def _object_column(values: Sequence[str]) -> np.ndarray:
    column = np.empty(len(values), dtype=object)
    column[:] = ["" if v is None else str(v) for v in values]
    return column


def _column(values, n: int, dtype, missing) -> np.ndarray:
    if values is None:
        return np.full(n, missing, dtype=dtype)
    out = np.asarray(list(values), dtype=dtype)
    if out.shape != (n,):
        raise ValueError(f"expected {n} values, got {out.shape[0]}")
    return out


def peak_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, s + c)`` for each start/count pair, vectorised: the peak
    positions of spectra whose peaks start at ``starts`` and number ``counts``."""
    counts = np.asarray(counts, dtype=np.int64)
    ends = np.cumsum(counts)
    return np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.int64) + np.repeat(
        np.asarray(starts, dtype=np.int64) - (ends - counts), counts
    )


def spectra_peaks(offsets: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR ``offsets`` of the spectra at ``order`` (in that order), and their peaks'
    positions in the peak arrays of ``offsets`` (:func:`peak_ranges`)."""
    counts = np.diff(offsets)[order]
    new = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(counts, out=new[1:])
    return new, peak_ranges(offsets[:-1][order], counts)


def _report_to_json(report: ImportReport | None) -> dict:
    to_dict = getattr(report, "to_dict", None)
    return to_dict() if to_dict else {}


def _report_from_json(data: dict) -> ImportReport:
    return ImportReport.from_dict(data)
