"""Write a library as MGF (e.g. a de-duplicated library), atomically.

The file reads back with :func:`engine.io.load_library` to the same peaks,
precursors, charges, ion modes, ids and metadata.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from engine.atomic import atomic_path
from engine.io.fields import OTHER_METADATA
from engine.library import SpectrumLibrary

__all__ = ["write_mgf"]

#: Metadata written by their own MGF keys, not copied as ``KEY=value``.
_OWN_KEYS = {"id", "title", "spectrumid", "pepmass", "charge", "ionmode", OTHER_METADATA}


def _line(value: object) -> str:
    return " ".join(str(value).split())  # one line, whatever the record held


def _records(library: SpectrumLibrary):
    meta = library.metadata
    polarity = library.polarity()
    keys = [k for k in meta if k not in _OWN_KEYS]
    for i in range(len(library)):
        yield "BEGIN IONS\n"
        yield f"TITLE={_line(meta['title'][i])}\n"
        if math.isfinite(library.precursor_mz[i]):
            yield f"PEPMASS={float(library.precursor_mz[i])!r}\n"
        charge = int(library.charge[i])
        if charge:
            yield f"CHARGE={abs(charge)}{'+' if charge > 0 else '-'}\n"
        if polarity[i]:
            yield f"IONMODE={'positive' if polarity[i] > 0 else 'negative'}\n"
        yield f"SPECTRUMID={_line(meta['id'][i])}\n"
        for key in keys:
            if meta[key][i] != "":
                yield f"{key.upper()}={_line(meta[key][i])}\n"
        if OTHER_METADATA in meta and meta[OTHER_METADATA][i]:
            for key, value in json.loads(meta[OTHER_METADATA][i]).items():
                yield f"{key.upper()}={_line(value)}\n"
        mz, intensity = library.peaks(i)
        yield "".join(
            f"{m!r}\t{v!r}\n" for m, v in zip(mz.tolist(), intensity.tolist(), strict=True)
        )
        yield "END IONS\n\n"


def write_mgf(library: SpectrumLibrary, path: str | os.PathLike) -> Path:
    """Write ``library`` to ``path`` as MGF, through a temporary file renamed at the end.

    Returns
    -------
    Path
    """
    path = Path(path)
    if not path.parent.is_dir():
        raise ValueError(f"{path}: directory {path.parent} does not exist")
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="\n") as out:
            out.writelines(_records(library))
    return path
