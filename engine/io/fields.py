"""Record fields every reader shares: ion mode, charge, precursor rules and metadata columns."""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from engine.library import STANDARD_COLUMNS

__all__ = [
    "MAX_CHARGE",
    "OTHER_METADATA",
    "charge_from_adduct",
    "grouped_columns",
    "parse_charge_text",
    "parse_ion_mode",
    "polarity_from_adduct",
    "settle_numbers",
]

#: Column holding, per record, the rare metadata keys as a JSON object.
OTHER_METADATA = "other_metadata"
#: Largest |charge| kept; tandem spectra of small molecules and peptides stay far below.
MAX_CHARGE = 100
#: A metadata key gets a column of its own when at least this share of records has it;
#: rarer keys go, per record, into the JSON text of ``other_metadata``, so memory
#: follows the file's size even when every record has keys of its own.
COLUMN_SHARE = 0.02

_POSITIVE = {"positive", "pos", "p", "+", "positive scan", "1", "+1"}
_NEGATIVE = {"negative", "neg", "n", "-", "negative scan", "-1"}
#: Keys whose value fills a standard column when the standard key itself is absent.
_ALIASES: dict[str, tuple[str, ...]] = {
    "name": ("compound_name", "compoundname"),
    "adduct": ("precursor_type", "precursortype", "adduct_type"),
    "inchikey": ("inchi_key",),
    "formula": ("molecular_formula",),
}
_CHARGE_RE = re.compile(r"^\s*([+-]?)\s*(\d+)\s*([+-]?)\s*$")
_ADDUCT_CHARGE_RE = re.compile(r"\](\d*)([+-])\s*$")


def parse_ion_mode(text: str | None) -> int:
    """Ion mode code (+1, -1, 0) from an IONMODE / Ion_mode / polarity value."""
    if not text:
        return 0
    value = str(text).strip().lower()
    return 1 if value in _POSITIVE else -1 if value in _NEGATIVE else 0


@functools.lru_cache(maxsize=4096)  # charge texts repeat from record to record
def parse_charge_text(text: str | None) -> int | None:
    """Signed charge from text such as ``"2+"``, ``"-1"``, ``"1"``; None when unreadable."""
    if text is None:
        return None
    match = _CHARGE_RE.match(str(text).replace(" and ", ",").split(",")[0])
    if match is None:
        return None
    sign = -1 if "-" in (match.group(1) + match.group(3)) else 1
    return sign * int(match.group(2))


def polarity_from_adduct(adduct: str | None) -> int:
    """+1 / -1 from an adduct ending in ``+`` / ``-`` (``"[M+H]+"``), else 0."""
    tail = adduct.strip()[-1:] if adduct else ""
    return 1 if tail == "+" else -1 if tail == "-" else 0


def charge_from_adduct(adduct: str | None) -> int:
    """The signed charge an adduct ends with (``"[M+2H]2+"``: 2, ``"[M-H]-"``: -1), else 0."""
    found = _ADDUCT_CHARGE_RE.search(adduct or "")
    if not found:
        return 0
    return int(found.group(1) or 1) * (1 if found.group(2) == "+" else -1)


def settle_numbers(
    precursors: Sequence[float],
    charges: Sequence[int],
    ion_modes: Sequence[int],
    adduct: Callable[[int], str | None],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[list[str]]]:
    """Precursor, charge and ion mode of records by :meth:`LibraryBuilder.add`'s rules.

    ``adduct(i)`` gives record ``i``'s adduct (asked only when its ion mode is
    unknown).  Returns the arrays (float64, int64, int64) and each record's notes.
    """
    n = len(precursors)
    notes: list[list[str]] = [[] for _ in range(n)]
    charges = list(charges)
    if n and (min(charges) < -MAX_CHARGE or max(charges) > MAX_CHARGE):
        for i, charge in enumerate(charges):
            if not -MAX_CHARGE <= charge <= MAX_CHARGE:
                notes[i].append(f"implausible charge {charge} ignored")
                charges[i] = 0
    charge = np.array(charges, dtype=np.int64)
    ion_mode = np.array(ion_modes, dtype=np.int64)
    for i in np.flatnonzero(ion_mode == 0).tolist():
        ion_mode[i] = -1 if charge[i] < 0 else polarity_from_adduct(adduct(i))
    charge = np.where((ion_mode != 0) & (charge != 0), np.abs(charge) * ion_mode, charge)
    precursor = np.array(precursors, dtype=np.float64)
    for i in np.flatnonzero(~(np.isfinite(precursor) & (precursor > 0))).tolist():
        if precursor[i] == precursor[i]:
            notes[i].append(f"invalid precursor m/z {precursors[i]!r} ignored")
        else:
            notes[i].append("no precursor m/z (kept with unknown precursor)")
        precursor[i] = math.nan
    return precursor, charge, ion_mode, notes


def grouped_columns(
    groups: Mapping[tuple[str, ...], tuple[Sequence[int], Sequence[Sequence[str]]]], n: int
) -> dict[str, np.ndarray]:
    """Metadata columns of ``n`` records (object arrays, ``""`` where missing).

    ``groups`` maps each key tuple (in order of first appearance) to its records'
    positions and, per key, their values.  Standard keys, their aliases and keys
    of at least :data:`COLUMN_SHARE` of the records become columns; rarer keys go
    into ``other_metadata``.  Aliases fill empty standard columns; an empty title
    is the name, an empty id the title (else ``#i``).
    """
    seen: Counter[str] = Counter()  # keys in order of first appearance
    for names, (rows, _) in groups.items():
        for name in names:
            seen[name] += len(rows)
    floor = max(1, math.ceil(COLUMN_SHARE * n))
    aliases = {a for names in _ALIASES.values() for a in names}
    keys = [*STANDARD_COLUMNS]
    keys += [k for k in seen if k not in STANDARD_COLUMNS and (k in aliases or seen[k] >= floor)]
    columns: dict[str, np.ndarray] = {}
    for key in keys:
        columns[key] = np.empty(n, dtype=object)
        columns[key][:] = ""
    rare = {k for k in seen if k not in columns}
    other = np.empty(n, dtype=object)
    other[:] = ""
    for names, (rows, values) in groups.items():
        index = np.asarray(rows, dtype=np.int64)
        for name, column in zip(names, values, strict=True):
            if name in columns:
                columns[name][index] = np.fromiter(column, dtype=object, count=len(rows))
        if rare.intersection(names):
            for i, member in zip(rows, zip(*values, strict=True), strict=True):
                own = {k: v for k, v in zip(names, member, strict=True) if k in rare}
                other[i] = json.dumps(own, ensure_ascii=False)
    if rare:
        columns[OTHER_METADATA] = other
    for key, aliases in _ALIASES.items():
        column = columns[key]
        for alias in aliases:
            if alias in columns:
                empty = column == ""
                column[empty] = columns[alias][empty]
    ids, titles, names = columns["id"], columns["title"], columns["name"]
    empty = titles == ""
    titles[empty] = names[empty]
    for i in np.flatnonzero(ids == ""):
        ids[i] = titles[i] or f"#{i}"
    return columns
