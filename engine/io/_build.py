"""Shared back end of the readers: collect records, validate peaks, build a library.

Every reader hands its records to a :class:`LibraryBuilder` (:meth:`~LibraryBuilder.add`,
:meth:`~LibraryBuilder.add_many`, :meth:`~LibraryBuilder.skip`).  Peaks are validated
vectorised, per chunk of records (:meth:`~LibraryBuilder.end_chunk`, at the latest in
:meth:`~LibraryBuilder.build`), after which only what the library needs is kept:

- peaks with NaN/inf or negative m/z are dropped (record repaired);
- peaks with NaN/inf, zero or negative intensity are dropped (record repaired);
- spectra whose m/z are not ascending are sorted, stably (record repaired);
- repeated m/z values are kept as they are (record repaired, with a note);
- a spectrum left with no peaks is skipped ("no valid peaks");
- a spectrum without precursor m/z is kept with NaN (record repaired, with a note).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from engine.io.fields import check_library, grouped_columns, settle_numbers
from engine.library import LibrarySource, SpectrumLibrary, peak_ranges
from engine.report import ImportIssue, ImportReport, SpectrumFileError

__all__ = [
    "ChunkColumns",
    "LibraryBuilder",
    "LoadCancelled",
    "Progress",
    "gc_paused",
    "report_progress",
]

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
    """No cyclic garbage collection inside: readers make many objects, none in a cycle."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class ChunkColumns:
    """Records of a chunk given column-wise, their numbers settled as by ``add_many``.

    Record ``i`` (number ``records[i]``) has peaks ``mz[lo[i]:hi[i]]``; metadata parts
    ``(names, start, stop, values)``: ``values[j][i - start]`` is record ``i``'s ``names[j]``.
    """

    records: np.ndarray
    titles: list[str]
    lo: np.ndarray
    hi: np.ndarray
    mz: np.ndarray
    intensity: np.ndarray
    precursor: np.ndarray
    charge: np.ndarray
    ion_mode: np.ndarray
    notes: list[list[str]]
    parts: list[tuple[tuple[str, ...], int, int, list[list[str]]]]


class LibraryBuilder:
    """Collects the records of one file and turns them into a :class:`SpectrumLibrary`.

    ``path`` names the file in the report and errors; ``format`` is the format read.
    """

    def __init__(self, path: str, format: str) -> None:
        self.path = path
        self.format = format
        self.records = 0
        #: Remarks about the whole file, for the import report.
        self.notes: list[str] = []
        self._issues: list[ImportIssue] = []
        self._peaks = _Growing()
        self._kept_counts: list[np.ndarray] = []
        self._kept_precursor: list[np.ndarray] = []
        self._kept_charge: list[np.ndarray] = []
        self._kept_ion_mode: list[np.ndarray] = []
        self._kept_records: list[np.ndarray] = []
        #: Per key tuple: the rows of its kept records (in pieces) and, per key, their values.
        self._groups: dict[tuple[str, ...], tuple[list[np.ndarray], list[list[str]]]] = {}
        self._kept = 0
        self._clear()

    def _clear(self) -> None:
        """Forget the records added since the last chunk (their peaks in pieces)."""
        self._record_no: list[int] = []
        self._titles: list[str] = []
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
        """Add one spectrum; its peaks and numbers are checked with the chunk.

        ``metadata`` keys must be lowercase; ``id`` and ``title`` may be empty.  The
        charge sign follows ``ion_mode`` when known (else the charge's or the
        adduct's sign gives it); a charge beyond
        :data:`~engine.io.fields.MAX_CHARGE` is ignored (noted), never stored wrapped.
        """
        mz = np.asarray(mz, dtype=np.float64).ravel()
        intensity = np.asarray(intensity, dtype=np.float64).ravel()
        title = metadata.get("title") or metadata.get("id") or ""
        if len(mz) != len(intensity):
            self.skip(record, title, "peak list has m/z values without intensities")
            return
        self._record_no.append(record)
        self._titles.append(title)
        self._mz.append(mz)
        self._intensity.append(intensity)
        self._lengths.append(len(mz))
        self._precursor.append(precursor_mz)
        self._charge.append(charge)
        self._ion_mode.append(ion_mode)
        self._meta.append(metadata)
        self._notes.append(list(notes))

    def add_many(
        self,
        rows: Sequence[tuple],
        mz: np.ndarray,
        intensity: np.ndarray,
        notes: Sequence[list[str]] | None = None,
    ) -> None:
        """:meth:`add` for many records whose peaks lie in two shared arrays.

        ``rows`` are ``(record, precursor_mz, charge, ion_mode, metadata, lo, hi)``,
        the record's peaks being ``mz[lo:hi]``; ``notes`` the reader's notes per
        record (as :meth:`add`'s; the lists are kept and extended).
        """
        if not rows:
            return
        records, precursors, charges, ion_modes, metas, los, his = zip(*rows, strict=True)
        if np.array_equal(los[1:], his[:-1]):  # one piece
            self._mz.append(mz[los[0] : his[-1]])
            self._intensity.append(intensity[los[0] : his[-1]])
        else:
            self._mz += [mz[lo:hi] for lo, hi in zip(los, his, strict=True)]
            self._intensity += [intensity[lo:hi] for lo, hi in zip(los, his, strict=True)]
        self._lengths += np.subtract(his, los).tolist()
        self._record_no += records
        self._titles += [m.get("title") or m.get("id") or "" for m in metas]
        self._precursor += precursors
        self._charge += charges
        self._ion_mode += ion_modes
        self._meta += metas
        self._notes += [[] for _ in rows] if notes is None else notes

    def _settle(self) -> None:
        """The numbers of the records added since the last chunk, by :func:`settle_numbers`."""
        meta = self._meta
        self._precursor, self._charge, self._ion_mode, settled = settle_numbers(
            self._precursor, self._charge, self._ion_mode, lambda i: meta[i].get("adduct")
        )
        for i, extra in enumerate(settled):
            if extra:  # after the reader's own notes
                self._notes[i].extend(extra)

    def end_chunk(self, columns: ChunkColumns | None = None) -> None:
        """Validate and pack the records added since the last call, and ``columns``."""
        columns = columns or _no_columns()
        if not self._lengths and not len(columns.records):
            return
        # metadata parts: those of the columns, then the records added one by one
        # grouped by their keys; rows are positions in the lists _merge joins
        n_columns = len(columns.records)
        # (names, rows, values, whether the lists are ours: the columns' may be shared)
        parts = [(names, np.arange(a, b), values, False) for names, a, b, values in columns.parts]
        rows_of: dict[tuple[str, ...], list[int]] = {}
        for i, meta in enumerate(self._meta, start=n_columns):
            rows_of.setdefault(tuple(meta), []).append(i)
        for names, rows in rows_of.items():
            metas = [self._meta[i - n_columns] for i in rows]
            values = [list(map(itemgetter(k), metas)) for k in names]
            parts.append((names, np.array(rows), values, True))
        self._settle()
        order, merged = self._merge(columns)  # the lists in record order: position -> index
        del columns  # its peaks are merged: freed here when the caller kept no reference
        mz, intensity, counts, kept = self._checked_peaks(*merged)
        del merged
        idx = np.flatnonzero(kept)
        self._peaks.extend(mz, intensity, own=True)  # new arrays, nobody else holds them
        self._kept_counts.append(counts[idx])
        self._kept_precursor.append(np.asarray(self._precursor, dtype=np.float64)[idx])
        self._kept_charge.append(np.asarray(self._charge, dtype=np.int16)[idx])
        self._kept_ion_mode.append(np.asarray(self._ion_mode, dtype=np.int8)[idx])
        self._kept_records.append(np.asarray(self._record_no, dtype=np.int64)[idx])
        # metadata kept per key tuple, column by column (no object per record); key
        # tuples are met in the order of their first kept record
        kept_at = np.empty(len(order), dtype=bool)
        kept_at[order] = kept
        row_at = np.empty(len(order), dtype=np.int64)
        row_at[order] = np.cumsum(kept) - 1 + self._kept
        position = np.empty(len(order), dtype=np.int64)
        position[order] = np.arange(len(order))
        firsts = []
        for k, (_, rows, _, _) in enumerate(parts):
            here = np.flatnonzero(kept_at[rows])
            if len(here):
                firsts.append((position[rows[here]].min(), k, here))
        for _, k, here in sorted(firsts):
            names, rows, values, ours = parts[k]
            if len(here) < len(rows):
                chosen = here.tolist()
                values, ours = [[column[i] for i in chosen] for column in values], True
            known = self._groups.get(names)
            if known is None:
                self._groups[names] = (
                    [row_at[rows[here]]],
                    values if ours else list(map(list, values)),
                )
            else:
                known[0].append(row_at[rows[here]])
                for column, more in zip(known[1], values, strict=True):
                    column.extend(more)
        self._kept += len(idx)
        self._clear()

    def _merge(self, columns: ChunkColumns) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """Put ``columns`` and the records added one by one together, in record order.

        The collected lists become those of all records, sorted; returns the order
        (``columns`` first, then the others) and all their peaks, new arrays.
        """
        own_records = np.asarray(self._record_no, dtype=np.int64)
        if not len(columns.records) and (np.diff(own_records) > 0).all():  # nothing to sort
            mz, intensity = np.concatenate(self._mz), np.concatenate(self._intensity)
            return np.arange(len(own_records)), (mz, intensity)
        own_lengths = np.asarray(self._lengths, dtype=np.int64)
        own_lo = np.zeros(len(own_lengths), dtype=np.int64)
        np.cumsum(own_lengths[:-1], out=own_lo[1:])
        order = np.argsort(np.concatenate([columns.records, own_records]), kind="stable")
        picks = order.tolist()
        lo = np.concatenate([columns.lo, own_lo + len(columns.mz)])[order]
        lengths = np.concatenate([columns.hi - columns.lo, own_lengths])[order]
        take = peak_ranges(lo, lengths)
        mz = np.concatenate([columns.mz, *self._mz])[take]
        intensity = np.concatenate([columns.intensity, *self._intensity])[take]
        merged = {
            "_record_no": [*columns.records.tolist(), *self._record_no],
            "_titles": [*columns.titles, *self._titles],
            "_notes": [*columns.notes, *self._notes],
        }
        for name, values in merged.items():
            setattr(self, name, [values[i] for i in picks])
        for name, column, dtype in (
            ("_precursor", columns.precursor, np.float64),
            ("_charge", columns.charge, np.int64),
            ("_ion_mode", columns.ion_mode, np.int64),
        ):
            own = np.asarray(getattr(self, name), dtype=dtype)
            setattr(self, name, np.concatenate([column.astype(dtype), own])[order].tolist())
        self._lengths = lengths.tolist()
        return order, (mz, intensity)

    # -- build ------------------------------------------------------------------------
    def _checked_peaks(
        self, mz: np.ndarray, intensity: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Validate all peaks of the records collected (in order), reporting their issues.

        Returns the peaks kept, the number kept per record and whether it is kept.
        """
        n = len(self._lengths)
        lengths = np.asarray(self._lengths, dtype=np.int64)
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
                reason = "no valid peaks" if self._lengths[i] else "no peaks"
                extra = [x for x in notes if x.startswith("dropped")]
                if extra:
                    reason += " (" + "; ".join(extra) + ")"
                self._issues.append(ImportIssue(record, title, reason, skipped=True))
            else:
                self._issues.append(ImportIssue(record, title, "; ".join(notes), skipped=False))
        return mz, intensity, counts, kept

    def build(self, source: LibrarySource | None) -> SpectrumLibrary:
        """The library of all records (raises :class:`SpectrumFileError` when none is usable)."""
        self.end_chunk()
        self._issues.sort(key=lambda issue: issue.record)
        report = ImportReport(
            path=self.path,
            format=self.format,
            records=self.records,
            spectra=self._kept,
            issues=self._issues,
            notes=list(self.notes),
        )
        if not self._kept:
            skipped = len(report.skipped)
            raise SpectrumFileError(
                self.path,
                f"no valid spectra ({self.records} records seen, {skipped} skipped)"
                + (f"; first problem: {report.skipped[0]}" if skipped else ""),
            )
        counts = np.concatenate(self._kept_counts)
        offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        groups = {
            names: (np.concatenate(rows), values) for names, (rows, values) in self._groups.items()
        }
        self._groups = {}
        metadata = grouped_columns(groups, self._kept)
        del groups
        mz, intensity = self._peaks.joined()
        records = np.concatenate(self._kept_records)
        return SpectrumLibrary(
            mz=mz,
            intensity=intensity,
            offsets=offsets,
            precursor_mz=np.concatenate(self._kept_precursor),
            charge=np.concatenate(self._kept_charge),
            ion_mode=np.concatenate(self._kept_ion_mode),
            metadata=check_library(report, mz, offsets, metadata, records),
            source=source,
            report=report,
        )


def _no_columns() -> ChunkColumns:
    none = np.empty(0, dtype=np.int64)
    peaks = np.empty(0, dtype=np.float64)
    return ChunkColumns(none, [], none, none, peaks, peaks, peaks, none, none, [], [])


class _Growing:
    """Peak arrays growing in blocks (mapped memory of their own), joined once at the end:
    each block is given back once copied, so joining never holds two copies."""

    #: Peaks per block.
    BLOCK = 1 << 22

    def __init__(self) -> None:
        self.blocks: list[tuple[np.ndarray, np.ndarray]] = []
        self.used = 0  # peaks in the last block
        self.size = 0

    def extend(self, mz: np.ndarray, intensity: np.ndarray, own: bool = False) -> None:
        """Append peaks; ``own``: the arrays are given (kept, not copied, when the first)."""
        if own and not self.blocks and len(mz):
            self.blocks.append((mz, intensity))
            self.used = self.size = len(mz)
            return
        at = 0
        while at < len(mz):
            if not self.blocks or self.used == len(self.blocks[-1][0]):
                room = max(self.BLOCK, len(mz) - at)
                self.blocks.append((np.empty(room), np.empty(room)))
                self.used = 0
            block_mz, block_intensity = self.blocks[-1]
            n = min(len(mz) - at, len(block_mz) - self.used)
            block_mz[self.used : self.used + n] = mz[at : at + n]
            block_intensity[self.used : self.used + n] = intensity[at : at + n]
            self.used += n
            self.size += n
            at += n

    def joined(self) -> tuple[np.ndarray, np.ndarray]:
        """All peaks in two arrays; the blocks are given up."""
        if len(self.blocks) == 1 and len(self.blocks[0][0]) == self.size:
            return self.blocks.pop()
        mz, intensity = np.empty(self.size), np.empty(self.size)
        at = 0
        self.blocks.reverse()
        while self.blocks:
            block_mz, block_intensity = self.blocks.pop()
            n = min(len(block_mz), self.size - at)
            mz[at : at + n] = block_mz[:n]
            intensity[at : at + n] = block_intensity[:n]
            at += n
            del block_mz, block_intensity
        return mz, intensity
