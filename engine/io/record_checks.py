"""Checks every reader's library passes once built: safe text, centroided peaks.

Text is made safe once, so every writer (TSV, CSV, Parquet, GraphML, mzTab, sessions,
the window) can write it: lone UTF-16 surrogates (legal JSON escapes) and U+FFFE/U+FFFF
become U+FFFD, control characters other than tab are removed; each repair is an
:class:`~engine.report.ImportIssue` naming the record.  Spectra whose peaks mostly lie
closer together than any fragment tolerance are profile-mode data: kept as they are
(scores stay equal to the references) and named in the import report.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from engine.report import ImportIssue, ImportReport

__all__ = [
    "PROFILE_GAP",
    "check_library",
    "check_library_text",
    "clean_text",
    "not_centroided",
    "profile_note",
]

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
