"""Rules every reader shares: record fields (ion mode, charge, precursor, metadata
columns) and the checks of the library built.

Text is made safe once, for every writer: lone UTF-16 surrogates and U+FFFE/U+FFFF
become U+FFFD, control characters other than tab are removed, each repair an
:class:`~engine.report.ImportIssue` naming the record.  Profile-mode spectra (peaks
mostly closer than any fragment tolerance) are kept as they are and named in the report.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from engine.library import STANDARD_COLUMNS
from engine.report import ImportIssue, ImportReport

__all__ = [
    "MAX_CHARGE",
    "OTHER_METADATA",
    "PROFILE_GAP",
    "charge_from_adduct",
    "check_library",
    "check_library_text",
    "clean_text",
    "grouped_columns",
    "not_centroided",
    "parse_charge_text",
    "parse_ion_mode",
    "polarity_from_adduct",
    "profile_note",
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


_CONTROL = "\x00-\x08\x0a-\x1f\x7f-\x9f"
_UNWRITABLE = "\ud800-\udfff\ufffe\uffff"
_BAD = re.compile(f"[{_CONTROL}{_UNWRITABLE}]")
_CONTROL_RE = re.compile(f"[{_CONTROL}]")
_UNWRITABLE_RE = re.compile(f"[{_UNWRITABLE}]")

#: Peaks closer than this (Da) to the next one are profile points, not centroids
#: (half the identity search's fragment tolerance).
PROFILE_GAP = 0.01
#: A spectrum is flagged when more than this share of its gaps are profile gaps...
PROFILE_SHARE = 0.5
#: ...and it has at least this many peaks.
PROFILE_MIN_PEAKS = 10


def clean_text(text: str) -> tuple[str, str]:
    """``text`` fit for any writer, and what was changed (``""`` when nothing).

    Examples
    --------
    >>> clean_text("S\\ud800x\\x1b[31m")[0]
    'S\\ufffdx[31m'
    """
    if _BAD.search(text) is None:
        return text, ""
    said = []
    text, n_control = _CONTROL_RE.subn("", text)
    if n_control:
        said.append(f"{n_control} control character(s) removed")
    text, n_bad = _UNWRITABLE_RE.subn("\ufffd", text)
    if n_bad:
        said.append(f"{n_bad} unencodable code point(s) replaced by U+FFFD")
    return text, "; ".join(said)


def check_library_text(
    metadata: dict[str, np.ndarray], records: Sequence[int], report: ImportReport
) -> dict[str, np.ndarray]:
    """Make every metadata value (in place), column name and report text safe.

    ``records`` are the spectra's record numbers; ``report`` gets one repaired
    issue per record whose text changed and a note per renamed column.  Returns
    ``metadata`` with any unsafe column name replaced.
    """
    changes: dict[int, list[str]] = {}
    for key, column in metadata.items():
        if not len(column) or _BAD.search("\t".join(column)) is None:
            continue  # the usual case: one regex pass over the whole column
        for i, value in enumerate(column):
            safe, what = clean_text(value)
            if what:
                column[i] = safe
                changes.setdefault(i, []).append(f"{key}: {what}")
    renamed = {}
    for key in metadata:
        safe, what = clean_text(key)
        if what:
            while safe in metadata or safe in renamed.values():
                safe += "_"
            renamed[key] = safe
            report.notes.append(f"metadata field {safe!r} renamed: {what}")
    if renamed:
        metadata = {renamed.get(k, k): v for k, v in metadata.items()}
    for i, what in changes.items():
        title = metadata["title"][i] or metadata["id"][i]
        report.issues.append(
            ImportIssue(int(records[i]), title, "text repaired: " + "; ".join(what), False)
        )
    report.issues[:] = [
        ImportIssue(x.record, clean_text(x.title)[0], clean_text(x.reason)[0], x.skipped)
        for x in report.issues
    ]
    report.notes[:] = [clean_text(note)[0] for note in report.notes]
    report.issues.sort(key=lambda issue: issue.record)
    return metadata


def not_centroided(mz: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Whether each spectrum (``mz[offsets[i]:offsets[i + 1]]``, sorted) looks like
    profile-mode data (see :data:`PROFILE_GAP`)."""
    n = len(offsets) - 1
    counts = np.diff(offsets)
    if len(mz) < 2:
        return np.zeros(n, dtype=bool)
    close = np.diff(mz) < PROFILE_GAP  # gap k lies between peaks k and k + 1
    within = np.concatenate([[0], np.cumsum(close)])
    n_close = within[np.maximum(offsets[1:] - 1, offsets[:-1])] - within[offsets[:-1]]
    return (counts >= PROFILE_MIN_PEAKS) & (n_close > PROFILE_SHARE * (counts - 1))


def profile_note(flags: np.ndarray, records: Sequence[int], titles: Sequence[str]) -> str:
    """The import report's note on the spectra ``flags`` marks (``""`` when none)."""
    found = np.flatnonzero(flags)
    if not len(found):
        return ""
    named = ", ".join(
        f"record {records[i]}" + (f" ({titles[i]})" if titles[i] else "") for i in found[:3]
    )
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    return (
        f"{len(found)} spectra look like profile-mode data, not centroided (most of their "
        f"peaks lie within {PROFILE_GAP:g} Da of the next): {named}{more}; their scores stay "
        "exact, but each fragment matches many points -- centroid them first (preprocessing "
        "step 'centroid')"
    )


def check_library(
    report: ImportReport,
    mz: np.ndarray,
    offsets: np.ndarray,
    metadata: dict[str, np.ndarray],
    records: Sequence[int],
) -> dict[str, np.ndarray]:
    """Both checks of a library a reader built; returns its (safe) metadata.

    ``report`` gets the text repairs, the profile-mode spectra (their ``records``
    numbers) in ``report.not_centroided`` and a note.
    """
    metadata = check_library_text(metadata, records, report)
    flags = not_centroided(mz, offsets)
    report.not_centroided = [int(records[i]) for i in np.flatnonzero(flags)]
    note = profile_note(flags, records, metadata["title"])
    if note:
        report.notes.append(note)
    return metadata
