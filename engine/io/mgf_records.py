"""numba byte scanners of the fast MGF reader: lines and records.

They work on the file's bytes (``uint8``), never on decoded text, and split it
exactly as the reference parser (pyteomics on decoded text, :mod:`engine.io.mgf`)
does: :func:`find_records` finds the ``BEGIN IONS`` / ``END IONS`` lines as the
reference's regular expression does and pairs them into records; :func:`lines`
cuts lines as :func:`engine.io.sniff.split_lines` does.  The lines of each record
are read by :mod:`engine.io.mgf_scan`.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["EVENT_BLOCK", "EVENT_EOF", "EVENT_NO_END", "find_records", "lines"]

#: Event kinds of :func:`find_records`: a complete record, a record cut by the next
#: ``BEGIN IONS``, a record cut by the end of the file.
EVENT_BLOCK, EVENT_NO_END, EVENT_EOF = 0, 1, 2

_BEGIN = np.frombuffer(b"BEGIN IONS", dtype=np.uint8)
_END = np.frombuffer(b"END IONS", dtype=np.uint8)


def lines(data: bytes, buf: np.ndarray, start: int) -> tuple[np.ndarray, tuple | None]:
    """Line ends of ``buf[start:]``.

    Returns
    -------
    newlines : ndarray of int32 or int64
        Positions of ``\\n``, then ``len(buf)``.  Where no ``\\r`` stands alone,
        these are also the lines ``split_lines`` cuts (a ``\\r`` before the
        ``\\n`` ends the line).
    split : tuple of two ndarrays, or None
        Only for text with ``\\r`` line ends: ``(ends, nexts)``, line ``t``
        being ``buf[nexts[t]:ends[t]]``, a line starting after the end last.
    """
    n = len(buf)
    dtype = np.int32 if n < 2**31 - 8 else np.int64  # 4 bytes a line where they do
    step = 1 << 23  # bounds the temporary mask
    parts = [
        (np.flatnonzero(buf[a : a + step] == 10) + a).astype(dtype) for a in range(start, n, step)
    ]
    newlines = np.concatenate([*parts, np.array([n], dtype=dtype)])
    crs = data.count(b"\r", start)
    if crs and crs != data.count(b"\r\n", start):  # lone "\r" line ends
        return newlines, _split_lines(buf, start)
    return newlines, None


@numba.njit(cache=True, nogil=True)
def _split_lines(buf, start):
    n = len(buf)
    ends = np.empty(1024, np.int64)
    nexts = np.empty(1024, np.int64)
    nexts[0] = start
    count = 0
    i = start
    while True:
        j = i
        while j < n and buf[j] != 10 and buf[j] != 13:
            j += 1
        if count + 2 >= len(ends):
            ends = _grown(ends, 2 * len(ends))
            nexts = _grown(nexts, 2 * len(nexts))
        ends[count] = j
        nexts[count + 1] = j + 2 if j + 1 < n and buf[j] == 13 and buf[j + 1] == 10 else j + 1
        count += 1
        if j >= n:
            break
        i = nexts[count]
    ends[count] = n + 1
    nexts[count] = n + 1
    nexts[count + 1] = n + 2
    return ends[: count + 1].copy(), nexts[: count + 2].copy()


@numba.njit(cache=True, nogil=True)
def _grown(a, cap):
    out = np.empty(cap, a.dtype)
    out[: len(a)] = a
    return out


def find_records(
    buf: np.ndarray, start: int, newlines: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Records of the text ``buf[start:]`` (bytes as ``uint8``), as the reference splits them.

    ``newlines`` are the positions of ``\\n`` after ``start``, then ``len(buf)``
    (see :func:`lines`).

    A marker is a line (lines end at ``\\n`` only) of the form
    ``[ \\t]*(BEGIN IONS|END IONS)[ \\t]*\\r?``.

    Returns
    -------
    kinds, first, last : ndarray of int64
        One entry per record, in file order: its event kind and span.  For a
        complete record, ``first`` is where its BEGIN line starts and ``last``
        where its END marker ends (after the optional ``\\r``); for the others
        the span of text the reference takes the title from.
    header_end : int
        Start of the first marker (the file header ends there).
    """
    none = np.empty(0, dtype=np.int64)
    count, _ = _find_markers(buf, start, _BEGIN, _END, newlines, none, none, none)
    kinds, first, last = (np.empty(count, dtype=np.int64) for _ in range(3))
    _, header_end = _find_markers(buf, start, _BEGIN, _END, newlines, kinds, first, last)
    return kinds, first, last, header_end


@numba.njit(cache=True, nogil=True, inline="always")
def _starts_with(buf, pos, word) -> bool:
    if pos + len(word) > len(buf):
        return False
    for k in range(len(word)):
        if buf[pos + k] != word[k]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _find_markers(buf, start, begin_word, end_word, newlines, kinds, first, last):
    """:func:`find_records`: records counted, and written while the arrays have room.

    The arrays are never replaced inside the loop: numba would then count
    references on every pass.
    """
    n = len(buf)
    t = 0
    cap = len(kinds)
    count = 0
    header_end = n
    open_at = -1
    ls = start
    while ls <= n:
        le = newlines[t]
        t += 1
        p = ls
        while p < le and (buf[p] == 32 or buf[p] == 9):
            p += 1
        kind = -1
        q = p
        if p == le or (buf[p] != begin_word[0] and buf[p] != end_word[0]):
            pass
        elif _starts_with(buf, p, begin_word):
            kind, q = 0, p + len(begin_word)
        elif _starts_with(buf, p, end_word):
            kind, q = 1, p + len(end_word)
        if kind >= 0:
            while q < le and (buf[q] == 32 or buf[q] == 9):
                q += 1
            if q < le and buf[q] == 13:
                q += 1
            if q != le:
                kind = -1
        if kind >= 0:
            if header_end == n:
                header_end = ls
            event = -1
            span_end = 0
            if kind == 0 and open_at >= 0:
                event, span_end = EVENT_NO_END, ls
            elif kind == 1 and open_at >= 0:
                event, span_end = EVENT_BLOCK, q
            if event >= 0:
                if count < cap:
                    kinds[count], first[count], last[count] = event, open_at, span_end
                count += 1
            open_at = ls if kind == 0 else -1
        ls = le + 1
    if open_at >= 0:
        if count < cap:
            kinds[count], first[count], last[count] = EVENT_EOF, open_at, n
        count += 1
    return count, header_end
