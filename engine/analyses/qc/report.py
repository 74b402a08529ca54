"""The library check as a table: one row per near-identical pair, written atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported on first use: ``import engine`` stays quick
    import pandas as pd

from engine.analyses.files import TABLE_SUFFIXES, write_table
from engine.analyses.qc.check import LibraryQC

__all__ = ["pairs_frame", "write_qc_report"]


def pairs_frame(qc: LibraryQC) -> pd.DataFrame:
    """Every near-identical pair: kind, groups, ids, names, InChIKeys and precursors of both."""
    lib = qc.library
    a, b = qc.pairs[:, 0], qc.pairs[:, 1]
    meta = lib.metadata
    prec = lib.precursor_mz
    import pandas as pd

    return pd.DataFrame(
        {
            "kind": qc.kind,
            "group_a": qc.group[a],
            "group_b": qc.group[b],
            "index_a": a,
            "index_b": b,
            "id_a": meta["id"][a],
            "id_b": meta["id"][b],
            "score": qc.score,
            "matches": qc.matches,
            "precursor_mz_a": prec[a],
            "precursor_mz_b": prec[b],
            "precursor_mz_delta": prec[b] - prec[a],
            "name_a": meta["name"][a],
            "name_b": meta["name"][b],
            "inchikey_a": meta["inchikey"][a],
            "inchikey_b": meta["inchikey"][b],
            "adduct_a": meta["adduct"][a],
            "adduct_b": meta["adduct"][b],
        }
    )


def write_qc_report(qc: LibraryQC, path: str | os.PathLike) -> Path:
    """Write :func:`pairs_frame` as TSV (or CSV), atomically.

    Read it back with ``pandas.read_csv(path, sep="\\t", keep_default_na=False)``.
    """
    return write_table(path, pairs_frame(qc), TABLE_SUFFIXES)
