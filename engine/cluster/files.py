"""Cluster outputs on disk: tables (TSV/CSV) and MGF spectra, each written atomically."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import IO

import numpy as np

from engine.atomic import atomic_path
from engine.library import SpectrumLibrary

__all__ = ["atomic_write", "check_writable", "write_mgf", "write_table"]


def check_writable(path: str | os.PathLike) -> Path:
    """``path`` if a file can be written there (before any work), else an OSError naming it."""
    path = Path(path)
    parent = path.parent
    if not parent.is_dir():
        raise OSError(f"{path}: cannot write: {parent} does not exist")
    if path.is_dir():
        raise OSError(f"{path}: cannot write: it is a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OSError(f"{path}: cannot write: {parent} is not writable")
    return path


def atomic_write(path: str | os.PathLike, write: Callable[[IO[str]], None]) -> Path:
    """Call ``write(fh)`` on a temporary file beside ``path``, then rename it over ``path``.

    The target is never seen half-written; on any error the temporary file goes.
    """
    path = check_writable(path)
    with atomic_path(path, fsync=True) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            write(fh)
    return path


def write_table(path: str | os.PathLike, frame) -> Path:
    """A ``pandas.DataFrame`` as TSV (CSV for a ``.csv`` suffix), atomically.

    Reads back with ``pandas.read_csv(path, sep="\\t")``.
    """
    sep = "," if Path(path).suffix.lower() == ".csv" else "\t"
    return atomic_write(path, lambda fh: frame.to_csv(fh, sep=sep, index=False))


def _field(value: object) -> str:
    """A metadata value on one MGF line (no line breaks)."""
    return " ".join(str(value).split())


def write_mgf(
    path: str | os.PathLike,
    spectra: SpectrumLibrary,
    extra: dict[str, np.ndarray] | None = None,
) -> Path:
    """Write ``spectra`` as MGF, atomically.

    Each record has TITLE, PEPMASS, CHARGE (when known), IONMODE (when known),
    SPECTRUMID and the standard metadata present (NAME, SMILES, INCHIKEY,
    FORMULA, ADDUCT), then the ``extra`` columns (e.g. CLUSTER, CLUSTER_SIZE)
    and the peaks.
    """
    meta = spectra.metadata
    extra = extra or {}
    keys = [("NAME", "name"), ("SMILES", "smiles"), ("INCHIKEY", "inchikey"),
            ("FORMULA", "formula"), ("ADDUCT", "adduct")]  # fmt: skip

    def write(fh: IO[str]) -> None:
        for i in range(len(spectra)):
            lines = ["BEGIN IONS", f"TITLE={_field(meta['title'][i] or meta['id'][i])}"]
            if np.isfinite(spectra.precursor_mz[i]):
                lines.append(f"PEPMASS={spectra.precursor_mz[i]:.6f}")
            charge = int(spectra.charge[i])
            if charge:
                lines.append(f"CHARGE={abs(charge)}{'+' if charge > 0 else '-'}")
            mode = {1: "positive", -1: "negative"}.get(int(spectra.ion_mode[i]))
            if mode:
                lines.append(f"IONMODE={mode}")
            if meta["id"][i]:
                lines.append(f"SPECTRUMID={_field(meta['id'][i])}")
            lines += [f"{tag}={_field(meta[key][i])}" for tag, key in keys if meta[key][i]]
            lines += [f"{tag}={_field(values[i])}" for tag, values in extra.items()]
            mz, intensity = spectra.peaks(i)
            lines += [f"{m!r}\t{v!r}" for m, v in zip(mz.tolist(), intensity.tolist(), strict=True)]
            lines.append("END IONS\n")
            fh.write("\n".join(lines) + "\n")

    return atomic_write(path, write)
