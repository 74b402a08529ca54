"""Open a spectrum file: read its bytes, un-gzip, and tell its format from the content."""

from __future__ import annotations

import gzip
import hashlib
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

from engine.io.report import SpectrumFileError

__all__ = ["FORMATS", "RawFile", "open_raw", "format_from_name", "sniff_format", "decode_text"]

#: Formats the readers understand.
FORMATS = ("mgf", "msp", "mzml")

_EXTENSIONS = {".mgf": "mgf", ".msp": "msp", ".mzml": "mzml"}
_GZIP_MAGIC = b"\x1f\x8b"
_MSP_RE = re.compile(rb"^[ \t]*name[ \t]*:", re.IGNORECASE | re.MULTILINE)
_MGF_RE = re.compile(rb"^[ \t]*BEGIN IONS[ \t]*\r?$", re.MULTILINE)


@dataclass(frozen=True)
class RawFile:
    """A file's bytes, as on disk and uncompressed.

    Attributes
    ----------
    path : str
        The file as named by the caller.
    sha256 : str
        Hex digest of the bytes on disk.
    data : bytes
        Content, un-gzipped when the file was gzip.
    gzipped : bool
        Whether the file was gzip.
    """

    path: str
    sha256: str
    data: bytes
    gzipped: bool


def open_raw(path: str | Path, disk_bytes: bytes | None = None) -> RawFile:
    """Read (or take) a file's bytes, hash them and un-gzip them.

    Raises
    ------
    SpectrumFileError
        Missing or unreadable file, truncated or corrupt gzip, empty file.
    """
    name = str(path)
    if disk_bytes is None:
        disk_bytes = read_bytes(path)
    sha = hashlib.sha256(disk_bytes).hexdigest()
    gzipped = disk_bytes[:2] == _GZIP_MAGIC
    data = disk_bytes
    if gzipped:
        try:
            data = gzip.decompress(disk_bytes)
        except EOFError:
            raise SpectrumFileError(name, "truncated gzip (the file ends early)") from None
        except (gzip.BadGzipFile, zlib.error, OSError) as exc:
            raise SpectrumFileError(name, f"corrupt gzip ({exc})") from None
    if not data.strip():
        raise SpectrumFileError(name, "empty file" + (" (inside gzip)" if gzipped else ""))
    return RawFile(name, sha, data, gzipped)


def read_bytes(path: str | Path) -> bytes:
    """The bytes of ``path``, with a :class:`SpectrumFileError` for the usual failures."""
    p = Path(path)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise SpectrumFileError(str(path), "file not found") from None
    except IsADirectoryError:
        raise SpectrumFileError(str(path), "is a directory, not a file") from None
    except PermissionError:
        raise SpectrumFileError(str(path), "permission denied") from None
    except OSError as exc:
        raise SpectrumFileError(str(path), f"cannot read file ({exc.strerror or exc})") from None


def format_from_name(path: str | Path) -> str | None:
    """Format implied by the file name (``.mgf``, ``.msp``, ``.mzML``, each optionally ``.gz``)."""
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return _EXTENSIONS.get(Path(name).suffix)


def sniff_format(data: bytes) -> str | None:
    """Format told by the content: ``"mgf"``, ``"msp"``, ``"mzml"``, ``"binary"`` or None."""
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
    if _MGF_RE.search(head):
        return "mgf"
    if _MSP_RE.search(head):
        return "msp"
    return None


def decode_text(data: bytes) -> str:
    """Text of a file: UTF-8 (BOM dropped), else Latin-1 (never fails)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _binary_ratio(chunk: bytes) -> float:
    if not chunk:
        return 0.0
    text_bytes = bytes(range(32, 256)) + b"\t\n\r\f\b"
    return len(chunk.translate(None, text_bytes)) / len(chunk)
