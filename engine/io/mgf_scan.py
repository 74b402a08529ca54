"""numba byte scanners behind the fast MGF reader (:mod:`engine.io.mgf_fast`).

They work on the file's bytes (``uint8``), never on decoded text, and decide
only what they can decide exactly as the reference parser (pyteomics on
decoded text, :mod:`engine.io.mgf`) would:

- :func:`find_records` finds the ``BEGIN IONS`` / ``END IONS`` lines exactly as
  the reference's regular expression does, and pairs them into records;
- :func:`scan_records` classifies each record's lines (blank, comment,
  parameter, peak) and converts peak lines of the plain form ``number number``
  to float64.  A number is converted here only when the result is certainly
  the correctly rounded value (Clinger's fast path: at most 2**53 as an
  integer times or divided by an exact power of ten, one IEEE operation),
  which is what Python's ``float()`` returns; any other record is flagged for
  the reference parser.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = [
    "EVENT_BLOCK",
    "EVENT_NO_END",
    "EVENT_EOF",
    "FAST",
    "REFERENCE",
    "find_records",
    "gather",
    "key_ids",
    "scan_records",
    "not_utf8",
]

#: Event kinds of :func:`find_records`: a complete record, a record cut by the next
#: ``BEGIN IONS``, a record cut by the end of the file.
EVENT_BLOCK, EVENT_NO_END, EVENT_EOF = 0, 1, 2
#: Block status of :func:`scan_records`.
FAST, REFERENCE = 0, 1

_BEGIN = np.frombuffer(b"BEGIN IONS", dtype=np.uint8)
_END = np.frombuffer(b"END IONS", dtype=np.uint8)
_POW10 = np.array([10.0**k for k in range(23)])
_TWO53 = 2**53
#: Verdicts of :func:`_number`.
_EXACT, _SLOW, _BAD = 0, 1, 2
#: Longest number handed to ``float()``; a longer one sends its record to the reference.
MAX_SLOW_TOKEN = 1000


def find_records(buf: np.ndarray, start: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Records of the text ``buf[start:]`` (bytes as ``uint8``), as the reference splits them.

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
    return _find_markers(buf, start, _BEGIN, _END)


def scan_records(
    buf: np.ndarray, first: np.ndarray, last: np.ndarray, kinds: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Lines of each complete record: peaks converted, parameter lines located.

    See :func:`_scan_blocks` for the arrays returned.
    """
    return _scan_blocks(buf, first, last, kinds, _POW10)


@numba.njit(cache=True, nogil=True)
def _starts_with(buf, pos, word) -> bool:
    if pos + len(word) > len(buf):
        return False
    for k in range(len(word)):
        if buf[pos + k] != word[k]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _find_markers(buf, start, begin_word, end_word):
    """:func:`find_records` (the markers are passed in as arrays)."""
    n = len(buf)
    cap = 1024
    kinds = np.empty(cap, np.int64)
    first = np.empty(cap, np.int64)
    last = np.empty(cap, np.int64)
    count = 0
    header_end = n
    open_at = -1
    ls = start
    while ls <= n:
        le = ls
        while le < n and buf[le] != 10:
            le += 1
        p = ls
        while p < le and (buf[p] == 32 or buf[p] == 9):
            p += 1
        kind = -1
        q = p
        if _starts_with(buf, p, begin_word):
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
                if count == cap:
                    cap *= 2
                    kinds = _grown(kinds, cap)
                    first = _grown(first, cap)
                    last = _grown(last, cap)
                kinds[count], first[count], last[count] = event, open_at, span_end
                count += 1
            open_at = ls if kind == 0 else -1
        ls = le + 1
    if open_at >= 0:
        if count == cap:
            cap += 1
            kinds = _grown(kinds, cap)
            first = _grown(first, cap)
            last = _grown(last, cap)
        kinds[count], first[count], last[count] = EVENT_EOF, open_at, n
        count += 1
    return kinds[:count].copy(), first[:count].copy(), last[:count].copy(), header_end


@numba.njit(cache=True, nogil=True)
def _grown(a, cap):
    out = np.empty(cap, a.dtype)
    out[: len(a)] = a
    return out


@numba.njit(cache=True, nogil=True)
def _grown2(a, rows):
    out = np.empty((rows, a.shape[1]), a.dtype)
    out[: len(a)] = a
    return out


@numba.njit(cache=True, nogil=True)
def _number(buf, i, end, pow10):
    """Parse one number at ``buf[i]``: (value, position after it, verdict).

    Verdict :data:`_EXACT`: ``value`` is what ``float()`` gives.  :data:`_SLOW`: a
    plain decimal number whose value is left to ``float()`` (too many digits or
    too large an exponent to prove it here).  :data:`_BAD`: not a plain decimal
    number ending at a blank or the line end (``inf``, ``1_0``, ``1/2``, ...).
    """
    neg = False
    if i < end and (buf[i] == 43 or buf[i] == 45):
        neg = buf[i] == 45
        i += 1
    mant = np.uint64(0)
    sig = 0
    frac = 0
    digits = 0
    seen_point = False
    while i < end:
        c = buf[i]
        if 48 <= c <= 57:
            digits += 1
            if seen_point:
                frac += 1
            if sig > 0 or c != 48:
                sig += 1
                if sig <= 19:
                    mant = mant * np.uint64(10) + np.uint64(c - 48)
        elif c == 46 and not seen_point:
            seen_point = True
        else:
            break
        i += 1
    if digits == 0:
        return 0.0, i, _BAD
    exp = 0
    edigits = 0
    if i < end and (buf[i] == 101 or buf[i] == 69):
        i += 1
        eneg = False
        if i < end and (buf[i] == 43 or buf[i] == 45):
            eneg = buf[i] == 45
            i += 1
        while i < end and 48 <= buf[i] <= 57:
            edigits += 1
            if edigits <= 6:
                exp = exp * 10 + (buf[i] - 48)
            i += 1
        if edigits == 0:
            return 0.0, i, _BAD
        if eneg:
            exp = -exp
    if i < end and buf[i] != 32 and buf[i] != 9:
        return 0.0, i, _BAD
    exp -= frac
    if mant == 0 and sig == 0:
        value = 0.0
    elif sig > 19 or edigits > 6 or mant > np.uint64(_TWO53) or exp > 22 or exp < -22:
        return 0.0, i, _SLOW
    elif exp >= 0:
        value = np.float64(mant) * pow10[exp]
    else:
        value = np.float64(mant) / pow10[-exp]
    return (-value if neg else value), i, _EXACT


@numba.njit(cache=True, nogil=True)
def _scan_blocks(buf, first, last, kinds, pow10):
    """Lines of each complete record: peaks converted, parameter lines located.

    Parameters
    ----------
    buf : ndarray of uint8
    first, last, kinds : ndarray of int64
        Records as :func:`find_records` returns them (only ``EVENT_BLOCK`` ones
        are scanned).

    Returns
    -------
    status : ndarray of int8
        ``FAST`` or ``REFERENCE`` (leave the record to the reference parser).
    peak_lo, peak_hi : ndarray of int64
        The record's peaks in ``mz`` / ``intensity``.
    param_lo, param_hi : ndarray of int64
        The record's parameter lines in ``spans`` (none unless ``simple``).
    spans : ndarray of int64, shape (n, 4)
        Per parameter line: its key (start, end) and its value, stripped.
    simple : ndarray of bool
        ``spans`` give the record's parameters exactly as Python's ``strip`` and
        ``lower`` would (ASCII keys, values not bounded by odd blanks).
    mz, intensity : ndarray of float64
        Peaks of the ``FAST`` records; numbers in ``slow`` are still to be converted.
    slow : ndarray of int64, shape (n, 3)
        Numbers left to ``float()``: ``2 * peak + column`` (0 m/z, 1 intensity),
        and the span of their text.
    """
    nb = len(first)
    status = np.zeros(nb, np.int8)
    peak_lo = np.zeros(nb, np.int64)
    peak_hi = np.zeros(nb, np.int64)
    param_lo = np.zeros(nb, np.int64)
    param_hi = np.zeros(nb, np.int64)
    spans = np.empty((64, 4), np.int64)
    npl = 0
    simple = np.ones(nb, np.bool_)
    cap = 1024
    mz = np.empty(cap, np.float64)
    intensity = np.empty(cap, np.float64)
    k = 0
    slow = np.empty((64, 3), np.int64)
    ns = 0
    for b in range(nb):
        if kinds[b] != EVENT_BLOCK:
            status[b] = REFERENCE
            continue
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
        i = cs
        while i < ce and ok:
            j = i
            while j < ce and buf[j] != 10 and buf[j] != 13:
                j += 1
            lone_cr = j < ce and buf[j] == 13 and not (j + 1 < ce and buf[j + 1] == 10)
            nxt = j + 2 if (j < ce and buf[j] == 13 and not lone_cr) else j + 1
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
                        for t in range(p, eq):
                            if not (32 <= buf[t] < 127 or buf[t] == 9):
                                simple[b] = False
                        if v1 > v0 and not (
                            32 < buf[v0] < 127 and 32 < buf[v1 - 1] < 127
                        ):  # Python's strip() may take more (NBSP, \x0b, ...)
                            simple[b] = False
                        if npl == len(spans):
                            spans = _grown2(spans, 2 * len(spans))
                        spans[npl, 0], spans[npl, 1], spans[npl, 2], spans[npl, 3] = p, eq, v0, v1
                        npl += 1
                    else:  # peak line: number, blanks, number, blanks
                        x, q, v1 = _number(buf, p, j, pow10)
                        lo1, hi1 = p, q
                        while q < j and (buf[q] == 32 or buf[q] == 9):
                            q += 1
                        lo2 = q
                        y, q, v2 = _number(buf, q, j, pow10)
                        hi2 = q
                        while q < j and (buf[q] == 32 or buf[q] == 9):
                            q += 1
                        if v1 == _BAD or v2 == _BAD or q != j or lo2 == hi1:
                            ok = False
                        elif max(hi1 - lo1, hi2 - lo2) > MAX_SLOW_TOKEN:
                            ok = False
                        else:
                            if k == cap:
                                cap *= 2
                                mz = _grown(mz, cap)
                                intensity = _grown(intensity, cap)
                            mz[k] = x
                            intensity[k] = y
                            if ns + 2 > len(slow):
                                slow = _grown2(slow, 2 * len(slow))
                            if v1 == _SLOW:
                                slow[ns, 0], slow[ns, 1], slow[ns, 2] = 2 * k, lo1, hi1
                                ns += 1
                            if v2 == _SLOW:
                                slow[ns, 0], slow[ns, 1], slow[ns, 2] = 2 * k + 1, lo2, hi2
                                ns += 1
                            k += 1
            i = nxt
        if not ok:
            status[b] = REFERENCE
            k = peak_lo[b]
            ns = ns_record
        if not (ok and simple[b]):
            npl = param_lo[b]
        peak_hi[b] = k
        param_hi[b] = npl
    return (
        status,
        peak_lo,
        peak_hi,
        param_lo,
        param_hi,
        spans[:npl].copy(),
        simple,
        mz[:k].copy(),
        intensity[:k].copy(),
        slow[:ns].copy(),
    )


@numba.njit(cache=True, nogil=True)
def gather(buf, lo, hi):
    """The byte spans ``buf[lo[i]:hi[i]]`` joined by ``\\n``."""
    total = 0
    for i in range(len(lo)):
        total += hi[i] - lo[i] + 1
    out = np.empty(max(total - 1, 0), np.uint8)
    k = 0
    for i in range(len(lo)):
        if i:
            out[k] = 10
            k += 1
        out[k : k + hi[i] - lo[i]] = buf[lo[i] : hi[i]]
        k += hi[i] - lo[i]
    return out


@numba.njit(cache=True, nogil=True)
def key_ids(buf, lo, hi):
    """Number the distinct byte strings ``buf[lo[i]:hi[i]]`` in order of appearance.

    Returns
    -------
    ids : ndarray of int64
        Per span, the number of its string.
    first : ndarray of int64
        Per number, the span where it first appears.
    """
    table = numba.typed.Dict.empty(numba.types.uint64, numba.types.int64)
    ids = np.empty(len(lo), np.int64)
    first = np.empty(len(lo), np.int64)
    n = 0
    for i in range(len(lo)):
        h = np.uint64(14695981039346656037)
        for t in range(lo[i], hi[i]):
            h = (h ^ np.uint64(buf[t])) * np.uint64(1099511628211)
        h = h ^ np.uint64(hi[i] - lo[i])
        while True:  # open addressing over the hash, so colliding keys stay apart
            if h not in table:
                table[h] = n
                first[n] = i
                ids[i] = n
                n += 1
                break
            at = table[h]
            e = first[at]
            same = hi[e] - lo[e] == hi[i] - lo[i]
            t = 0
            while same and t < hi[i] - lo[i]:
                same = buf[lo[e] + t] == buf[lo[i] + t]
                t += 1
            if same:
                ids[i] = at
                break
            h = h * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)
    return ids, first[:n].copy()


@numba.njit(cache=True, nogil=True)
def not_utf8(buf, start):
    """Number of bytes of ``buf[start:]`` that Python's strict UTF-8 decoder rejects.

    Each rejected byte becomes one escaped character under ``surrogateescape``;
    a lead byte whose sequence is cut short or malformed is rejected alone and
    the scan goes on at the next byte (a continuation byte never starts a
    valid sequence, so this counts exactly what the decoder escapes).
    """
    n = len(buf)
    bad = 0
    i = start
    while i < n:
        c = buf[i]
        if c < 0x80:
            i += 1
            continue
        size = 0
        lo, hi = 0x80, 0xBF
        if 0xC2 <= c <= 0xDF:
            size = 2
        elif 0xE0 <= c <= 0xEF:
            size = 3
            if c == 0xE0:
                lo = 0xA0
            elif c == 0xED:
                hi = 0x9F
        elif 0xF0 <= c <= 0xF4:
            size = 4
            if c == 0xF0:
                lo = 0x90
            elif c == 0xF4:
                hi = 0x8F
        valid = size > 0 and i + size <= n
        if valid:
            valid = lo <= buf[i + 1] <= hi
            for t in range(2, size):
                if not valid:
                    break
                valid = 0x80 <= buf[i + t] <= 0xBF
        if valid:
            i += size
        else:
            bad += 1
            i += 1
    return bad
