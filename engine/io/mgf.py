"""MGF reader built on :mod:`pyteomics.mgf`, robust to bad records.

pyteomics stops at the first malformed record when it iterates a file, so the
text is split into ``BEGIN IONS`` .. ``END IONS`` blocks here (one regular
expression pass) and each block is parsed by pyteomics' own spectrum parser.
A block that fails is skipped alone, with its 1-based record number.
"""

from __future__ import annotations

import io
import math
import re
from typing import TYPE_CHECKING

import numpy as np

from engine.io._build import LibraryBuilder
from engine.io.fields import parse_ion_mode
from engine.io.stream import split_lines

if TYPE_CHECKING:  # pyteomics is imported on first use: ``import engine`` stays quick
    from pyteomics import mgf as _mgf

__all__ = [
    "ION_MODE_KEYS",
    "header_reader",
    "id_and_title",
    "read_block",
    "read_mgf_text",
    "record_title",
]

_MARKER_RE = re.compile(r"^[ \t]*(BEGIN IONS|END IONS)[ \t]*\r?$", re.MULTILINE)
#: Parameters pyteomics converts itself; an unreadable one is dropped and the record kept.
_PARSED_KEYS = ("PEPMASS", "CHARGE", "RTINSECONDS")
_NUMERIC_PARAMS = {"pepmass", "charge"}
ION_MODE_KEYS = ("ionmode", "ion_mode", "polarity", "ionization_mode")


def read_mgf_text(text: str, builder: LibraryBuilder) -> None:
    """The reference reader: MGF ``text`` (the decoded file) into ``builder``."""
    markers = list(_MARKER_RE.finditer(text))
    header_end = markers[0].start() if markers else len(text)
    reader = header_reader(split_lines(text[:header_end]), builder)
    record = 0
    start: re.Match | None = None
    for marker in markers:
        if marker.group(1) == "BEGIN IONS":
            if start is not None:
                record += 1
                lines = split_lines(text[start.start() : marker.start()])
                builder.skip(record, record_title(lines), "no END IONS before the next BEGIN IONS")
            start = marker
        elif start is not None:
            record += 1
            read_block(reader, split_lines(text[start.start() : marker.end()]), record, builder)
            start = None
    if start is not None:
        record += 1
        lines = split_lines(text[start.start() :])
        builder.skip(record, record_title(lines), "file ends inside the record (no END IONS)")
    builder.records = record


def header_reader(lines: list[str], builder: LibraryBuilder) -> _mgf.MGF:
    """pyteomics' reader carrying the file header (its ``lines``, before the first record).

    A header value pyteomics cannot convert (``CHARGE=abc``) would fail every
    record: it is dropped with a note in ``builder.notes``, a header that still
    fails is dropped whole.
    """
    for key in _PARSED_KEYS:
        own = [line for line in lines if _param_key(line) == key]
        if own and _header_failure(own) is not None:
            value = own[0].split("=", 1)[1].strip()
            builder.notes.append(f"unreadable {key} {value[:40]!r} in the file header ignored")
            lines = [line for line in lines if _param_key(line) != key]
    if _header_failure(lines) is not None:
        builder.notes.append("unreadable file header ignored")
        lines = []
    return _reader_with_header(lines)


def _header_failure(lines: list[str]) -> Exception | None:
    """Why a reader with header ``lines`` fails on a minimal record (None: it works)."""
    try:
        _reader_with_header(lines)._read_spectrum_lines(["BEGIN IONS", "1 1", "END IONS"])
    except Exception as exc:  # noqa: BLE001 - any failure means the header is unusable
        return exc
    return None


def _reader_with_header(lines: list[str]) -> _mgf.MGF:
    from pyteomics import mgf as _mgf

    source = io.StringIO("\n".join(lines))
    return _mgf.MGF(source, convert_arrays=1, read_charges=False, dtype=np.float64)


def _param_key(line: str) -> str:
    """The upper-case key of a ``KEY=value`` line ("" for other lines)."""
    key, equals, _ = line.partition("=")
    return key.strip().upper() if equals else ""


def read_block(reader: _mgf.MGF, lines: list[str], record: int, builder: LibraryBuilder) -> None:
    """Record number ``record`` (its ``lines``, ``BEGIN IONS`` to ``END IONS``) read by
    ``reader`` (of :func:`header_reader`) into ``builder``; a failure skips it alone."""
    try:
        _add_block(reader, lines, record, builder)
    except Exception as exc:  # noqa: BLE001 - a record's failure is a report line
        builder.skip(record, record_title(lines), _reason(exc, lines))


def _add_block(reader: _mgf.MGF, lines: list[str], record: int, builder: LibraryBuilder) -> None:
    spectrum, notes = _parse(reader, lines)
    params = spectrum["params"]
    pepmass = params.get("pepmass") or (None,)
    precursor = pepmass[0] if pepmass[0] is not None else math.nan
    charges = params.get("charge")
    charge = int(charges[0]) if charges else 0
    ion_mode = next((parse_ion_mode(params[k]) for k in ION_MODE_KEYS if k in params), 0)
    metadata = id_and_title({k: str(v) for k, v in params.items() if k not in _NUMERIC_PARAMS})
    mz, intensity = spectrum["m/z array"], spectrum["intensity array"]
    builder.add(record, mz, intensity, float(precursor), charge, ion_mode, metadata, notes)


def id_and_title(metadata: dict) -> dict:
    """``metadata`` given the reference's ``id`` (its SPECTRUMID) and ``title`` (else NAME)."""
    metadata["id"] = metadata.get("spectrumid", "")
    metadata.setdefault("title", metadata.get("name", ""))
    return metadata


def _parse(reader: _mgf.MGF, lines: list[str]) -> tuple[dict, list[str]]:
    """pyteomics' parse of one block; retried without an unreadable PEPMASS/CHARGE/RTINSECONDS."""
    from pyteomics.auxiliary import PyteomicsError

    try:
        return reader._read_spectrum_lines(lines), []
    except (PyteomicsError, ValueError, TypeError) as exc:
        first = exc
    for key in _PARSED_KEYS:
        hits = [i for i, line in enumerate(lines) if line.lstrip().upper().startswith(key + "=")]
        if not hits:
            continue
        trial = [line for i, line in enumerate(lines) if i not in hits]
        try:
            spectrum = reader._read_spectrum_lines(trial)
        except (PyteomicsError, ValueError, TypeError):
            continue
        value = lines[hits[0]].split("=", 1)[1].strip()
        return spectrum, [f"unreadable {key} {value!r} ignored"]
    raise first


def _reason(exc: Exception, lines: list[str]) -> str:
    """A one-line reason; for a bad peak line, the line itself."""
    message = getattr(exc, "message", None) or str(exc)
    if "Line:" in message:
        for line in lines[1:]:
            stripped = line.strip()
            if not stripped or "=" in stripped or stripped[0] in "#;!/" or stripped == "END IONS":
                continue
            try:
                [float(t) for t in stripped.split()[:2]]
            except ValueError:
                return f"unreadable peak line {stripped[:60]!r}"
    return split_lines(message.strip())[0][:120] if message.strip() else type(exc).__name__


def record_title(lines: list[str]) -> str:
    """The TITLE of a record's ``lines`` ("" when it has none)."""
    for line in lines:
        stripped = line.strip()
        if stripped.upper().startswith("TITLE="):
            return stripped[6:].strip()
    return ""
