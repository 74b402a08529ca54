"""A repository shard's stored float32 peaks widened to the float64 a search reads."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.kernels.spectrum_set import read_only
from engine.kernels.threads import SPECTRA_PER_SPAN, for_each_span

__all__ = ["widen_stored_peaks", "widened"]

#: Values per block of :func:`widened`.
_BLOCK = 1 << 16


@njit(cache=True, nogil=True)
def _widen_span(start, stop, mz, codes, scale, offsets, out_mz, out_intensity):  # pragma: no cover
    for s in range(start, stop):
        factor = np.float64(scale[s])
        for k in range(offsets[s], offsets[s + 1]):
            out_mz[k] = mz[k]
            out_intensity[k] = np.float64(codes[k]) * factor


def widen_stored_peaks(
    mz: np.ndarray, codes: np.ndarray, scale: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Float64 m/z and intensities ``codes * scale`` of stored peaks, on several threads.

    Parameters
    ----------
    mz : ndarray of float32, shape (n_peaks,)
    codes : ndarray of uint16, shape (n_peaks,)
        Per-spectrum scaled intensity codes.
    scale : ndarray of float32, shape (n_spectra,)
        Each spectrum's intensity of code 1.
    offsets : ndarray of int64, shape (n_spectra + 1,)

    Returns
    -------
    mz, intensity : ndarray of float64
        The same values numpy gives for ``mz.astype(float64)`` and
        ``codes.astype(float64) * np.repeat(scale.astype(float64), counts)``
        (one product each, so equal bit for bit), in one block of memory.
    """
    offsets = read_only(np.ascontiguousarray(offsets, dtype=np.int64))
    out = np.empty((2, mz.shape[0]), dtype=np.float64)
    for_each_span(
        _widen_span, offsets.shape[0] - 1,
        read_only(np.ascontiguousarray(mz, dtype=np.float32)),
        read_only(np.ascontiguousarray(codes, dtype=np.uint16)),
        read_only(np.ascontiguousarray(scale, dtype=np.float32)), offsets, out[0], out[1],
        max_span=SPECTRA_PER_SPAN,
    )  # fmt: skip
    return out[0], out[1]


@njit(cache=True, nogil=True)
def _widen_blocks(start, stop, values, out):  # pragma: no cover - numba
    for b in range(start, stop):
        for k in range(b * _BLOCK, min((b + 1) * _BLOCK, values.shape[0])):
            out[k] = values[k]


def widened(values: np.ndarray) -> np.ndarray:
    """A float64 copy of float32 ``values`` (exact), on several threads."""
    values = read_only(np.ascontiguousarray(values, dtype=np.float32))
    out = np.empty(values.shape[0], dtype=np.float64)
    for_each_span(_widen_blocks, (values.shape[0] + _BLOCK - 1) // _BLOCK, values, out)
    return out
