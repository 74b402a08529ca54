"""Fast MGF reader: numba scans the bytes, Python handles each record's parameters.

It gives exactly what the reference reader (:func:`engine.io.mgf.read_mgf_text`,
pyteomics on decoded text) gives: the same records, peaks bit for bit, metadata
and import report.  It gets there by doing only what it can prove identical:

- records and their lines are found in the bytes by :mod:`engine.io.mgf_scan`,
  with the reference's own rules (markers, ``\\r\\n`` / ``\\r`` / ``\\n`` line
  ends, comment characters, ``=`` makes a parameter line);
- peak lines ``number<blank>number`` become float64 there, when the value is
  provably the one ``float()`` gives;
- parameter lines are decoded and put in a dict per record, as pyteomics does;
- any record with something else in it (a third peak column, ``inf``, a
  control or non-ASCII character starting a line, an unusual PEPMASS, CHARGE
  or RTINSECONDS, ...) goes to the reference parser, alone.
"""

from __future__ import annotations

import math

import numpy as np
from pyteomics import auxiliary as _aux

from engine.io import mgf_scan as scan
from engine.io._build import LibraryBuilder, parse_ion_mode
from engine.io.mgf import ION_MODE_KEYS, header_reader, read_block, record_title
from engine.io.sniff import decode_text, split_lines

__all__ = ["read_mgf_bytes"]

_BOM = b"\xef\xbb\xbf"
_COMMENTS = "#;!/"
#: CHARGE texts seen so far and their charge; only short texts are kept.
_CHARGES: dict[str, int] = {}
_CHARGE_MEMO_LIMIT = 4096


class _Unsure(Exception):
    """The record holds something only the reference parser should judge."""


def read_mgf_bytes(data: bytes, builder: LibraryBuilder) -> None:
    """Parse MGF ``data`` (the file's bytes, un-gzipped) into ``builder``.

    Parameters
    ----------
    data : bytes
        The whole file.  Bytes that are not UTF-8 are read as Windows-1252, with
        a file note, as :func:`engine.io.sniff.decode_text` does.
    builder : LibraryBuilder
        Receives every record (kept or skipped).
    """
    start = len(_BOM) if data.startswith(_BOM) else 0
    buf = np.frombuffer(data, dtype=np.uint8)
    is_ascii = data.isascii()
    if not is_ascii:
        replaced = scan.not_utf8(buf, start)
        if replaced:
            builder.notes.append(
                f"{replaced} byte(s) that are not UTF-8 read as Windows-1252 characters"
            )
    decode = _decode_ascii if is_ascii else _decode
    kinds, first, last, header_end = scan.find_records(buf, start)
    reader = header_reader(split_lines(decode(data[start:header_end])), builder)
    header = dict(reader.header)
    status, peak_lo, peak_hi, meta_lo, meta_hi, simple, mz, intensity, slow = scan.scan_records(
        buf, first, last, kinds
    )
    _convert_slow(data, slow, mz, intensity)
    for r, kind in enumerate(kinds.tolist()):
        record = r + 1
        lo, hi = int(first[r]), int(last[r])
        if kind == scan.EVENT_NO_END:
            lines = split_lines(decode(data[lo:hi]))
            builder.skip(record, record_title(lines), "no END IONS before the next BEGIN IONS")
            continue
        if kind == scan.EVENT_EOF:
            lines = split_lines(decode(data[lo:hi]))
            builder.skip(record, record_title(lines), "file ends inside the record (no END IONS)")
            continue
        if status[r] == scan.FAST:
            params = dict(header)
            m_lo, m_hi = int(meta_lo[r]), int(meta_hi[r])
            if m_lo >= 0 and simple[r]:
                _simple_params(decode(data[m_lo:m_hi]), params)
            elif m_lo >= 0:
                _block_params(split_lines(decode(data[lo:hi])), params)
            try:
                _add_fast(
                    builder,
                    record,
                    params,
                    mz[peak_lo[r] : peak_hi[r]],
                    intensity[peak_lo[r] : peak_hi[r]],
                )
                continue
            except _Unsure:
                pass
        read_block(reader, split_lines(decode(data[lo:hi])), record, builder)
    builder.records = len(kinds)


def _convert_slow(data: bytes, slow: np.ndarray, mz: np.ndarray, intensity: np.ndarray) -> None:
    """Numbers the scanner could not prove, converted by ``float()`` itself."""
    if not len(slow):
        return
    values = np.array([float(data[lo:hi]) for _, lo, hi in slow.tolist()], dtype=np.float64)
    where, column = slow[:, 0] // 2, slow[:, 0] % 2
    mz[where[column == 0]] = values[column == 0]
    intensity[where[column == 1]] = values[column == 1]


def _decode_ascii(chunk: bytes) -> str:
    return chunk.decode("ascii")


def _decode(chunk: bytes) -> str:
    """``chunk`` as :func:`~engine.io.sniff.decode_text` reads it inside a file."""
    try:
        return chunk.decode("utf-8")
    except UnicodeDecodeError:
        # the BOM makes decode_text drop exactly that one, never one of the chunk's
        return decode_text(_BOM + chunk)[0]


def _simple_params(text: str, params: dict) -> None:
    """Lines ``KEY=value`` (key first on its line) into ``params`` as pyteomics does."""
    for line in text.split("\n"):
        key, _, value = line.partition("=")
        params[key.lower()] = value.strip()


def _block_params(lines: list[str], params: dict) -> None:
    """The parameter lines of a whole record (first line BEGIN IONS) into ``params``."""
    for line in lines[1:]:
        stripped = line.strip()
        if stripped and stripped[0] not in _COMMENTS and "=" in stripped:
            key, value = stripped.split("=", 1)
            params[key.lower()] = value.strip()


def _charge(text: str) -> int:
    """First charge of a CHARGE text as pyteomics reads it (memoised)."""
    known = _CHARGES.get(text)
    if known is not None:
        return known
    try:
        charges = _aux._parse_charge(text, list_only=True)  # noqa: SLF001 - pyteomics' own rule
        value = int(charges[0]) if charges else 0
    except Exception as exc:  # noqa: BLE001 - the reference decides what to do with it
        raise _Unsure from exc
    if len(text) <= 32 and len(_CHARGES) < _CHARGE_MEMO_LIMIT:
        _CHARGES[text] = value
    return value


def _add_fast(
    builder: LibraryBuilder,
    record: int,
    params: dict,
    mz: np.ndarray,
    intensity: np.ndarray,
) -> None:
    """One record whose peaks are parsed; raises :class:`_Unsure` to hand it back."""
    precursor = math.nan
    pepmass = params.get("pepmass")
    if pepmass is not None:
        tokens = pepmass.split()
        if not 1 <= len(tokens) <= 2:
            raise _Unsure
        try:
            values = [float(t) for t in tokens]
        except ValueError:
            raise _Unsure from None
        precursor = values[0]
    charges = params.get("charge")
    if isinstance(charges, str):
        charge = _charge(charges)
    else:  # from the file header, already parsed by pyteomics
        charge = int(charges[0]) if charges else 0
    metadata = {k: v for k, v in params.items() if k != "pepmass" and k != "charge"}
    if "rtinseconds" in metadata:
        try:
            metadata["rtinseconds"] = repr(float(metadata["rtinseconds"]))
        except ValueError:
            raise _Unsure from None
    ion_mode = 0
    for key in ION_MODE_KEYS:
        if key in params:
            ion_mode = parse_ion_mode(params[key])
            break
    metadata["id"] = metadata.get("spectrumid", "")
    metadata.setdefault("title", metadata.get("name", ""))
    builder.add(
        record,
        mz=mz,
        intensity=intensity,
        precursor_mz=precursor,
        charge=charge,
        ion_mode=ion_mode,
        metadata=metadata,
    )
