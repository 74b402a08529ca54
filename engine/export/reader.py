"""Hit lists read back (TSV/CSV written by :mod:`engine.export`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.export.columns import HIT_COLUMNS, MZ_COLUMNS

__all__ = ["read_hits", "read_hits_frame"]


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


def read_hits_frame(path: str | Path):
    """Read a hit list (TSV, CSV or Parquet) as a :class:`pandas.DataFrame`; ``engine.read_hits``.

    Parameters
    ----------
    path : str or Path
        A file written by :func:`write_hits`, the ``simms`` CLI or the window.

    Returns
    -------
    pandas.DataFrame
        One row per hit, numeric columns as numbers, text without spreadsheet
        guards.  ``.attrs["provenance"]``: dict of the ``# key: value`` lines
        (software, date, queries, library, parameters, backend, ...);
        ``.attrs["complete"]``: whether the search ran to its end;
        ``.attrs["path"]``: the file read.
    """
    import pandas as pd

    path = Path(path)
    if path.suffix.lower() in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        stored = pq.read_metadata(path).metadata or {}  # the file's key-value metadata
        meta = {k.decode(): v.decode() for k, v in stored.items()}
        frame = pq.read_table(path).to_pandas()
        lines = meta.get("simms_provenance", "").splitlines()
        lines.append(f"# complete: {meta.get('simms_complete', '')}")
    else:
        columns, lines = read_hits(path)
        frame = pd.DataFrame(columns)
        lines = [f"# {line}" for line in lines]
    provenance = {}
    for line in lines:
        key, _, value = line.removeprefix("#").strip().partition(":")
        if key:
            provenance[key.strip()] = value.strip()
    frame.attrs["provenance"] = provenance
    frame.attrs["complete"] = provenance.get("complete", "").startswith("yes")
    frame.attrs["path"] = str(path)
    return frame


_INTEGER = ("query_index", "library_index", "matches", "tied")
_BOOLEAN = ("few_peaks",)
_NUMERIC = (*_INTEGER, "score", "q_value", *MZ_COLUMNS)
