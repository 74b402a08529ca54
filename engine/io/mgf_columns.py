"""MGF parameters as the reference reads them: per record, or many records column-wise.

Records of a chunk whose parameter lines the scanner located exactly and that have
the same keys in the same order form a group; each parameter is one column, and
PEPMASS, CHARGE, RTINSECONDS and the ion mode are converted column-wise by the
same rules as one record's (:func:`record_fields`) and pyteomics'.  A record
holding a value these rules cannot prove, or a key twice, is handed back.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engine.io._build import ChunkColumns
from engine.io.fields import parse_ion_mode, settle_numbers
from engine.io.mgf import ION_MODE_KEYS, id_and_title

__all__ = ["Unsure", "group_columns", "record_fields"]

#: Keys taken out of the metadata.
_NUMERIC = ("pepmass", "charge")


class Unsure(Exception):
    """The record holds something only the reference parser should judge."""


def precursor_of(text: str) -> float:
    """Precursor m/z of a PEPMASS text (one number, or m/z and intensity)."""
    try:  # float() strips the blanks split() splits at: success means one token
        return float(text)
    except ValueError:
        tokens = text.split()
        if len(tokens) != 2:
            raise Unsure from None
        try:
            precursor, _ = float(tokens[0]), float(tokens[1])
        except ValueError:
            raise Unsure from None
        return precursor


@functools.lru_cache(maxsize=4096)
def charge_of(text: str) -> int:
    """First charge of a CHARGE text as pyteomics reads it."""
    from pyteomics import auxiliary as _aux  # on first use: ``import engine`` stays quick

    try:
        charges = _aux._parse_charge(text, list_only=True)  # noqa: SLF001 - pyteomics' own rule
        return int(charges[0]) if charges else 0
    except Exception as exc:  # noqa: BLE001 - the reference decides what to do with it
        raise Unsure from exc


def rt_text(text: str) -> str:
    """RTINSECONDS as the reference keeps it (the float's repr)."""
    try:
        return repr(float(text))
    except ValueError:
        raise Unsure from None


#: Ion mode code of an ion mode text.
ion_mode_of = functools.lru_cache(maxsize=4096)(parse_ion_mode)


def record_fields(params: dict) -> tuple[float, int, int, dict]:
    """Precursor, charge, ion mode and metadata (``params`` itself, changed) of a record."""
    precursor = math.nan
    pepmass = params.pop("pepmass", None)
    if pepmass is not None:
        precursor = precursor_of(pepmass)
    charges = params.pop("charge", None)
    if isinstance(charges, str):
        charge = charge_of(charges)
    else:  # from the file header, already parsed by pyteomics
        charge = int(charges[0]) if charges else 0
    if "rtinseconds" in params:
        params["rtinseconds"] = rt_text(params["rtinseconds"])
    ion_mode = next((ion_mode_of(params[k]) for k in ION_MODE_KEYS if k in params), 0)
    return precursor, charge, ion_mode, id_and_title(params)


def _converted(
    texts: list[str], convert: Callable[[str], object], quick: Callable | None = None
) -> tuple[list, list[int]]:
    """``convert`` of each text, and the positions where it is unsure (their value: None).

    ``quick``, a quicker ``convert`` that raises where it differs, is tried first.
    """
    try:
        return list(map(quick or convert, texts)), []
    except (Unsure, ValueError):
        pass
    out: list = []
    bad: list[int] = []
    for i, text in enumerate(texts):
        try:
            out.append(convert(text))
        except (Unsure, ValueError):
            out.append(None)
            bad.append(i)
    return out, bad


def group_columns(chunk: Any, rows: Sequence[int], base: int) -> tuple[ChunkColumns | None, list]:
    """Records ``rows`` of a scanned chunk (:class:`engine.io.mgf_fast.ScannedChunk`) as
    columns, and the rows handed back; row ``r`` is record number ``base + r + 1``."""
    _, peak_lo, peak_hi, param_lo, param_hi, _, _, mz, intensity, _ = chunk.scanned
    ids, lo_list, hi_list = chunk.ids.tolist(), param_lo.tolist(), param_hi.tolist()
    groups: dict[tuple[int, ...], list[int]] = {}
    for r in rows:
        groups.setdefault(tuple(ids[lo_list[r] : hi_list[r]]), []).append(r)
    text = np.fromiter(chunk.values, dtype=object, count=len(chunk.values))
    parts: list[tuple] = []
    back: list[int] = []
    for signature, members in groups.items():
        keys = [chunk.names[k] for k in signature]
        if len(set(keys)) != len(keys):  # a key twice: the per-record path keeps the last
            back += members
            continue
        part = _group(keys, np.asarray(members, dtype=np.int64), param_lo, text, back)
        if part is not None:
            parts.append(part)
    if not parts:
        return None, back
    chosen = np.concatenate([p[0] for p in parts])
    precursors, charges, ion_modes, _, _, adducts, titles = (
        [x for p in parts for x in p[k]] for k in range(1, 8)
    )
    metadata = []
    start = 0
    for part in parts:
        metadata.append((part[4], start, start + len(part[0]), part[5]))
        start += len(part[0])
    precursor, charge, ion_mode, notes = settle_numbers(
        precursors, charges, ion_modes, adducts.__getitem__
    )
    columns = ChunkColumns(
        chosen + (base + 1), titles, peak_lo[chosen], peak_hi[chosen], mz, intensity,
        precursor, charge, ion_mode, notes, metadata,
    )  # fmt: skip
    return columns, back


def _group(
    keys: list[str], members: np.ndarray, param_lo: np.ndarray, text: np.ndarray, back: list[int]
) -> tuple | None:
    """One group's columns converted; records that are unsure go to ``back``."""
    n = len(members)
    starts = param_lo[members]
    columns = {key: text[starts + j].tolist() for j, key in enumerate(keys)}
    keep = np.ones(n, dtype=bool)
    precursors: list = [math.nan] * n
    charges: list = [0] * n
    if "pepmass" in columns:
        precursors, bad = _converted(columns["pepmass"], precursor_of, float)
        keep[bad] = False
    if "charge" in columns:
        charges, bad = _converted(columns["charge"], charge_of)
        keep[bad] = False
    if "rtinseconds" in columns:
        columns["rtinseconds"], bad = _converted(columns["rtinseconds"], rt_text)
        keep[bad] = False
    ion_modes: list = [0] * n
    for key in ION_MODE_KEYS:
        if key in columns:
            ion_modes = list(map(ion_mode_of, columns[key]))
            break
    meta_keys = [k for k in keys if k not in _NUMERIC]
    empty = [""] * n
    columns["id"] = columns.get("spectrumid", empty)
    if "id" not in meta_keys:
        meta_keys.append("id")
    if "title" not in meta_keys:
        columns["title"] = columns.get("name", empty)
        meta_keys.append("title")
    values = [columns[k] for k in meta_keys]
    adducts = columns.get("adduct", [None] * n)
    titles = [t or i or "" for t, i in zip(columns["title"], columns["id"], strict=True)]
    if not keep.all():
        back += members[~keep].tolist()
        picked = np.flatnonzero(keep).tolist()
        if not picked:
            return None
        members = members[keep]
        precursors, charges, ion_modes, adducts, titles = (
            [seq[i] for i in picked] for seq in (precursors, charges, ion_modes, adducts, titles)
        )
        values = [[column[i] for i in picked] for column in values]
    return members, precursors, charges, ion_modes, tuple(meta_keys), values, adducts, titles
