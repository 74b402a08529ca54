"""MoNA records handed to the builder column-wise, grouped by their metadata keys.

:func:`engine.io.spectra_json_typed.read_mona_typed` makes each record's metadata
dictionary (the reference's, :func:`engine.io.spectra_json._mona_metadata`).  It
used to work out each record's numbers from its dictionary
(:func:`engine.io.spectra_json_fast.batch_fields`, which also takes
``precursor_mz`` and ``charge`` out and sets ``title``) and hand the
dictionaries to the builder, which grouped them back into columns.
:func:`mona_columns` groups the records by their keys once and does the same work
column by column: precursor texts read with one ``float`` call each (through
:func:`map`), MS level, charge, adduct and ion mode settled once per distinct
combination, ``title`` made from the ``name`` column; the builder gets the groups
as they are (a :class:`~engine.io.chunked_build.ChunkColumns`) and never sees a
dictionary.  Records whose peaks were not read, whose MS level the reference
refuses or whose precursor ``float`` does not read are left to the
record-by-record path, which says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, repeat
from operator import itemgetter

import numpy as np

from engine.io import spectra_json as ref
from engine.io import spectra_json_fast as fast
from engine.io._build import settle_numbers
from engine.io.chunked_build import ChunkColumns

__all__ = ["mona_columns"]

#: The columns :func:`engine.io.spectra_json_fast.batch_fields` settles numbers from.
_SETTLING = ("ms_level", "charge", "adduct", "ionmode")
#: Keys taken out of the metadata (their values become numbers).
_TAKEN = frozenset(("precursor_mz", "charge"))


def mona_columns(
    metadata: Sequence[tuple[tuple[str, ...], tuple[str, ...]]],
    lo: np.ndarray,
    hi: np.ndarray,
    peaks: tuple[np.ndarray, np.ndarray],
) -> tuple[ChunkColumns, list[int]]:
    """The records whose numbers settle here, column-wise; the others' indices.

    Parameters
    ----------
    metadata : sequence of (tuple, tuple)
        Each record's metadata as the reference makes it, as its keys and its
        values (both in the dictionary's order).
    lo, hi : ndarray of int64
        Record ``k``'s peaks are ``peaks[0][lo[k]:hi[k]]``, ``peaks[1][lo[k]:hi[k]]``;
        ``hi[k]`` is -1 where its peaks were not read.
    peaks : tuple of ndarray
        m/z and intensities of the records whose peaks were read.

    Returns
    -------
    (ChunkColumns, list of int)
        The records settled here (``add_many``'s rules applied) and the
        (0-based, ascending) indices of the others.
    """
    n = len(metadata)
    read = hi >= 0
    rest: list[int] = np.flatnonzero(~read).tolist()
    # records with the same keys (in the same order) together, in record order
    keys_of = list(map(itemgetter(0), metadata))
    number = {keys: k for k, keys in enumerate(dict.fromkeys(compress(keys_of, read)))}
    group = np.fromiter(map(number.get, keys_of, repeat(-1)), dtype=np.int64, count=n)
    group[~read] = -1  # first in the order below, and left out
    order = np.argsort(group, kind="stable")[n - int(read.sum()) :]
    bounds = np.flatnonzero(np.diff(group[order])) + 1
    groups = zip(number, np.split(order, bounds) if len(order) else [], strict=True)

    records: list[int] = []
    titles: list[str] = []
    precursors: list[float] = []
    charges: list[int] = []
    ion_modes: list[int] = []
    adducts: list[str | None] = []
    parts: list[tuple[tuple[str, ...], int, int, list[list[str]]]] = []
    for keys, at in groups:
        rows = at.tolist()
        m = len(rows)
        # the group's values column by column (its records' dicts have these keys in order)
        members = map(itemgetter(1), map(metadata.__getitem__, rows))
        columns = dict(zip(keys, zip(*members, strict=True), strict=True))
        precursor, readable = _precursors(columns.get("precursor_mz"), m)
        settled = _settled(columns, m)
        ok = [a and b is not None for a, b in zip(readable, settled, strict=True)]
        if not all(ok):
            rest += [k for k, good in zip(rows, ok, strict=True) if not good]
            rows = list(compress(rows, ok))
            columns = {key: tuple(compress(c, ok)) for key, c in columns.items()}
            precursor = list(compress(precursor, ok))
            settled = list(compress(settled, ok))
            m = len(rows)
            if not m:
                continue
        name = columns.get("name", ("",) * m)
        ident = columns.get("id", ("",) * m)
        kept = tuple(key for key in keys if key not in _TAKEN)
        values = [name if key == "title" else columns[key] for key in kept]
        if "title" not in keys:
            kept += ("title",)
            values.append(name)
        parts.append((kept, len(records), len(records) + m, values))
        records += rows
        titles += name if "name" in columns else ident  # a name is never empty
        precursors += precursor
        numbers = tuple(zip(*settled, strict=True))
        charges += numbers[0]
        ion_modes += numbers[1]
        adducts += columns.get("adduct", (None,) * m)

    index = np.asarray(records, dtype=np.int64)
    precursor, charge, ion_mode, notes = settle_numbers(
        precursors, charges, ion_modes, adducts.__getitem__
    )
    chunk = ChunkColumns(
        records=index + 1,
        titles=titles,
        lo=lo[index],
        hi=hi[index],
        mz=peaks[0],
        intensity=peaks[1],
        precursor=precursor,
        charge=charge,
        ion_mode=ion_mode,
        notes=notes,
        parts=parts,
    )
    return chunk, rest


def _precursors(texts: Sequence[str] | None, m: int) -> tuple[list[float], list[bool]]:
    """:func:`engine.io.spectra_json._precursor` of each text, and whether it read."""
    if texts is None:
        return [float("nan")] * m, [True] * m
    try:  # a text float() reads has no blanks, so it is its own first word
        return list(map(float, texts)), [True] * m
    except ValueError:
        pass
    out, readable = [], []
    for text in texts:
        try:
            out.append(ref._precursor(text))
            readable.append(True)
        except ValueError:  # the reference's _RecordError: the record is skipped
            out.append(float("nan"))
            readable.append(False)
    return out, readable


def _settled(columns: dict[str, Sequence[str]], m: int) -> list[tuple[int, int] | None]:
    """Per record ``(charge, ion mode)`` as ``batch_fields`` settles it (None: refused)."""
    given = [columns[key] if key in columns else repeat(None, m) for key in _SETTLING]
    keys = list(zip(repeat(True, m), *given, strict=False))
    known: dict[tuple, tuple[int, int] | None] = {}
    for key in dict.fromkeys(keys):
        settled = fast._SETTLED.get(key, fast._UNKNOWN)
        if settled is fast._UNKNOWN:
            settled = fast._remember(fast._SETTLED, key, fast._settle(*key))
        known[key] = settled
    return list(map(known.__getitem__, keys))
