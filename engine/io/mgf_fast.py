"""Fast MGF reader: numba scans the bytes in bounded chunks, Python reads the parameters.

It gives exactly what the reference (:func:`engine.io.mgf.read_mgf_text`) gives,
doing only what it can prove identical: :mod:`engine.io.mgf_scan` finds records and
lines by the reference's rules and converts plain ``number number`` peak lines;
parameters are read per record, or column-wise for records with the same keys.  A
record with anything else in it (a third peak column, ``inf``, an unusual PEPMASS,
CHARGE or RTINSECONDS, a key twice, ...) goes to the reference parser, alone.  The
content is cut into chunks at ``BEGIN IONS`` lines (each parses as inside the whole
file); the next chunk is scanned on a thread while this one's records are read.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.io import mgf_scan
from engine.io._build import ChunkColumns, LibraryBuilder, Progress, gc_paused, report_progress
from engine.io.fields import parse_ion_mode, settle_numbers
from engine.io.mgf import ION_MODE_KEYS, header_reader, id_and_title, read_block, record_title
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
    """The byte scans of a chunk (numba, mostly without the GIL: may run on a thread).

    ``data`` starts where the file starts (``first_chunk``) or at a ``BEGIN IONS`` line.
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
        self.ids, self.names, self.values = _parameters(data, buf, spans)


def _read(
    chunk: ScannedChunk, file: FileState, final: bool, report: Callable[[int], None] | None
) -> None:
    """The records of one chunk into ``file.builder`` (in any order: it sorts them).

    ``final``: the chunk ends where the file ends (else a record still open at
    its end was cut by the next ``BEGIN IONS``); ``report(position in the
    chunk)`` now and then, which may raise :class:`~engine.io._build.LoadCancelled`.
    """
    builder, data = file.builder, chunk.data
    file.replaced += chunk.replaced
    kinds, first, last = chunk.kinds, chunk.first, chunk.last
    if file.reader is None:
        text = _decode(data[chunk.start : chunk.header_end])
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
            lines = split_lines(_decode(data[lo:hi]))
            if kind == mgf_scan.EVENT_EOF and not final:  # the next chunk starts a record
                kind = mgf_scan.EVENT_NO_END
            builder.skip(record, record_title(lines), _CUT_REASONS[kind])
            continue
        if is_fast:
            params = dict(header)
            if is_simple:
                params.update(zip(keys[a:b], values[a:b], strict=True))
            else:
                _block_params(split_lines(_decode(data[lo:hi])), params)
            try:
                rows.append((record, *record_fields(params), p0, p1))
                continue
            except Unsure:
                pass
        read_block(reader, split_lines(_decode(data[lo:hi])), record, builder)
    builder.add_many(rows, mz, intensity)
    builder.end_chunk(columns)
    file.records += len(kinds)


def _parameters(
    data: bytes, buf: np.ndarray, spans: np.ndarray
) -> tuple[np.ndarray, list[str], list[str]]:
    """Per parameter line in ``spans`` its key's number, the keys by number (lower case)
    and per line its value (values decoded in one piece, each distinct key once)."""
    if not len(spans):
        return np.empty(0, dtype=np.int64), [], []
    ids, first = key_ids(buf, spans[:, 0], spans[:, 1])
    names = [_decode(data[lo:hi]).lower() for lo, hi in spans[first, :2].tolist()]
    lo, hi = spans[:, 2], spans[:, 3]
    plain = ascii_spans(buf, lo, hi)
    # ASCII values are decoded apart: text of one-byte characters is much quicker
    # to split than text holding a few wider ones
    text = gather(buf, np.where(plain, lo, 0), np.where(plain, hi, 0))
    values = str(text.data, "ascii").split("\n")  # decoded in place, no copy
    wide = np.flatnonzero(~plain)
    if len(wide):
        text = gather(buf, lo[wide], hi[wide]).tobytes()
        for i, value in zip(wide.tolist(), _decode(text).split("\n"), strict=True):
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


#: Keys taken out of the metadata.
_NUMERIC = ("pepmass", "charge")


class Unsure(Exception):
    """The record holds something only the reference parser should judge."""


def precursor_of(text: str) -> float:
    """Precursor m/z of a PEPMASS text (one number, or m/z and intensity)."""
    try:  # float() strips the blanks split() splits at: success means one token
        return float(text)
    except ValueError:
        tokens = text.split()
        if len(tokens) != 2:
            raise Unsure from None
        try:
            precursor, _ = float(tokens[0]), float(tokens[1])
        except ValueError:
            raise Unsure from None
        return precursor


@functools.lru_cache(maxsize=4096)
def charge_of(text: str) -> int:
    """First charge of a CHARGE text as pyteomics reads it."""
    from pyteomics import auxiliary as _aux  # on first use: ``import engine`` stays quick

    try:
        charges = _aux._parse_charge(text, list_only=True)  # noqa: SLF001 - pyteomics' own rule
        return int(charges[0]) if charges else 0
    except Exception as exc:  # noqa: BLE001 - the reference decides what to do with it
        raise Unsure from exc


def rt_text(text: str) -> str:
    """RTINSECONDS as the reference keeps it (the float's repr)."""
    try:
        return repr(float(text))
    except ValueError:
        raise Unsure from None


#: Ion mode code of an ion mode text.
ion_mode_of = functools.lru_cache(maxsize=4096)(parse_ion_mode)


def record_fields(params: dict) -> tuple[float, int, int, dict]:
    """Precursor, charge, ion mode and metadata (``params`` itself, changed) of a record."""
    precursor = math.nan
    pepmass = params.pop("pepmass", None)
    if pepmass is not None:
        precursor = precursor_of(pepmass)
    charges = params.pop("charge", None)
    if isinstance(charges, str):
        charge = charge_of(charges)
    else:  # from the file header, already parsed by pyteomics
        charge = int(charges[0]) if charges else 0
    if "rtinseconds" in params:
        params["rtinseconds"] = rt_text(params["rtinseconds"])
    ion_mode = next((ion_mode_of(params[k]) for k in ION_MODE_KEYS if k in params), 0)
    return precursor, charge, ion_mode, id_and_title(params)


def _converted(
    texts: list[str], convert: Callable[[str], object], quick: Callable | None = None
) -> tuple[list, list[int]]:
    """``convert`` of each text, and the positions where it is unsure (their value: None).

    ``quick``, a quicker ``convert`` that raises where it differs, is tried first.
    """
    try:
        return list(map(quick or convert, texts)), []
    except (Unsure, ValueError):
        pass
    out: list = []
    bad: list[int] = []
    for i, text in enumerate(texts):
        try:
            out.append(convert(text))
        except (Unsure, ValueError):
            out.append(None)
            bad.append(i)
    return out, bad


def group_columns(
    chunk: ScannedChunk, rows: Sequence[int], base: int
) -> tuple[ChunkColumns | None, list]:
    """Records ``rows`` of ``chunk`` as columns, and the rows handed back (row ``r`` is
    record number ``base + r + 1``)."""
    _, peak_lo, peak_hi, param_lo, param_hi, _, _, mz, intensity, _ = chunk.scanned
    ids, lo_list, hi_list = chunk.ids.tolist(), param_lo.tolist(), param_hi.tolist()
    groups: dict[tuple[int, ...], list[int]] = {}
    for r in rows:
        groups.setdefault(tuple(ids[lo_list[r] : hi_list[r]]), []).append(r)
    text = np.fromiter(chunk.values, dtype=object, count=len(chunk.values))
    parts: list[tuple] = []
    back: list[int] = []
    for signature, members in groups.items():
        keys = [chunk.names[k] for k in signature]
        if len(set(keys)) != len(keys):  # a key twice: the per-record path keeps the last
            back += members
            continue
        part = _group(keys, np.asarray(members, dtype=np.int64), param_lo, text, back)
        if part is not None:
            parts.append(part)
    if not parts:
        return None, back
    chosen = np.concatenate([p[0] for p in parts])
    precursors, charges, ion_modes, _, _, adducts, titles = (
        [x for p in parts for x in p[k]] for k in range(1, 8)
    )
    metadata = []
    start = 0
    for part in parts:
        metadata.append((part[4], start, start + len(part[0]), part[5]))
        start += len(part[0])
    precursor, charge, ion_mode, notes = settle_numbers(
        precursors, charges, ion_modes, adducts.__getitem__
    )
    columns = ChunkColumns(
        chosen + (base + 1), titles, peak_lo[chosen], peak_hi[chosen], mz, intensity,
        precursor, charge, ion_mode, notes, metadata,
    )  # fmt: skip
    return columns, back


def _group(
    keys: list[str], members: np.ndarray, param_lo: np.ndarray, text: np.ndarray, back: list[int]
) -> tuple | None:
    """One group's columns converted; records that are unsure go to ``back``."""
    n = len(members)
    starts = param_lo[members]
    columns = {key: text[starts + j].tolist() for j, key in enumerate(keys)}
    keep = np.ones(n, dtype=bool)
    precursors: list = [math.nan] * n
    charges: list = [0] * n
    if "pepmass" in columns:
        precursors, bad = _converted(columns["pepmass"], precursor_of, float)
        keep[bad] = False
    if "charge" in columns:
        charges, bad = _converted(columns["charge"], charge_of)
        keep[bad] = False
    if "rtinseconds" in columns:
        columns["rtinseconds"], bad = _converted(columns["rtinseconds"], rt_text)
        keep[bad] = False
    ion_modes: list = [0] * n
    for key in ION_MODE_KEYS:
        if key in columns:
            ion_modes = list(map(ion_mode_of, columns[key]))
            break
    meta_keys = [k for k in keys if k not in _NUMERIC]
    empty = [""] * n
    columns["id"] = columns.get("spectrumid", empty)
    if "id" not in meta_keys:
        meta_keys.append("id")
    if "title" not in meta_keys:
        columns["title"] = columns.get("name", empty)
        meta_keys.append("title")
    values = [columns[k] for k in meta_keys]
    adducts = columns.get("adduct", [None] * n)
    titles = [t or i or "" for t, i in zip(columns["title"], columns["id"], strict=True)]
    if not keep.all():
        back += members[~keep].tolist()
        picked = np.flatnonzero(keep).tolist()
        if not picked:
            return None
        members = members[keep]
        precursors, charges, ion_modes, adducts, titles = (
            [seq[i] for i in picked] for seq in (precursors, charges, ion_modes, adducts, titles)
        )
        values = [[column[i] for i in picked] for column in values]
    return members, precursors, charges, ion_modes, tuple(meta_keys), values, adducts, titles
