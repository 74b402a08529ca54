"""The fast MGF reader over a stream: the file parsed in bounded chunks.

The content comes in blocks (from :class:`engine.io.stream.FileStream`, or
slices of bytes in memory); blocks are joined until :data:`CHUNK_BYTES` are
pending, then cut at the start of the last ``BEGIN IONS`` marker line (as
:func:`engine.io.mgf_scan.find_records` recognises markers) and the part
before it is parsed by :func:`engine.io.mgf_fast.read_chunk`.  A marker line
always opens a new record whatever came before it, so every chunk parses as
it would inside the whole file: the file header is read from the first
chunk, record numbers go on from chunk to chunk, and a record still open at
the end of a chunk is one the next ``BEGIN IONS`` cut short.  A
:class:`~engine.io.chunked_build.ChunkedBuilder` packs each chunk's records
as they come, so memory follows the library, not the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from engine.io import mgf_fast
from engine.io._build import LibraryBuilder, Progress, gc_paused, report_progress

__all__ = ["CHUNK_BYTES", "last_record_start", "read_mgf_blocks", "read_mgf_bytes"]

#: Content bytes parsed at a time (a record longer than that makes its chunk longer).
CHUNK_BYTES = 1 << 22
#: Scan the next chunk on a second thread while the current one's records are read.
SCAN_AHEAD = True
_BEGIN = re.compile(rb"(?m)^[ \t]*BEGIN IONS[ \t]*\r?\n")


def last_record_start(data: bytes, after: int = 0) -> int:
    """Start of the last complete ``BEGIN IONS`` line of ``data`` after ``after`` (0: none).

    The line must start after a ``\\n`` and its own ``\\n`` must be in ``data``.
    """
    end = len(data)
    while True:
        at = data.rfind(b"BEGIN IONS", after, end)
        if at <= after:
            return 0
        line = data.rfind(b"\n", 0, at) + 1
        if line > after and _BEGIN.match(data, line):
            return line
        end = at


def read_mgf_blocks(
    blocks: Iterable[tuple[bytes | memoryview, int]],
    total: int,
    builder: LibraryBuilder,
    progress: Progress | None = None,
) -> None:
    """Parse MGF content arriving in ``blocks`` into ``builder``.

    Parameters
    ----------
    blocks : iterable of (bytes, int)
        The content in order, each block with the progress position reached
        once it is read (bytes on disk, or of the content).
    total : int
        The position at the end, for ``progress``.
    builder : LibraryBuilder
        Receives every record; a :class:`~engine.io.chunked_build.ChunkedBuilder`
        is told where each chunk ends.
    progress : callable, optional
        ``progress(done, total)`` now and then; returning ``False`` stops the
        load with :class:`~engine.io._build.LoadCancelled`.
    """
    file = mgf_fast.FileState(builder)
    # the byte scans of chunk k + 1 run on a thread (numba without the GIL) while
    # the records of chunk k are read here
    with gc_paused(), ThreadPoolExecutor(1, thread_name_prefix="simms-scan") as pool:
        waiting: list[tuple[Future, int, int, int]] = []

        def read(final: bool) -> None:
            future, start, end, length = waiting.pop(0)
            report = None
            if progress is not None:

                def report(at: int) -> None:
                    done = start + (end - start) * at // max(length, 1)
                    report_progress(progress, done, total, builder.path)

            mgf_fast.read_chunk(future.result(), file, final, report)

        chunks = 0
        for data, start, end in _chunks(blocks, total):
            if SCAN_AHEAD:
                scanned: Future = pool.submit(mgf_fast.scan_chunk, data, not chunks)
            else:
                scanned = Future()
                scanned.set_result(mgf_fast.scan_chunk(data, not chunks))
            waiting.append((scanned, start, end, len(data)))
            chunks += 1
            if len(waiting) > 1:
                read(False)
        read(True)
    file.finish()


def _chunks(
    blocks: Iterable[tuple[bytes | memoryview, int]], total: int
) -> Iterator[tuple[bytes, int, int]]:
    """Chunks of the content (see the module notes), each with its span of progress positions."""
    pending: list[bytes | memoryview] = []
    size = 0
    want = CHUNK_BYTES
    before = 0  # progress position where the pending content starts
    first = True
    for block, position in blocks:
        pending.append(block)
        size += len(block)
        if size < want:
            continue
        data = b"".join(pending)
        cut = last_record_start(data, 3 if first else 0)
        if not cut:  # one record (or the header) longer than a chunk: read on
            pending, want = [data], size + CHUNK_BYTES
            continue
        yield data[:cut], before, position
        first = False
        before = position
        pending, size, want = [data[cut:]], len(data) - cut, CHUNK_BYTES
    yield b"".join(pending), before, total


def read_mgf_bytes(data: bytes, builder: LibraryBuilder, progress: Progress | None = None) -> None:
    """Parse MGF ``data`` (the whole content, un-gzipped) into ``builder``, chunk by chunk.

    ``progress(done, total)`` counts bytes of ``data``.
    """
    view = memoryview(data)
    step = CHUNK_BYTES
    blocks = ((view[i : i + step], min(i + step, len(data))) for i in range(0, len(data), step))
    read_mgf_blocks(blocks, len(data), builder, progress)
