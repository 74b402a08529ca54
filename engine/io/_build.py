"""Shared back end of the readers: collect records, validate peaks, build a library.

Every reader hands its records to a :class:`LibraryBuilder`, one call per record
(:meth:`~LibraryBuilder.add` or :meth:`~LibraryBuilder.skip`).  Peak validation
happens once, vectorised over all peaks, in :meth:`~LibraryBuilder.build`:

- peaks with NaN/inf or negative m/z are dropped (record repaired);
- peaks with NaN/inf, zero or negative intensity are dropped (record repaired);
- spectra whose m/z are not ascending are sorted, stably (record repaired);
- repeated m/z values are kept as they are (record repaired, with a note);
- a spectrum left with no peaks is skipped ("no valid peaks");
- a spectrum without precursor m/z is kept with NaN (record repaired, with a note).
"""

from __future__ import annotations

import functools
import gc
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from operator import itemgetter

import numpy as np

from engine.io.record_checks import check_library
from engine.library import STANDARD_COLUMNS, LibrarySource, SpectrumLibrary
from engine.report import ImportIssue, ImportReport, SpectrumFileError

__all__ = [
    "LibraryBuilder",
    "LoadCancelled",
    "Progress",
    "report_progress",
    "OTHER_METADATA",
    "parse_ion_mode",
    "parse_charge_text",
    "polarity_from_adduct",
    "charge_from_adduct",
    "gc_paused",
    "grouped_columns",
    "settle_numbers",
]

#: Column holding, per record, the rare metadata keys as a JSON object.
OTHER_METADATA = "other_metadata"

_POSITIVE = {"positive", "pos", "p", "+", "positive scan", "1", "+1"}
_NEGATIVE = {"negative", "neg", "n", "-", "negative scan", "-1"}

#: Keys whose value fills a standard column when the standard key itself is absent.
_ALIASES: dict[str, tuple[str, ...]] = {
    "name": ("compound_name", "compoundname"),
    "adduct": ("precursor_type", "precursortype", "adduct_type"),
    "inchikey": ("inchi_key",),
    "formula": ("molecular_formula",),
}

#: Largest |charge| kept; tandem spectra of small molecules and peptides stay far below.
MAX_CHARGE = 100
#: A metadata key gets a column of its own when at least this share of records has it;
#: rarer keys go, per record, into the JSON text of the ``other_metadata`` column, so
#: memory follows the file's size even when every record has keys of its own.
COLUMN_SHARE = 0.02

#: ``progress(done_bytes, total_bytes)``; returning ``False`` cancels the load.
Progress = Callable[[int, int], object]


class LoadCancelled(Exception):
    """A load stopped because its progress callback returned ``False``."""


def report_progress(progress: Progress | None, done: int, total: int, path: str) -> None:
    """Call ``progress(done, total)``; raise :class:`LoadCancelled` when it returns False."""
    if progress is not None and progress(done, total) is False:
        raise LoadCancelled(f"{path}: loading cancelled")


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside (as it was before, after).

    A reader makes tens of thousands of objects, none of them in a cycle; each
    collection the allocations set off would walk every object made so far.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


_CHARGE_RE = re.compile(r"^\s*([+-]?)\s*(\d+)\s*([+-]?)\s*$")


def parse_ion_mode(text: str | None) -> int:
    """Ion mode code (+1, -1, 0) from an IONMODE / Ion_mode / polarity value."""
    if not text:
        return 0
    value = str(text).strip().lower()
    if value in _POSITIVE:
        return 1
    if value in _NEGATIVE:
        return -1
    return 0


@functools.lru_cache(maxsize=4096)  # charge texts repeat from record to record
def parse_charge_text(text: str | None) -> int | None:
    """Signed charge from text such as ``"2+"``, ``"-1"``, ``"1"``; None when unreadable."""
    if text is None:
        return None
    first = str(text).replace(" and ", ",").split(",")[0]
    match = _CHARGE_RE.match(first)
    if match is None:
        return None
    sign = -1 if "-" in (match.group(1) + match.group(3)) else 1
    return sign * int(match.group(2))


def polarity_from_adduct(adduct: str | None) -> int:
    """+1 / -1 from an adduct ending in ``+`` / ``-`` (``"[M+H]+"``), else 0."""
    if not adduct:
        return 0
    tail = adduct.strip()[-1:]
    return 1 if tail == "+" else -1 if tail == "-" else 0


_ADDUCT_CHARGE_RE = re.compile(r"\](\d*)([+-])\s*$")


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
    """:meth:`LibraryBuilder.add_many`'s rules for precursor, charge and ion mode of records.

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


class LibraryBuilder:
    """Collects the records of one file and turns them into a :class:`SpectrumLibrary`.

    Parameters
    ----------
    path : str
        The file (for the report and error messages).
    format : str
        Format the file is read as.
    """

    def __init__(self, path: str, format: str) -> None:
        self.path = path
        self.format = format
        self.records = 0
        #: Remarks about the whole file, for the import report.
        self.notes: list[str] = []
        self._issues: list[ImportIssue] = []
        self._record_no: list[int] = []
        self._titles: list[str] = []
        #: Peaks of the records added, in pieces (one per record or per batch).
        self._mz: list[np.ndarray] = []
        self._intensity: list[np.ndarray] = []
        self._lengths: list[int] = []
        self._precursor: list[float] = []
        self._charge: list[int] = []
        self._ion_mode: list[int] = []
        self._meta: list[Mapping[str, str]] = []
        self._notes: list[list[str]] = []

    # -- reader side ------------------------------------------------------------------
    def skip(self, record: int, title: str, reason: str) -> None:
        """Record ``record`` (1-based) was left out because of ``reason``."""
        self._issues.append(ImportIssue(record, title or "", reason, skipped=True))

    def add(
        self,
        record: int,
        mz: np.ndarray,
        intensity: np.ndarray,
        precursor_mz: float,
        charge: int,
        ion_mode: int,
        metadata: Mapping[str, str],
        notes: Sequence[str] = (),
    ) -> None:
        """Add one spectrum; peaks are validated later in :meth:`build`.

        ``metadata`` keys must be lowercase; ``id`` and ``title`` may be empty.
        The charge sign is made to follow ``ion_mode`` when that is known; a
        charge beyond :data:`MAX_CHARGE` is ignored (noted), never stored wrapped.
        """
        notes = list(notes)
        if not -MAX_CHARGE <= charge <= MAX_CHARGE:
            notes.append(f"implausible charge {charge} ignored")
            charge = 0
        if ion_mode == 0:
            ion_mode = -1 if charge < 0 else polarity_from_adduct(metadata.get("adduct"))
        if ion_mode != 0 and charge != 0:
            charge = abs(charge) * ion_mode
        mz = np.asarray(mz, dtype=np.float64).ravel()
        intensity = np.asarray(intensity, dtype=np.float64).ravel()
        if len(mz) != len(intensity):
            title = metadata.get("title") or metadata.get("id") or ""
            self.skip(record, title, "peak list has m/z values without intensities")
            return
        if not np.isfinite(precursor_mz) or precursor_mz <= 0:
            if not np.isnan(precursor_mz):
                notes.append(f"invalid precursor m/z {precursor_mz!r} ignored")
            else:
                notes.append("no precursor m/z (kept with unknown precursor)")
            precursor_mz = np.nan
        self._record_no.append(record)
        self._titles.append(metadata.get("title") or metadata.get("id") or "")
        self._mz.append(mz)
        self._intensity.append(intensity)
        self._lengths.append(len(mz))
        self._precursor.append(float(precursor_mz))
        self._charge.append(int(charge))
        self._ion_mode.append(int(ion_mode))
        self._meta.append(metadata)
        self._notes.append(notes)

    def add_many(
        self,
        rows: Sequence[tuple],
        mz: np.ndarray,
        intensity: np.ndarray,
        notes: Sequence[list[str]] | None = None,
    ) -> None:
        """:meth:`add` for many records whose peaks lie in two shared arrays.

        Parameters
        ----------
        rows : sequence of tuple
            ``(record, precursor_mz, charge, ion_mode, metadata, lo, hi)`` per
            record, the record's peaks being ``mz[lo:hi]``, ``intensity[lo:hi]``.
        mz, intensity : ndarray of float64
        notes : sequence of list of str, optional
            The reader's notes per record (as :meth:`add`'s ``notes``); the lists
            are kept and extended.
        """
        if not rows:
            return
        records, precursors, charges, ion_modes, metas, los, his = zip(*rows, strict=True)
        precursor, charge, ion_mode, settled = settle_numbers(
            precursors, charges, ion_modes, lambda i: metas[i].get("adduct")
        )
        if notes is None:
            notes = settled
        else:  # the reader's notes first, then the numbers' (as add() orders them)
            notes = list(notes)
            for i, extra in enumerate(settled):
                if extra:
                    notes[i].extend(extra)
        lengths = np.subtract(his, los)
        if np.array_equal(los[1:], his[:-1]):  # one piece
            self._mz.append(mz[los[0] : his[-1]])
            self._intensity.append(intensity[los[0] : his[-1]])
        else:
            self._mz += [mz[lo:hi] for lo, hi in zip(los, his, strict=True)]
            self._intensity += [intensity[lo:hi] for lo, hi in zip(los, his, strict=True)]
        self._lengths += lengths.tolist()
        self._record_no += records
        self._titles += [m.get("title") or m.get("id") or "" for m in metas]
        self._precursor += precursor.tolist()
        self._charge += charge.tolist()
        self._ion_mode += ion_mode.tolist()
        self._meta += metas
        self._notes += notes

    # -- build ------------------------------------------------------------------------
    def _checked_peaks(
        self, peaks: tuple[np.ndarray, np.ndarray] | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Validate the peaks of the records added so far; their issues are reported.

        ``peaks``, when given, are all their peaks already joined (else the
        pieces collected are joined here).  Returns the peaks kept (``mz``,
        ``intensity``), the number kept per record and whether each record is
        kept (has a peak left).
        """
        n = len(self._lengths)
        lengths = np.asarray(self._lengths, dtype=np.int64)
        if peaks is not None:
            mz, intensity = peaks
        else:
            mz = np.concatenate(self._mz) if self._mz else np.empty(0)
            intensity = np.concatenate(self._intensity) if self._intensity else np.empty(0)
            self._mz, self._intensity = [mz], [intensity]  # the pieces may be freed now
        seg = np.repeat(np.arange(n, dtype=np.int64), lengths)

        bad_mz = ~(np.isfinite(mz) & (mz >= 0))
        bad_int = ~(np.isfinite(intensity) & (intensity > 0)) & ~bad_mz
        bad = bad_mz | bad_int
        if bad.any():
            n_bad_mz = np.bincount(seg[bad_mz], minlength=n)
            n_bad_int = np.bincount(seg[bad_int], minlength=n)
            for i in np.flatnonzero(n_bad_mz):
                self._notes[i].append(f"dropped {n_bad_mz[i]} peak(s) with invalid m/z")
            for i in np.flatnonzero(n_bad_int):
                self._notes[i].append(
                    f"dropped {n_bad_int[i]} peak(s) with zero, negative or non-finite intensity"
                )
            keep = ~bad
            mz, intensity, seg = mz[keep], intensity[keep], seg[keep]
        counts = np.bincount(seg, minlength=n)

        same = seg[1:] == seg[:-1]
        step = np.diff(mz)
        unsorted = same & (step < 0)
        if unsorted.any():
            for i in np.unique(seg[1:][unsorted]):
                self._notes[i].append("peaks sorted by m/z")
            order = np.lexsort((mz, seg))  # stable: equal m/z keep file order
            mz, intensity = mz[order], intensity[order]
            step = np.diff(mz)
        dup = same & (step == 0)
        if dup.any():
            n_dup = np.bincount(seg[1:][dup], minlength=n)
            for i in np.flatnonzero(n_dup):
                self._notes[i].append(f"{n_dup[i]} repeated m/z value(s) kept")

        kept = counts > 0
        flags = kept.tolist()
        for i, notes in enumerate(self._notes):
            if flags[i] and not notes:
                continue  # most records: nothing to report
            record, title = self._record_no[i], self._titles[i]
            if not flags[i]:
                had = self._lengths[i]
                reason = "no valid peaks" if had else "no peaks"
                extra = [x for x in self._notes[i] if x.startswith("dropped")]
                if extra:
                    reason += " (" + "; ".join(extra) + ")"
                self._issues.append(ImportIssue(record, title, reason, skipped=True))
            elif self._notes[i]:
                self._issues.append(
                    ImportIssue(record, title, "; ".join(self._notes[i]), skipped=False)
                )
        return mz, intensity, counts, kept

    def _report(self, spectra: int) -> ImportReport:
        """The import report of ``spectra`` kept spectra (raises when there are none)."""
        self._issues.sort(key=lambda issue: issue.record)
        report = ImportReport(
            path=self.path,
            format=self.format,
            records=self.records,
            spectra=spectra,
            issues=self._issues,
            notes=list(self.notes),
        )
        if report.spectra == 0:
            skipped = len(report.skipped)
            raise SpectrumFileError(
                self.path,
                f"no valid spectra ({self.records} records seen, {skipped} skipped)"
                + (f"; first problem: {report.skipped[0]}" if skipped else ""),
            )
        return report

    def build(self, source: LibrarySource | None) -> SpectrumLibrary:
        """Validate all peaks and return the library (raises when nothing is usable)."""
        mz, intensity, counts, kept = self._checked_peaks()
        report = self._report(int(kept.sum()))

        idx = np.flatnonzero(kept)
        offsets = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(counts[idx], out=offsets[1:])
        metas = [self._meta[i] for i in idx]
        records = np.asarray(self._record_no, dtype=np.int64)[idx]
        metadata = check_library(report, mz, offsets, _columns(metas), records)
        return SpectrumLibrary(
            mz=np.ascontiguousarray(mz),
            intensity=np.ascontiguousarray(intensity),
            offsets=offsets,
            precursor_mz=np.asarray(self._precursor, dtype=np.float64)[idx],
            charge=np.asarray(self._charge, dtype=np.int16)[idx],
            ion_mode=np.asarray(self._ion_mode, dtype=np.int8)[idx],
            metadata=metadata,
            source=source,
            report=report,
        )


def _columns(metas: Sequence[Mapping[str, str]]) -> dict[str, np.ndarray]:
    """Metadata dicts to object columns (``""`` for missing); fills id/title/aliases.

    Standard keys, their aliases and keys found in at least :data:`COLUMN_SHARE`
    of the records become columns; the values of rarer keys are kept per record
    as a JSON object in ``other_metadata`` (``""`` when a record has none).
    """
    # records with the same keys in the same order are handled together
    rows_of: dict[tuple[str, ...], list[int]] = {}
    for i, meta in enumerate(metas):
        rows_of.setdefault(tuple(meta), []).append(i)
    groups = {}
    for names, rows in rows_of.items():
        members = [metas[i] for i in rows]
        groups[names] = (rows, [list(map(itemgetter(name), members)) for name in names])
    return grouped_columns(groups, len(metas))


def grouped_columns(
    groups: Mapping[tuple[str, ...], tuple[Sequence[int], Sequence[Sequence[str]]]], n: int
) -> dict[str, np.ndarray]:
    """:func:`_columns` of ``n`` records given as groups of records with the same keys.

    ``groups`` maps each key tuple (in order of first appearance) to its
    records' positions (ascending) and, per key, the records' values.
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
