"""Hit lists read back (TSV/CSV written by :mod:`engine.export`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.export.columns import HIT_COLUMNS, MZ_COLUMNS

__all__ = ["read_hits"]


def read_hits(path: str | Path) -> tuple[dict[str, np.ndarray], list[str]]:
    """Read a TSV/CSV hit list written by :func:`write_hits` or the ``simms`` CLI.

    Returns
    -------
    columns : dict of str to ndarray
        Numeric columns as numbers, the rest as strings (spreadsheet guards removed).
    provenance : list of str
        The ``#`` lines, without the ``# ``.
    """
    import pandas as pd

    path = Path(path)
    sep = "," if path.suffix.lower() == ".csv" else "\t"
    with open(path, encoding="utf-8") as fh:
        provenance = [ln[2:].rstrip() for ln in fh if ln.startswith("#")]
    text = {name: str for name in HIT_COLUMNS if name not in _NUMERIC}
    frame = pd.read_csv(path, sep=sep, comment="#", dtype=text, keep_default_na=False)
    out: dict[str, np.ndarray] = {}
    for name in frame.columns:
        values = frame[name]
        if name in _BOOLEAN:
            out[name] = (values == "True").to_numpy()
        elif name in _NUMERIC:
            values = pd.to_numeric(values.replace("", np.nan))
            out[name] = values.to_numpy(dtype=np.int64 if name in _INTEGER else np.float64)
        else:
            guarded = values.str.match(r"^'[=+\-@\t\r]")
            out[name] = values.where(~guarded, values.str[1:]).to_numpy(dtype=object)
    return out, provenance


_INTEGER = ("query_index", "library_index", "matches", "tied")
_BOOLEAN = ("few_peaks",)
_NUMERIC = (*_INTEGER, "score", "q_value", *MZ_COLUMNS)
