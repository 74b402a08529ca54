"""Fast GNPS / MoNA JSON reader: the peak strings of all records read at once.

It gives exactly what the reference reader (:func:`engine.io.spectra_json.read_json_text`)
gives.  The document is parsed by the standard :mod:`json` module, as there; then
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

import numpy as np

from engine.io import json_peaks
from engine.io import spectra_json as ref
from engine.io._build import LibraryBuilder

__all__ = ["read_json_fast"]

#: Key (or MoNA metaData name) -> what the reference makes of it; only short keys kept.
_GNPS_KEY: dict[str, str] = {}
_MONA_COLUMN: dict[str, str | None] = {}
_MEMO_LIMIT = 4096


def read_json_fast(text: str, builder: LibraryBuilder) -> None:
    """Parse GNPS or MoNA JSON ``text`` into ``builder``, as the reference does.

    Parameters
    ----------
    text : str
        The whole file, decoded.
    builder : LibraryBuilder
        Receives every record (kept or skipped).

    Raises
    ------
    SpectrumFileError
        As :func:`engine.io.spectra_json.read_json_text`.
    """
    was_enabled = gc.isenabled()
    gc.disable()  # tens of thousands of dicts, none of them in a cycle
    try:
        _read(text, builder)
    finally:
        if was_enabled:
            gc.enable()


def _read(text: str, builder: LibraryBuilder) -> None:
    document = ref.parse_document(text, builder)
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
    found: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    _read_peaks(json_peaks.read_gnps_peaks, gnps, gnps_text, found)
    _read_peaks(json_peaks.read_mona_peaks, mona, mona_text, found)
    is_gnps = frozenset(gnps)
    for k, item in enumerate(document):
        peaks = found.get(k)
        metadata = None
        if peaks is not None:
            try:
                metadata = _gnps_metadata(item) if k in is_gnps else _mona_metadata(item)
            except Exception:  # noqa: BLE001 - the reference says what is wrong
                metadata = None
        ref.add_record(k + 1, item, builder, peaks, metadata)


def _read_peaks(
    reader: Callable,
    indices: list[int],
    strings: list[str],
    found: dict[int, tuple[np.ndarray, np.ndarray]],
) -> None:
    if not indices:
        return
    lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
    ends = np.cumsum(lengths)
    starts = ends - lengths
    buf = np.frombuffer("".join(strings).encode("ascii"), dtype=np.uint8)
    mz, intensity, offsets, ok = reader(buf, starts, ends)
    bounds = offsets.tolist()
    for j in np.flatnonzero(ok).tolist():
        lo, hi = bounds[j], bounds[j + 1]
        found[indices[j]] = (mz[lo:hi], intensity[lo:hi])


def _text(value: object) -> str:
    """:func:`engine.io.spectra_json._value`, quicker for strings."""
    if type(value) is str:
        text = value.strip()
        return "" if len(text) < 5 and text.lower() in ref.MISSING else text
    return ref._value(value)


def _memo(memo: dict[str, str], key: str, value: str) -> str:
    if len(memo) < _MEMO_LIMIT:
        memo[key] = value
    return value


def _gnps_metadata(item: Mapping[str, object]) -> dict[str, str]:
    lowered: dict[str, str] = {}
    for key, value in item.items():
        text = _text(value)
        if not text or key == "peaks_json":
            continue
        low = _GNPS_KEY.get(key) if type(key) is str else None
        if low is None:
            low = str(key).strip().lower()
            if type(key) is str:
                _memo(_GNPS_KEY, key, low)
        if low not in lowered:
            lowered[low] = text
    return ref.gnps_columns(lowered)


def _mona_column(name: object) -> str | None:
    """The column of a metaData ``name`` (None when the name is empty)."""
    if type(name) is str and name in _MONA_COLUMN:
        return _MONA_COLUMN[name]
    key = ref._value(name).lower()
    column = ref.MONA_KEYS.get(key, key.replace(" ", "_").replace("/", "")) if key else None
    if type(name) is str and len(_MONA_COLUMN) < _MEMO_LIMIT:
        _MONA_COLUMN[name] = column
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
        for entry in entries if isinstance(entries, list) else ():
            if type(entry) is not dict:
                continue
            column = _mona_column(entry.get("name"))
            if column is not None and column not in out:
                value = _text(entry.get("value"))
                if value:
                    out[column] = value
    for field, column in (("inchiKey", "inchikey"), ("inchi", "inchi")):
        text = _text(compound.get(field))
        if text:
            out.setdefault(column, text)
    identifier = _text(item.get("id"))
    if identifier:
        out["id"] = identifier
    return out
