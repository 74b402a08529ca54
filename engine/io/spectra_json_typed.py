"""MoNA JSON read by typed decoding: only the fields the reference reader uses.

A MoNA export is mostly what the reader never looks at (compound classification,
tags, submitter, splash, scores).  :mod:`msgspec` decodes the document into the
small structs below, which hold only the fields :mod:`engine.io.spectra_json`
reads; the other subtrees are checked as JSON and skipped without building Python
objects.  Fields whose JSON type varies from file to file are typed ``Any`` and
come out as :func:`json.loads` gives them (strings, ints, floats, bools, lists,
dicts; ``msgspec`` parses floats correctly rounded, as :mod:`json` does).  The
``spectrum`` value is kept as its JSON text (``msgspec.Raw``, no copy): the peak
strings of all records are joined from it as bytes and read by numba, which
takes only plain characters, so a string with an escape or a byte that is not
ASCII is left to the reference, which gets the decoded value.

The records are then handed to the builder column-wise where the builder takes
that (:mod:`engine.io.mona_columns`), the peaks read on a thread meanwhile.

Typed decoding is only an accelerator: :func:`read_mona_typed` gives up (returns
``False`` before touching the builder) when ``msgspec`` is missing, the text does
not look like MoNA, or the document does not fit the schema (a record that is not
an object, a ``metaData`` that is not a list of objects, a GNPS record, ``NaN``,
numbers out of range ...), and the caller reads it the usual way.  ``msgspec``
refuses everything :func:`json.loads` refuses, so a document it reads is read as
the reference reads it; the tests compare both on every JSON test file.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Sequence
from itertools import repeat
from operator import attrgetter, is_
from typing import Any

import numpy as np

from engine.io import json_peaks
from engine.io import spectra_json as ref
from engine.io import spectra_json_fast as fast
from engine.io._build import LibraryBuilder
from engine.io.chunked_build import ChunkedBuilder
from engine.io.mona_columns import mona_columns
from engine.io.sniff import decode_text

try:
    import msgspec
except ImportError:  # pragma: no cover - the fast path without it
    msgspec = None

__all__ = ["read_json_bytes", "read_mona_typed"]

_SPECTRUM = attrgetter("spectrum")
_PEAKS_JSON = attrgetter("peaks_json")
#: How much of the text is looked at to tell MoNA from GNPS.
_HEAD = 1 << 16

if msgspec is not None:
    _UNSET: Any = msgspec.UNSET

    class _Entry(msgspec.Struct, gc=False):
        """One ``{name, value}`` of a ``metaData`` list."""

        name: Any = None
        value: Any = None

    class _Name(msgspec.Struct, gc=False):
        """One of a compound's ``names``."""

        name: Any = None

    class _Compound(msgspec.Struct, gc=False):
        """The fields of ``compound[i]`` the reference reads."""

        names: list[_Name] | None = None
        metaData: list[_Entry] | None = None  # noqa: N815 - the JSON key
        inchiKey: Any = None  # noqa: N815 - the JSON key
        inchi: Any = None

    class _Record(msgspec.Struct, gc=False):
        """The fields of a record the reference reads (a record title's keys included)."""

        #: The value's JSON text as it is in the file (empty: no such key); the peak
        #: strings are read from it without a str object per record.
        spectrum: msgspec.Raw = msgspec.Raw()
        peaks_json: Any = _UNSET
        compound: list[_Compound] | None = None
        metaData: list[_Entry] | None = None  # noqa: N815 - the JSON key
        id: Any = None
        Compound_Name: Any = None  # noqa: N815 - the JSON key
        compound_name: Any = None
        spectrum_id: Any = None

    _DECODER = msgspec.json.Decoder(list[_Record])
    _FAILURES: tuple[type[Exception], ...] = (msgspec.MsgspecError, UnicodeError, RecursionError)


def read_json_bytes(data: bytes, builder: LibraryBuilder) -> None:
    """Read GNPS or MoNA JSON file content into ``builder``, as the reference does.

    ASCII content (the common case) is decoded straight from the bytes, other
    content after :func:`engine.io.sniff.decode_text`, as the text readers get it.
    MoNA documents that fit the schema are read by :func:`read_mona_typed`; other
    documents are parsed by ``msgspec`` (or, where it refuses them, by
    :func:`json.loads`) and read by :func:`engine.io.spectra_json_fast.read_json_fast`.

    Parameters
    ----------
    data : bytes
        The whole file.
    builder : LibraryBuilder
        Receives every record (kept or skipped).

    Raises
    ------
    SpectrumFileError
        As :func:`engine.io.spectra_json.read_json_text`.
    """
    source: bytes | str = data
    if not data.isascii():
        source, replaced = decode_text(data)
        if replaced:
            builder.notes.append(
                f"{replaced} byte(s) that are not UTF-8 read as Windows-1252 characters"
            )
    document = None
    was_enabled = gc.isenabled()
    gc.disable()  # tens of thousands of small objects, none of them in a cycle
    try:
        if read_mona_typed(source, builder):
            return
        document = _parsed(source)
    finally:
        if was_enabled:
            gc.enable()
    if document is not None:
        builder.records = len(document)
        fast.read_json_fast("", builder, document)
        return
    text = source if isinstance(source, str) else source.decode("ascii")
    fast.read_json_fast(text, builder)


def _parsed(source: bytes | str) -> list | None:
    """The records of a JSON document, or None where ``msgspec`` refuses it or is missing."""
    if msgspec is None:
        return None
    try:
        document = msgspec.json.decode(source)
    except _FAILURES:
        return None
    if type(document) is dict:
        return [document]
    return document if type(document) is list else None


def read_mona_typed(text: bytes | str, builder: LibraryBuilder) -> bool:
    """Read MoNA JSON ``text`` into ``builder`` as the reference does, if it fits.

    Parameters
    ----------
    text : bytes or str
        The whole file, decoded (or ASCII bytes).
    builder : LibraryBuilder
        Receives every record (kept or skipped) when the text was read.

    Returns
    -------
    bool
        Whether the text was read; when ``False`` the builder is untouched.
    """
    if msgspec is None:
        return False
    head = text[:_HEAD]
    if isinstance(head, bytes):
        head = head.decode("ascii", errors="replace")
    if '"spectrum"' not in head or '"peaks_json"' in head or not head.lstrip().startswith("["):
        return False
    try:
        records = _DECODER.decode(text)
    except _FAILURES:
        return False
    if not all(map(is_, map(_PEAKS_JSON, records), repeat(_UNSET))):
        return False  # a GNPS record: the usual path reads mixed files
    if isinstance(builder, ChunkedBuilder):
        return _read_columns(records, builder)
    try:
        metadata = [_metadata(record) for record in records]
    except Exception:  # noqa: BLE001 - the usual path says what is wrong
        return False
    found, peaks = _peaks(records)
    builder.records = len(records)
    _add(records, range(len(records)), metadata, found, peaks, builder)
    return True


def _read_columns(records: list, builder: ChunkedBuilder) -> bool:
    """:func:`read_mona_typed`'s reading, the records handed over column-wise where possible.

    The peak strings are read (numba, without the GIL) on a thread while the
    metadata is gathered here.
    """
    indices, text, starts, ends = _peak_text(records)
    reading = _PeakReading(text, starts, ends)
    try:  # each record's metadata as its keys and values, made while it is at hand
        metadata = [(tuple(m), tuple(m.values())) for m in map(_metadata, records)]
    except Exception:  # noqa: BLE001 - the usual path says what is wrong
        reading.result()
        return False
    lo, hi, peaks = _spans(indices, len(records), reading.result())
    columns, rest = mona_columns(metadata, lo, hi, peaks)
    del metadata
    found = {k: (0, int(lo[k]), int(hi[k])) for k in rest if hi[k] >= 0}
    builder.records = len(records)
    _add(records, rest, [_metadata(records[k]) for k in rest], found, peaks, builder)
    builder.add_columns(columns)  # packed at build, once the decoded records are gone
    return True


def _peaks(records: list) -> tuple[dict[int, tuple[int, int, int]], tuple]:
    """The peak strings read: ``found[record index] = (0, lo, hi)``, and (m/z, intensities)."""
    indices, text, starts, ends = _peak_text(records)
    return _found(indices, json_peaks.read_mona_peaks(text, starts, ends))


def _peak_text(records: list) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray]:
    """The records whose ``spectrum`` is a string, and the JSON texts joined (bytes, bounds).

    The bounds are those of each string's characters as written in the file: where
    that is not the string itself (an escape, a byte that is not ASCII), the peak
    reader meets a character it does not take and leaves the record to the reference.
    """
    raws = list(map(_SPECTRUM, records))
    lengths = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
    ends = np.cumsum(lengths)
    starts = ends - lengths
    text = np.frombuffer(b"".join(raws), dtype=np.uint8) if len(raws) else np.zeros(0, np.uint8)
    quoted = lengths >= 2  # a JSON string is at least its two quotes
    quoted[quoted] = text[starts[quoted]] == ord('"')
    indices = np.flatnonzero(quoted)
    return indices.tolist(), text, starts[indices] + 1, ends[indices] - 1


def _spans(
    indices: list[int], n: int, read: tuple
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Per record the bounds ``lo``, ``hi`` of its peaks (``hi`` -1: not read), and the peaks."""
    mz, intensity, offsets, ok = read
    lo = np.zeros(n, dtype=np.int64)
    hi = np.full(n, -1, dtype=np.int64)
    good = np.flatnonzero(ok)
    rows = np.asarray(indices, dtype=np.int64)[good]
    lo[rows] = offsets[good]
    hi[rows] = offsets[good + 1]
    return lo, hi, (mz, intensity)


def _found(
    indices: list[int], read: tuple
) -> tuple[dict[int, tuple[int, int, int]], tuple[np.ndarray, np.ndarray]]:
    """``found[record index] = (0, lo, hi)`` for the strings read, and (m/z, intensities)."""
    mz, intensity, offsets, ok = read
    bounds = offsets.tolist()
    found = {indices[j]: (0, bounds[j], bounds[j + 1]) for j in np.flatnonzero(ok).tolist()}
    return found, (mz, intensity)


class _PeakReading:
    """:func:`engine.io.json_peaks.read_mona_peaks` on a thread of its own."""

    def __init__(self, text: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
        self._args = (text, starts, ends)
        self._out: tuple | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="simms-peaks", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._out = json_peaks.read_mona_peaks(*self._args)
        except BaseException as exc:  # noqa: BLE001 - raised in the caller
            self._error = exc

    def result(self) -> tuple:
        """What the reader returned (waits for it; raises what it raised)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._out  # type: ignore[return-value] - set when no error was raised


def _add(
    records: list,
    chosen: Sequence[int],
    metadata: list[dict[str, str]],
    found: dict[int, tuple[int, int, int]],
    peaks: tuple,
    builder: LibraryBuilder,
) -> None:
    """Hand the ``chosen`` records (``metadata`` theirs) to ``builder``, read peaks in batches."""
    sources = [peaks]
    batch: list[tuple] = []
    for k, meta in zip(chosen, metadata, strict=True):
        record = records[k]
        where = found.get(k)
        if where is None:
            fast._flush(builder, batch, sources, 0)
            ref.add_record(k + 1, _item(record), builder, None, meta)
            continue
        try:
            precursor, charge, ion_mode, kept = fast.batch_fields(meta, True)
        except Exception as exc:  # noqa: BLE001 - a record's failure is a report line
            fast._flush(builder, batch, sources, 0)
            ref.skip_record(k + 1, _item(record), builder, exc)
            continue
        batch.append((k + 1, precursor, charge, ion_mode, kept, where[1], where[2]))
    fast._flush(builder, batch, sources, 0)


def _item(record: Any) -> dict[str, object]:
    """A record as the reference sees it, as far as its peaks and title go."""
    item: dict[str, object] = {}
    if len(record.spectrum):
        item["spectrum"] = msgspec.json.decode(record.spectrum)
    item["Compound_Name"] = record.Compound_Name
    item["compound_name"] = record.compound_name
    item["spectrum_id"] = record.spectrum_id
    item["id"] = record.id
    return item


def _metadata(record: Any) -> dict[str, str]:
    """:func:`engine.io.spectra_json._mona_metadata` of a decoded record.

    :func:`engine.io.spectra_json_fast._text` and the walk over the entries are
    written out here (this runs once per record, the loop once per entry).
    """
    out: dict[str, str] = {}
    missing = fast._MISSING_ANY  # every text _value() makes "", and "" itself
    text_of = ref._value
    compounds = record.compound
    compound = compounds[0] if compounds else None
    entries = record.metaData
    if compound is not None:
        names = compound.names
        if names:
            name = names[0].name
            name = name.strip() if type(name) is str else text_of(name)
            if name not in missing:
                out["name"] = name
        more = compound.metaData
        if more:
            entries = entries + more if entries else more
    if entries:
        columns = fast._MONA_COLUMN
        unknown = fast._UNKNOWN
        for entry in entries:
            name = entry.name
            column = columns.get(name, unknown) if type(name) is str else unknown
            if column is unknown:
                column = fast._mona_column(name)
            if column is None or column in out:
                continue
            value = entry.value
            kind = type(value)
            if kind is str:
                value = value.strip()
            elif kind is float:  # str() of a float, which has no blanks ("nan" is missing)
                value = repr(value)
            else:
                value = text_of(value)
            if value not in missing:
                out[column] = value
    if compound is not None:
        if "inchikey" not in out:
            text = compound.inchiKey
            text = text.strip() if type(text) is str else text_of(text)
            if text not in missing:
                out["inchikey"] = text
        if "inchi" not in out:
            text = compound.inchi
            text = text.strip() if type(text) is str else text_of(text)
            if text not in missing:
                out["inchi"] = text
    text = record.id
    text = text.strip() if type(text) is str else text_of(text)
    if text not in missing:
        out["id"] = text
    return out
