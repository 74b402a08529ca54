"""MSP reader (NIST, MoNA, MassBank, RIKEN/MS-DIAL, GOLM flavours; AMDIS MSL): reference and fast.

The reference reads line by line.  ``Key: value`` lines are metadata (keys lowercased;
``Synon:`` lines joined with ``; ``; ``"key=value"`` pairs of ``Comments:`` fill keys
the record lacks).  Peaks start at ``Num Peaks:`` or the first line starting with a
digit and run to the next blank or key line: ``m/z intensity`` pairs separated by
blanks, commas, colons or MSL's parentheses, a quoted annotation allowed, pairs split
by ``;`` or following each other; one that is not numeric skips its record.  The fast
reader lets :func:`engine.io.msp_scan.scan_msp` read what it can over the bytes and
hands every unusual record to the reference: both give the same library bit for bit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import numpy as np

from engine.io import msp_scan
from engine.io._build import LibraryBuilder, gc_paused
from engine.io.fields import charge_from_adduct, parse_charge_text, parse_ion_mode
from engine.io.scan import gather
from engine.io.stream import split_lines

__all__ = ["read_msp_fast", "read_msp_text"]

_KEY_RE = re.compile(r"^\s*([^:]+?)\s*:\s*(.*?)\s*$")
_QUOTED_RE = re.compile(r'"[^"]*"')
_SPLIT_RE = re.compile(r"[\s,:()]+")
_INNER_COMMA_RE = re.compile(r"\d,\d")
_DECIMAL_COMMA_RE = re.compile(r"^[+-]?\d+,\d+$")
_NUMBER_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_PRECURSOR_KEYS = ("precursormz", "precursor_mz", "precursor m/z", "pepmass", "precursormass")
_ION_MODE_KEYS = (
    "ion_mode",
    "ionmode",
    "ion mode",
    "polarity",
    "ionization mode",
    "ionization_mode",
)
_NUM_PEAKS_KEYS = frozenset(("num peaks", "num_peaks", "numpeaks"))
#: Keys the reference does more with than store the first value.
_SPECIAL = _NUM_PEAKS_KEYS | {"synon", "comment", "comments"}
#: A line starting with one of these is a peak line (GOLM's ``85:201`` included).
_PEAK_START = frozenset("0123456789.(")
#: ``"key=value"`` and ``key="value"`` pairs of a MoNA / GNPS ``Comments:`` line.
_COMMENT_PAIR_RE = re.compile(r'"([^"=]+)=([^"]*)"|([\w-]+)="([^"]*)"')
_ID_KEYS = ("db#", "accession", "spectrumid", "id")


class _PeakLineError(ValueError):
    pass


def read_msp_text(text: str, builder: LibraryBuilder) -> None:
    """The reference reader: MSP ``text`` (the decoded file) into ``builder``."""
    builder.records = read_msp_lines(split_lines(text), builder, 0)


def read_msp_lines(lines: Iterable[str], builder: LibraryBuilder, record: int) -> int:
    """MSP ``lines`` (no line ends, starting outside a record) into ``builder``.

    ``record`` records came before; returns the number read so far.
    """
    state = Record()

    def finish() -> None:
        nonlocal record, state
        if state.meta is not None:
            record += 1
            emit_record(record, state, builder)
        state = Record()

    for line in lines:
        stripped = line.strip()
        if not stripped:
            if state.in_peaks and (state.peak_lines or not _expects_peaks(state.num_peaks)):
                finish()  # a blank line straight after "Num Peaks: 5" is not the end yet
            continue
        match = None if stripped[0] in _PEAK_START else _KEY_RE.match(stripped)
        if match is None:
            if state.in_peaks or stripped[0] in _PEAK_START:
                if state.meta is None:
                    state.meta = {}
                state.in_peaks = True
                state.peak_lines.append(stripped)
            continue  # else: a stray line in the metadata block, or outside any record
        key, value = match.group(1).lower(), match.group(2)
        # A key line after the peaks, or a second Name:, starts the next record.
        if state.in_peaks or (key == "name" and state.meta is not None and "name" in state.meta):
            finish()
        if state.meta is None:
            state.meta = {}
        add_key(state, key, value)
    finish()
    return record


def add_key(state: Record, key: str, value: str) -> None:
    """A ``key: value`` line (``key`` lowercased) of the record being read."""
    if key in _NUM_PEAKS_KEYS:
        state.num_peaks, state.in_peaks = value, True
    elif key == "synon":
        state.synonyms.append(value)
    elif key in ("comment", "comments"):
        state.meta.setdefault(key, value)
        state.comment_pairs.extend(_COMMENT_PAIR_RE.findall(value))
    elif key not in state.meta:
        state.meta[key] = value


def emit_record(record: int, state: Record, builder: LibraryBuilder) -> None:
    """Hand one finished record to ``builder`` (a failure is a skipped record)."""
    fields = _fields(record, state, builder)
    if fields is not None:
        builder.add(record, *fields)


def _fields(
    record: int, state: Record, builder: LibraryBuilder, peaks: tuple | None = None
) -> tuple | None:
    """:func:`record_fields`, None when the record is skipped (a failure included)."""
    try:
        return record_fields(record, state, builder, peaks)
    except Exception as exc:  # noqa: BLE001 - a record's failure is a report line
        builder.skip(record, (state.meta or {}).get("name", ""), f"unreadable record ({exc})")
        return None


def _expects_peaks(num_peaks: str | None) -> bool:
    try:
        return num_peaks is not None and int(num_peaks) > 0
    except ValueError:
        return False


class Record:
    """The lines of one record while it is being read."""

    def __init__(self) -> None:
        self.meta: dict[str, str] | None = None
        self.peak_lines: list[str] = []
        self.num_peaks: str | None = None
        self.in_peaks = False
        self.synonyms: list[str] = []
        self.comment_pairs: list[tuple[str, str, str, str]] = []


def record_fields(
    record: int,
    state: Record,
    builder: LibraryBuilder,
    peaks: tuple[np.ndarray, np.ndarray] | None,
) -> tuple | None:
    """``(mz, intensity, precursor_mz, charge, ion_mode, metadata, notes)`` of a finished
    record, or None when it is skipped (told to ``builder``).

    ``peaks``, when given, were read by the fast reader (they hold no decimal commas).
    """
    meta = dict(state.meta or {})
    title = meta.get("name", "")
    num_peaks = state.num_peaks
    if state.synonyms:
        meta.setdefault("synon", "; ".join(state.synonyms))
    for key_a, value_a, key_b, value_b in state.comment_pairs:
        key, value = (key_a or key_b).strip().lower(), (value_a or value_b).strip()
        if key and value:
            meta.setdefault(key, value)
    if num_peaks is None and not state.peak_lines and peaks is None:
        builder.skip(record, title, "no peaks and no 'Num Peaks' line")
        return None
    if peaks is not None:
        (mz, intensity), decimal_commas = peaks, False
    else:
        try:
            mz, intensity, decimal_commas = _parse_peaks(state.peak_lines)
        except _PeakLineError as exc:
            builder.skip(record, title, str(exc))
            return None
    notes = ["decimal commas in peaks read as decimal points"] if decimal_commas else []
    try:
        expected = int(num_peaks) if num_peaks is not None else None
    except ValueError:
        expected = None
    if expected is not None and expected != len(mz):
        notes.append(f"'Num Peaks: {num_peaks}' but {len(mz)} peak(s) found")

    precursor = math.nan
    for key in _PRECURSOR_KEYS:
        if key in meta:
            value = meta[key].split()[0] if meta[key].split() else ""
            if _DECIMAL_COMMA_RE.match(value):
                value = value.replace(",", ".")
                notes.append(f"decimal comma in precursor m/z {meta[key]!r} read as a point")
            try:
                precursor = float(value)
            except ValueError:
                notes.append(f"unreadable precursor m/z {meta[key]!r} ignored")
            break
    ion_mode = 0
    for key in _ION_MODE_KEYS:
        if key in meta:
            ion_mode = parse_ion_mode(meta[key])
            break
    adduct = meta.get("precursor_type") or meta.get("adduct") or ""
    charge = parse_charge_text(meta.get("charge"))
    if charge is None:
        charge = charge_from_adduct(adduct)
    metadata = dict(meta)
    metadata["id"] = next((meta[k] for k in _ID_KEYS if meta.get(k)), "")
    metadata["title"] = title
    return mz, intensity, precursor, charge, ion_mode, metadata, notes


def _parse_peaks(lines: list[str]) -> tuple[np.ndarray, np.ndarray, bool]:
    """Peaks of a record, and whether decimal commas were read as points.

    A pair is read as written with decimal commas when its first two
    blank-separated words are numbers and a comma sits between digits inside one
    of them (``85,0284 100`` or ``85,0284\t12,5``); a comma next to a blank, or a
    pair with no blank (``85,100``), separates m/z from intensity as before.
    """
    mz: list[float] = []
    intensity: list[float] = []
    decimal_commas = False
    for line in lines:
        for pair in _QUOTED_RE.sub(" ", line).split(";"):
            words = pair.split()
            if len(words) >= 2 and any(_INNER_COMMA_RE.search(w) for w in words[:2]):
                if not all(_DECIMAL_COMMA_RE.match(w) or _NUMBER_RE.match(w) for w in words[:2]):
                    raise _PeakLineError(f"unreadable peak line {line[:60]!r}")
                mz.append(float(words[0].replace(",", ".")))
                intensity.append(float(words[1].replace(",", ".")))
                decimal_commas = True
                continue
            tokens = [t for t in _SPLIT_RE.split(pair) if t]
            if not tokens:
                continue
            try:
                values = [float(t) for t in tokens]
            except ValueError:
                values = None
            if values is not None and len(values) > 2 and len(values) % 2 == 0:
                mz.extend(values[0::2])  # several "m/z int" pairs on one line
                intensity.extend(values[1::2])
                continue
            try:
                mz.append(float(tokens[0]))
                intensity.append(float(tokens[1]))
            except (ValueError, IndexError):
                raise _PeakLineError(f"unreadable peak line {line[:60]!r}") from None
    return np.asarray(mz, dtype=np.float64), np.asarray(intensity, dtype=np.float64), decimal_commas


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


@gc_paused()
def read_msp_fast(text: str, builder: LibraryBuilder) -> None:
    """The fast reader: as :func:`read_msp_text`, records read by the scanner where it can."""
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
        last = k1 - 1 if k1 > k0 and keys[k1 - 1] in _NUM_PEAKS_KEYS else k1
        meta = dict(zip(keys[k0:last], texts[k0:last], strict=True))
        if len(meta) == last - k0 and _SPECIAL.isdisjoint(meta):
            # distinct plain keys, then perhaps "Num Peaks": what add_key gives
            state.meta = meta
            if last < k1:
                state.num_peaks, state.in_peaks = texts[last], True
        else:
            state.meta = {}
            for key, value in zip(keys[k0:k1], texts[k0:k1], strict=True):
                add_key(state, key, value)
        p0, p1 = pairs[a], pairs[a + 1]
        fields = _fields(record, state, builder, (mz[p0:p1], intensity[p0:p1]))
        if fields is not None:
            precursor, charge, ion_mode, metadata, record_notes = fields[2:]
            rows.append((record, precursor, charge, ion_mode, metadata, p0, p1))
            notes.append(record_notes)
    builder.add_many(rows, mz, intensity, notes)
    builder.records = record
