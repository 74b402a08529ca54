"""Columns that grow by appended chunks without copying what they hold each time.

A search streams its hits in chunks; concatenating every column on every chunk
costs O(rows²) over a search (an all-hits search of millions of rows spends most
of its time copying).  Here each column has spare capacity that doubles when
full, so every row is copied O(1) times on average, and readers get plain numpy
views of the filled part.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["GrowableColumns", "GrowableRows"]

_FIRST_CAPACITY = 4096


def _grown(buffer: np.ndarray, filled: int, needed: int) -> np.ndarray:
    """``buffer`` itself when it holds ``needed`` rows, else a larger copy of its filled part."""
    if needed <= len(buffer):
        return buffer
    capacity = max(_FIRST_CAPACITY, needed, 2 * len(buffer))
    bigger = np.empty(capacity, dtype=buffer.dtype)
    bigger[:filled] = buffer[:filled]
    return bigger


class GrowableColumns:
    """Named 1-D columns of equal length, appended to chunk by chunk."""

    def __init__(self) -> None:
        self._buffers: dict[str, np.ndarray] = {}
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def append(self, chunk: Mapping[str, np.ndarray]) -> None:
        """Append ``chunk`` (the same keys as the first chunk; dtypes promoted as needed)."""
        arrays = {k: np.asarray(v) for k, v in chunk.items()}
        n_new = len(next(iter(arrays.values()))) if arrays else 0
        if self._buffers and set(arrays) != set(self._buffers):
            raise ValueError(f"chunk columns {sorted(arrays)} differ from {sorted(self._buffers)}")
        end = self._n + n_new
        for key, values in arrays.items():
            buffer = self._buffers.get(key)
            if buffer is None:
                buffer = np.empty(0, dtype=values.dtype)
            elif np.result_type(buffer.dtype, values.dtype) != buffer.dtype:
                buffer = buffer[: self._n].astype(np.result_type(buffer.dtype, values.dtype))
            buffer = _grown(buffer, self._n, end)
            buffer[self._n : end] = values
            self._buffers[key] = buffer
        self._n = end

    def columns(self) -> dict[str, np.ndarray]:
        """Views of the filled rows of every column."""
        return {k: v[: self._n] for k, v in self._buffers.items()}


class GrowableRows:
    """A row-index view that grows at its end (the table's visible rows)."""

    def __init__(self) -> None:
        self._buffer = np.empty(0, dtype=np.int64)
        self._view: np.ndarray | None = None

    def extend(self, view: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``view`` followed by ``rows``, in place when ``view`` is the last result."""
        n = len(view)
        if view is not self._view:  # replaced meanwhile (sorted, filtered): start from it
            self._buffer = _grown(np.empty(0, dtype=np.int64), 0, n + len(rows))
            self._buffer[:n] = view
        self._buffer = _grown(self._buffer, n, n + len(rows))
        self._buffer[n : n + len(rows)] = rows
        self._view = self._buffer[: n + len(rows)]
        return self._view
