"""numba readers of the peak strings of library JSON, many records at once.

GNPS records hold their peaks as a JSON string ``"[[mz, int], [mz, int], ...]"``,
MoNA records as ``"mz:int mz:int ..."``.  The strings of all records are joined
and read here in one pass.  A string is read here only when the result is
certainly the reference's (:mod:`engine.io.spectra_json`: ``json.loads`` and
``numpy.asarray`` for GNPS, ``str.split`` and ``float()`` for MoNA): numbers
that :func:`engine.io.scan.number` reads exactly, in the strict layout of the
format, ASCII only.  Any other string (``NaN``, ``1_0``, a third column, too
many digits, nothing at all, ...) is flagged for the reference reader, alone.
"""

from __future__ import annotations

import numba
import numpy as np

from engine.io.scan import EXACT, FLOAT, JSON, is_space, number

__all__ = ["read_gnps_peaks", "read_mona_peaks"]


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
    """Read each ``buf[starts[k]:ends[k]]`` as a MoNA ``spectrum`` string.

    Returns what :func:`read_gnps_peaks` returns.
    """
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
