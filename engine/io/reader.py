"""``read_library``: one entry point for MGF, MSP, mzML, mzXML and JSON files, plain or gzip."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

from engine.io._build import LibraryBuilder, LoadCancelled, Progress, gc_paused, report_progress
from engine.io.chunked_build import ChunkedBuilder
from engine.io.mgf_stream import read_mgf_blocks, read_mgf_bytes
from engine.io.msp import read_msp_text
from engine.io.msp_fast import read_msp_fast
from engine.io.sniff import (
    FORMATS,
    GZIP_MAGIC,
    RawFile,
    checked_size,
    decode_text,
    file_error,
    format_from_name,
    replaced_note,
    sniff_format,
)
from engine.io.spectra_json import read_json_text
from engine.io.spectra_json_fast import read_json_bytes
from engine.io.stream import FileStream, HashedBytes
from engine.library import LibrarySource, SpectrumLibrary
from engine.report import SpectrumFileError

__all__ = ["PARSERS", "LoadCancelled", "read_library"]

#: Parsers :func:`read_library` offers for MGF (the reference is pyteomics, record by record).
PARSERS = ("auto", "fast", "reference")
#: ``parser="auto"`` reads plain files up to this size with the reference parser: the
#: fast one's first use compiles its kernels (5-9 s of CPU), more than the reference
#: takes for such a file (~0.2 s per MB); both give the same library.
SMALL_FILE_BYTES = 8 << 20

_NOT_FOUND_HINT = {
    "mgf": "no 'BEGIN IONS' line found",
    "msp": "no 'Name:' line found",
    "mzml": "no <mzML> element found",
    "mzxml": "no <mzXML> element found",
    "json": "no JSON list or object found",
}
_TEXT_READERS = {"mgf": "engine.io.mgf:read_mgf_text", "msp": read_msp_text, "json": read_json_text}
#: Fast readers of decoded text, each proven equal to its reference above.
_FAST_TEXT_READERS = {"msp": read_msp_fast}
#: Fast readers of the bytes (they decode what they need themselves).
_FAST_BYTES_READERS = {"json": read_json_bytes}
#: Readers named by module, imported on first use (pyteomics, psims and lxml take
#: half a second to import): ``import engine`` stays quick.
_BYTES_READERS = {
    "mzml": "engine.io.mzml:read_mzml_bytes",
    "mzxml": "engine.io.mzxml:read_mzxml_bytes",
}


def _reader(reader: str | Callable) -> Callable:
    """A reader of the tables above, imported when it is named by ``module:function``."""
    if callable(reader):
        return reader
    module, name = reader.split(":")
    return getattr(importlib.import_module(module), name)


def read_library(
    path: str | Path,
    *,
    format: str | None = None,
    parser: str = "auto",
    progress: Progress | None = None,
) -> SpectrumLibrary:
    """Read a spectral library file.

    Parameters
    ----------
    path : str or Path
        An MGF, MSP (NIST, MoNA, MassBank, RIKEN, GOLM flavours; AMDIS MSL),
        mzML, mzXML or library JSON (GNPS or MoNA, told apart per record) file,
        optionally gzip-compressed (detected from the content, not the name).
    format : {"mgf", "msp", "mzml", "mzxml", "json"}, optional
        Force a format.  By default it is told from the content; when the file
        name says otherwise the content wins (with a warning).
    parser : {"auto", "fast", "reference"}, default "auto"
        ``"auto"`` is ``"reference"`` for a plain file of at most
        :data:`SMALL_FILE_BYTES` (nothing to compile) and ``"fast"`` otherwise.
        For MGF: ``"fast"`` scans the bytes with numba and hands only unusual
        records to pyteomics; ``"reference"`` parses every record with
        pyteomics.  For MSP: ``"fast"`` reads records and peaks with numba and
        hands records with unusual lines to the line-by-line reader that
        ``"reference"`` uses for all; for JSON it reads the peak strings of all
        records at once, leaving unusual ones to the reference.  Both give the
        same library.  mzML and mzXML ignore it.
    progress : callable, optional
        ``progress(done_bytes, total_bytes)``, bytes of the file on disk:
        called at the start, now and then while the fast MGF parser reads
        records (the file is read, hashed, un-gzipped and parsed in bounded
        chunks), and at the end.  Returning ``False`` cancels the load
        (:class:`LoadCancelled` is raised).

    Returns
    -------
    SpectrumLibrary
        The valid spectra, with ``library.report`` (an :class:`ImportReport` of
        skipped and repaired records) and ``library.source`` (path, sha256 of
        the bytes on disk, format).  For mzML and mzXML only MS2 scans are read,
        and MoNA JSON records of another MS level are skipped.

    Raises
    ------
    SpectrumFileError
        The file is missing, empty, binary, a truncated gzip, not in a
        supported format, or holds no valid spectrum.
    ValueError
        ``format`` or ``parser`` is not one of the supported names.
    LoadCancelled
        ``progress`` returned ``False``.
    """
    if parser not in PARSERS:
        raise ValueError(f"parser must be one of {PARSERS}, not {parser!r}")
    if parser == "auto":
        parser = "reference" if _small_plain(path) else "fast"
    whole = _plain_whole(path, format, parser)
    if whole is not None:  # read at once, hashed on a thread while it is parsed
        size = len(whole.data)
        report_progress(progress, 0, size, str(path))
        report_progress(progress, size // 2, size, str(path))
        raw = RawFile(str(path), "", whole.data, False)
        del whole.data
        return _read_whole(raw, format, parser, progress, size, lambda: whole.sha256)
    stream = FileStream(path)
    try:
        return _read_stream(stream, format, parser, progress)
    finally:
        stream.close()


def _small_plain(path: str | Path) -> bool:
    """Whether ``path`` is a plain (not gzip) file of at most :data:`SMALL_FILE_BYTES`."""
    if checked_size(path) > SMALL_FILE_BYTES:
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(2) != GZIP_MAGIC
    except OSError:  # reported as before by the reader
        return False


def _plain_whole(path: str | Path, format: str | None, parser: str) -> HashedBytes | None:
    """A file that is read whole at once (not gzip, not MGF for the fast parser), or None.

    Files over :data:`_AT_ONCE_BYTES` are read in blocks by :class:`FileStream`
    instead, so the progress moves (and a cancel is seen) while they are read.

    Raises
    ------
    SpectrumFileError
        As :class:`FileStream`: missing, unreadable or not a regular file.
    """
    if checked_size(path) > _AT_ONCE_BYTES:
        return None
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
            if head[:2] == GZIP_MAGIC:
                return None
            if parser == "fast" and sniff_format(head) == "mgf" and format in (None, "mgf", "MGF"):
                return None  # read in blocks as it streams in
            fh.seek(0)
            data = fh.read()
    except OSError as exc:
        raise file_error(str(path), exc) from None
    return HashedBytes(data)


def _read_stream(
    stream: FileStream, format: str | None, parser: str, progress: Progress | None
) -> SpectrumLibrary:
    """MGF for the fast parser straight from the stream; anything else read whole."""
    report_progress(progress, 0, stream.size, stream.path)
    blocks = stream.blocks()
    head: list[bytes] = []
    size = position = 0
    for block, reached in blocks:
        head.append(block)
        size += len(block)
        position = reached
        if size >= _HEAD_BYTES:
            break
    else:  # the whole file: read as before
        raw = RawFile(stream.path, stream.sha256, b"".join(head), stream.gzipped)
        return _read_whole(raw, format, parser, progress, stream.size)
    start = b"".join(head)
    fmt = None
    if parser == "fast" and sniff_format(start) == "mgf" and format in (None, "mgf", "MGF"):
        fmt = _choose_format(RawFile(stream.path, "", start, stream.gzipped), format)
    if fmt != "mgf":  # errors (a gzip bomb first) as for any file read whole
        whole = [start]
        for block, reached in blocks:  # reading: the first half of the progress
            whole.append(block)
            report_progress(progress, reached // 2, stream.size, stream.path)
        raw = RawFile(stream.path, stream.sha256, b"".join(whole), stream.gzipped)
        del whole
        return _read_whole(raw, format, parser, progress, stream.size)
    builder = ChunkedBuilder(stream.path, fmt)
    read_mgf_blocks(_chained((start, position), blocks), stream.size, builder, progress)
    library = builder.build(LibrarySource(stream.path, stream.sha256, fmt))
    report_progress(progress, stream.size, stream.size, stream.path)
    return library


def _read_whole(
    raw: RawFile,
    format: str | None,
    parser: str,
    progress: Progress | None,
    size: int,
    sha256: Callable[[], str] | None = None,
) -> SpectrumLibrary:
    """:func:`_parse` with its progress (bytes of the content) as the second half of ``size``.

    ``sha256()``, when given, is the file's digest (asked once the content is parsed).
    """
    half = size // 2
    scaled = None
    if progress is not None:

        def scaled(done: int, total: int) -> object:
            return progress(half + (size - half) * done // max(total, 1), size)

    return _parse(_non_empty(raw), format, parser, scaled, sha256 or (lambda: raw.sha256))


#: Content read before the format is chosen (:func:`sniff_format` reads 64 KiB).
_HEAD_BYTES = 1 << 16
#: Largest file read in one call (and hashed beside the parse); larger ones go in blocks.
_AT_ONCE_BYTES = 1 << 28
#: What :func:`sniff_format` reads (the format of a file read whole is told from it).
_SNIFF_BYTES = 1 << 16


def _chained(first: tuple[bytes, int], rest: Iterator[tuple[bytes, int]]):
    yield first
    yield from rest


def _non_empty(raw: RawFile) -> RawFile:
    if not raw.data or raw.data.isspace():  # what strip() leaves nothing of, without a copy
        raise SpectrumFileError(raw.path, "empty file" + (" (inside gzip)" if raw.gzipped else ""))
    return raw


def _parse(
    raw: RawFile,
    format: str | None,
    parser: str,
    progress: Progress | None,
    sha256: Callable[[], str],
) -> SpectrumLibrary:
    """Parse ``raw``, the file's digest asked for (``sha256()``) once the content is read."""
    fmt = _choose_format(raw, format)
    fast_mgf = fmt == "mgf" and parser == "fast"
    builder = ChunkedBuilder(raw.path, fmt) if fast_mgf else LibraryBuilder(raw.path, fmt)
    total = len(raw.data)
    report_progress(progress, 0, total, raw.path)
    if fast_mgf:
        read_mgf_bytes(raw.data, builder, progress)
    elif fmt in _BYTES_READERS:
        _reader(_BYTES_READERS[fmt])(raw.data, builder)
    elif parser == "fast" and fmt in _FAST_BYTES_READERS:
        _FAST_BYTES_READERS[fmt](raw.data, builder)
    else:
        text, replaced = decode_text(raw.data)
        if replaced:
            builder.notes.append(replaced_note(replaced))
        readers = _FAST_TEXT_READERS if parser == "fast" else {}
        _reader(readers.get(fmt, _TEXT_READERS[fmt]))(text, builder)
    with gc_paused():  # building makes many lists and arrays, no cycle
        library = builder.build(LibrarySource(raw.path, sha256(), fmt))
    report_progress(progress, total, total, raw.path)
    return library


def _choose_format(raw: RawFile, requested: str | None) -> str:
    if requested is not None and requested.lower() not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {requested!r}")
    detected = sniff_format(raw.data)
    named = format_from_name(raw.path)
    if detected == "binary":
        raise SpectrumFileError(raw.path, "binary content, not a spectrum text file")
    if detected == "xml":
        raise SpectrumFileError(raw.path, "XML but neither mzML nor mzXML")
    if requested is not None:
        fmt = requested.lower()
        if detected is not None and detected != fmt:
            raise SpectrumFileError(
                raw.path, f"asked to read as {fmt.upper()} but the content is {detected.upper()}"
            )
        if detected is None:
            raise SpectrumFileError(
                raw.path, f"not a valid {fmt.upper()} file: {_NOT_FOUND_HINT[fmt]}"
            )
        return fmt
    if detected is None:
        if named is not None:
            raise SpectrumFileError(
                raw.path, f"not a valid {named.upper()} file: {_NOT_FOUND_HINT[named]}"
            )
        raise SpectrumFileError(
            raw.path, "unknown format: the content is not MGF, MSP, mzML, mzXML or JSON"
        )
    if named is not None and named != detected:
        warnings.warn(
            f"{raw.path}: named as {named.upper()} but the content is {detected.upper()}; "
            f"read as {detected.upper()}",
            stacklevel=3,
        )
    return detected
