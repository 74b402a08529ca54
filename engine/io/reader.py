"""``read_library``: one entry point for MGF, MSP, mzML, mzXML and JSON files, plain or gzip."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from itertools import chain
from pathlib import Path

from engine.io._build import LibraryBuilder, LoadCancelled, Progress, gc_paused, report_progress
from engine.io.mgf import read_mgf_text
from engine.io.mgf_fast import read_mgf_blocks, read_mgf_bytes
from engine.io.msp import read_msp_fast, read_msp_text
from engine.io.spectra_json import read_json_text
from engine.io.spectra_json_fast import read_json_bytes
from engine.io.stream import (
    FORMATS,
    GZIP_MAGIC,
    FileStream,
    HashedBytes,
    RawFile,
    checked_size,
    decode_text,
    file_error,
    format_from_name,
    replaced_note,
    sniff_format,
)
from engine.library import LibrarySource, SpectrumLibrary
from engine.report import SpectrumFileError

__all__ = ["PARSERS", "LoadCancelled", "read_library"]

#: Parsers :func:`read_library` offers for MGF (the reference is pyteomics, record by record).
PARSERS = ("auto", "fast", "reference")
#: ``parser="auto"``: plain files up to this size by the reference (nothing to compile).
SMALL_FILE_BYTES = 8 << 20

_NOT_FOUND_HINT = {
    "mgf": "no 'BEGIN IONS' line found",
    "msp": "no 'Name:' line found",
    "mzml": "no <mzML> element found",
    "mzxml": "no <mzXML> element found",
    "json": "no JSON list or object found",
}
#: Content read before the format is chosen (:func:`sniff_format` reads 64 KiB).
_HEAD_BYTES = _SNIFF_BYTES = 1 << 16
#: Largest file read in one call (and hashed beside the parse); larger ones go in blocks.
_AT_ONCE_BYTES = 1 << 28


def _decoded(read: Callable[[str, LibraryBuilder], None]) -> Callable:
    """A reader of the text made a reader of the bytes (decoded by :func:`decode_text`)."""

    def read_bytes(data: bytes, builder: LibraryBuilder) -> None:
        text, replaced = decode_text(data)
        if replaced:
            builder.notes.append(replaced_note(replaced))
        read(text, builder)

    return read_bytes


#: Readers by (format, parser), fast ones proven equal to their reference; mzML and
#: mzXML import on first use (pyteomics, psims and lxml take half a second).
_READERS: dict[tuple[str, str], Callable | str] = {
    ("mgf", "reference"): _decoded(read_mgf_text),
    ("msp", "reference"): _decoded(read_msp_text),
    ("msp", "fast"): _decoded(read_msp_fast),
    ("json", "reference"): _decoded(read_json_text),
    ("json", "fast"): read_json_bytes,
    ("mzml", "reference"): "engine.io.mzml:read_mzml_bytes",
    ("mzxml", "reference"): "engine.io.mzxml:read_mzxml_bytes",
}


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
        ``"fast"`` reads MGF, MSP and JSON with numba scanners over the bytes and
        hands only unusual records to the reference reader (pyteomics for MGF,
        line by line for MSP, :mod:`json` for JSON) that ``"reference"`` uses for
        all; both give the same library.  ``"auto"``: the reference for a plain
        file of at most :data:`SMALL_FILE_BYTES` (nothing to compile), else fast.
    progress : callable, optional
        ``progress(done_bytes, total_bytes)`` (bytes on disk), now and then
        while the file is read; returning ``False`` cancels (:class:`LoadCancelled`).

    Returns
    -------
    SpectrumLibrary
        The valid (MS2) spectra, with ``library.report`` (an :class:`ImportReport`
        of skipped and repaired records) and ``library.source`` (path, sha256, format).

    Raises
    ------
    SpectrumFileError
        The file is missing, empty, binary, a truncated gzip, of no supported
        format, or without a valid spectrum.
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


def _streamed_mgf(head: bytes, format: str | None, parser: str) -> bool:
    """Whether a file starting with ``head`` is MGF for the fast parser (read as it streams)."""
    return parser == "fast" and (format or "mgf").lower() == "mgf" and sniff_format(head) == "mgf"


def _small_plain(path: str | Path) -> bool:
    """Whether ``path`` is a plain (not gzip) file of at most :data:`SMALL_FILE_BYTES`."""
    if checked_size(path) > SMALL_FILE_BYTES:  # first: it refuses pipes (open would wait)
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(2) != GZIP_MAGIC
    except OSError:  # reported by the reader
        return False


def _plain_whole(path: str | Path, format: str | None, parser: str) -> HashedBytes | None:
    """A file read whole at once (not gzip, not streamed MGF, at most :data:`_AT_ONCE_BYTES`).

    Others are read in blocks by :class:`FileStream`, so the progress moves (and a
    cancel is seen) while they are read.  Raises as :class:`FileStream` does.
    """
    if checked_size(path) > _AT_ONCE_BYTES:
        return None
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
            if head[:2] == GZIP_MAGIC or _streamed_mgf(head, format, parser):
                return None
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
        size, position = size + len(block), reached
        if size >= _HEAD_BYTES:
            break
    start = b"".join(head)
    if size < _HEAD_BYTES or not _streamed_mgf(start, format, parser):
        whole = [start]
        for block, reached in blocks:  # reading: the first half of the progress
            whole.append(block)
            report_progress(progress, reached // 2, stream.size, stream.path)
        raw = RawFile(stream.path, stream.sha256, b"".join(whole), stream.gzipped)
        del whole
        return _read_whole(raw, format, parser, progress, stream.size)
    _choose_format(RawFile(stream.path, "", start, stream.gzipped), format)  # its warning
    builder = LibraryBuilder(stream.path, "mgf")
    read_mgf_blocks(chain([(start, position)], blocks), stream.size, builder, progress)
    library = builder.build(LibrarySource(stream.path, stream.sha256, "mgf"))
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
    """Parse ``raw``, its progress (bytes of the content) the second half of ``size``.

    ``sha256()``, when given, is the file's digest (asked once the content is parsed).
    """
    if not raw.data or raw.data.isspace():  # what strip() leaves nothing of, without a copy
        raise SpectrumFileError(raw.path, "empty file" + (" (inside gzip)" if raw.gzipped else ""))
    half, total = size // 2, len(raw.data)
    scaled = None
    if progress is not None:

        def scaled(done: int, total: int) -> object:
            return progress(half + (size - half) * done // max(total, 1), size)

    fmt = _choose_format(raw, format)
    builder = LibraryBuilder(raw.path, fmt)
    report_progress(scaled, 0, total, raw.path)
    if fmt == "mgf" and parser == "fast":
        read_mgf_bytes(raw.data, builder, scaled)
    else:
        read = _READERS.get((fmt, parser)) or _READERS[fmt, "reference"]
        if isinstance(read, str):
            module, name = read.split(":")
            read = getattr(importlib.import_module(module), name)
        read(raw.data, builder)
    with gc_paused():  # building makes many lists and arrays, no cycle
        digest = sha256() if sha256 is not None else raw.sha256
        library = builder.build(LibrarySource(raw.path, digest, fmt))
    report_progress(scaled, total, total, raw.path)
    return library


def _choose_format(raw: RawFile, requested: str | None) -> str:
    if requested is not None and requested.lower() not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {requested!r}")
    fmt = requested.lower() if requested is not None else None
    detected = sniff_format(raw.data)
    named = format_from_name(raw.path)
    if detected == "binary":
        raise SpectrumFileError(raw.path, "binary content, not a spectrum text file")
    if detected == "xml":
        raise SpectrumFileError(raw.path, "XML but neither mzML nor mzXML")
    if detected is None:
        expected = fmt or named
        if expected is None:
            raise SpectrumFileError(
                raw.path, "unknown format: the content is not MGF, MSP, mzML, mzXML or JSON"
            )
        raise SpectrumFileError(
            raw.path, f"not a valid {expected.upper()} file: {_NOT_FOUND_HINT[expected]}"
        )
    if fmt is not None and detected != fmt:
        raise SpectrumFileError(
            raw.path, f"asked to read as {fmt.upper()} but the content is {detected.upper()}"
        )
    if fmt is None and named is not None and named != detected:
        warnings.warn(
            f"{raw.path}: named as {named.upper()} but the content is {detected.upper()}; "
            f"read as {detected.upper()}",
            stacklevel=3,
        )
    return detected
