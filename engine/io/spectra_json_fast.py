"""Fast GNPS / MoNA JSON reader: the peak strings of all records read at once.

It gives exactly what the reference reader (:func:`engine.io.spectra_json.read_json_text`)
gives.  The document is parsed by the standard :mod:`json` module, as there (or
handed over already parsed, by ``msgspec``, from
:func:`engine.io.spectra_json_typed.read_json_bytes`); then
the ASCII ``peaks_json`` (GNPS) and ``spectrum`` (MoNA) strings of all records are
read together by :mod:`engine.io.json_peaks`, which reads a string only when it
is certain of the reference's result and flags the others, which the reference
reads alone.  Metadata is gathered by the reference's rules with fewer calls per
value; every record then goes through the reference's
:func:`~engine.io.spectra_json.add_record`.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Mapping
from operator import itemgetter

import numpy as np

from engine.io import json_peaks
from engine.io import spectra_json as ref
from engine.io._build import LibraryBuilder, charge_from_adduct, parse_ion_mode

__all__ = ["read_json_fast"]

#: Key (or MoNA metaData name) -> what the reference makes of it; only short keys kept.
_MONA_COLUMN: dict[str, object] = {}
_MEMO_LIMIT = 4096
#: Stands for a record's peaks (read, so at least one) where only their number matters.
_SOME_PEAKS = (np.zeros(1), np.zeros(1))


def read_json_fast(text: str, builder: LibraryBuilder, document: list | None = None) -> None:
    """Parse GNPS or MoNA JSON ``text`` into ``builder``, as the reference does.

    Parameters
    ----------
    text : str
        The whole file, decoded.
    builder : LibraryBuilder
        Receives every record (kept or skipped).
    document : list, optional
        The records, already parsed exactly as :func:`json.loads` parses ``text``
        (``builder.records`` set); ``text`` is then not read.

    Raises
    ------
    SpectrumFileError
        As :func:`engine.io.spectra_json.read_json_text`.
    """
    was_enabled = gc.isenabled()
    gc.disable()  # tens of thousands of dicts, none of them in a cycle
    try:
        if document is None:
            document = ref.parse_document(text, builder)
        _read(document, builder)
    finally:
        if was_enabled:
            gc.enable()


def _read(document: list, builder: LibraryBuilder) -> None:
    gnps: list[int] = []
    mona: list[int] = []
    gnps_text: list[str] = []
    mona_text: list[str] = []
    for k, item in enumerate(document):
        if type(item) is not dict:
            continue
        if "peaks_json" in item:
            peaks = item["peaks_json"]
            if type(peaks) is str and peaks.isascii():
                gnps.append(k)
                gnps_text.append(peaks)
        elif "spectrum" in item:
            peaks = item["spectrum"]
            if type(peaks) is str and peaks.isascii():
                mona.append(k)
                mona_text.append(peaks)
    found: dict[int, tuple[int, int, int]] = {}
    sources = [
        _read_peaks(json_peaks.read_gnps_peaks, gnps, gnps_text, found, 0),
        _read_peaks(json_peaks.read_mona_peaks, mona, mona_text, found, 1),
    ]
    is_gnps = frozenset(gnps)
    batch: list[tuple] = []
    batch_source = -1
    for k, item in enumerate(document):
        where = found.get(k)
        metadata = None
        if where is not None:
            try:
                metadata = _gnps_metadata(item) if k in is_gnps else _mona_metadata(item)
            except Exception:  # noqa: BLE001 - the reference says what is wrong
                metadata = None
        if where is None or metadata is None:
            _flush(builder, batch, sources, batch_source)
            peaks = None
            if where is not None:
                source, lo, hi = where
                peaks = (sources[source][0][lo:hi], sources[source][1][lo:hi])
            ref.add_record(k + 1, item, builder, peaks, metadata)
            continue
        source, lo, hi = where
        try:
            precursor, charge, ion_mode, metadata = batch_fields(metadata, source == 1)
        except Exception as exc:  # noqa: BLE001 - a record's failure is a report line
            ref.skip_record(k + 1, item, builder, exc)
            continue
        if source != batch_source:
            _flush(builder, batch, sources, batch_source)
            batch_source = source
        batch.append((k + 1, precursor, charge, ion_mode, metadata, lo, hi))
    _flush(builder, batch, sources, batch_source)


#: Stands for a MoNA record in :func:`engine.io.spectra_json.record_fields`, which
#: only asks which flavour a record is when peaks and metadata are given.
MONA_ITEM = {"spectrum": ""}
#: (MoNA?, ms_level, charge, adduct, ionmode) -> (charge, ion mode), or None where the
#: reference refuses the MS level; see :func:`batch_fields`.
_SETTLED: dict[tuple, tuple[int, int] | None] = {}


def batch_fields(metadata: dict[str, str], mona: bool) -> tuple[float, int, int, dict[str, str]]:
    """``record_fields(item, peaks, metadata)[2:]`` of a record whose peaks were read.

    What the reference makes of a record's MS level, charge, adduct and ion mode
    is worked out once per combination; a refused MS level is left to the
    reference, which raises.  ``metadata`` is changed as the reference changes it.
    """
    get = metadata.get
    key = (mona, get("ms_level"), get("charge"), get("adduct"), get("ionmode"))
    settled = _SETTLED.get(key, _UNKNOWN)
    if settled is _UNKNOWN:
        settled = _remember(_SETTLED, key, _settle(*key))
    if settled is None:
        return ref.record_fields(MONA_ITEM, _SOME_PEAKS, metadata)[2:]
    precursor = ref._precursor(metadata.pop("precursor_mz", ""))
    metadata.pop("charge", None)
    metadata["title"] = get("name", "")
    return precursor, settled[0], settled[1], metadata


def _settle(
    mona: bool, level: str | None, charge: str | None, adduct: str | None, ion_mode: str | None
) -> tuple[int, int] | None:
    """(charge, ion mode) as :func:`engine.io.spectra_json.record_fields` finds them."""
    if mona and level:
        found = ref._MS_LEVEL_RE.match(level)
        if found is None or int(found.group(1)) != 2:
            return None
    number = ref._charge(charge)
    if not number:
        number = charge_from_adduct(adduct if adduct is not None else "")
    return number, parse_ion_mode(ion_mode)


def _flush(builder: LibraryBuilder, batch: list[tuple], sources: list, source: int) -> None:
    """Hand the records in ``batch`` (peaks in ``sources[source]``) to ``builder``."""
    if batch:
        builder.add_many(batch, sources[source][0], sources[source][1])
        batch.clear()


def _read_peaks(
    reader: Callable,
    indices: list[int],
    strings: list[str],
    found: dict[int, tuple[int, int, int]],
    source: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Read the peak ``strings``; ``found[record index] = (source, lo, hi)`` for those read."""
    if not indices:
        return np.empty(0), np.empty(0)
    lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
    ends = np.cumsum(lengths)
    starts = ends - lengths
    buf = np.frombuffer("".join(strings).encode("ascii"), dtype=np.uint8)
    mz, intensity, offsets, ok = reader(buf, starts, ends)
    bounds = offsets.tolist()
    for j in np.flatnonzero(ok).tolist():
        found[indices[j]] = (source, bounds[j], bounds[j + 1])
    return mz, intensity


def _case_variants(word: str) -> set[str]:
    variants = {""}
    for char in word:
        variants = {v + c for v in variants for c in {char, char.upper()}}
    return variants


#: Every text whose ``lower()`` is a missing-value marker (only ASCII letters lower to them).
_MISSING_ANY = frozenset(v for word in ref.MISSING for v in _case_variants(word))
_UNKNOWN = object()
#: Record keys -> (getter of the keys other than peaks_json, their lowered forms), or
#: None when two keys lower to the same; lowered keys -> the columns they fill.
_KEY_PLANS: dict[tuple, tuple | None] = {}
_COLUMN_PLANS: dict[tuple, tuple] = {}


def _text(value: object) -> str:
    """:func:`engine.io.spectra_json._value`, quicker for strings."""
    if type(value) is str:
        text = value.strip()
        return "" if text in _MISSING_ANY else text
    return ref._value(value)


def _remember(memo: dict, key: object, value: object) -> object:
    if len(memo) < _MEMO_LIMIT:
        memo[key] = value
    return value


def _key_plan(keys: tuple) -> tuple | None:
    kept = [k for k in keys if k != "peaks_json"]
    lows = tuple(str(k).strip().lower() for k in kept)
    if len(set(lows)) != len(lows) or len(kept) < 2:
        return None
    return itemgetter(*kept), lows, _full_plan(lows)


def _full_plan(lows: tuple[str, ...]) -> tuple:
    """:func:`_column_plan` of a record none of whose values is missing, by value position."""
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


def _full_metadata(plan: tuple, texts: list[str]) -> dict[str, str]:
    """:func:`_gnps_metadata` of a record none of whose ``texts`` is missing."""
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
    keys = tuple(item)
    plan = _KEY_PLANS.get(keys, _UNKNOWN)
    if plan is _UNKNOWN:
        plan = _remember(_KEY_PLANS, keys, _key_plan(keys))
    if plan is None:
        return ref._gnps_metadata(item)
    getter, lows, full = plan
    values = getter(item)
    try:  # JSON strings mostly
        texts = list(map(str.strip, values))
    except TypeError:
        texts = [v.strip() if type(v) is str else ref._value(v) for v in values]
    if _MISSING_ANY.isdisjoint(texts):
        return _full_metadata(full, texts)
    lowered = {k: t for k, t in zip(lows, texts, strict=True) if t not in _MISSING_ANY}
    names = tuple(lowered)
    columns = _COLUMN_PLANS.get(names)
    if columns is None:
        columns = _remember(_COLUMN_PLANS, names, _column_plan(lowered))
    keep, sources, precursor, ion_mode, ms_level = columns
    out = {k: lowered[k] for k in keep}
    for column, source in sources:
        out[column] = lowered[source]
    out["precursor_mz"] = lowered.get(precursor, "")
    if ion_mode:
        out["ionmode"] = lowered["ion_mode"]
    if ms_level:
        out["ms_level"] = lowered["ms_level"]
    return out


def _mona_column(name: object) -> str | None:
    """The column of a metaData ``name`` (None when the name is empty)."""
    key = ref._value(name).lower()
    column = ref.MONA_KEYS.get(key, key.replace(" ", "_").replace("/", "")) if key else None
    if type(name) is str:
        _remember(_MONA_COLUMN, name, column)
    return column


def _mona_metadata(item: Mapping[str, object]) -> dict[str, str]:
    out: dict[str, str] = {}
    compounds = item.get("compound")
    compound = compounds[0] if isinstance(compounds, list) and compounds else {}
    compound = compound if isinstance(compound, dict) else {}
    names = compound.get("names")
    if isinstance(names, list) and names and isinstance(names[0], dict):
        name = _text(names[0].get("name"))
        if name:
            out["name"] = name
    for entries in (item.get("metaData"), compound.get("metaData")):
        if not isinstance(entries, list):
            continue
        for entry in entries:
            if type(entry) is not dict:
                continue
            name = entry.get("name")
            column = _MONA_COLUMN.get(name, _UNKNOWN) if type(name) is str else _UNKNOWN
            if column is _UNKNOWN:
                column = _mona_column(name)
            if column is None or column in out:
                continue
            value = entry.get("value")
            value = value.strip() if type(value) is str else ref._value(value)
            if value not in _MISSING_ANY:
                out[column] = value
    for field, column in (("inchiKey", "inchikey"), ("inchi", "inchi")):
        text = _text(compound.get(field))
        if text:
            out.setdefault(column, text)
    identifier = _text(item.get("id"))
    if identifier:
        out["id"] = identifier
    return out
