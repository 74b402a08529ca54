"""numba scanners of the fast MGF reader: lines, records, and each record's lines.

They decide, over the bytes, only what the reference (pyteomics on decoded text,
:mod:`engine.io.mgf`) decides the same way; any record with something else in it
is flagged for the reference.
"""

from __future__ import annotations

import numba
import numpy as np

from engine.io.scan import BAD, MGF, SLOW, number

__all__ = [
    "EVENT_BLOCK",
    "EVENT_EOF",
    "EVENT_NO_END",
    "FAST",
    "REFERENCE",
    "find_records",
    "lines",
    "scan_records",
]

#: Event kinds of :func:`find_records`: a complete record, a record cut by the next
#: ``BEGIN IONS``, a record cut by the end of the file.
EVENT_BLOCK, EVENT_NO_END, EVENT_EOF = 0, 1, 2

_BEGIN = np.frombuffer(b"BEGIN IONS", dtype=np.uint8)
_END = np.frombuffer(b"END IONS", dtype=np.uint8)


def lines(data: bytes, buf: np.ndarray, start: int) -> tuple[np.ndarray, tuple | None]:
    """Line ends of ``buf[start:]``: the positions of ``\\n`` then ``len(buf)``, and
    ``split``.

    Where no ``\\r`` stands alone these are also the lines ``split_lines`` cuts;
    else ``split`` is ``(ends, nexts)``, line ``t`` being ``buf[nexts[t]:ends[t]]``
    (a line starting after the end last), otherwise None.
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
        return newlines, _split_lines(buf, start, len(newlines) + crs + 2)
    return newlines, None


@numba.njit(cache=True, nogil=True)
def _split_lines(buf, start, most):
    n = len(buf)
    ends = np.empty(most, np.int64)
    nexts = np.empty(most, np.int64)
    nexts[0] = start
    count = 0
    i = start
    while True:
        j = i
        while j < n and buf[j] != 10 and buf[j] != 13:
            j += 1
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


def find_records(
    buf: np.ndarray, start: int, newlines: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Records of ``buf[start:]`` as the reference's marker regular expression splits them.

    A marker is a line (``newlines`` from :func:`lines`) ``[ \\t]*(BEGIN IONS|END
    IONS)[ \\t]*\\r?``.  Returns per record its event kind, ``first`` (where its
    BEGIN line starts) and ``last`` (where its END marker ends, or the end of the
    text the reference takes a cut record's title from), and where the first
    marker (the end of the file header) starts.
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
    """:func:`find_records`: records counted, and written while the arrays have room."""
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


#: Block status of :func:`scan_records`.
FAST, REFERENCE = 0, 1

#: Room first made for numbers left to ``float()`` (grown when a file has more).
SLOW_ROWS = 1 << 16
#: Room first made for every output (tests set it small to exercise the growing).
FIRST_ROWS = 0
#: Longest number handed to ``float()``; a longer one sends its record to the reference.
MAX_SLOW_TOKEN = 1000


def scan_records(
    buf: np.ndarray,
    first: np.ndarray,
    last: np.ndarray,
    kinds: np.ndarray,
    start: int,
    newlines: np.ndarray,
    split: tuple | None,
) -> tuple[np.ndarray, ...]:
    """Lines of each complete record (of :func:`find_records`; the text starts at ``start``,
    its lines from :func:`lines`): peaks converted, parameter lines located.

    Returns per record ``status`` (``FAST``, or ``REFERENCE``: leave it to the
    reference), its peaks ``peak_lo:peak_hi`` in ``mz`` / ``intensity`` and its
    parameter lines ``param_lo:param_hi`` in ``spans`` (key and stripped value, shape
    (n, 4); none unless ``simple``: the spans are what Python's ``strip`` and ``lower``
    give); then ``simple``, ``mz``, ``intensity`` and ``slow``: numbers still left to
    ``float()``, as ``2 * peak + column`` (0 m/z, 1 intensity) and their text's span.
    """
    nb = len(first)
    status = np.zeros(nb, np.int8)
    bounds = np.zeros((4, nb), np.int64)  # peak_lo, peak_hi, param_lo, param_hi
    simple = np.ones(nb, np.bool_)
    # room for one peak and one parameter per line, or per 16 bytes (real files have
    # about 25 bytes a line; denser ones make it grow); untouched pages cost nothing
    rows = FIRST_ROWS or min(len(newlines) + 1, len(buf) // 16 + 4096)
    peaks = np.empty((2, rows), np.float64)
    spans = np.empty((rows, 4), np.int64)
    slow = np.empty((FIRST_ROWS or SLOW_ROWS, 3), np.int64)
    ends, nexts = split if split is not None else (newlines, newlines)
    state = np.zeros(4, np.int64)
    b = 0
    while True:
        b = _scan_blocks(
            buf, first, last, kinds, ends, nexts, split is not None, start, b, state,
            status, bounds, simple, peaks, spans, slow,
        )  # fmt: skip
        if b == nb:
            break
        peaks = _grown_rows(peaks, 1)
        spans = _grown_rows(spans, 0)
        slow = _grown_rows(slow, 0)
    k, npl, ns = state[:3].tolist()
    return status, *bounds, spans[:npl], simple, peaks[0, :k], peaks[1, :k], slow[:ns]


def _grown_rows(a: np.ndarray, axis: int) -> np.ndarray:
    shape = list(a.shape)
    shape[axis] *= 2
    out = np.empty(shape, a.dtype)
    out[tuple(slice(0, m) for m in a.shape)] = a
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _line_start(t, ends, nexts, split, start):
    """Where line ``t`` starts (see :func:`lines`)."""
    if split:
        return nexts[t]
    return start if t == 0 else ends[t - 1] + 1


@numba.njit(cache=True, nogil=True)
def _scan_blocks(
    buf,
    first,
    last,
    kinds,
    ends,
    nexts,
    split,
    start,
    b0,
    state,
    status,
    bounds,
    simple,
    peaks,
    spans,
    slow,
):
    """Scan records ``b0, b0 + 1, ...`` until one does not fit in the arrays.

    ``state`` holds the counts (peaks, parameter lines, slow numbers) and the
    current line.  The arrays are never replaced inside the loop (numba would
    then count references on every pass): when one is full the scan returns the
    record's number, and :func:`scan_records` grows the arrays and goes on.
    """
    peak_lo, peak_hi, param_lo, param_hi = bounds[0], bounds[1], bounds[2], bounds[3]
    nb = len(first)
    k, npl, ns, t = state[0], state[1], state[2], state[3]
    for b in range(b0, nb):
        if kinds[b] != EVENT_BLOCK:
            status[b] = REFERENCE
            peak_lo[b], peak_hi[b], param_lo[b], param_hi[b] = k, k, npl, npl
            continue
        t_record = t
        full = False
        # content: after the BEGIN line's "\n" up to the END line's start
        cs = first[b]
        while buf[cs] != 10:
            cs += 1
        cs += 1
        ce = last[b]
        while ce > cs and buf[ce - 1] != 10:
            ce -= 1
        peak_lo[b] = k
        ns_record = ns
        param_lo[b] = npl
        ok = True
        while _line_start(t, ends, nexts, split, start) < cs:
            t += 1
        while ok:
            i = _line_start(t, ends, nexts, split, start)
            if i >= ce:
                break
            j = ends[t]
            if not split and j > i and buf[j - 1] == 13:  # "\r\n"
                j -= 1
            t += 1
            p = i
            while p < j and (buf[p] == 32 or buf[p] == 9):
                p += 1
            if p == j:
                pass
            else:
                c = buf[p]
                if c < 32 or c >= 127:
                    ok = False
                elif c == 35 or c == 59 or c == 33 or c == 47:  # comment: # ; ! /
                    pass
                else:
                    eq = p
                    while eq < j and buf[eq] != 61:
                        eq += 1
                    if eq < j:  # parameter line: key [p, eq), value stripped
                        v0 = eq + 1
                        while v0 < j and (buf[v0] == 32 or buf[v0] == 9):
                            v0 += 1
                        v1 = j
                        while v1 > v0 and (buf[v1 - 1] == 32 or buf[v1 - 1] == 9):
                            v1 -= 1
                        for u in range(p, eq):
                            if not (32 <= buf[u] < 127 or buf[u] == 9):
                                simple[b] = False
                        if v1 > v0 and not (
                            32 < buf[v0] < 127 and 32 < buf[v1 - 1] < 127
                        ):  # Python's strip() may take more (NBSP, \x0b, ...)
                            simple[b] = False
                        if npl == len(spans):
                            full = True
                            break
                        spans[npl, 0], spans[npl, 1], spans[npl, 2], spans[npl, 3] = p, eq, v0, v1
                        npl += 1
                    else:  # peak line: number, blanks, number, blanks
                        x, q, v1 = number(buf, p, j, MGF)
                        lo1, hi1 = p, q
                        while q < j and (buf[q] == 32 or buf[q] == 9):
                            q += 1
                        lo2 = q
                        y, q, v2 = number(buf, q, j, MGF)
                        hi2 = q
                        while q < j and (buf[q] == 32 or buf[q] == 9):
                            q += 1
                        if v1 == BAD or v2 == BAD or q != j or lo2 == hi1:
                            ok = False
                        elif max(hi1 - lo1, hi2 - lo2) > MAX_SLOW_TOKEN:
                            ok = False
                        else:
                            if k == peaks.shape[1] or ns + 2 > len(slow):
                                full = True
                                break
                            peaks[0, k] = x
                            peaks[1, k] = y
                            if v1 == SLOW:
                                slow[ns, 0], slow[ns, 1], slow[ns, 2] = 2 * k, lo1, hi1
                                ns += 1
                            if v2 == SLOW:
                                slow[ns, 0], slow[ns, 1], slow[ns, 2] = 2 * k + 1, lo2, hi2
                                ns += 1
                            k += 1
        if full:
            state[0], state[1], state[2], state[3] = peak_lo[b], param_lo[b], ns_record, t_record
            simple[b] = True
            return b
        if not ok:
            status[b] = REFERENCE
            k = peak_lo[b]
            ns = ns_record
        if not (ok and simple[b]):
            npl = param_lo[b]
        peak_hi[b] = k
        param_hi[b] = npl
    state[0], state[1], state[2], state[3] = k, npl, ns, t
    return nb
