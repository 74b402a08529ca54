"""MoNA JSON read by typed decoding: only the fields the reference reader uses.

A MoNA export is mostly what the reader never looks at (compound classification,
tags, submitter, splash, scores).  :mod:`msgspec` decodes the document into the
small structs below, which hold only the fields :mod:`engine.io.spectra_json`
reads; the other subtrees are checked as JSON and skipped without building Python
objects.  Fields whose JSON type varies from file to file are typed ``Any`` and
come out as :func:`json.loads` gives them (strings, ints, floats, bools, lists,
dicts; ``msgspec`` parses floats correctly rounded, as :mod:`json` does).

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
from collections.abc import Sequence
from typing import Any

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

        spectrum: Any = _UNSET
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
    if any(record.peaks_json is not _UNSET for record in records):
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
    """:func:`read_mona_typed`'s reading, the records handed over column-wise where possible."""
    try:  # each record's metadata as its keys and values, made while it is at hand
        metadata = [(tuple(m), tuple(m.values())) for m in map(_metadata, records)]
    except Exception:  # noqa: BLE001 - the usual path says what is wrong
        return False
    found, peaks = _peaks(records)
    columns, rest = mona_columns(metadata, found, peaks)
    del metadata
    builder.records = len(records)
    _add(records, rest, [_metadata(records[k]) for k in rest], found, peaks, builder)
    builder.end_chunk(columns)
    return True


def _peaks(records: list) -> tuple[dict[int, tuple[int, int, int]], tuple]:
    """The peak strings read: ``found[record index] = (0, lo, hi)``, and (m/z, intensities)."""
    indices = [k for k, record in enumerate(records) if type(record.spectrum) is str]
    strings = [records[k].spectrum for k in indices]
    if not all(map(str.isascii, strings)):
        indices = [k for k, text in zip(indices, strings, strict=True) if text.isascii()]
        strings = [records[k].spectrum for k in indices]
    found: dict[int, tuple[int, int, int]] = {}
    peaks = fast._read_peaks(json_peaks.read_mona_peaks, indices, strings, found, 0)
    return found, peaks


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
    if record.spectrum is not _UNSET:
        item["spectrum"] = record.spectrum
    item["Compound_Name"] = record.Compound_Name
    item["compound_name"] = record.compound_name
    item["spectrum_id"] = record.spectrum_id
    item["id"] = record.id
    return item


def _metadata(record: Any) -> dict[str, str]:
    """:func:`engine.io.spectra_json._mona_metadata` of a decoded record."""
    out: dict[str, str] = {}
    compounds = record.compound
    compound = compounds[0] if compounds else None
    entries = record.metaData or []
    if compound is not None:
        names = compound.names
        if names:
            name = fast._text(names[0].name)
            if name:
                out["name"] = name
        if compound.metaData:
            entries = entries + compound.metaData
    _walk(entries, out)
    if compound is not None:
        for value, column in ((compound.inchiKey, "inchikey"), (compound.inchi, "inchi")):
            if column not in out:
                text = fast._text(value)
                if text:
                    out[column] = text
    identifier = fast._text(record.id)
    if identifier:
        out["id"] = identifier
    return out


def _walk(entries: list, out: dict[str, str]) -> None:
    """Fill ``out`` from ``entries`` entry by entry (names of any JSON type)."""
    columns = fast._MONA_COLUMN
    unknown = fast._UNKNOWN
    missing = fast._MISSING_ANY
    for entry in entries:
        name = entry.name
        column = columns.get(name, unknown) if type(name) is str else unknown
        if column is unknown:
            column = fast._mona_column(name)
        if column is None or column in out:
            continue
        value = entry.value
        value = value.strip() if type(value) is str else ref._value(value)
        if value not in missing:
            out[column] = value
