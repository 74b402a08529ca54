"""The hit table's columns: keys, titles, number formats, header tips."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["BEST_FIRST", "COLUMNS", "ORDER_KEYS", "TEXT_FILTER_KEYS", "Column", "format_cell"]


#: Header tips of the answer columns (:mod:`simms_gui.model.answers`).
Q_VALUE_TIP = (
    "Estimated false discovery rate at this hit's score (empty: the search ran without FDR)"
)
FLAGS_TIP = (
    "Why the best hit alone may not decide: tied (other compounds score the same), "
    "few peaks (at most 2 matched), isomers (same formula, near-identical library spectra)"
)


@dataclass(frozen=True)
class Column:
    """One visible column: ``key`` in the hit columns, header text, number format."""

    key: str
    title: str
    fmt: str = ""  # "" text, "d" integer, ".4f" float
    tip: str = ""


#: Columns of the default (query) order: query, score descending, library.
ORDER_KEYS = ("query_index", "score", "library_index")

#: Columns shown, in order.
COLUMNS: tuple[Column, ...] = (
    Column("query_index", "Q #", "d", "Position of the query in the query file"),
    Column("query_id", "Query ID"),
    Column("query_name", "Query"),
    Column("library_name", "Hit"),
    Column("flags", "Flags", "", FLAGS_TIP),
    Column("score", "Score", ".4f", "The search's score (entropy similarity or cosine)"),
    Column("q_value", "q-value", ".4f", Q_VALUE_TIP),
    Column(
        "reverse_score",
        "Reverse",
        ".4f",
        "Reverse score: query peaks with no library peak nearby are not penalised "
        "(NIST / MS-DIAL reverse search)",
    ),
    Column("matches", "Matches", "d", "Matched peak pairs"),
    Column(
        "library_explained",
        "Explained",
        ".0%",
        "Share of the library spectrum's intensity with a query peak within the tolerance",
    ),
    Column("query_precursor_mz", "Query m/z", ".4f", "Query precursor m/z"),
    Column("library_precursor_mz", "Hit m/z", ".4f", "Hit precursor m/z"),
    Column("precursor_mz_delta", "Δ m/z", "+.4f", "Hit minus query precursor m/z"),
    Column("library_adduct", "Adduct"),
    Column("library_formula", "Formula"),
    Column("library_ion_mode", "Ion mode", "", "Ion mode of the library spectrum"),
    Column("library_instrument_type", "Instrument type"),
    Column("library_collision_energy", "Collision energy"),
    Column("library_smiles", "SMILES"),
    Column("library_inchikey", "InChIKey"),
    Column("library_id", "Hit ID"),
    Column("library_index", "Hit #", "d", "Position of the hit in the library file"),
    Column("library", "Library", "", "Library file"),
)

#: Columns whose first click sorts the largest first (the best hits on top).
BEST_FIRST = frozenset({"score", "reverse_score", "matches", "library_explained"})

#: Text columns searched by the text filter.
TEXT_FILTER_KEYS = ("query_id", "query_name", "library_name", "library_id", "library_inchikey")


def format_cell(value, fmt: str) -> str:
    """``value`` as the table shows it (``fmt``: "" text, "d" integer, a float format)."""
    if fmt == "d":
        return str(int(value))
    if fmt:
        v = float(value)
        return "" if math.isnan(v) else format(v, fmt)
    return str(value)
