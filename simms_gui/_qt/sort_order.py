"""Stable sort orders of table columns, fast for millions of rows.

``np.argsort(kind="stable")`` of 5 million float64 keys is a timsort of random
data (about half a second); of keys that fit 16 bits it is a radix sort (tens of
milliseconds).  :func:`stable_order` uses that: every key first goes through a
monotone map to 16-bit buckets, a stable radix sort orders the buckets, and a
stable sort of the keys in that order (nearly sorted: timsort's runs merge
cheaply) finishes.  Keys that fit 16 bits (text ranks of a library's names,
match counts) need the radix pass only; keys already in long runs (a view
sorted the other way) go straight to timsort, which merges runs in about one
pass.  The order is the one
``np.argsort(key, kind="stable")`` gives, with NaN last in both directions.

:class:`SourceCodes` keeps, chunk by chunk as hits stream in, the first row of
each spectrum a hit column derives from, so a text column (a library name) is
ranked over its distinct spectra, never over all rows.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SourceCodes", "stable_order"]

_BUCKETS = 65535.0


def stable_order(key: np.ndarray, *, descending: bool = False) -> np.ndarray:
    """Positions that sort ``key`` stably (equal keys keep their order), NaN last.

    Parameters
    ----------
    key : ndarray of numbers, shape (n,)
    descending : bool
        Largest first; equal keys still keep their order, NaN still last.

    Returns
    -------
    ndarray of int64, shape (n,)
        As ``np.argsort(key, kind="stable")`` (of ``-key`` when descending).
    """
    key = np.asarray(key)
    n = len(key)
    if key.dtype.kind == "f":
        nan = np.isnan(key)
        if nan.any():
            numbers = np.flatnonzero(~nan)
            order = numbers[stable_order(key[numbers], descending=descending)]
            return np.concatenate([order, np.flatnonzero(nan)])
        key = -key if descending else key  # -0.0 and 0.0 stay equal
    elif key.dtype.kind in "iub":
        key = key.astype(np.int64)
        if descending:
            key = -key
    else:
        raise TypeError(f"stable_order sorts numbers, not {key.dtype}")
    if n < 2:
        return np.arange(n, dtype=np.int64)
    descents = np.count_nonzero(key[1:] < key[:-1])
    if descents == 0:  # already in order (equal keys keep theirs)
        return np.arange(n, dtype=np.int64)
    if min(descents, n - 1 - descents) < n // 64:  # long runs (re-sorting a sorted view):
        return np.argsort(key, kind="stable").astype(np.int64)  # timsort merges them at once
    low, high = key.min(), key.max()
    if low == high:
        return np.arange(n, dtype=np.int64)
    if key.dtype.kind == "i" and high - low <= _BUCKETS:
        return np.argsort((key - low).astype(np.uint16), kind="stable").astype(np.int64)
    span = float(high) - float(low)
    if not np.isfinite(span):  # infinite keys: no useful buckets
        return np.argsort(key, kind="stable").astype(np.int64)
    # floor((key - low) * scale) never decreases as key grows: buckets keep the key order
    bucket = np.minimum((key - low) * (_BUCKETS / span), _BUCKETS).astype(np.uint16)
    order = np.argsort(bucket, kind="stable")
    return order[np.argsort(key[order], kind="stable")].astype(np.int64)


class SourceCodes:
    """First row of each source value (a spectrum index), kept up to date chunk by chunk.

    A hit column such as ``library_name`` derives from ``library_index``: its
    distinct values are those of the distinct spectra hit, a few thousand for
    millions of rows.
    """

    def __init__(self) -> None:
        self._first = np.full(0, -1, dtype=np.int64)
        self.version = 0  # grows when a new source value appears
        self.usable = True  # False once a negative value came: not an index

    def append(self, source: np.ndarray, start: int) -> None:
        """Record a chunk of source values stored from row ``start`` on."""
        source = np.asarray(source, dtype=np.int64)
        if not len(source) or not self.usable:
            return
        if source.min() < 0:
            self.usable = False
            return
        top = int(source.max())
        if top >= len(self._first):
            grown = np.full(max(top + 1, 2 * len(self._first)), -1, dtype=np.int64)
            grown[: len(self._first)] = self._first
            self._first = grown
        fresh = np.flatnonzero(self._first[source] < 0)  # most rows hit known spectra
        if len(fresh):
            values, first = np.unique(source[fresh], return_index=True)
            self._first[values] = start + fresh[first]
            self.version += 1

    def distinct(self) -> tuple[np.ndarray, np.ndarray]:
        """Source values seen (ascending) and the first row of each."""
        values = np.flatnonzero(self._first >= 0)
        return values, self._first[values]

    def table(self, codes: np.ndarray) -> np.ndarray:
        """A lookup table over source values: ``codes[i]`` at ``distinct()[0][i]``, -1 elsewhere."""
        values, _ = self.distinct()
        out = np.full(len(self._first), -1, dtype=np.int64)
        out[values] = codes
        return out
