"""Fast MGF reader: numba scans the bytes in bounded chunks, Python reads the parameters.

It gives exactly what the reference (:func:`engine.io.mgf.read_mgf_text`, pyteomics
on decoded text) gives, records, peaks bit for bit, metadata and report, by doing
only what it can prove identical: :mod:`engine.io.mgf_scan` finds records and lines
with the reference's rules and converts plain ``number number`` peak lines;
parameter lines are decoded into a dict per record, or into columns for records
alike (:mod:`engine.io.mgf_columns`).  A record with anything else in it (a third
peak column, ``inf``, an odd first character, an unusual PEPMASS, CHARGE or
RTINSECONDS, ...) goes to the reference parser, alone.

The content is cut into chunks of about :data:`CHUNK_BYTES` at the start of a
``BEGIN IONS`` line, which always opens a record, so each chunk parses as inside
the whole file; the next chunk is scanned on a thread (numba without the GIL)
while the records of this one are read, and a
:class:`~engine.io._build.LibraryBuilder` packs each chunk, so memory
follows the library, not the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.io import mgf_scan
from engine.io._build import LibraryBuilder, Progress, gc_paused, report_progress
from engine.io.mgf import header_reader, read_block, record_title
from engine.io.mgf_columns import Unsure, group_columns, record_fields
from engine.io.scan import ascii_spans, gather, key_ids, not_utf8
from engine.io.stream import decode_text, replaced_note, split_lines

__all__ = ["CHUNK_BYTES", "last_record_start", "read_mgf_blocks", "read_mgf_bytes"]

#: Content bytes parsed at a time (a record longer than that makes its chunk longer).
CHUNK_BYTES = 1 << 22
_BEGIN = re.compile(rb"(?m)^[ \t]*BEGIN IONS[ \t]*\r?\n")
_BOM = b"\xef\xbb\xbf"
_COMMENTS = "#;!/"
_CUT_REASONS = {
    mgf_scan.EVENT_NO_END: "no END IONS before the next BEGIN IONS",
    mgf_scan.EVENT_EOF: "file ends inside the record (no END IONS)",
}
#: Records between two progress reports.
_PROGRESS_EVERY = 2048


def read_mgf_bytes(data: bytes, builder: LibraryBuilder, progress: Progress | None = None) -> None:
    """MGF ``data`` (the whole content, un-gzipped) into ``builder``; progress in bytes of it."""
    view = memoryview(data)
    step = CHUNK_BYTES
    blocks = ((view[i : i + step], min(i + step, len(data))) for i in range(0, len(data), step))
    read_mgf_blocks(blocks, len(data), builder, progress)


def read_mgf_blocks(
    blocks: Iterable[tuple[bytes | memoryview, int]],
    total: int,
    builder: LibraryBuilder,
    progress: Progress | None = None,
) -> None:
    """MGF content arriving in ``blocks`` into ``builder``.

    ``blocks`` are the content in order, each with the progress position reached
    once it is read (``total`` at the end); ``progress(done, total)`` is called
    now and then, and returning ``False`` raises :class:`~engine.io._build.LoadCancelled`.
    """
    file = FileState(builder)
    with gc_paused(), ThreadPoolExecutor(1, thread_name_prefix="simms-scan") as pool:
        waiting: list[tuple[Future, int, int, int]] = []

        def read(final: bool) -> None:
            future, start, end, length = waiting.pop(0)
            report = None
            if progress is not None:

                def report(at: int) -> None:
                    done = start + (end - start) * at // max(length, 1)
                    report_progress(progress, done, total, builder.path)

            _read(future.result(), file, final, report)

        for k, (data, start, end) in enumerate(_chunks(blocks, total)):
            waiting.append((pool.submit(ScannedChunk, data, k == 0), start, end, len(data)))
            if len(waiting) > 1:
                read(False)
        read(True)
    builder.records = file.records
    if file.replaced:
        builder.notes.insert(0, replaced_note(file.replaced))


def _chunks(
    blocks: Iterable[tuple[bytes | memoryview, int]], total: int
) -> Iterator[tuple[bytes, int, int]]:
    """Chunks of the content, each with its span of progress positions."""
    pending: list[bytes | memoryview] = []
    size = 0
    want = CHUNK_BYTES
    before = 0  # progress position where the pending content starts
    first = True
    for block, position in blocks:
        pending.append(block)
        size += len(block)
        if size < want:
            continue
        data = b"".join(pending)
        cut = last_record_start(data, 3 if first else 0)
        if not cut:  # one record (or the header) longer than a chunk: read on
            pending, want = [data], size + CHUNK_BYTES
            continue
        yield data[:cut], before, position
        first = False
        before = position
        pending, size, want = [data[cut:]], len(data) - cut, CHUNK_BYTES
    yield b"".join(pending), before, total


def last_record_start(data: bytes, after: int = 0) -> int:
    """Start of the last complete ``BEGIN IONS`` line of ``data`` after ``after`` (0: none).

    The line must start after a ``\\n`` and its own ``\\n`` must be in ``data``.
    """
    end = len(data)
    while True:
        at = data.rfind(b"BEGIN IONS", after, end)
        if at <= after:
            return 0
        line = data.rfind(b"\n", 0, at) + 1
        if line > after and _BEGIN.match(data, line):
            return line
        end = at


@dataclass
class FileState:
    """What one chunk of a file hands to the next: records read, bytes not UTF-8, and
    pyteomics' reader carrying the file header (set by the first chunk)."""

    builder: LibraryBuilder
    records: int = 0
    replaced: int = 0
    reader: Any = None
    header: dict = field(default_factory=dict)


class ScannedChunk:
    """The byte scans of a chunk (numba, mostly without the GIL: may run on another thread).

    ``data`` is the chunk's content: the first (``first_chunk``) starts where the
    file starts, every other at a ``BEGIN IONS`` line.  Bytes that are not UTF-8
    are read as Windows-1252, as :func:`engine.io.stream.decode_text` does.
    """

    def __init__(self, data: bytes, first_chunk: bool) -> None:
        self.data = data
        self.start = len(_BOM) if first_chunk and data.startswith(_BOM) else 0
        buf = np.frombuffer(data, dtype=np.uint8)
        #: Bytes that are not UTF-8.
        self.replaced = 0 if data.isascii() else int(not_utf8(buf, self.start))
        newlines, split = mgf_scan.lines(data, buf, self.start)
        self.kinds, self.first, self.last, self.header_end = mgf_scan.find_records(
            buf, self.start, newlines
        )
        self.scanned = mgf_scan.scan_records(
            buf, self.first, self.last, self.kinds, self.start, newlines, split
        )
        del newlines, split
        spans, mz, intensity, slow = (self.scanned[i] for i in (5, 7, 8, 9))
        _convert_slow(data, slow, mz, intensity)
        self.ids, self.names, self.values = _parameters(data, buf, spans, _decode)


def _read(
    chunk: ScannedChunk, file: FileState, final: bool, report: Callable[[int], None] | None
) -> None:
    """The records of one chunk into ``file.builder`` (in any order: it sorts them).

    ``final``: the chunk ends where the file ends (else a record still open at
    its end was cut by the next ``BEGIN IONS``); ``report(position in the
    chunk)`` now and then, which may raise :class:`~engine.io._build.LoadCancelled`.
    """
    builder, data, decode = file.builder, chunk.data, _decode
    file.replaced += chunk.replaced
    kinds, first, last = chunk.kinds, chunk.first, chunk.last
    if file.reader is None:
        text = decode(data[chunk.start : chunk.header_end])
        file.reader = header_reader(split_lines(text), builder)
        file.header = dict(file.reader.header)
    reader, header, base = file.reader, file.header, file.records
    if report is not None:
        for lo in first[::_PROGRESS_EVERY].tolist():
            report(lo)
    status, peak_lo, peak_hi, param_lo, param_hi, _, simple, mz, intensity, _ = chunk.scanned
    ids, names, values = chunk.ids, chunk.names, chunk.values
    fast = status == mgf_scan.FAST
    # records whose parameters are all located exactly are read column-wise
    in_columns = (kinds == mgf_scan.EVENT_BLOCK) & fast & simple & (not header)
    columns, back = group_columns(chunk, np.flatnonzero(in_columns).tolist(), base)
    alone = np.union1d(np.flatnonzero(~in_columns), back).astype(np.int64)  # the rest, alone
    keys = [names[k] for k in ids.tolist()] if len(alone) else []
    table = np.stack([kinds, first, last, fast, simple, param_lo, param_hi, peak_lo, peak_hi])
    rows: list[tuple] = []
    for r, (kind, lo, hi, is_fast, is_simple, a, b, p0, p1) in zip(
        alone.tolist(), table[:, alone].T.tolist(), strict=True
    ):
        record = base + r + 1
        if kind != mgf_scan.EVENT_BLOCK:
            lines = split_lines(decode(data[lo:hi]))
            if kind == mgf_scan.EVENT_EOF and not final:  # the next chunk starts a record
                kind = mgf_scan.EVENT_NO_END
            builder.skip(record, record_title(lines), _CUT_REASONS[kind])
            continue
        if is_fast:
            params = dict(header)
            if is_simple:
                params.update(zip(keys[a:b], values[a:b], strict=True))
            else:
                _block_params(split_lines(decode(data[lo:hi])), params)
            try:
                rows.append((record, *record_fields(params), p0, p1))
                continue
            except Unsure:
                pass
        read_block(reader, split_lines(decode(data[lo:hi])), record, builder)
    builder.add_many(rows, mz, intensity)
    builder.end_chunk(columns)
    file.records += len(kinds)


def _parameters(
    data: bytes, buf: np.ndarray, spans: np.ndarray, decode: Callable[[bytes], str]
) -> tuple[np.ndarray, list[str], list[str]]:
    """Keys and values of the parameter lines in ``spans``.

    Returns per line the number of its key, the keys by number (lower case)
    and per line its value.  Values are decoded in one piece; each distinct key once.
    """
    if not len(spans):
        return np.empty(0, dtype=np.int64), [], []
    ids, first = key_ids(buf, spans[:, 0], spans[:, 1])
    names = [decode(data[lo:hi]).lower() for lo, hi in spans[first, :2].tolist()]
    lo, hi = spans[:, 2], spans[:, 3]
    plain = ascii_spans(buf, lo, hi)
    # ASCII values are decoded apart: text of one-byte characters is much quicker
    # to split than text holding a few wider ones
    text = gather(buf, np.where(plain, lo, 0), np.where(plain, hi, 0))
    values = str(text.data, "ascii").split("\n")  # decoded in place, no copy
    wide = np.flatnonzero(~plain)
    if len(wide):
        text = gather(buf, lo[wide], hi[wide]).tobytes()
        for i, value in zip(wide.tolist(), decode(text).split("\n"), strict=True):
            values[i] = value
    return ids, names, values


def _convert_slow(data: bytes, slow: np.ndarray, mz: np.ndarray, intensity: np.ndarray) -> None:
    """Numbers the scanner could not prove, converted by ``float()`` itself."""
    if not len(slow):
        return
    values = np.array([float(data[lo:hi]) for _, lo, hi in slow.tolist()], dtype=np.float64)
    where, column = slow[:, 0] // 2, slow[:, 0] % 2
    mz[where[column == 0]] = values[column == 0]
    intensity[where[column == 1]] = values[column == 1]


def _decode(chunk: bytes) -> str:
    """``chunk`` as :func:`~engine.io.stream.decode_text` reads it inside a file."""
    try:
        return chunk.decode("utf-8")
    except UnicodeDecodeError:
        # the BOM makes decode_text drop exactly that one, never one of the chunk's
        return decode_text(_BOM + chunk)[0]


def _block_params(lines: list[str], params: dict) -> None:
    """The parameter lines of a whole record (first line BEGIN IONS) into ``params``."""
    for line in lines[1:]:
        stripped = line.strip()
        if stripped and stripped[0] not in _COMMENTS and "=" in stripped:
            key, value = stripped.split("=", 1)
            params[key.lower()] = value.strip()
