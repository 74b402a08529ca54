"""Spectrum files: sizes and errors, the format told from the content, text decoded, and
the content read in blocks or whole, hashed (sha256 of the bytes on disk) beside the parse.

:class:`FileStream` reads, hashes and un-gzips on a thread of its own (``hashlib`` and
``zlib`` release the GIL) and hands the content over through a short queue, so memory
stays bounded, with one-line errors for missing, unreadable, truncated or corrupt gzip
files and a cap against gzip bombs.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import queue
import re
import stat
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from engine.report import SpectrumFileError

__all__ = [
    "BLOCK_BYTES",
    "FORMATS",
    "GZIP_MAGIC",
    "MAX_GZIP_RATIO",
    "FileStream",
    "HashedBytes",
    "RawFile",
    "checked_size",
    "decode_text",
    "file_digest",
    "file_error",
    "format_from_name",
    "replaced_note",
    "sniff_format",
    "split_lines",
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


#: Bytes read from disk at a time.
BLOCK_BYTES = 1 << 22
#: Blocks the reading thread may be ahead of the parse.
_AHEAD = 4
_DONE = object()


class _Hashing:
    """A file object that hashes and counts what is read through it."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.sha = hashlib.sha256()
        self.done = 0

    def read(self, size: int = -1) -> bytes:
        block = self.raw.read(size)
        self.sha.update(block)
        self.done += len(block)
        return block


class FileStream:
    """The content of ``path`` in blocks, read ahead on a thread.

    It has the file's ``path`` (as named), ``size`` on disk, whether it is
    ``gzipped``, and its ``sha256``, set once the last block was handed out.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.size = checked_size(path)
        try:
            self._file = open(path, "rb")  # noqa: SIM115 - closed by the reading thread
        except OSError as exc:
            raise file_error(self.path, exc) from None
        self.gzipped = self._file.read(2) == GZIP_MAGIC
        self._file.seek(0)
        self.sha256 = ""
        self._reader = _Hashing(self._file)
        self._queue: queue.Queue = queue.Queue(_AHEAD)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="simms-read", daemon=True)
        self._thread.start()

    def blocks(self) -> Iterator[tuple[bytes, int]]:
        """``(content, disk bytes read so far)`` per block, in order; then sets ``sha256``.

        Raises :class:`SpectrumFileError` (unreadable, truncated or corrupt gzip, gzip bomb).
        """
        while True:
            item = self._queue.get()
            if item is _DONE:
                self.sha256 = self._reader.sha.hexdigest()
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        """Stop the reading thread (when the parse stops early)."""
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._queue.get(timeout=0.05)
            except queue.Empty:
                pass
        self._thread.join()

    # -- the reading thread ---------------------------------------------------------
    def _put(self, item: object) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            with self._file:
                for block in self._content():
                    if not self._put((block, self._reader.done)):
                        return
                while self._reader.read(BLOCK_BYTES):  # hash what follows the gzip data
                    pass
            self._put(_DONE)
        except BaseException as exc:  # noqa: BLE001 - handed to the parse, raised there
            self._put(exc)

    def _content(self) -> Iterator[bytes]:
        if not self.gzipped:
            while block := self._read_disk():
                yield block
            return
        cap = max(MIN_GZIP_CAP, MAX_GZIP_RATIO * self.size)
        out = 0
        try:
            with gzip.GzipFile(fileobj=self._reader) as stream:
                while block := stream.read(BLOCK_BYTES):
                    out += len(block)
                    if out > cap:
                        raise SpectrumFileError(
                            self.path,
                            f"decompresses to more than {cap // 2**20} MiB ({MAX_GZIP_RATIO}x "
                            "its size); refused as a gzip bomb",
                        )
                    yield block
        except EOFError:
            raise SpectrumFileError(self.path, "truncated gzip (the file ends early)") from None
        except SpectrumFileError:
            raise
        except (gzip.BadGzipFile, zlib.error, OSError) as exc:
            raise SpectrumFileError(self.path, f"corrupt gzip ({exc})") from None

    def _read_disk(self) -> bytes:
        try:
            return self._reader.read(BLOCK_BYTES)
        except OSError as exc:
            raise file_error(self.path, exc) from None


class HashedBytes:
    """The bytes of a file, ``data``, whose sha256 is worked out on a thread beside the parse."""

    #: Below this many bytes the digest is worked out at once (a thread costs more).
    INLINE = 1 << 20

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._sha = hashlib.sha256()
        self._thread: threading.Thread | None = None
        if len(data) < self.INLINE:
            self._sha.update(data)
        else:
            self._thread = threading.Thread(
                target=self._sha.update, args=(data,), name="simms-hash", daemon=True
            )
            self._thread.start()

    @property
    def sha256(self) -> str:
        """Hex digest of :attr:`data` (waits for the hashing thread)."""
        if self._thread is not None:
            self._thread.join()
        return self._sha.hexdigest()


def file_digest(path: str | Path, progress: Callable[[int, int], object] | None = None) -> str:
    """sha256 of the bytes of ``path``, read in blocks; ``progress(done, size)`` after each."""
    size = checked_size(path)
    try:
        with open(path, "rb") as fh:
            reader = _Hashing(fh)
            while reader.read(BLOCK_BYTES):
                if progress is not None:
                    progress(reader.done, size)
    except OSError as exc:
        raise file_error(str(path), exc) from None
    return reader.sha.hexdigest()
