"""A large JSON list of spectra read in two halves at once, on two cores.

The list is cut at a comma between two of its elements, found by a scan that
follows strings, escapes and nesting.  A forked process reads the second half
(``"[" + rest``) into its own :class:`~engine.io._build.LibraryBuilder` while
this process reads the first half (``head + "]"``); the child sends back its
builder's lists (peaks as two arrays' bytes; MessagePack, by ``msgspec``), and
they are appended after the first half's with their record numbers moved on by
the first half's length.

The result is the whole document's: when both halves are valid JSON lists of at
least one element, the document is ``[`` *first elements* ``,`` *rest* ``]``, a
valid list of exactly those elements (whatever the scan made of it); otherwise
(or when anything goes wrong in either process) :func:`read_in_halves` returns
``False`` having touched nothing, and the caller reads the whole document.

Only used where forking is safe and pays: Linux, at least two usable cores of
which one is idle (a load average at most the cores less one: on a busy machine
the two halves only queue for the same cores, and the fork costs CPU time), no
other thread running (the desktop app reads in a worker thread and so reads in
one piece), ASCII content of at least :data:`MIN_BYTES`.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from collections.abc import Callable

import numba
import numpy as np

from engine.io._build import LibraryBuilder
from engine.report import ImportIssue

try:
    import msgspec
except ImportError:  # pragma: no cover - read in one piece without it
    msgspec = None

__all__ = ["MIN_BYTES", "read_in_halves", "split_point"]

#: Smallest content read in two halves (smaller files are read before a fork pays).
MIN_BYTES = 8 << 20
_QUOTE, _BACKSLASH, _COMMA = 34, 92, 44
_OPEN = (91, 123)  # [ {
_CLOSE = (93, 125)  # ] }


@numba.njit(cache=True, nogil=True)
def split_point(buf: np.ndarray, target: int) -> int:
    """Position of the first comma at nesting depth 1 at or after ``target`` (-1: none).

    ``buf`` holds the JSON text (uint8); strings (with their escapes) are skipped.
    """
    depth = 0
    in_string = False
    escaped = False
    for i in range(len(buf)):
        c = buf[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == _BACKSLASH:
                escaped = True
            elif c == _QUOTE:
                in_string = False
        elif c == _QUOTE:
            in_string = True
        elif c == _OPEN[0] or c == _OPEN[1]:
            depth += 1
        elif c == _CLOSE[0] or c == _CLOSE[1]:
            depth -= 1
        elif c == _COMMA and depth == 1 and i >= target:
            return i
    return -1


def _worth_it(data: bytes) -> bool:
    if (
        msgspec is None
        or len(data) < MIN_BYTES
        or not sys.platform.startswith("linux")
        or not hasattr(os, "fork")
    ):
        return False
    cores = len(os.sched_getaffinity(0))
    if threading.active_count() != 1 or cores < 2 or os.getloadavg()[0] > cores - 1:
        return False  # another thread, or no core to spare: the fork costs more than it gives
    return data.isascii()


def read_in_halves(
    data: bytes, builder: LibraryBuilder, read: Callable[[bytes, LibraryBuilder], None]
) -> bool:
    """Read the JSON list ``data`` into ``builder`` in two halves at once, if it pays.

    Parameters
    ----------
    data : bytes
        The whole file.
    builder : LibraryBuilder
        Receives every record when the document was read; untouched otherwise.
    read : callable
        ``read(content, builder)`` reads one JSON document (raising on a bad one).

    Returns
    -------
    bool
        Whether the document was read.
    """
    if not _worth_it(data):
        return False
    cut = split_point(np.frombuffer(data, dtype=np.uint8), len(data) // 2)
    if cut < 0:
        return False
    readable, writable = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the second half, sent back pickled
        os.close(readable)
        _child(b"[" + data[cut + 1 :], builder, read, writable)
    os.close(writable)
    first = LibraryBuilder(builder.path, builder.format)
    ok = False
    try:
        read(data[:cut] + b"]", first)
        ok = first.records > 0
    except Exception:  # noqa: BLE001 - the whole document is read again, and judged
        ok = False
    finally:
        with os.fdopen(readable, "rb") as pipe:
            payload = pipe.read()
        os.waitpid(pid, 0)
    if not ok or not payload:
        return False
    second = msgspec.msgpack.decode(payload)
    if second["records"] == 0:
        return False
    _merge(builder, first, second)
    return True


def _child(
    half: bytes,
    builder: LibraryBuilder,
    read: Callable[[bytes, LibraryBuilder], None],
    writable: int,
) -> None:
    """Read ``half`` and write the builder's state to ``writable``; never returns."""
    payload = b""
    try:
        gc.disable()
        second = LibraryBuilder(builder.path, builder.format)
        read(half, second)
        payload = msgspec.msgpack.encode(_state(second))
    except BaseException:  # noqa: BLE001, S110 - an empty answer: the parent reads it all
        payload = b""
    finally:
        try:
            with os.fdopen(writable, "wb") as pipe:
                pipe.write(payload)
        finally:
            os._exit(0)


def _state(builder: LibraryBuilder) -> dict:
    """What :func:`_merge` needs of a builder, its peaks in one piece (as bytes)."""
    return {
        "records": builder.records,
        "issues": [[i.record, i.title, i.reason, i.skipped] for i in builder._issues],
        "record_no": builder._record_no,
        "titles": builder._titles,
        "mz": _joined(builder._mz),
        "intensity": _joined(builder._intensity),
        "lengths": builder._lengths,
        "precursor": builder._precursor,
        "charge": builder._charge,
        "ion_mode": builder._ion_mode,
        "meta": builder._meta,
        "notes": builder._notes,
        "file_notes": builder.notes,
    }


def _joined(pieces: list[np.ndarray]) -> bytes:
    return np.concatenate(pieces).tobytes() if pieces else b""


def _merge(builder: LibraryBuilder, first: LibraryBuilder, second: dict) -> None:
    """``first``'s records, then ``second``'s (numbered on), into ``builder``."""
    shift = first.records
    builder.records = first.records + second["records"]
    builder.notes += first.notes
    builder.notes += [note for note in second["file_notes"] if note not in builder.notes]
    builder._issues += first._issues
    builder._issues += [
        ImportIssue(record=record + shift, title=title, reason=reason, skipped=skipped)
        for record, title, reason, skipped in second["issues"]
    ]
    builder._record_no += first._record_no
    builder._record_no += [record + shift for record in second["record_no"]]
    builder._titles += first._titles + second["titles"]
    builder._mz += [*first._mz, np.frombuffer(second["mz"], dtype=np.float64)]
    builder._intensity += [*first._intensity, np.frombuffer(second["intensity"], dtype=np.float64)]
    builder._lengths += first._lengths + second["lengths"]
    builder._precursor += first._precursor + second["precursor"]
    builder._charge += first._charge + second["charge"]
    builder._ion_mode += first._ion_mode + second["ion_mode"]
    builder._meta += first._meta + second["meta"]
    builder._notes += first._notes + second["notes"]
