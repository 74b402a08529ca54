"""GNPS and MoNA library JSON reader (one format, ``"json"``, told apart per record).

Both are a JSON list of spectrum objects (a single object is read as one record):

- **GNPS** records carry ``peaks_json``, a JSON string (or list) of ``[[mz, int], ...]``,
  and flat keys such as ``Precursor_MZ``, ``Compound_Name``, ``Ion_Mode``, ``Adduct``,
  ``Smiles``, ``INCHI``, ``InChIKey_smiles``, ``spectrum_id``;
- **MoNA** records carry ``spectrum``, a string ``"mz:int mz:int ..."``, the compound
  name in ``compound[0].names[0].name`` and ``{name, value}`` lists in
  ``compound[0].metaData`` and the top-level ``metaData``.

Metadata gets the column names of the MGF and MSP readers (``name``, ``adduct``,
``smiles``, ``inchikey``, ``formula`` ...).  A record with no peaks, an unreadable
precursor m/z or a non-numeric peak is skipped with its 1-based position and the
reason, as is a MoNA record whose MS level is not 2.  :mod:`json` parses the file
(this is the reference reader); nesting too deep for it is a one-line error.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping

import numpy as np

from engine.io._build import LibraryBuilder
from engine.io.fields import charge_from_adduct, parse_charge_text, parse_ion_mode
from engine.report import SpectrumFileError

__all__ = [
    "GNPS_KEYS",
    "MISSING",
    "MONA_KEYS",
    "add_record",
    "as_text",
    "gnps_metadata",
    "mona_metadata",
    "parse_document",
    "precursor_of",
    "read_json_text",
    "record_fields",
    "refused_level",
    "skip_record",
]

#: Values GNPS writes for "unknown"; such a key is left out.
MISSING = {"", "n/a", "na", "null", "none", "nan", " "}
#: GNPS key (lowercased) -> our column; the first key present wins.
GNPS_KEYS: dict[str, tuple[str, ...]] = {
    "name": ("compound_name", "name"),
    "adduct": ("adduct", "precursor_type"),
    "smiles": ("smiles",),
    "inchi": ("inchi",),
    "inchikey": ("inchikey", "inchikey_smiles", "inchikey_inchi"),
    "formula": ("formula", "formula_smiles", "formula_inchi"),
    "id": ("spectrum_id", "spectrumid", "id"),
}
#: MoNA metaData name (lowercased) -> our column.
MONA_KEYS = {
    "precursor type": "adduct",
    "ionization mode": "ionmode",
    "molecular formula": "formula",
    "inchikey": "inchikey",
    "inchi": "inchi",
    "smiles": "smiles",
}
_MS_LEVEL_RE = re.compile(r"^\s*(?:ms)?\s*(\d+)\s*$", re.IGNORECASE)


class _RecordError(ValueError):
    """A record that cannot be read (the message is the report's reason)."""


def read_json_text(text: str, builder: LibraryBuilder) -> None:
    """The reference reader: GNPS or MoNA JSON ``text`` (the decoded file) into ``builder``.

    Raises :class:`SpectrumFileError` when the text is not valid JSON, nests too
    deeply, or is neither a list nor an object.
    """
    for record, item in enumerate(parse_document(text, builder), start=1):
        add_record(record, item, builder)


def _json_int(digits: str) -> int | float:
    """A JSON integer as :mod:`json` reads it; one too long for ``int()`` (over 4,300
    digits) as the float it denotes, so the record is judged, not the whole file."""
    try:
        return int(digits)
    except ValueError:
        return float(digits)


def parse_document(text: str, builder: LibraryBuilder) -> list:
    """The records of JSON ``text`` (a single object is one); sets ``builder.records``."""
    try:
        document = json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        raise SpectrumFileError(
            builder.path, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise SpectrumFileError(builder.path, "JSON nested too deeply") from None
    if isinstance(document, dict):
        document = [document]
    if not isinstance(document, list):
        raise SpectrumFileError(builder.path, "JSON holds neither a list of spectra nor one")
    builder.records = len(document)
    return document


def add_record(
    record: int,
    item: object,
    builder: LibraryBuilder,
    peaks: tuple[np.ndarray, np.ndarray] | None = None,
    metadata: dict[str, str] | None = None,
) -> None:
    """Hand one record to ``builder`` (a failure is a skipped record).

    ``peaks`` and ``metadata``, when given, were worked out by the fast reader.
    """
    try:
        fields = record_fields(item, peaks, metadata)
    except Exception as exc:  # noqa: BLE001 - a record's failure is a report line
        skip_record(record, item, builder, exc)
        return
    builder.add(record, *fields)


def skip_record(record: int, item: object, builder: LibraryBuilder, exc: Exception) -> None:
    """Tell ``builder`` that ``record`` was skipped because :func:`record_fields` raised ``exc``."""
    if isinstance(exc, _RecordError):
        builder.skip(record, _title(item), str(exc))
    else:
        reason = f"unreadable record ({type(exc).__name__}: {exc})"[:160]
        builder.skip(record, _title(item), reason)


def record_fields(
    item: object,
    peaks: tuple[np.ndarray, np.ndarray] | None,
    metadata: dict[str, str] | None,
) -> tuple:
    """``(mz, intensity, precursor_mz, charge, ion_mode, metadata)`` of a record.

    ``peaks`` and ``metadata`` as in :func:`add_record`; raises when it is skipped.
    """
    if not isinstance(item, dict):
        raise _RecordError(f"not a JSON object but {type(item).__name__}")
    if "peaks_json" in item:
        mz, intensity = peaks if peaks is not None else _gnps_peaks(item["peaks_json"])
        metadata = metadata if metadata is not None else gnps_metadata(item)
    elif "spectrum" in item:
        mz, intensity = peaks if peaks is not None else _mona_peaks(item["spectrum"])
        metadata = metadata if metadata is not None else mona_metadata(item)
        level = metadata.get("ms_level", "")
        if refused_level(level):
            raise _RecordError(f"MS level {level!r} (only MS2 spectra are read)")
    else:
        raise _RecordError("no peaks (neither 'peaks_json' nor 'spectrum')")
    if len(mz) == 0:
        raise _RecordError("no peaks")
    precursor = precursor_of(metadata.pop("precursor_mz", ""))
    adduct = metadata.get("adduct", "")
    charge = parse_charge_text(metadata.pop("charge", None))
    if not charge:
        charge = charge_from_adduct(adduct)
    metadata["title"] = metadata.get("name", "")
    return mz, intensity, precursor, charge, parse_ion_mode(metadata.get("ionmode")), metadata


def refused_level(level: str) -> bool:
    """Whether a MoNA record of MS level ``level`` is skipped (only MS2 spectra are read)."""
    found = _MS_LEVEL_RE.match(level)
    return bool(level) and (found is None or int(found.group(1)) != 2)


def precursor_of(text: str) -> float:
    """The precursor m/z of a metadata text (NaN when empty; raises when unreadable)."""
    if text == "":
        return math.nan
    try:
        return float(text.split()[0])
    except (ValueError, IndexError):
        raise _RecordError(f"unreadable precursor m/z {text[:40]!r}") from None


def as_text(value: object) -> str:
    """A metadata value as text ("" for GNPS' N/A and friends)."""
    if value is None or isinstance(value, dict | list):
        return ""
    text = str(value).strip()
    return "" if text.lower() in MISSING else text


def _gnps_peaks(peaks: object) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(peaks, str):
        try:
            peaks = json.loads(peaks, parse_int=_json_int)
        except (json.JSONDecodeError, RecursionError):
            raise _RecordError("unreadable 'peaks_json' (not a JSON list of pairs)") from None
    if not isinstance(peaks, list):
        raise _RecordError("'peaks_json' is not a list of [m/z, intensity] pairs")
    if not peaks:
        return np.empty(0), np.empty(0)
    try:
        values = np.asarray(peaks, dtype=np.float64)
    except (ValueError, TypeError):
        values = None
    if values is None or values.ndim != 2 or values.shape[1] != 2:
        for k, pair in enumerate(peaks, start=1):
            if not (isinstance(pair, list) and len(pair) == 2):
                raise _RecordError(f"peak {k} in 'peaks_json' is not an [m/z, intensity] pair")
            try:
                [float(v) for v in pair]
            except (ValueError, TypeError):
                raise _RecordError(
                    f"non-numeric peak {k} in 'peaks_json': {str(pair)[:40]}"
                ) from None
        raise _RecordError("'peaks_json' is not a list of [m/z, intensity] pairs")
    return values[:, 0].copy(), values[:, 1].copy()


def _mona_peaks(spectrum: object) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(spectrum, str):
        raise _RecordError("'spectrum' is not a string of 'm/z:intensity' pairs")
    mz: list[float] = []
    intensity: list[float] = []
    for word in spectrum.split():
        left, colon, right = word.partition(":")
        try:
            if not colon:
                raise ValueError
            mz.append(float(left))
            intensity.append(float(right))
        except ValueError:
            raise _RecordError(f"non-numeric peak {word[:40]!r} in 'spectrum'") from None
    return np.asarray(mz, dtype=np.float64), np.asarray(intensity, dtype=np.float64)


def gnps_metadata(item: Mapping[str, object]) -> dict[str, str]:
    """The metadata of a GNPS record."""
    lowered: dict[str, str] = {}
    for key, value in item.items():
        text = as_text(value)
        if key != "peaks_json" and text:
            lowered.setdefault(str(key).strip().lower(), text)
    out = {k: v for k, v in lowered.items() if k not in ("precursor_mz", "ion_mode")}
    for column, keys in GNPS_KEYS.items():
        found = next((lowered[k] for k in keys if lowered.get(k)), "")
        if found:
            out[column] = found
    out["precursor_mz"] = lowered.get("precursor_mz") or lowered.get("precursormz", "")
    if lowered.get("ion_mode"):
        out["ionmode"] = lowered["ion_mode"]
    if lowered.get("ms_level"):
        out["ms_level"] = lowered["ms_level"]
    return out


def mona_metadata(item: Mapping[str, object]) -> dict[str, str]:
    """The metadata of a MoNA record."""
    out: dict[str, str] = {}
    compounds = item.get("compound")
    compound = compounds[0] if isinstance(compounds, list) and compounds else {}
    compound = compound if isinstance(compound, dict) else {}
    names = compound.get("names")
    if isinstance(names, list) and names and isinstance(names[0], dict):
        name = as_text(names[0].get("name"))
        if name:
            out["name"] = name
    for entries in (item.get("metaData"), compound.get("metaData")):
        for entry in entries if isinstance(entries, list) else ():
            if not isinstance(entry, dict):
                continue
            key, value = as_text(entry.get("name")).lower(), as_text(entry.get("value"))
            if key and value:
                column = MONA_KEYS.get(key, key.replace(" ", "_").replace("/", ""))
                out.setdefault(column, value)
    for field, column in (("inchiKey", "inchikey"), ("inchi", "inchi")):
        text = as_text(compound.get(field))
        if text:
            out.setdefault(column, text)
    identifier = as_text(item.get("id"))
    if identifier:
        out["id"] = identifier
    return out


def _title(item: object) -> str:
    if not isinstance(item, dict):
        return ""
    for key in ("Compound_Name", "compound_name", "spectrum_id", "id"):
        text = as_text(item.get(key))
        if text:
            return text[:80]
    return ""
