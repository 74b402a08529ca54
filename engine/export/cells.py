"""Cells as written: quoted text, formula guards, m/z rounding, fast TSV/CSV rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from engine.export.columns import HIT_COLUMNS, MZ_COLUMNS, hit_columns
from engine.hits import HitTable
from engine.search import SearchContext, ambiguity_columns, evidence

if TYPE_CHECKING:  # pandas is imported where it is used: writing TSV/CSV needs none
    import pandas as pd

__all__ = [
    "FORMULA_START",
    "delimited_rows",
    "floats",
    "frame_for_writing",
    "integers",
    "neutralise",
    "quoted",
]

#: Characters that make a spreadsheet cell a formula (OWASP CSV injection).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def delimited_rows(hits: HitTable, context: SearchContext, sep: str) -> str:
    """The TSV/CSV rows of one chunk of ``context``'s hits, one line each.

    Text fields depend only on the query or the library spectrum, so each is
    formatted once per distinct spectrum of the chunk (quoted, guarded) and
    rows are then joined from ready-made pieces: about a microsecond a row.
    """
    queries, library, params = context.queries, context.library, context.params
    q_value = None if context.q_values is None else context.q_values(hits)
    q_unique, q_at = np.unique(hits.query_index, return_inverse=True)
    l_unique, l_at = np.unique(hits.library_index, return_inverse=True)
    q_cols = hit_columns(HitTable.from_arrays(q_unique, q_unique, [0] * len(q_unique),
                                              [0] * len(q_unique)), queries, queries)  # fmt: skip
    l_cols = hit_columns(HitTable.from_arrays(l_unique, l_unique, [0] * len(l_unique),
                                              [0] * len(l_unique)), library, library)  # fmt: skip
    if params is not None:
        reverse, explained = evidence(hits, queries, library, params)
    else:
        reverse = explained = np.full(len(hits), np.nan)
    flags = ambiguity_columns(hits, library, context.isomers)
    fields: list[list[str]] = []
    for name in HIT_COLUMNS:
        if name == "query_index":
            fields.append(integers(hits.query_index))
        elif name == "library_index":
            fields.append(integers(hits.library_index))
        elif name == "score":
            fields.append(floats(hits.score))
        elif name == "matches":
            fields.append(integers(hits.matches))
        elif name == "q_value":
            fields.append(floats(np.full(len(hits), np.nan) if q_value is None else q_value))
        elif name == "reverse_score":
            fields.append(floats(reverse))
        elif name == "library_explained":
            fields.append(floats(explained))
        elif name in flags:
            values = flags[name]
            fields.append(integers(values) if values.dtype != object else quoted(values))
        elif name == "precursor_mz_delta":
            delta = (
                library.precursor_mz[hits.library_index] - queries.precursor_mz[hits.query_index]
            )
            fields.append(floats(np.round(delta, 8)))
        else:
            per_query = name.startswith("query_")
            values = (q_cols if per_query else l_cols)[name]
            text = floats(np.round(values, 8)) if name in MZ_COLUMNS else quoted(values)
            at = q_at if per_query else l_at
            fields.append(np.asarray(text, dtype=object)[at].tolist())
    return "\n".join(map(sep.join, zip(*fields, strict=True))) + "\n"


def integers(values: np.ndarray) -> list[str]:
    return list(map(str, values.tolist()))


def floats(values: np.ndarray) -> list[str]:
    """Shortest round-trip text of each float; NaN as an empty field."""
    return ["" if v != v else repr(v) for v in values.tolist()]


def quoted(values: np.ndarray) -> list[str]:
    """Text fields quoted (so ``#`` is never a comment) and guarded against formulas."""
    return ['"' + str(v).replace('"', '""') + '"' for v in neutralise(values)]


def frame_for_writing(columns: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """The columns as written: m/z rounded, text neutralised for spreadsheets."""
    import pandas as pd

    out = {}
    for name, values in columns.items():
        if name in MZ_COLUMNS:
            values = np.round(values.astype(np.float64), 8)
        elif values.dtype == object:
            values = neutralise(values)
        out[name] = values
    return pd.DataFrame(out, columns=list(columns))


def neutralise(values: np.ndarray) -> np.ndarray:
    """Prefix ``'`` to text a spreadsheet would run as a formula."""
    out = np.empty(len(values), dtype=object)
    out[:] = ["'" + v if v.startswith(FORMULA_START) else v for v in map(str, values)]
    return out
