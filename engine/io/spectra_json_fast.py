"""Fast GNPS / MoNA JSON reader: typed decoding, the peak strings of all records at once.

It gives exactly what the reference (:func:`engine.io.spectra_json.read_json_text`)
gives.  A MoNA document is decoded by :mod:`msgspec` into the structs below, which
hold only the fields the reference reads; ``spectrum`` stays JSON text, so a string
with an escape or a non-ASCII byte is left to the reference.  Any other document is
decoded whole by ``msgspec`` (which refuses what :func:`json.loads` refuses and
rounds floats as :mod:`json` does) or, failing that, by the reference.  The peak
strings of all records are read together by :func:`engine.io.scan.read_gnps_peaks`
and :func:`~engine.io.scan.read_mona_peaks`; metadata by the reference's rules with
fewer calls per value.  Records not read here go to the reference, alone.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from itertools import product, repeat
from operator import attrgetter, is_, itemgetter
from typing import Any

import numpy as np

from engine.io import spectra_json as ref
from engine.io._build import LibraryBuilder, gc_paused
from engine.io.fields import charge_from_adduct, parse_charge_text, parse_ion_mode
from engine.io.scan import read_gnps_peaks, read_mona_peaks
from engine.io.stream import decode_text, replaced_note

try:
    import msgspec
except ImportError:  # pragma: no cover - the fast path without it
    msgspec = None

__all__ = ["read_json_bytes"]

#: How much of the text is looked at to tell MoNA from GNPS.
_HEAD = 1 << 16
_MEMO_LIMIT = 4096

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
        """The fields of a MoNA record the reference reads (a record title's keys included)."""

        #: The value's JSON text as it is in the file (empty: no such key).
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
    """GNPS or MoNA JSON ``data`` (the file) into ``builder``, as the reference reads it.

    Content that is not ASCII is decoded first, as the text readers get it; raises
    as :func:`engine.io.spectra_json.read_json_text`.
    """
    source: bytes | str = data
    if not data.isascii():
        source, replaced = decode_text(data)
        if replaced:
            builder.notes.append(replaced_note(replaced))
    with gc_paused():
        if _read_mona(source, builder):
            return
        document = _parsed(source)
        if document is None:
            text = source if isinstance(source, str) else source.decode("ascii")
            document = ref.parse_document(text, builder)
        builder.records = len(document)
        _read(document, builder)


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


def _read_mona(text: bytes | str, builder: LibraryBuilder) -> bool:
    """Read a MoNA document by typed decoding, if it fits (else leave ``builder`` untouched)."""
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
    if not all(map(is_, map(attrgetter("peaks_json"), records), repeat(_UNSET))):
        return False  # a GNPS record: the usual path reads mixed files
    raws = list(map(attrgetter("spectrum"), records))
    lengths = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
    ends = np.cumsum(lengths)
    starts = ends - lengths
    text = np.frombuffer(b"".join(raws), dtype=np.uint8) if raws else np.zeros(0, np.uint8)
    quoted = lengths >= 2  # a JSON string is at least its two quotes: read inside them
    quoted[quoted] = text[starts[quoted]] == ord('"')
    at = np.flatnonzero(quoted)
    strings = (text, starts[at] + 1, ends[at] - 1)
    with ThreadPoolExecutor(1, thread_name_prefix="simms-peaks") as pool:
        # numba reads the peaks without the GIL while the metadata is gathered here
        reading = pool.submit(read_mona_peaks, *strings)
        try:
            metadata = [_metadata(record) for record in records]
        except Exception:  # noqa: BLE001 - the usual path says what is wrong
            return False
        peaks = reading.result()
    found: dict[int, tuple[int, int, int]] = {}
    _found(found, at.tolist(), peaks, 1)
    builder.records = len(records)
    _add(builder, lambda k: _item(records[k]), metadata, found, [(), peaks])
    return True


def _read(document: list, builder: LibraryBuilder) -> None:
    """Records parsed whole (dicts): the peak strings read here, metadata by plans."""
    chosen: tuple[list[int], list[int]] = ([], [])
    strings: tuple[list[str], list[str]] = ([], [])
    for k, item in enumerate(document):
        if type(item) is not dict:
            continue
        source = 0 if "peaks_json" in item else 1 if "spectrum" in item else -1
        if source >= 0:
            peaks = item["peaks_json" if source == 0 else "spectrum"]
            if type(peaks) is str and peaks.isascii():
                chosen[source].append(k)
                strings[source].append(peaks)
    found: dict[int, tuple[int, int, int]] = {}
    sources = []
    for source, reader in enumerate((read_gnps_peaks, read_mona_peaks)):
        lengths = np.fromiter(map(len, strings[source]), dtype=np.int64)
        ends = np.cumsum(lengths)
        text = np.frombuffer("".join(strings[source]).encode("ascii"), dtype=np.uint8)
        sources.append(reader(text, ends - lengths, ends))
        _found(found, chosen[source], sources[-1], source)

    metadata: list[dict[str, str] | None] = [None] * len(document)
    for k, (source, _, _) in found.items():
        try:
            metadata[k] = (_gnps_metadata if source == 0 else ref.mona_metadata)(document[k])
        except Exception:  # noqa: BLE001 - the reference says what is wrong
            pass
    _add(builder, document.__getitem__, metadata, found, sources)


def _found(found: dict, indices: list[int], peaks: tuple, source: int) -> None:
    """``found[record index] = (source, lo, hi)`` for the peak strings read."""
    bounds = peaks[2].tolist()
    for j in np.flatnonzero(peaks[3]).tolist():
        found[indices[j]] = (source, bounds[j], bounds[j + 1])


def _add(
    builder: LibraryBuilder,
    item: Callable[[int], object],
    metadata: list[dict[str, str] | None],
    found: dict[int, tuple[int, int, int]],
    sources: list,
) -> None:
    """Hand the records to ``builder``: those read here in a batch per source, the others alone.

    ``item(k)`` is record ``k`` as the reference sees it, ``metadata[k]`` its
    metadata where known; ``found`` and ``sources`` say where its peaks are.
    """
    batches: tuple[list[tuple], list[tuple]] = ([], [])
    for k, meta in enumerate(metadata):
        where = found.get(k)
        if where is None or meta is None:
            peaks = None
            if where is not None:
                source, lo, hi = where
                peaks = (sources[source][0][lo:hi], sources[source][1][lo:hi])
            ref.add_record(k + 1, item(k), builder, peaks, meta)
            continue
        source, lo, hi = where
        try:
            precursor, charge, ion_mode, meta = _batch_fields(meta, source == 1)
        except Exception as exc:  # noqa: BLE001 - a record's failure is a report line
            ref.skip_record(k + 1, item(k), builder, exc)
            continue
        batches[source].append((k + 1, precursor, charge, ion_mode, meta, lo, hi))
    for source, batch in enumerate(batches):
        _flush(builder, batch, sources, source)


def _flush(builder: LibraryBuilder, batch: list[tuple], sources: list, source: int) -> None:
    """Hand the records in ``batch`` (peaks in ``sources[source]``) to ``builder``."""
    if batch:
        builder.add_many(batch, sources[source][0], sources[source][1])


#: Stands for a MoNA record in :func:`engine.io.spectra_json.record_fields`, which
#: only asks which flavour a record is when peaks and metadata are given.
_MONA_ITEM = {"spectrum": ""}
#: Stands for a record's peaks (read, so at least one) where only their number matters.
_SOME_PEAKS = (np.zeros(1), np.zeros(1))


def _batch_fields(metadata: dict[str, str], mona: bool) -> tuple[float, int, int, dict[str, str]]:
    """``record_fields(item, peaks, metadata)[2:]`` of a record whose peaks were read.

    What the reference makes of a record's MS level, charge, adduct and ion mode
    is worked out once per combination; a refused MS level is left to the
    reference, which raises.  ``metadata`` is changed as the reference changes it.
    """
    get = metadata.get
    settled = _settle(mona, get("ms_level"), get("charge"), get("adduct"), get("ionmode"))
    if settled is None:
        return ref.record_fields(_MONA_ITEM, _SOME_PEAKS, metadata)[2:]
    text = metadata.pop("precursor_mz", "")
    try:  # a text float() reads has no blanks inside, so it is its own first word
        precursor = float(text)
    except ValueError:
        precursor = ref.precursor_of(text)
    metadata.pop("charge", None)
    metadata["title"] = get("name", "")
    return precursor, settled[0], settled[1], metadata


@functools.lru_cache(maxsize=_MEMO_LIMIT)
def _settle(
    mona: bool, level: str | None, charge: str | None, adduct: str | None, ion_mode: str | None
) -> tuple[int, int] | None:
    """(charge, ion mode) as :func:`engine.io.spectra_json.record_fields` finds them, or
    None where it refuses the MS level."""
    if mona and level and ref.refused_level(level):
        return None
    number = parse_charge_text(charge)
    if not number:
        number = charge_from_adduct(adduct if adduct is not None else "")
    return number, parse_ion_mode(ion_mode)


#: Every text whose ``lower()`` is a missing-value marker (only ASCII letters lower to them).
_MISSING_ANY = frozenset(
    "".join(chars) for word in ref.MISSING for chars in product(*({c, c.upper()} for c in word))
)
#: MoNA metaData name -> the column it fills (None: none); only short names kept.
_MONA_COLUMN: dict[str, str | None] = {}


@functools.lru_cache(maxsize=_MEMO_LIMIT)
def _key_plan(keys: tuple) -> tuple | None:
    """The getter of a record's keys other than peaks_json, their lowered forms and their
    :func:`_plan`; None when two keys lower to the same."""
    kept = [k for k in keys if k != "peaks_json"]
    lows = tuple(str(k).strip().lower() for k in kept)
    if len(set(lows)) != len(lows) or len(kept) < 2:
        return None
    return itemgetter(*kept), lows, _plan(lows)


@functools.lru_cache(maxsize=_MEMO_LIMIT)
def _plan(lows: tuple[str, ...]) -> tuple:
    """What :func:`engine.io.spectra_json.gnps_metadata` does with values of keys ``lows``
    (none missing), by value position."""
    keep, sources, precursor, ion_mode, ms_level = _column_plan(dict.fromkeys(lows, ""))
    where = {low: k for k, low in enumerate(lows)}
    return (
        keep,
        [where[k] for k in keep],
        tuple((column, where[source]) for column, source in sources),
        where.get(precursor),
        where["ion_mode"] if ion_mode else None,
        where["ms_level"] if ms_level else None,
    )


def _planned(plan: tuple, texts: list[str]) -> dict[str, str]:
    """The GNPS metadata of values ``texts`` (none missing) by their :func:`_plan`."""
    keep, positions, sources, precursor, ion_mode, ms_level = plan
    out = dict(zip(keep, [texts[k] for k in positions], strict=True))
    for column, k in sources:
        out[column] = texts[k]
    out["precursor_mz"] = "" if precursor is None else texts[precursor]
    if ion_mode is not None:
        out["ionmode"] = texts[ion_mode]
    if ms_level is not None:
        out["ms_level"] = texts[ms_level]
    return out


def _column_plan(lowered: Mapping[str, str]) -> tuple:
    keep = tuple(k for k in lowered if k not in ("precursor_mz", "ion_mode"))
    sources = []
    for column, keys in ref.GNPS_KEYS.items():
        source = next((k for k in keys if k in lowered), None)
        if source is not None:
            sources.append((column, source))
    precursor = "precursor_mz" if "precursor_mz" in lowered else "precursormz"
    return keep, tuple(sources), precursor, "ion_mode" in lowered, "ms_level" in lowered


def _gnps_metadata(item: dict) -> dict[str, str]:
    """The reference's GNPS metadata, with the work per key set done once."""
    plan = _key_plan(tuple(item))
    if plan is None:
        return ref.gnps_metadata(item)
    getter, lows, full = plan
    values = getter(item)
    try:  # JSON strings mostly
        texts = list(map(str.strip, values))
    except TypeError:
        texts = [v.strip() if type(v) is str else ref.as_text(v) for v in values]
    if _MISSING_ANY.isdisjoint(texts):
        return _planned(full, texts)
    present = [k for k, text in enumerate(texts) if text not in _MISSING_ANY]
    return _planned(_plan(tuple([lows[k] for k in present])), [texts[k] for k in present])


def _mona_column(name: object) -> str | None:
    """The column of a metaData ``name`` (None when the name is empty)."""
    key = ref.as_text(name).lower()
    column = ref.MONA_KEYS.get(key, key.replace(" ", "_").replace("/", "")) if key else None
    if type(name) is str and len(_MONA_COLUMN) < _MEMO_LIMIT:
        _MONA_COLUMN[name] = column
    return column


def _item(record: Any) -> dict[str, object]:
    """A decoded MoNA record as the reference sees it, as far as its peaks and title go."""
    item: dict[str, object] = {}
    if len(record.spectrum):
        item["spectrum"] = msgspec.json.decode(record.spectrum)
    item["Compound_Name"] = record.Compound_Name
    item["compound_name"] = record.compound_name
    item["spectrum_id"] = record.spectrum_id
    item["id"] = record.id
    return item


def _metadata(record: Any) -> dict[str, str]:
    """:func:`engine.io.spectra_json.mona_metadata` of a decoded MoNA record.

    Written out for speed: this runs once per record, the loop once per entry.
    """
    out: dict[str, str] = {}
    missing = _MISSING_ANY  # every text as_text() makes "", and "" itself
    text_of = ref.as_text
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
        columns = _MONA_COLUMN
        for entry in entries:
            name = entry.name
            try:  # only names that are strings are kept
                column = columns[name]
            except (KeyError, TypeError):
                column = _mona_column(name)
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
        for field, column in (("inchiKey", "inchikey"), ("inchi", "inchi")):
            if column not in out:
                text = getattr(compound, field)
                text = text.strip() if type(text) is str else text_of(text)
                if text not in missing:
                    out[column] = text
    text = record.id
    text = text.strip() if type(text) is str else text_of(text)
    if text not in missing:
        out["id"] = text
    return out
