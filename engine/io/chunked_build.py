"""A :class:`LibraryBuilder` that checks and packs its records chunk by chunk.

:class:`LibraryBuilder` keeps every record (its peak arrays, a metadata dict,
Python numbers) until :meth:`~LibraryBuilder.build`, which then copies the
peaks into one array and validates them: on a file of millions of records that
is several times the memory of the library itself.  :class:`ChunkedBuilder`
takes records the same way, but after each chunk (:meth:`~ChunkedBuilder.end_chunk`)
validates that chunk's peaks with the same rules, keeps only what the library
needs (kept peaks, per-record numbers as arrays, metadata as value tuples
grouped by their keys) and forgets the rest.  The result is the same library,
report included: peaks are validated per spectrum, metadata columns are built
from all records at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.io._build import LibraryBuilder, grouped_columns
from engine.io.record_checks import check_library
from engine.library import LibrarySource, SpectrumLibrary, peak_ranges

__all__ = ["ChunkColumns", "ChunkedBuilder"]


@dataclass
class ChunkColumns:
    """Records of a chunk given column-wise, their numbers settled as by ``add_many``.

    Record ``i`` (number ``records[i]``) has peaks ``mz[lo[i]:hi[i]]`` and
    ``intensity[lo[i]:hi[i]]``.  Metadata come in parts ``(names, start, stop,
    values)``: records ``start:stop`` have the keys ``names`` and
    ``values[j][i - start]`` is record ``i``'s value of key ``names[j]``.
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


class ChunkedBuilder(LibraryBuilder):
    """Collects the records of one file chunk by chunk (see the module notes).

    Its parameters are those of :class:`LibraryBuilder`.
    """

    def __init__(self, path: str, format: str) -> None:
        super().__init__(path, format)
        self._peaks = _Growing()
        self._kept_counts: list[np.ndarray] = []
        self._kept_precursor: list[np.ndarray] = []
        self._kept_charge: list[np.ndarray] = []
        self._kept_ion_mode: list[np.ndarray] = []
        self._kept_records: list[np.ndarray] = []
        #: Per key tuple: the rows of its records (in pieces) and, per key, their values.
        self._groups: dict[tuple[str, ...], tuple[list[np.ndarray], list[list[str]]]] = {}
        self._kept = 0
        self._chunked = False  # whether end_chunk packed anything yet

    def end_chunk(self, columns: ChunkColumns | None = None) -> None:
        """Validate and pack the records added since the last call, and ``columns``."""
        if not self._lengths and (columns is None or not len(columns.records)):
            return
        if columns is None:
            columns = _no_columns()
        self._chunked = True
        # the records added one by one (as a part each) follow those of columns
        n_columns = len(columns.records)
        parts = list(columns.parts)
        for i, meta in enumerate(self._meta, start=n_columns):
            parts.append((tuple(meta), i, i + 1, [[value] for value in meta.values()]))
        order, merged = self._merge(columns)  # the lists in record order: position -> index
        del columns  # its peaks are merged: freed here when the caller kept no reference
        mz, intensity, counts, kept = self._checked_peaks(merged)
        del merged
        idx = np.flatnonzero(kept)
        self._peaks.extend(mz, intensity, own=True)  # new arrays, nobody else holds them
        self._kept_counts.append(counts[idx])
        self._kept_precursor.append(np.asarray(self._precursor, dtype=np.float64)[idx])
        self._kept_charge.append(np.asarray(self._charge, dtype=np.int16)[idx])
        self._kept_ion_mode.append(np.asarray(self._ion_mode, dtype=np.int8)[idx])
        self._kept_records.append(np.asarray(self._record_no, dtype=np.int64)[idx])
        # metadata kept per key tuple, column by column (no object per record); key
        # tuples are met in the order of their first kept record, as _columns meets them
        kept_at = np.empty(len(order), dtype=bool)
        kept_at[order] = kept
        row_at = np.empty(len(order), dtype=np.int64)
        row_at[order] = np.cumsum(kept) - 1 + self._kept
        position = np.empty(len(order), dtype=np.int64)
        position[order] = np.arange(len(order))
        firsts = []
        for k, (_, start, stop, _) in enumerate(parts):
            here = np.flatnonzero(kept_at[start:stop])
            if len(here):
                firsts.append((position[start + here].min(), k, here))
        for _, k, here in sorted(firsts):
            names, start, stop, values = parts[k]
            rows = row_at[start:stop][here]
            if len(here) < stop - start:
                chosen = here.tolist()
                values = [[column[i] for i in chosen] for column in values]
            known = self._groups.get(names)
            if known is None:
                self._groups[names] = ([rows], [list(column) for column in values])
            else:
                known[0].append(rows)
                for column, more in zip(known[1], values, strict=True):
                    column.extend(more)
        self._kept += len(idx)
        for collected in (
            self._record_no, self._titles, self._mz, self._intensity, self._lengths,
            self._precursor, self._charge, self._ion_mode, self._meta, self._notes,
        ):  # fmt: skip
            collected.clear()

    def _merge(self, columns: ChunkColumns) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """Put ``columns`` and the records added one by one together, in record order.

        The collected lists become those of all records (``columns`` first, then
        the others, sorted); returns the sorting order and all their peaks (new
        arrays, in record order).
        """
        own_lengths = np.asarray(self._lengths, dtype=np.int64)
        own_lo = np.zeros(len(own_lengths), dtype=np.int64)
        np.cumsum(own_lengths[:-1], out=own_lo[1:])
        order = np.argsort(
            np.concatenate([columns.records, np.asarray(self._record_no, dtype=np.int64)]),
            kind="stable",
        )
        picks = order.tolist()
        lo = np.concatenate([columns.lo, own_lo + len(columns.mz)])[order]
        lengths = np.concatenate([columns.hi - columns.lo, own_lengths])[order]
        take = peak_ranges(lo, lengths)
        if self._mz:
            mz = np.concatenate([columns.mz, *self._mz])[take]
            intensity = np.concatenate([columns.intensity, *self._intensity])[take]
        else:
            mz, intensity = columns.mz[take], columns.intensity[take]
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
        self._mz, self._intensity = [], []
        self._meta = []
        return order, (mz, intensity)

    def build(self, source: LibrarySource | None) -> SpectrumLibrary:
        """The library of all chunks (raises when nothing is usable)."""
        if not self._chunked:  # records only added one by one: built as LibraryBuilder builds
            return super().build(source)
        self.end_chunk()
        report = self._report(self._kept)
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
        metadata = check_library(report, mz, offsets, metadata, records)
        return SpectrumLibrary(
            mz=mz,
            intensity=intensity,
            offsets=offsets,
            precursor_mz=np.concatenate(self._kept_precursor),
            charge=np.concatenate(self._kept_charge),
            ion_mode=np.concatenate(self._kept_ion_mode),
            metadata=metadata,
            source=source,
            report=report,
        )


def _no_columns() -> ChunkColumns:
    none = np.empty(0, dtype=np.int64)
    peaks = np.empty(0, dtype=np.float64)
    return ChunkColumns(none, [], none, none, peaks, peaks, peaks, none, none, [], [])


class _Growing:
    """Peak arrays growing in blocks, joined once at the end.

    Blocks are large enough to be mapped memory of their own: each is handed
    back to the system as soon as it is copied into the joined array, whose
    pages are only touched when written, so joining never holds two copies.
    """

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
