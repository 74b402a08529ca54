"""Helpers shared by the XML readers (mzML, mzXML)."""

from __future__ import annotations

import binascii
import re
import zlib

import numpy as np

from engine.io._build import LibraryBuilder
from engine.report import SpectrumFileError

__all__ = [
    "CappedZlib",
    "array_limit",
    "capped_reader",
    "decoded_peaks",
    "first_line",
    "refuse_doctype",
]

_DOCTYPE_RE = re.compile(rb"<!DOCTYPE", re.IGNORECASE)


def refuse_doctype(data: bytes, root: re.Pattern, path: str, what: str) -> None:
    """Raise :class:`SpectrumFileError` when ``data`` declares a DOCTYPE before ``root``: mzML
    and mzXML never do, and with ``huge_tree`` entities could expand without bound."""
    found = root.search(data)
    if _DOCTYPE_RE.search(data, 0, found.start() if found else len(data)):
        raise SpectrumFileError(path, f"{what} with a DOCTYPE declaration (not allowed)")


def array_limit(declared: object, bytes_each: int) -> int:
    """Most bytes a decompressed array may hold: ``bytes_each`` per value declared, plus 64."""
    try:
        count = int(declared or 0)
    except (TypeError, ValueError):
        count = 0
    return max(count, 0) * bytes_each + 64


def capped_reader(reader: object, declared: str) -> CappedZlib:
    """Make pyteomics' ``reader`` decompress zlib arrays through a new :class:`CappedZlib`."""
    capped = CappedZlib(declared)
    reader.compression_type_map = {
        name: capped if name == "zlib compression" else function
        for name, function in reader.compression_type_map.items()
    }
    return capped


def decoded_peaks(
    arrays: tuple, record: int, title: str, builder: LibraryBuilder, missing: str, corrupt: str
) -> tuple[np.ndarray, np.ndarray] | None:
    """Binary array records (``decode_binary=False``) of m/z and intensity as numbers;
    None when the spectrum is skipped (told to ``builder`` with reason ``missing`` or
    ``corrupt``)."""
    mz, intensity = arrays
    if mz is None or intensity is None:
        builder.skip(record, title, missing)
        return None
    try:
        return tuple(
            np.asarray(a.decode() if hasattr(a, "decode") else a, dtype=np.float64)
            for a in (mz, intensity)
        )
    except (binascii.Error, zlib.error, ValueError, TypeError) as exc:
        builder.skip(record, title, f"{corrupt} ({first_line(exc)})")
        return None


class CappedZlib:
    """zlib decompression refusing more than :attr:`limit` bytes (set per spectrum from
    its attribute ``declared``, named in the report)."""

    def __init__(self, declared: str) -> None:
        self.limit = 0
        self.declared = declared

    def __call__(self, data: bytes) -> bytes:
        stream = zlib.decompressobj()
        out = stream.decompress(data, self.limit + 1)
        if len(out) > self.limit:
            raise ValueError(
                f"binary array decompresses past the {self.limit:,} bytes "
                f"its {self.declared} allows"
            )
        return out + stream.flush()


def first_line(exc: Exception) -> str:
    """The first line of an exception's message (its type when empty), at most 100 chars."""
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:100]
