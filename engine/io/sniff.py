"""Spectrum files: sizes and errors, the format told from the content, text decoded."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from engine.report import SpectrumFileError

__all__ = [
    "FORMATS",
    "GZIP_MAGIC",
    "RawFile",
    "format_from_name",
    "sniff_format",
    "decode_text",
    "replaced_note",
    "split_lines",
    "MAX_GZIP_RATIO",
    "checked_size",
    "file_error",
]

#: A gzip file may decompress to at most this many times its size (and at least
#: :data:`MIN_GZIP_CAP` bytes).  Spectrum text compresses 4-10x (MassBank MGF: 4.9x);
#: a gzip bomb compresses about 1000x.
MAX_GZIP_RATIO = 100
#: Floor of the decompressed-size cap, so small gzip files are never refused.
MIN_GZIP_CAP = 64 * 1024 * 1024

#: Formats the readers understand.
FORMATS = ("mgf", "msp", "mzml", "mzxml", "json")

_EXTENSIONS = {
    ".mgf": "mgf",
    ".msp": "msp",
    ".msl": "msp",
    ".mzml": "mzml",
    ".mzxml": "mzxml",
    ".json": "json",
}
#: The first bytes of a gzip file.
GZIP_MAGIC = b"\x1f\x8b"
_MSP_RE = re.compile(rb"^[ \t]*(?:name|num[ _]?peaks)[ \t]*:", re.IGNORECASE | re.MULTILINE)
_MGF_RE = re.compile(rb"^[ \t]*BEGIN IONS[ \t]*\r?$", re.MULTILINE)


@dataclass(frozen=True)
class RawFile:
    """A file (``path`` as named) by its content (``data``, un-gzipped when ``gzipped``)
    and the sha256 of its bytes on disk."""

    path: str
    sha256: str
    data: bytes
    gzipped: bool


def checked_size(path: str | Path) -> int:
    """Size of ``path`` on disk; :class:`SpectrumFileError` unless it is a readable regular file."""
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError
    except OSError as exc:
        raise file_error(str(path), exc) from None
    if not stat.S_ISREG(st.st_mode):
        raise SpectrumFileError(str(path), "not a regular file (a pipe, socket or device)")
    return st.st_size


def file_error(path: str, exc: OSError) -> SpectrumFileError:
    """The one-line error for an ``OSError`` met opening or reading ``path``."""
    if isinstance(exc, FileNotFoundError):
        return SpectrumFileError(path, "file not found")
    if isinstance(exc, IsADirectoryError):
        return SpectrumFileError(path, "is a directory, not a file")
    if isinstance(exc, PermissionError):
        return SpectrumFileError(path, "permission denied")
    return SpectrumFileError(path, f"cannot read file ({exc.strerror or exc})")


def format_from_name(path: str | Path) -> str | None:
    """Format implied by the file name (``.mgf``, ``.msp``, ``.msl``, ``.mzML``, ``.mzXML``,
    ``.json``, each optionally ``.gz``)."""
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return _EXTENSIONS.get(Path(name).suffix)


def sniff_format(data: bytes) -> str | None:
    """Format told by the content.

    One of ``"mgf"``, ``"msp"``, ``"mzml"``, ``"mzxml"``, ``"json"`` (first
    non-blank character ``[`` or ``{``), ``"xml"`` (another XML), ``"binary"`` or None.
    """
    head = data[:65536]
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    if b"\x00" in head[:4096] or _binary_ratio(head[:4096]) > 0.05:
        return "binary"
    stripped = head.lstrip()
    if stripped.startswith(b"<"):
        if b"<mzML" in head or b"<indexedmzML" in head:
            return "mzml"
        if b"<mzXML" in head:
            return "mzxml"
        return "xml"
    if stripped[:1] in (b"[", b"{"):
        return "json"
    if _MGF_RE.search(head):
        return "mgf"
    if _MSP_RE.search(head):
        return "msp"
    return None


def decode_text(data: bytes) -> tuple[str, int]:
    """Text of a file as UTF-8 (BOM dropped), and the number of bytes that were not UTF-8.

    Only those bytes are read as Windows-1252 (Latin-1 where cp1252 has none), so
    one stray byte never turns the rest of a UTF-8 file into mojibake.
    """
    text = data.decode("utf-8-sig", errors="surrogateescape")
    replaced = 0
    if not text.isascii() and _ESCAPED.search(text):
        text, replaced = _ESCAPED.subn(lambda m: _cp1252_char(ord(m.group()) - 0xDC00), text)
    return text, replaced


def replaced_note(count: int) -> str:
    """The import report's note on ``count`` bytes :func:`decode_text` read as cp1252."""
    return f"{count} byte(s) that are not UTF-8 read as Windows-1252 characters"


def split_lines(text: str) -> list[str]:
    """Lines split at ``\\n``, ``\\r\\n`` and ``\\r`` only.

    ``str.splitlines`` also splits at U+0085, U+2028 and other characters that
    occur inside names (cp1252's ``…`` is byte 0x85), cutting records apart.
    """
    return _LINE_BREAK.split(text)


_LINE_BREAK = re.compile(r"\r\n|\r|\n")
#: Bytes that were not UTF-8, as ``surrogateescape`` leaves them (U+DC80-U+DCFF).
_ESCAPED = re.compile("[\udc80-\udcff]")


def _cp1252_char(byte: int) -> str:
    try:
        return bytes([byte]).decode("cp1252")
    except UnicodeDecodeError:
        return bytes([byte]).decode("latin-1")


def _binary_ratio(chunk: bytes) -> float:
    if not chunk:
        return 0.0
    text_bytes = bytes(range(32, 256)) + b"\t\n\r\f\b"
    return len(chunk.translate(None, text_bytes)) / len(chunk)
