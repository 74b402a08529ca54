"""Helpers shared by the XML readers (mzML, mzXML)."""

from __future__ import annotations

import zlib

__all__ = ["CappedZlib", "first_line"]


class CappedZlib:
    """zlib decompression refusing more bytes than the spectrum's arrays can hold.

    Set :attr:`limit` before each spectrum is decoded; ``declared`` names the
    attribute the limit comes from, for the report.
    """

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
