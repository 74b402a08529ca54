"""GPU memory of the CUDA backend: resident spectrum sets and the buffers of tiles in flight."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.backends.base import PreparedSpectra
from engine.kernels import SpectrumSet
from engine.kernels.heavy import HEAVY_MAX, heavy_peaks

__all__ = ["DenseSlot", "Resident", "TileSlot", "event_done", "resident_key"]


@dataclass
class Resident:
    """Spectra uploaded to the GPU."""

    mz: Any
    weight: Any
    offsets: Any
    norm: Any
    precursor_mz: Any
    index: Any  # original index of each spectrum (ties)
    polarity: Any  # ion mode of each spectrum
    counts: np.ndarray  # host: peaks per spectrum
    nbytes: int
    host: PreparedSpectra | None = None
    heavy: dict | None = None  # threshold -> (device heavy, device counts)
    bound: dict | None = None  # bound pruning: weight check, eps, device peak indexes
    orders: dict | None = None  # tile columns -> their order (device arrays, recent ones)

    @property
    def spectrum_set(self) -> SpectrumSet:
        """The device arrays as the kernels take them."""
        return SpectrumSet(
            self.mz, self.weight, self.offsets, self.norm, self.precursor_mz, self.index,
            self.polarity,
        )  # fmt: skip

    def heavy_for(self, cuda: Any, threshold: float) -> tuple[Any, Any]:
        """Device arrays of :func:`heavy_peaks` for ``threshold`` (cached)."""
        if self.heavy is None:
            self.heavy = {}
        if threshold not in self.heavy:
            h = self.host
            heavy, count = heavy_peaks(
                h.mz, h.weight, h.offsets, h.norm, float(threshold), HEAVY_MAX
            )
            if len(self.heavy) > 4:
                self.heavy.clear()
            self.heavy[threshold] = (cuda.to_device(heavy), cuda.to_device(count))
        return self.heavy[threshold]


class TileSlot:
    """Device and pinned host buffers of one tile in flight, with its stream.

    Every buffer has the slot's full size and is passed whole to the kernels
    (with the tile's row and column counts as scalars), so a launch slices no
    device array.
    """

    def __init__(
        self, cuda: Any, rows: int, cols: int, segs: int, hit_cap: int, ovf_cap: int
    ) -> None:
        self.rows, self.cols, self.segs = rows, cols, segs
        self.hit_cap, self.ovf_cap = hit_cap, ovf_cap
        self.stream = cuda.stream()
        self.out_s = cuda.device_array((rows, cols), dtype=np.float64)
        self.out_m = cuda.device_array((rows, cols), dtype=np.int32)
        self.hit_r = cuda.device_array(hit_cap, dtype=np.int32)
        self.hit_c = cuda.device_array(hit_cap, dtype=np.int32)
        self.hit_s = cuda.device_array(hit_cap, dtype=np.float64)
        self.hit_m = cuda.device_array(hit_cap, dtype=np.int32)
        self.ovf_r = cuda.device_array(ovf_cap, dtype=np.int32)
        self.ovf_c = cuda.device_array(ovf_cap, dtype=np.int32)
        self.counts = cuda.device_array(2, dtype=np.int32)
        self.seg_n = cuda.device_array(max(rows * segs, 1), dtype=np.int32)
        self.merged = None  # event: the running top-N merged this slot's hits
        self.done = None  # event: the GPU finished the slot's tile (counters copied)
        self.cols_dev = cuda.device_array(1, dtype=np.int32)  # a placeholder (listed pairs)
        self.columns: Any = None  # the device columns of the tile in flight
        self.segs_dev = cuda.device_array(segs + 1, dtype=np.int32)
        self.segs_host = cuda.pinned_array(segs + 1, dtype=np.int32)
        self.counts_host = cuda.pinned_array(2, dtype=np.int32)
        self.zeros_host = cuda.pinned_array(2, dtype=np.int32)
        self.zeros_host[:] = 0
        #: Pairs that pass the bound and their count (allocated on first use).
        self.pairs: Any = None
        self.n_pairs: Any = None

    def fits(self, rows: int, cols: int, segs: int, hit_cap: int, ovf_cap: int) -> bool:
        """Whether a tile of this shape fits the slot's buffers."""
        return (
            self.rows >= rows
            and self.cols >= cols
            and self.segs >= segs
            and self.hit_cap >= hit_cap
            and self.ovf_cap >= ovf_cap
        )


class DenseSlot:
    """Device output and pinned staging buffers of dense row chunks, with their stream.

    Sized in bytes and viewed as each chunk's shape and dtypes (:meth:`shape`), so
    that matrices of other shapes or dtypes reuse the buffers instead of allocating
    them again.
    """

    def __init__(self, cuda: Any, score_bytes: int, match_bytes: int, ovf_cap: int) -> None:
        self.score_bytes = -(-int(score_bytes) // 8) * 8
        self.match_bytes = -(-int(match_bytes) // 8) * 8
        self.ovf_cap = int(ovf_cap)
        self.stream = cuda.stream()
        self._dev_s = cuda.device_array(self.score_bytes, dtype=np.uint8)
        self._dev_m = cuda.device_array(self.match_bytes, dtype=np.uint8)
        self._host_s = cuda.pinned_array(self.score_bytes, dtype=np.uint8)
        self._host_m = cuda.pinned_array(self.match_bytes, dtype=np.uint8)
        self.ovf_r = cuda.device_array(self.ovf_cap, dtype=np.int32)
        self.ovf_c = cuda.device_array(self.ovf_cap, dtype=np.int32)
        self.counts = cuda.device_array(2, dtype=np.int32)
        self.counts_host = cuda.pinned_array(2, dtype=np.int32)
        self.zeros_host = cuda.pinned_array(2, dtype=np.int32)
        self.zeros_host[:] = 0

    def fits(self, score_bytes: int, match_bytes: int, ovf_cap: int) -> bool:
        """Whether chunks of these sizes fit the buffers."""
        return (
            score_bytes <= self.score_bytes
            and match_bytes <= self.match_bytes
            and ovf_cap <= self.ovf_cap
        )

    def shape(self, rows: int, cols: int, s_dtype: Any, m_dtype: Any) -> None:
        """View the buffers as ``(rows, cols)`` chunks of ``s_dtype`` scores and
        ``m_dtype`` match counts (``out_s``, ``out_m`` on the device; ``host_s``,
        ``host_m`` pinned)."""
        n = rows * cols
        self.out_s = self._dev_s.view(s_dtype)[:n].reshape(rows, cols)
        self.out_m = self._dev_m.view(m_dtype)[:n].reshape(rows, cols)
        self.host_s = self._host_s.view(s_dtype)[:n].reshape(rows, cols)
        self.host_m = self._host_m.view(m_dtype)[:n].reshape(rows, cols)


def resident_key(spectra: PreparedSpectra) -> str:
    """The key of ``spectra``'s device copy: one token per prepared set, never a hash.

    Prepared sets are built once per library and preparation and reused by every
    search (:meth:`PreparedSpectra.for_search`), so identity is the key: hashing a
    1.5 M-spectrum library's arrays took longer than uploading them.
    """
    return spectra.derived("resident_key", lambda: uuid.uuid4().hex)


def big_scratch(cuda: Any, threads: int, size: int) -> tuple:
    """The pair kernel's global scratch for big components: one row per thread.

    ``(row best product, row best peak, column best product, column best peak,
    used A, used B)`` of ``threads × size`` (a component of up to ``size`` peaks a
    side; 26 bytes per peak and thread).
    """
    return (
        cuda.device_array((threads, size), dtype=np.float64),
        cuda.device_array((threads, size), dtype=np.int32),
        cuda.device_array((threads, size), dtype=np.float64),
        cuda.device_array((threads, size), dtype=np.int32),
        cuda.device_array((threads, size), dtype=np.uint8),
        cuda.device_array((threads, size), dtype=np.uint8),
    )


def event_done(event: Any) -> bool:
    """Whether the GPU has passed ``event`` (None: nothing recorded), without waiting."""
    query = getattr(event, "query", None)  # the simulator's events have run at once
    return query is None or bool(query())
