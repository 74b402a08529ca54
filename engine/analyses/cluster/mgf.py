"""Cluster representatives as MGF, with their cluster in each record, written atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

import numpy as np

from engine.analyses.files import write_atomic
from engine.library import SpectrumLibrary

__all__ = ["write_mgf"]


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

    def write_file(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            write(fh)

    return write_atomic(path, write_file)
