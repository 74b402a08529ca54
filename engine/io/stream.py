"""Files read in blocks or whole, hashed (sha256 of the bytes on disk) on a thread beside the parse.

:class:`FileStream` reads, hashes and un-gzips on a thread of its own (``hashlib`` and
``zlib`` release the GIL) and hands the content over through a short queue, so memory
stays bounded, with one-line errors for missing, unreadable, truncated or corrupt gzip
files and a cap against gzip bombs.
"""

from __future__ import annotations

import gzip
import hashlib
import queue
import threading
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from engine.io.sniff import GZIP_MAGIC, MAX_GZIP_RATIO, MIN_GZIP_CAP, checked_size, file_error
from engine.report import SpectrumFileError

__all__ = ["BLOCK_BYTES", "FileStream", "HashedBytes", "file_digest"]

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

        Raises
        ------
        SpectrumFileError
            Unreadable file, truncated or corrupt gzip, gzip bomb.
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
    digest = hashlib.sha256()
    done = 0
    try:
        with open(path, "rb") as fh:
            while block := fh.read(BLOCK_BYTES):
                digest.update(block)
                done += len(block)
                if progress is not None:
                    progress(done, size)
    except OSError as exc:
        raise file_error(str(path), exc) from None
    return digest.hexdigest()
