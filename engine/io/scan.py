"""numba scanning core of the fast readers (MGF, MSP, JSON): numbers, characters, spans.

Everything here works on a file's bytes and decides only what Python would decide
the same way.  :func:`number` converts a plain decimal number only when the result is
certainly the correctly rounded value of ``float()`` (or :mod:`json`): Clinger's fast
path, an integer of at most 2**53 times or divided by an exact power of ten.  Other
plain numbers are left to ``float()`` (:data:`SLOW`), anything else is :data:`BAD`.
The peak strings of library JSON records are read here, all at once, when they are
ASCII numbers in the strict layout of the format; other strings are flagged.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = [
    "BAD",
    "EXACT",
    "FLOAT",
    "JSON",
    "MGF",
    "MSP",
    "SLOW",
    "ascii_spans",
    "char_start",
    "code_point",
    "gather",
    "is_space",
    "key_ids",
    "not_utf8",
    "number",
    "read_gnps_peaks",
    "read_mona_peaks",
]

#: Verdicts of :func:`number`.
EXACT, SLOW, BAD = 0, 1, 2
#: Grammars of :func:`number`: ``float()``'s plain numbers
#: ``[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?`` ending anywhere (FLOAT), at a blank or
#: the end (MGF), or also at ``:``, ``;`` or ``"`` (MSP); or JSON's numbers
#: ``-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?`` ending anywhere, an integer ``-0`` being 0.
FLOAT, MGF, MSP, JSON = 0, 1, 2, 3

_POW10 = np.array([10.0**k for k in range(23)])
_TWO53 = np.uint64(2**53)


@numba.njit(cache=True, nogil=True, inline="always")
def number(buf, i, end, grammar):
    """The number at ``buf[i]`` (``grammar`` one of FLOAT, MGF, MSP, JSON).

    Returns (value, position after it, verdict): :data:`EXACT` (``value`` is what
    Python gives), :data:`SLOW` (a number of the grammar whose value is left to
    ``float()``) or :data:`BAD` (no such number).
    """
    neg = False
    if i < end and (buf[i] == 45 or (buf[i] == 43 and grammar != JSON)):
        neg = buf[i] == 45
        i += 1
    if grammar == JSON:
        if i >= end or not (48 <= buf[i] <= 57):
            return 0.0, i, BAD
        if buf[i] == 48 and i + 1 < end and 48 <= buf[i + 1] <= 57:
            return 0.0, i, BAD  # a leading zero
    mant = np.uint64(0)
    sig = 0
    frac = 0
    digits = 0
    point = False
    while i < end:
        c = buf[i]
        if 48 <= c <= 57:
            digits += 1
            if point:
                frac += 1
            if sig > 0 or c != 48:
                sig += 1
                if sig <= 19:
                    mant = mant * np.uint64(10) + np.uint64(c - 48)
        elif c == 46 and not point:
            point = True
        else:
            break
        i += 1
    if digits == 0 or (grammar == JSON and point and frac == 0):
        return 0.0, i, BAD
    exp = 0
    edigits = 0
    has_exp = False
    if i < end and (buf[i] == 101 or buf[i] == 69):
        has_exp = True
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
            return 0.0, i, BAD
        if eneg:
            exp = -exp
    if i < end and (grammar == MGF or grammar == MSP):
        c = buf[i]
        if c != 32 and c != 9 and (grammar == MGF or (c != 58 and c != 59 and c != 34)):
            return 0.0, i, BAD
    exp -= frac
    if sig == 0:
        value = 0.0
        if grammar == JSON and not point and not has_exp:
            neg = False  # the JSON integer -0 is the int 0
    elif sig > 19 or edigits > 6 or mant > _TWO53 or exp > 22 or exp < -22:
        return 0.0, i, SLOW
    elif exp >= 0:
        value = np.float64(mant) * _POW10[exp]
    else:
        value = np.float64(mant) / _POW10[-exp]
    return (-value if neg else value), i, EXACT


@numba.njit(cache=True, nogil=True, inline="always")
def is_space(cp):
    """``chr(cp).isspace()``."""
    if cp == 32 or 9 <= cp <= 13 or 28 <= cp <= 31:
        return True
    if cp < 0x85:
        return False
    return (
        cp == 0x85
        or cp == 0xA0
        or cp == 0x1680
        or 0x2000 <= cp <= 0x200A
        or cp == 0x2028
        or cp == 0x2029
        or cp == 0x202F
        or cp == 0x205F
        or cp == 0x3000
    )


@numba.njit(cache=True, nogil=True, inline="always")
def code_point(buf, i, end):
    """Code point of the UTF-8 character starting at ``buf[i]`` (-1 if malformed)."""
    b = np.int64(buf[i])
    if b < 0x80:
        return b
    if b >= 0xF0:
        n, cp = 3, b & 0x07
    elif b >= 0xE0:
        n, cp = 2, b & 0x0F
    elif b >= 0xC0:
        n, cp = 1, b & 0x1F
    else:
        return -1
    for k in range(1, n + 1):
        if i + k >= end:
            return -1
        cp = (cp << 6) | (np.int64(buf[i + k]) & 0x3F)
    return cp


@numba.njit(cache=True, nogil=True, inline="always")
def char_start(buf, i, lo):
    """Start of the UTF-8 character whose last byte is ``buf[i]`` (not before ``lo``)."""
    while i > lo and (buf[i] & 0xC0) == 0x80:
        i -= 1
    return i


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
def ascii_spans(buf, lo, hi):
    """Whether each byte span ``buf[lo[i]:hi[i]]`` is ASCII."""
    out = np.ones(len(lo), np.bool_)
    for i in range(len(lo)):
        for t in range(lo[i], hi[i]):
            if buf[t] >= 128:
                out[i] = False
                break
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _same(buf, lo1, hi1, lo2, hi2):
    """Whether ``buf[lo1:hi1]`` and ``buf[lo2:hi2]`` hold the same bytes."""
    if hi1 - lo1 != hi2 - lo2:
        return False
    for t in range(hi1 - lo1):
        if buf[lo1 + t] != buf[lo2 + t]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def key_ids(buf, lo, hi):
    """Number the distinct byte strings ``buf[lo[i]:hi[i]]`` in order of appearance.

    Returns per span the number of its string, and per number the span where it
    first appears.
    """
    table = numba.typed.Dict.empty(numba.types.uint64, numba.types.int64)
    ids = np.empty(len(lo), np.int64)
    first = np.empty(len(lo), np.int64)
    # records mostly repeat their keys in one order: guess the key that followed
    # the previous one last time, and look up only when the guess is wrong
    follows = np.full(len(lo) + 1, -1, np.int64)
    previous = len(lo)
    n = 0
    for i in range(len(lo)):
        guess = follows[previous]
        if guess >= 0 and _same(buf, lo[first[guess]], hi[first[guess]], lo[i], hi[i]):
            ids[i] = guess
            previous = guess
            continue
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
            if _same(buf, lo[first[at]], hi[first[at]], lo[i], hi[i]):
                ids[i] = at
                break
            h = h * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)
        follows[previous] = ids[i]
        previous = ids[i]
    return ids, first[:n].copy()


@numba.njit(cache=True, nogil=True)
def not_utf8(buf, start):
    """Number of bytes of ``buf[start:]`` that Python's strict UTF-8 decoder rejects.

    Each becomes one escaped character under ``surrogateescape``: a lead byte
    whose sequence is cut short or malformed is rejected alone, and the scan goes
    on at the next byte.
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


@numba.njit(cache=True, nogil=True, inline="always")
def _json_space(buf, i, end):
    while i < end and (buf[i] == 32 or buf[i] == 9 or buf[i] == 10 or buf[i] == 13):
        i += 1
    return i


@numba.njit(cache=True, nogil=True)
def _room(starts, ends, per_peak):
    """The arrays of a reader's results, room for a peak per ``per_peak`` bytes."""
    cap = 0
    for k in range(starts.shape[0]):
        cap += (ends[k] - starts[k]) // per_peak + 1
    n = starts.shape[0]
    return np.empty(cap), np.empty(cap), np.zeros(n + 1, np.int64), np.zeros(n, np.bool_)


@numba.njit(cache=True, nogil=True)
def read_gnps_peaks(buf, starts, ends):
    """Each ``buf[starts[k]:ends[k]]`` read as a GNPS ``peaks_json`` string ``[[mz, int], ...]``.

    Returns the peaks read (``mz``, ``intensity``), ``offsets`` (string ``k``'s peaks
    are ``offsets[k]:offsets[k + 1]``) and ``ok`` (string ``k`` was read here, else
    the reference must read it).
    """
    mz, intensity, offsets, ok = _room(starts, ends, 6)
    m = 0
    for k in range(starts.shape[0]):
        end = ends[k]
        first = m
        good = False
        i = _json_space(buf, starts[k], end)
        if i < end and buf[i] == 91:  # [
            i = _json_space(buf, i + 1, end)
            while i < end and buf[i] == 91:
                i = _json_space(buf, i + 1, end)
                a, i, verdict = number(buf, i, end, JSON)
                if verdict != EXACT:
                    break
                i = _json_space(buf, i, end)
                if i >= end or buf[i] != 44:  # ,
                    break
                i = _json_space(buf, i + 1, end)
                b, i, verdict = number(buf, i, end, JSON)
                if verdict != EXACT:
                    break
                i = _json_space(buf, i, end)
                if i >= end or buf[i] != 93:  # ]
                    break
                mz[m] = a
                intensity[m] = b
                m += 1
                i = _json_space(buf, i + 1, end)
                if i < end and buf[i] == 44:
                    i = _json_space(buf, i + 1, end)
                    if i >= end or buf[i] != 91:
                        break  # a trailing comma
                    continue
                if i < end and buf[i] == 93 and m > first:
                    good = _json_space(buf, i + 1, end) == end
                break
        if good:
            ok[k] = True
        else:
            m = first
        offsets[k + 1] = m
    return mz[:m], intensity[:m], offsets, ok


@numba.njit(cache=True, nogil=True)
def read_mona_peaks(buf, starts, ends):
    """Each ``buf[starts[k]:ends[k]]`` read as a MoNA ``spectrum`` string ``"mz:int ..."``,
    as :func:`read_gnps_peaks` reads GNPS strings."""
    mz, intensity, offsets, ok = _room(starts, ends, 4)
    m = 0
    for k in range(starts.shape[0]):
        end = ends[k]
        first = m
        good = True
        i = starts[k]
        while True:
            while i < end and buf[i] < 128 and is_space(buf[i]):
                i += 1
            if i == end:
                break
            a, i, verdict = number(buf, i, end, FLOAT)
            if verdict != EXACT or i >= end or buf[i] != 58:  # :
                good = False
                break
            b, i, verdict = number(buf, i + 1, end, FLOAT)
            if verdict != EXACT or (i < end and not (buf[i] < 128 and is_space(buf[i]))):
                good = False
                break
            mz[m] = a
            intensity[m] = b
            m += 1
        if good and m > first:
            ok[k] = True
        else:
            m = first
        offsets[k + 1] = m
    return mz[:m], intensity[:m], offsets, ok
