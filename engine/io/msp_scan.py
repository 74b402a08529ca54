"""numba scanner of the fast MSP reader: records, ``key: value`` spans and peaks.

It reads the UTF-8 bytes as the reference (:func:`engine.io.msp.read_msp_lines`)
reads the text, line by line.  A line is *blank* (spaces and tabs), a *key* line
(``key: value``, key and value starting and ending with a non-space character, the
key not starting with a digit, ``.`` or ``(``), a *peak* line (from a digit or
``.``: plain numbers separated by blanks, tabs and colons, pairs by ``;``, quoted
annotations ignored, an even count between two ``;``) or *other*.  A record with
an *other* line, or one ending without peaks, is handed back as a *slow* span of
lines, up to where the reference surely starts afresh (a blank or key line right
after a peak line).  Numbers that :func:`engine.io.scan.number` leaves to
``float()`` are listed.
"""

from __future__ import annotations

import numba
import numpy as np

from engine.io.scan import BAD, EXACT, MSP, char_start, code_point, is_space, number

__all__ = ["FAST", "SLOW", "scan_msp"]

#: Segment kinds of :func:`scan_msp`.
FAST, SLOW = 0, 1

#: Line kinds.
_BLANK, _KEY, _PEAK, _OTHER = 0, 1, 2, 3
#: Key kinds.
_KEY_PLAIN, _KEY_NAME, _KEY_NUM_PEAKS = 0, 1, 2
#: Numbers left to ``float()`` are located as ``start * SLOW_SPAN + length``.
SLOW_SPAN = 1 << 20


@numba.njit(cache=True, nogil=True)
def _bounds(buf):
    """(lines, runs of digits) in ``buf``: bounds on records, keys and numbers."""
    lines = 1
    runs = 0
    digit = False
    n = buf.shape[0]
    for i in range(n):
        c = buf[i]
        if c == 10 or (c == 13 and (i + 1 == n or buf[i + 1] != 10)):
            lines += 1
        now = 48 <= c <= 57
        if now and not digit:
            runs += 1
        digit = now
    return lines, runs


@numba.njit(cache=True, nogil=True, inline="always")
def _edge_ok(buf, i, end):
    """The character at ``buf[i]`` is not white space."""
    cp = code_point(buf, i, end)
    return cp >= 0 and not is_space(cp)


#: Keys the record logic looks for (lowercased).
_KEY_WORDS = tuple(
    np.frombuffer(w, np.uint8) for w in (b"name", b"num peaks", b"num_peaks", b"numpeaks")
)


@numba.njit(cache=True, nogil=True, inline="always")
def _lowered_is(buf, lo, hi, word):
    """Whether ``buf[lo:hi]``, ASCII letters lowercased, is ``word``."""
    if hi - lo != len(word):
        return False
    for k in range(len(word)):
        c = buf[lo + k]
        if (c + 32 if 65 <= c <= 90 else c) != word[k]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _key_kind(buf, lo, hi, words):
    if _lowered_is(buf, lo, hi, words[0]):
        return _KEY_NAME
    for word in words[1:]:
        if _lowered_is(buf, lo, hi, word):
            return _KEY_NUM_PEAKS
    return _KEY_PLAIN


@numba.njit(cache=True, nogil=True)
def _classify_key(buf, i, end):
    """(ok, key_lo, key_hi, value_lo, value_hi) of a ``key: value`` line from ``i``."""
    colon = i
    while colon < end and buf[colon] != 58:
        colon += 1
    if colon == end or colon == i:
        return False, 0, 0, 0, 0
    if not _edge_ok(buf, i, end):
        return False, 0, 0, 0, 0
    k_hi = colon
    while k_hi > i and (buf[k_hi - 1] == 32 or buf[k_hi - 1] == 9):
        k_hi -= 1
    if not _edge_ok(buf, char_start(buf, k_hi - 1, i), end):
        return False, 0, 0, 0, 0
    v_lo = colon + 1
    while v_lo < end and (buf[v_lo] == 32 or buf[v_lo] == 9):
        v_lo += 1
    v_hi = end
    while v_hi > v_lo and (buf[v_hi - 1] == 32 or buf[v_hi - 1] == 9):
        v_hi -= 1
    if v_hi > v_lo:
        if not _edge_ok(buf, v_lo, end) or not _edge_ok(buf, char_start(buf, v_hi - 1, v_lo), end):
            return False, 0, 0, 0, 0
    return True, i, k_hi, v_lo, v_hi


@numba.njit(cache=True, nogil=True, inline="always")
def _peak_line(buf, i, end, values, slow, n_values):
    """Read a peak line into ``values`` from ``n_values`` on: (ok, new n_values).

    A number left to ``float()`` is NaN in ``values`` and its bytes are in ``slow``
    (start times :data:`SLOW_SPAN` plus length).
    """
    piece_count = 0
    while True:
        while i < end and (buf[i] == 32 or buf[i] == 9 or buf[i] == 58):
            i += 1
        if i < end and buf[i] == 34:  # a quoted annotation counts as a blank
            j = i + 1
            while j < end and buf[j] != 34:
                j += 1
            if j == end:
                return False, n_values
            i = j + 1
            continue
        if i == end or buf[i] == 59:
            if piece_count % 2:
                return False, n_values
            if i == end:
                return True, n_values
            piece_count = 0
            i += 1
            continue
        value, after, verdict = number(buf, i, end, MSP)
        if verdict == BAD or (verdict != EXACT and after - i >= SLOW_SPAN):
            return False, n_values
        if verdict != EXACT:  # left to float()
            slow[n_values] = i * SLOW_SPAN + (after - i)
            value = np.nan
        values[n_values] = value
        n_values += 1
        piece_count += 1
        i = after


@numba.njit(cache=True, nogil=True)
def scan_msp(buf):
    """Records of MSP bytes ``buf``: fast ones read here, slow spans for the reference.

    Returns ``seg_kind, seg_a, seg_b``: segments in file order, :data:`FAST`
    (``seg_a`` a fast record's index) or :data:`SLOW` (bytes ``seg_a:seg_b``, whole
    lines); ``rec_keys, rec_values``: fast record ``r`` has key lines
    ``rec_keys[r]:rec_keys[r + 1]`` and numbers ``rec_values[r]:rec_values[r + 1]``
    (m/z and intensity alternating); ``key_spans`` (key and value bytes, shape (n, 4));
    ``values``, NaN where ``float()`` must read them; ``slow``, where ``values`` is
    NaN, the number's bytes as ``start * SLOW_SPAN + length``.
    """
    n = buf.shape[0]
    n_lines, n_runs = _bounds(buf)
    rows = n_lines + 2  # no more records, keys or segments than lines
    seg_kind = np.empty(rows, np.int64)
    seg_a = np.empty(rows, np.int64)
    seg_b = np.empty(rows, np.int64)
    n_seg = 0
    rec_keys = np.empty(rows, np.int64)
    rec_values = np.empty(rows, np.int64)
    n_rec = 0
    key_spans = np.empty((rows, 4), np.int64)
    n_keys = 0
    values = np.empty(n_runs + 1, np.float64)  # each number has digits of its own
    slow = np.empty(n_runs + 1, np.int64)
    n_values = 0

    open_rec = False  # a record is being read (fast)
    skipping = False  # inside a slow span
    slow_start = 0
    rec_start = 0
    rec_k0 = 0
    rec_v0 = 0
    has_name = False
    in_peaks = False
    peak_lines = 0
    prev_peak = False  # the previous line was a peak line (while skipping)

    pos = 0
    while pos <= n:
        if pos == n:
            # end of file: the reference finishes whatever record it is in
            if skipping or (open_rec and peak_lines == 0):
                start = slow_start if skipping else rec_start
                seg_kind[n_seg], seg_a[n_seg], seg_b[n_seg] = SLOW, start, n
                n_seg += 1
                if open_rec:
                    n_keys, n_values = rec_k0, rec_v0
            elif open_rec:
                rec_keys[n_rec] = rec_k0
                rec_values[n_rec] = rec_v0
                seg_kind[n_seg], seg_a[n_seg], seg_b[n_seg] = FAST, n_rec, 0
                n_seg += 1
                n_rec += 1
            break
        # the line [pos, end) and the next one's start
        end = pos
        while end < n and buf[end] != 10 and buf[end] != 13:
            end += 1
        nxt = end
        if nxt < n:
            nxt += 2 if (buf[nxt] == 13 and nxt + 1 < n and buf[nxt + 1] == 10) else 1
        i = pos
        while i < end and (buf[i] == 32 or buf[i] == 9):
            i += 1
        kind = _OTHER
        k_lo = k_hi = v_lo = v_hi = 0
        key_kind = _KEY_PLAIN
        nv = n_values
        if i == end:
            kind = _BLANK
        else:
            c = buf[i]
            if (48 <= c <= 57) or c == 46:
                ok, nv = _peak_line(buf, i, end, values, slow, n_values)
                if ok:
                    kind = _PEAK
            elif c != 40:
                ok, k_lo, k_hi, v_lo, v_hi = _classify_key(buf, i, end)
                if ok:
                    kind = _KEY
                    key_kind = _key_kind(buf, k_lo, k_hi, _KEY_WORDS)

        if skipping:
            if prev_peak and (kind == _BLANK or kind == _KEY):
                seg_kind[n_seg], seg_a[n_seg], seg_b[n_seg] = SLOW, slow_start, pos
                n_seg += 1
                skipping = False
                open_rec = False
            else:
                prev_peak = kind == _PEAK
                pos = nxt
                continue
        # the reference's record logic, for blank, key and peak lines
        go_slow = False
        close = False
        start_new = False
        if kind == _OTHER:
            go_slow = True
        elif kind == _BLANK:
            if open_rec and in_peaks:
                if peak_lines > 0:
                    close = True
                else:
                    go_slow = True
        elif kind == _KEY:
            if open_rec:
                if in_peaks:
                    if peak_lines > 0:
                        close = True
                        start_new = True
                    else:
                        go_slow = True
                elif key_kind == _KEY_NAME and has_name:
                    go_slow = True  # the record ends without peaks
            else:
                start_new = True
        else:  # a peak line
            if not open_rec:
                open_rec = True
                rec_start = pos
                rec_k0, rec_v0 = n_keys, n_values
                has_name = False
                in_peaks = False
                peak_lines = 0
            in_peaks = True
            peak_lines += 1
            n_values = nv
        if go_slow:
            slow_start = rec_start if open_rec else pos
            if open_rec:
                n_keys, n_values = rec_k0, rec_v0
            open_rec = False
            skipping = True
            prev_peak = kind == _PEAK
            pos = nxt
            continue
        if close:
            rec_keys[n_rec] = rec_k0
            rec_values[n_rec] = rec_v0
            seg_kind[n_seg], seg_a[n_seg], seg_b[n_seg] = FAST, n_rec, 0
            n_seg += 1
            n_rec += 1
            open_rec = False
        if start_new:
            open_rec = True
            rec_start = pos
            rec_k0, rec_v0 = n_keys, n_values
            has_name = False
            in_peaks = False
            peak_lines = 0
        if kind == _KEY and open_rec:
            key_spans[n_keys, 0] = k_lo
            key_spans[n_keys, 1] = k_hi
            key_spans[n_keys, 2] = v_lo
            key_spans[n_keys, 3] = v_hi
            n_keys += 1
            if key_kind == _KEY_NAME:
                has_name = True
            elif key_kind == _KEY_NUM_PEAKS:
                in_peaks = True
        pos = nxt

    rec_keys[n_rec] = n_keys
    rec_values[n_rec] = n_values
    return (
        seg_kind[:n_seg],
        seg_a[:n_seg],
        seg_b[:n_seg],
        rec_keys[: n_rec + 1],
        rec_values[: n_rec + 1],
        key_spans[:n_keys],
        values[:n_values],
        slow[:n_values],
    )
