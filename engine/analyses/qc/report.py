"""The library check as a table: one row per near-identical pair, written atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas is imported on first use: ``import engine`` stays quick
    import pandas as pd

from engine.analyses.files import TABLE_SUFFIXES, write_table
from engine.analyses.qc.check import LibraryQC

__all__ = ["pairs_frame", "write_qc_report"]


def pairs_frame(qc: LibraryQC) -> pd.DataFrame:
    """Every near-identical pair: kind, groups, ids, names, InChIKeys and precursors of both."""
    import pandas as pd

    a, b = qc.pairs[:, 0], qc.pairs[:, 1]
    meta, prec = qc.library.metadata, qc.library.precursor_mz

    def both(name: str, values) -> dict[str, np.ndarray]:
        return {f"{name}_a": values[a], f"{name}_b": values[b]}

    return pd.DataFrame(
        {
            "kind": qc.kind,
            **both("group", qc.group),
            "index_a": a,
            "index_b": b,
            **both("id", meta["id"]),
            "score": qc.score,
            "matches": qc.matches,
            **both("precursor_mz", prec),
            "precursor_mz_delta": prec[b] - prec[a],
            **both("name", meta["name"]),
            **both("inchikey", meta["inchikey"]),
            **both("adduct", meta["adduct"]),
        }
    )


def write_qc_report(qc: LibraryQC, path: str | os.PathLike) -> Path:
    """Write :func:`pairs_frame` as TSV (or CSV), atomically.

    Read it back with ``pandas.read_csv(path, sep="\\t", keep_default_na=False)``.
    """
    return write_table(path, pairs_frame(qc), TABLE_SUFFIXES)
