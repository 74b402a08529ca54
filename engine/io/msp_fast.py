"""Fast MSP reader: numba finds the records and reads the peaks, Python the metadata.

It gives exactly what the reference reader (:func:`engine.io.msp.read_msp_text`,
line by line) gives: the same records, peaks bit for bit, metadata and import
report.  :func:`engine.io.msp_scan.scan_msp` follows the reference's record
logic over the UTF-8 bytes for blank, ``key: value`` and plain peak lines, and
hands back every record with anything else in it (decimal commas, MSL
parentheses, a stray line, no peaks, ...) as a span of lines that the reference
reads; the ``key: value`` pairs of the other records go through the reference's
own :func:`~engine.io.msp.add_key` and :func:`~engine.io.msp.emit_record`.
"""

from __future__ import annotations

import numpy as np

from engine.io import msp_scan
from engine.io._build import LibraryBuilder, gc_paused
from engine.io.msp import Record, add_key, read_msp_lines, record_fields
from engine.io.scan import gather
from engine.io.sniff import split_lines

__all__ = ["read_msp_fast"]

#: Keys the reference does more with than store the first value.
_NUM_PEAKS = frozenset(("num peaks", "num_peaks", "numpeaks"))
_SPECIAL = _NUM_PEAKS | {"synon", "comment", "comments"}


def read_msp_fast(text: str, builder: LibraryBuilder) -> None:
    """Parse MSP ``text`` into ``builder`` as :func:`~engine.io.msp.read_msp_text` does."""
    with gc_paused():
        _read(text, builder)


def _strings(buf: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> list[str]:
    if len(lo) == 0:
        return []
    return gather(buf, lo, hi).tobytes().decode("utf-8", "surrogatepass").split("\n")


def _lowered(keys: list[str]) -> list[str]:
    """Each key lowercased (ASCII keys all at once, the others one by one)."""
    joined = "\n".join(keys)
    if joined.isascii():
        return joined.lower().split("\n") if keys else []
    memo: dict[str, str] = {}
    return [memo.get(k) or memo.setdefault(k, k.lower()) for k in keys]


def _read(text: str, builder: LibraryBuilder) -> None:
    data = text.encode("utf-8", "surrogatepass")
    buf = np.frombuffer(data, dtype=np.uint8)
    kinds, seg_a, seg_b, rec_keys, rec_values, spans, values, slow = msp_scan.scan_msp(buf)
    at = np.flatnonzero(np.isnan(values))
    for k, where in zip(at.tolist(), slow[at].tolist(), strict=True):
        lo = where // msp_scan.SLOW_SPAN
        values[k] = float(data[lo : lo + where % msp_scan.SLOW_SPAN])
    mz, intensity = values[0::2], values[1::2]
    keys = _lowered(_strings(buf, spans[:, 0], spans[:, 1]))
    texts = _strings(buf, spans[:, 2], spans[:, 3])
    rec_keys, pairs = rec_keys.tolist(), (rec_values // 2).tolist()

    record = 0
    rows: list[tuple] = []
    notes: list[list[str]] = []
    for kind, a, b in zip(kinds.tolist(), seg_a.tolist(), seg_b.tolist(), strict=True):
        if kind == msp_scan.SLOW:
            builder.add_many(rows, mz, intensity, notes)  # the records so far, in order
            rows, notes = [], []
            lines = split_lines(data[a:b].decode("utf-8", "surrogatepass"))
            record = read_msp_lines(lines, builder, record)
            continue
        record += 1
        k0, k1 = rec_keys[a], rec_keys[a + 1]
        state = Record()
        last = k1 - 1 if k1 > k0 and keys[k1 - 1] in _NUM_PEAKS else k1
        meta = dict(zip(keys[k0:last], texts[k0:last], strict=True))
        if len(meta) == last - k0 and _SPECIAL.isdisjoint(meta):
            # distinct plain keys, then perhaps "Num Peaks": what add_key gives
            state.meta = meta
            if last < k1:
                state.num_peaks, state.in_peaks = texts[last], True
        else:
            record_keys, record_texts = keys[k0:k1], texts[k0:k1]
            state.meta = {}
            for key, value in zip(record_keys, record_texts, strict=True):
                add_key(state, key, value)
        p0, p1 = pairs[a], pairs[a + 1]
        try:
            fields = record_fields(record, state, builder, (mz[p0:p1], intensity[p0:p1]))
        except Exception as exc:  # noqa: BLE001 - as the reference's emit_record
            builder.skip(record, state.meta.get("name", ""), f"unreadable record ({exc})")
            continue
        if fields is not None:
            precursor, charge, ion_mode, metadata, record_notes = fields[2:]
            rows.append((record, precursor, charge, ion_mode, metadata, p0, p1))
            notes.append(record_notes)
    builder.add_many(rows, mz, intensity, notes)
    builder.records = record
