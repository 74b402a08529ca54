"""Dense score matrices on the GPU (heatmaps): row chunks on two streams."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.backends.base import PreparedSpectra, score_kind, score_tolerance
from engine.backends.cuda_buffers import DenseSlot, Resident
from engine.backends.rescore import PendingScores, submit_rescore
from engine.kernels.heavy import copy_rows, touch_pages
from engine.kernels.threads import parallel_region
from engine.params import SearchParameters

__all__ = ["DenseScores"]

#: Bytes per page of host memory, for faulting the result in (4 KiB, the smallest).
PAGE_BYTES = 4096


class DenseScores:
    """The dense matrices of a :class:`~engine.backends.cuda.CudaBackend` (its
    ``matrices``): scored by its pipeline's kernel, on two slots of its own.

    Counts the backend's ``rescored_pairs``.
    """

    def __init__(self, backend: Any) -> None:
        self.be = backend
        self.slots: list[DenseSlot] = []

    def _get_slots(
        self, rows: int, cols: int, s_dtype: Any, m_dtype: Any, ovf_cap: int
    ) -> list[DenseSlot]:
        """Two slots viewed as ``(rows, cols)`` chunks; they grow, never shrink, so that
        later matrices up to the largest chunk so far allocate nothing."""
        need = (rows * cols * np.dtype(s_dtype).itemsize, rows * cols * np.dtype(m_dtype).itemsize)
        slots = self.slots
        if not slots or not slots[0].fits(*need, ovf_cap):
            if slots:
                need = (max(need[0], slots[0].score_bytes), max(need[1], slots[0].match_bytes))
                ovf_cap = max(ovf_cap, slots[0].ovf_cap)
            self.slots = slots = []  # the old buffers go before the new come
            self.slots = slots = [DenseSlot(self.be._cuda, *need, ovf_cap) for _ in range(2)]
        for slot in slots:
            slot.shape(rows, cols, s_dtype, m_dtype)
        return slots

    def scores(
        self,
        queries: PreparedSpectra,
        library: PreparedSpectra,
        params: SearchParameters,
        chunk_bytes: int,
        compact: bool,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Row chunks on two streams: chunk ``i + 1`` is scored while chunk ``i`` is copied."""
        nq, nl = len(queries), len(library)
        big = int(
            max(np.diff(queries.offsets).max(initial=0), np.diff(library.offsets).max(initial=0))
        )
        s_dtype = np.float32 if compact else np.float64
        m_dtype = np.int16 if compact and big <= np.iinfo(np.int16).max else np.int32
        scores = np.empty((nq, nl), dtype=s_dtype)
        matches = np.empty((nq, nl), dtype=m_dtype)
        if nq == 0 or nl == 0:
            return scores, matches
        # rows by peak count, longest first: their long pairs, rescored on the host,
        # are handed off early and overlap the later chunks instead of trailing the last
        row_of, by_count = queries.derived("longest_first", lambda: _longest_first(queries))
        dq, dl = self.be._upload(by_count, keep=False), self.be._upload(library)
        row_bytes = nl * (np.dtype(s_dtype).itemsize + np.dtype(m_dtype).itemsize)
        rows = max(1, min(nq, 65535, chunk_bytes // row_bytes))
        slots = self._get_slots(rows, nl, s_dtype, m_dtype, min(rows * nl, 1 << 20))
        cols = self.be._cuda.to_device(np.argsort(dl.counts, kind="stable").astype(np.int32))
        rescoring: list[PendingScores] = []
        into = (row_of, queries, library, params, scores, matches)
        prev = None
        for i, q0 in enumerate(range(0, nq, rows)):
            slot = slots[i % 2]
            n = min(rows, nq - q0)
            self._launch_dense(slot, dq, dl, cols, q0, n, params)
            if prev is None:  # while the GPU scores the first chunk: the result's pages
                with parallel_region():
                    for result in (scores, matches):
                        touch_pages(result.reshape(-1).view(np.uint8), PAGE_BYTES)
            else:
                rescoring += self._take_dense(*prev, *into)
            prev = (slot, q0, n)
        rescoring += self._take_dense(*prev, *into)
        for pend in rescoring:
            sc, m = pend.result()
            scores[pend.q_index, pend.l_index] = sc
            matches[pend.q_index, pend.l_index] = m
            self.be.rescored_pairs += len(sc)
        return scores, matches

    def _launch_dense(
        self,
        slot: DenseSlot,
        dq: Resident,
        dl: Resident,
        cols: Any,
        q0: int,
        n: int,
        params: SearchParameters,
    ) -> None:
        """Queue one row chunk: counters, kernel, copies into the pinned staging buffers."""
        s = slot.stream
        s.synchronize()  # staging buffers of this slot were consumed
        slot.counts.copy_to_device(slot.zeros_host, stream=s)
        score = self.be.pipeline.score
        score(slot, dq, dl, q0, n, cols, cols.shape[0], 0, params, False, window=False)
        slot.out_s.copy_to_host(slot.host_s, stream=s)
        slot.out_m.copy_to_host(slot.host_m, stream=s)
        slot.counts.copy_to_host(slot.counts_host, stream=s)

    def _take_dense(
        self,
        slot: DenseSlot,
        q0: int,
        n: int,
        row_of: np.ndarray,
        queries: PreparedSpectra,
        library: PreparedSpectra,
        params: SearchParameters,
        scores: np.ndarray,
        matches: np.ndarray,
    ) -> list[PendingScores]:
        """Wait for a chunk, copy it into the result (its rows ``row_of[q0:q0 + n]``),
        start rescoring its flagged pairs."""
        s = slot.stream
        s.synchronize()
        n_ovf = int(slot.counts_host[1])
        rows = row_of[q0 : q0 + n]
        listed = 0 < n_ovf <= slot.ovf_r.shape[0]
        if listed:  # the rescoring starts before the copy, which it then overlaps
            r = slot.ovf_r[:n_ovf].copy_to_host(stream=s).astype(np.int64)
            c = slot.ovf_c[:n_ovf].copy_to_host(stream=s).astype(np.int64)
            s.synchronize()
            pending = self._rescore_dense(queries, library, rows[r], c, params)
        with parallel_region():
            copy_rows(scores, rows, slot.host_s, n)
            copy_rows(matches, rows, slot.host_m, n)
        if listed:
            return pending
        if not n_ovf:
            return []
        r, c = np.nonzero(matches[rows] < 0)
        return self._rescore_dense(queries, library, rows[r], c, params)

    @staticmethod
    def _rescore_dense(
        queries: PreparedSpectra,
        library: PreparedSpectra,
        q_index: np.ndarray,
        l_index: np.ndarray,
        params: SearchParameters,
    ) -> list[PendingScores]:
        """Start the host's exact rescoring of flagged pairs (absolute indexes)."""
        return [
            submit_rescore(
                queries, library, q_index, l_index, score_tolerance(params), score_kind(params)
            )
        ]


def _longest_first(spectra: PreparedSpectra) -> tuple[np.ndarray, PreparedSpectra]:
    """``spectra`` by peak count, longest first (ties in order), and that order."""
    order = np.argsort(-np.diff(spectra.offsets), kind="stable")
    return order, spectra.reordered(order)
