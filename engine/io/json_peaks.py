"""numba readers of the peak strings of library JSON, many records at once.

GNPS records hold their peaks as a JSON string ``"[[mz, int], [mz, int], ...]"``,
MoNA records as ``"mz:int mz:int ..."``.  The strings of all records are joined
(ASCII only) and read here in one pass.  A string is read here only when the
result is certainly the reference's (:mod:`engine.io.spectra_json`: ``json.loads``
and ``numpy.asarray`` for GNPS, ``str.split`` and ``float()`` for MoNA): plain
numbers whose value is exact by Clinger's fast path (an integer up to 2**53 times
or divided by an exact power of ten, one IEEE operation), in the strict layout of
the format.  Any other string (``NaN``, ``1_0``, a third column, too many digits,
nothing at all, ...) is flagged for the reference reader, alone.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["read_gnps_peaks", "read_mona_peaks"]

_POW10 = np.array([10.0**k for k in range(23)])
_TWO53 = 2**53


@numba.njit(cache=True, nogil=True, inline="always")
def _decimal(buf, i, end, pow10, json):
    """A number at ``buf[i]``: (value, position after, ok).

    ``json``: the JSON grammar (``-?(0|[1-9]\\d*)(\\.\\d+)?([eE][+-]?\\d+)?``, an
    integer ``-0`` being ``0``); else what ``float()`` reads of
    ``[+-]?(\\d+\\.?\\d*|\\.\\d+)([eE][+-]?\\d+)?``.  ``ok`` is False when there is no
    such number or its value is not certainly exact here.
    """
    neg = False
    if i < end and (buf[i] == 45 or (not json and buf[i] == 43)):
        neg = buf[i] == 45
        i += 1
    if json and (i >= end or not (48 <= buf[i] <= 57)):
        return 0.0, i, False
    if json and buf[i] == 48 and i + 1 < end and 48 <= buf[i + 1] <= 57:
        return 0.0, i, False  # a leading zero
    mant = np.uint64(0)
    sig = 0
    frac = 0
    int_digits = 0
    frac_digits = 0
    seen_point = False
    while i < end:
        c = buf[i]
        if 48 <= c <= 57:
            if seen_point:
                frac += 1
                frac_digits += 1
            else:
                int_digits += 1
            if sig > 0 or c != 48:
                sig += 1
                if sig <= 19:
                    mant = mant * np.uint64(10) + np.uint64(c - 48)
        elif c == 46 and not seen_point:
            seen_point = True
        else:
            break
        i += 1
    if int_digits + frac_digits == 0:
        return 0.0, i, False
    if json and seen_point and frac_digits == 0:
        return 0.0, i, False
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
            return 0.0, i, False
        if eneg:
            exp = -exp
    exp -= frac
    if sig == 0:
        value = 0.0
        if json and not seen_point and not has_exp:
            neg = False  # the JSON integer -0 is the int 0
    elif sig > 19 or edigits > 6 or mant > np.uint64(_TWO53) or exp > 22 or exp < -22:
        return 0.0, i, False
    elif exp >= 0:
        value = np.float64(mant) * pow10[exp]
    else:
        value = np.float64(mant) / pow10[-exp]
    return (-value if neg else value), i, True


@numba.njit(cache=True, nogil=True, inline="always")
def _json_space(buf, i, end):
    while i < end and (buf[i] == 32 or buf[i] == 9 or buf[i] == 10 or buf[i] == 13):
        i += 1
    return i


@numba.njit(cache=True, nogil=True)
def read_gnps_peaks(buf, starts, ends):
    """Read each ``buf[starts[k]:ends[k]]`` as a GNPS ``peaks_json`` string.

    Returns
    -------
    mz, intensity : ndarray of float64
        The peaks of the strings read, one after the other.
    offsets : ndarray of int64, shape (n + 1,)
        String ``k``'s peaks are ``offsets[k]:offsets[k + 1]`` (none if not read).
    ok : ndarray of bool
        String ``k`` was read here (else the reference must read it).
    """
    n = starts.shape[0]
    pow10 = _POW10
    cap = 0
    for k in range(n):
        cap += (ends[k] - starts[k]) // 6 + 1
    mz = np.empty(cap, np.float64)
    intensity = np.empty(cap, np.float64)
    offsets = np.zeros(n + 1, np.int64)
    ok = np.zeros(n, np.bool_)
    m = 0
    for k in range(n):
        end = ends[k]
        first = m
        good = False
        i = _json_space(buf, starts[k], end)
        if i < end and buf[i] == 91:  # [
            i = _json_space(buf, i + 1, end)
            while i < end and buf[i] == 91:
                i = _json_space(buf, i + 1, end)
                a, i, ok_a = _decimal(buf, i, end, pow10, True)
                if not ok_a:
                    break
                i = _json_space(buf, i, end)
                if i >= end or buf[i] != 44:  # ,
                    break
                i = _json_space(buf, i + 1, end)
                b, i, ok_b = _decimal(buf, i, end, pow10, True)
                if not ok_b:
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


@numba.njit(cache=True, nogil=True, inline="always")
def _ascii_space(c):
    return c == 32 or 9 <= c <= 13 or 28 <= c <= 31


@numba.njit(cache=True, nogil=True)
def read_mona_peaks(buf, starts, ends):
    """Read each ``buf[starts[k]:ends[k]]`` as a MoNA ``spectrum`` string.

    Returns what :func:`read_gnps_peaks` returns.
    """
    n = starts.shape[0]
    pow10 = _POW10
    cap = 0
    for k in range(n):
        cap += (ends[k] - starts[k]) // 4 + 1
    mz = np.empty(cap, np.float64)
    intensity = np.empty(cap, np.float64)
    offsets = np.zeros(n + 1, np.int64)
    ok = np.zeros(n, np.bool_)
    m = 0
    for k in range(n):
        end = ends[k]
        first = m
        good = True
        i = starts[k]
        while True:
            while i < end and _ascii_space(buf[i]):
                i += 1
            if i == end:
                break
            a, i, ok_a = _decimal(buf, i, end, pow10, False)
            if not ok_a or i >= end or buf[i] != 58:  # :
                good = False
                break
            b, i, ok_b = _decimal(buf, i + 1, end, pow10, False)
            if not ok_b or (i < end and not _ascii_space(buf[i])):
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
