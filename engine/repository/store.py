"""One shard of a repository on disk: ``.npy`` arrays opened as memory maps.

A shard is a folder of plain ``.npy`` files and a ``shard.json`` manifest.  Its
spectra all share one ion mode and are sorted by precursor m/z (NaN last).
Peaks are stored compactly, and searches score exactly what is stored:

* m/z as float32 (widened to float64 exactly when a shard is searched);
* intensity as uint16, scaled per spectrum: ``q = rint(65535 * I / max(I))``,
  at least 1, with the spectrum's ``max(I) / 65535`` kept as float32; the
  search reads ``q * scale``.  Cosine and entropy scores are scale-free, so a
  spectrum's own maximum peak is exact and the others are within 1/131070 of
  the maximum of their file values.

Every array is opened with ``numpy.load(mmap_mode="r")``: nothing is read
until a page is used, and pages come from the operating system's file cache.
A shard folder is written under a temporary name and renamed into place, so
a reader never sees half a shard.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.kernels.stored_peaks import widen_stored_peaks
from engine.library import SpectrumLibrary

__all__ = ["INTENSITY_LEVELS", "Shard", "quantize_intensity", "write_shard"]

#: Largest stored intensity code (uint16).
INTENSITY_LEVELS = 65535
#: Text columns a shard keeps per spectrum (int32 codes into distinct UTF-8 strings).
TEXT_COLUMNS = ("id", "name", "inchikey")
#: Per-spectrum arrays and their stored types.
SPECTRUM_ARRAYS = {
    "offsets": np.int64,
    "precursor_mz": np.float64,
    "charge": np.int16,
    "ion_mode": np.int8,
    "scale": np.float32,
    "file_id": np.int32,
    "file_index": np.int64,
}
PEAK_ARRAYS = {"mz": np.float32, "intensity": np.uint16}
SHARD_MANIFEST = "shard.json"
FORMAT = "simms-repository-shard"


def quantize_intensity(intensity: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-spectrum scaled uint16 codes and float32 scales of ``intensity`` (CSR).

    Returns
    -------
    codes : ndarray of uint16
        ``rint(65535 * I / max(I))`` of each spectrum, at least 1.
    scale : ndarray of float32
        ``max(I) / 65535`` of each spectrum (1 for a spectrum without peaks).
    """
    counts = np.diff(offsets)
    n = len(counts)
    peak_max = np.ones(n, dtype=np.float64)
    nonempty = counts > 0
    if nonempty.any():
        peak_max[nonempty] = np.maximum.reduceat(intensity, offsets[:-1][nonempty])
    scale = (peak_max / INTENSITY_LEVELS).astype(np.float32)
    relative = intensity / np.repeat(peak_max, counts)
    codes = np.clip(np.rint(relative * INTENSITY_LEVELS), 1, INTENSITY_LEVELS).astype(np.uint16)
    return codes, scale


def _text_columns(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A text column as int32 codes into its distinct values, stored as UTF-8 CSR.

    Repository metadata repeats (compound names, InChIKeys of replicate
    spectra), and only the distinct strings are encoded one by one.
    """
    import pandas as pd

    codes, uniques = pd.factorize(pd.Series(values, dtype=object).fillna(""), sort=False)
    encoded = [str(u).encode("utf-8", "surrogatepass") for u in uniques]
    lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8) if encoded else np.empty(0, np.uint8)
    return codes.astype(np.int32), data, offsets


def write_shard(
    folder: str | os.PathLike,
    arrays: dict[str, np.ndarray],
    text: dict[str, np.ndarray],
    manifest: dict[str, object],
) -> Path:
    """Write a shard folder (arrays, text columns, manifest), atomically by a rename.

    Parameters
    ----------
    folder : path-like
        The shard's folder; it must not exist yet.
    arrays : dict of str to ndarray
        :data:`SPECTRUM_ARRAYS` and :data:`PEAK_ARRAYS`, in their stored types.
    text : dict of str to ndarray of object
        :data:`TEXT_COLUMNS`, one string per spectrum.
    manifest : dict
        JSON-ready items of ``shard.json`` (counts and ranges are added here).
    """
    folder = Path(folder)
    if folder.exists():
        raise FileExistsError(f"{folder}: shard folder already exists")
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".part", dir=folder.parent))
    try:
        for name, dtype in {**SPECTRUM_ARRAYS, **PEAK_ARRAYS}.items():
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(arrays[name], dtype=dtype))
        for name in TEXT_COLUMNS:
            codes, data, offsets = _text_columns(text[name])
            np.save(tmp / f"text_{name}_codes.npy", codes)
            np.save(tmp / f"text_{name}.npy", data)
            np.save(tmp / f"text_{name}_offsets.npy", offsets)
        (tmp / SHARD_MANIFEST).write_text(json.dumps({"format": FORMAT, **manifest}, indent=1))
        os.chmod(tmp, 0o777 & ~_umask())
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@dataclass(frozen=True, eq=False)
class Shard:
    """A shard opened from disk (memory maps; nothing read until used).

    Attributes
    ----------
    folder : Path
    manifest : dict
        ``shard.json``: ``spectra``, ``peaks``, ``ion_mode``, ``precursor_min``,
        ``precursor_max``, ``precursor_nan``, ``mz_min``, ``mz_max``, ``files``,
        ``synthetic``.
    start : int
        Repository index of the shard's first spectrum.
    """

    folder: Path
    manifest: dict
    start: int = 0

    @classmethod
    def open(cls, folder: str | os.PathLike, start: int = 0) -> Shard:
        """Open ``folder``'s manifest (one-line ``ValueError`` when it is no shard)."""
        folder = Path(folder)
        try:
            manifest = json.loads((folder / SHARD_MANIFEST).read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"{folder}: not a repository shard ({exc})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ValueError(f"{folder}: not a repository shard (format {manifest!r:.40})")
        return cls(folder, manifest, start)

    @property
    def name(self) -> str:
        """The shard folder's name."""
        return self.folder.name

    def __len__(self) -> int:
        return int(self.manifest["spectra"])

    def array(self, name: str) -> np.ndarray:
        """Stored array ``name``, memory-mapped read-only."""
        path = self.folder / f"{name}.npy"
        try:
            return np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: unreadable shard array ({exc})") from None

    def text(self, name: str, rows: np.ndarray | None = None) -> np.ndarray:
        """Text column ``name`` (object array of str), all rows or ``rows``."""
        codes = self.array(f"text_{name}_codes")
        codes = np.asarray(codes if rows is None else codes[np.asarray(rows, dtype=np.int64)])
        data, offsets = self.array(f"text_{name}"), self.array(f"text_{name}_offsets")
        used, inverse = np.unique(codes, return_inverse=True)
        table = np.empty(len(used), dtype=object)
        for k, c in enumerate(used):
            table[k] = bytes(data[offsets[c] : offsets[c + 1]]).decode("utf-8", "surrogatepass")
        return table[inverse.reshape(-1)] if len(codes) else np.empty(0, dtype=object)

    def library(self, *, metadata: bool = False) -> SpectrumLibrary:
        """The shard as a :class:`~engine.library.SpectrumLibrary` over its stored peaks.

        Per-spectrum arrays stay memory maps; peaks are widened to float64 (m/z
        exactly, intensities as ``codes * scale``) on several threads, the only
        copy made.

        Parameters
        ----------
        metadata : bool, default False
            Also decode the text columns (``id``, ``name``, ``inchikey``).
        """
        offsets = self.array("offsets")
        self._check(offsets)
        mz, intensity = widen_stored_peaks(
            self.array("mz"), self.array("intensity"), self.array("scale"), offsets
        )
        columns = {c: self.text(c) for c in TEXT_COLUMNS} if metadata else {}
        return SpectrumLibrary(
            mz=mz,
            intensity=intensity,
            offsets=offsets,
            precursor_mz=self.array("precursor_mz"),
            charge=self.array("charge"),
            ion_mode=self.array("ion_mode"),
            metadata=columns,
        )

    def _check(self, offsets: np.ndarray) -> None:
        n, peaks = len(self), int(self.manifest["peaks"])
        if offsets.shape != (n + 1,) or offsets[0] != 0 or offsets[-1] != peaks:
            raise ValueError(f"{self.folder}: offsets do not match the shard manifest")
        for name in ("mz", "intensity"):
            if self.array(name).shape != (peaks,):
                raise ValueError(f"{self.folder}: {name} does not match the shard manifest")

    def nbytes(self) -> int:
        """Bytes of the shard's files on disk."""
        return sum(p.stat().st_size for p in self.folder.iterdir())
