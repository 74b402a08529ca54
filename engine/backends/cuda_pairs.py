"""The tiles' flagged pairs, scored exactly on the GPU in lists of many tiles.

A tile flags the pairs its score kernel does not merge: long pairs (peak counts
multiplying to more than ``pair_work_max``, one thread with such a merge would
hold up the launch) and pairs whose components overflow the on-chip scratch.
By default the host's threads rescore them (:mod:`.rescore`): ~2.2 M such pairs in
100,000 × 1.5 M, ~50 s of CPU time (over 100 s before big components were matched
without a sort, ``benchmarks/GPU_NOTES.md``, v10).  With ``CudaBackend.pairs_on_gpu`` they
are queued from tile to tile here and scored by
:func:`~engine.kernels.cuda_kernels.pair_list_kernel` on a stream of their own,
tens of thousands at a time, so that enough threads run at once; only pairs it
cannot resolve (components of over ``big_peaks`` peaks a side, big modified-cosine
pairs) reach the host.  Measured (v8, against the slower host path of then), this
cut the host's CPU time six-fold but was no faster: a GPU thread walks a long merge
more slowly than a CPU core.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.backends.base import PreparedSpectra, score_kind, score_tolerance
from engine.backends.cuda_buffers import Resident, event_done
from engine.backends.rescore import PendingScores, submit_rescore
from engine.params import SearchParameters

__all__ = ["PairQueue", "QueuedScores"]

#: Pairs queued before a launch (a batch that waits for its pairs launches sooner).
LAUNCH_PAIRS = 1 << 17


class _Launch:
    """One launch of the pair kernel: its device outputs and an event."""

    def __init__(self, queue: PairQueue, q_index: np.ndarray, l_index: np.ndarray) -> None:
        cuda, s, n = queue.cuda, queue.stream, len(q_index)
        self.q_index, self.l_index = q_index, l_index
        self.scores = cuda.pinned_array(n, dtype=np.float64)
        self.matches = cuda.pinned_array(n, dtype=np.int32)
        dev_q = cuda.to_device(q_index.astype(np.int32), stream=s)
        dev_l = cuda.to_device(l_index.astype(np.int32), stream=s)
        dev_s = cuda.device_array(n, dtype=np.float64, stream=s)
        dev_m = cuda.device_array(n, dtype=np.int32, stream=s)
        scratch = queue.scratch
        k = queue.kernels
        k.pair_list_kernel[scratch[0].shape[0] // k.PAIR_THREADS, k.PAIR_THREADS, s](
            queue.dq.spectrum_set, queue.dl.spectrum_set, dev_q, dev_l, n,
            queue.tolerance, queue.kind, dev_s, dev_m, scratch,
        )  # fmt: skip
        dev_s.copy_to_host(self.scores, stream=s)
        dev_m.copy_to_host(self.matches, stream=s)
        self._keep = (dev_q, dev_l, dev_s, dev_m)  # alive until the stream is done
        self.event = cuda.event()
        self.event.record(s)
        self._finished = False
        self._queue = queue

    def done(self) -> bool:
        return self._finished or event_done(self.event)

    def finish(self) -> None:
        """Wait for the GPU, then rescore on the host what it could not resolve."""
        if self._finished:
            return
        self.event.synchronize()
        self._keep = None
        left = np.flatnonzero(self.matches < 0)
        if len(left):
            q = self._queue
            sc, m = submit_rescore(
                q.queries, q.library, self.q_index[left], self.l_index[left], q.tolerance,
                q.kind, q.threshold,
            ).result()  # fmt: skip
            self.scores[left], self.matches[left] = sc, m
            q.backend.rescored_pairs += len(left)
        self._finished = True


class QueuedScores(PendingScores):
    """Exact scores of a tile's flagged pairs, queued for :class:`PairQueue`'s next launch."""

    def __init__(self, queue: PairQueue, q_index: np.ndarray, l_index: np.ndarray) -> None:
        super().__init__(q_index, l_index, [])
        self._queue = queue
        self.launch: _Launch | None = None
        self.host: PendingScores | None = None  # a small flush goes to the host's threads
        self.start = 0

    def done(self) -> bool:
        """True once the scores are in; launches the queue if they are still waiting."""
        if self.host is not None:
            return self.host.done()
        if self.launch is None:
            self._queue.flush()
            return False
        return self.launch.done()

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        if self.launch is None and self.host is None:
            self._queue.flush()
        if self.host is not None:
            return self.host.result()
        self.launch.finish()
        stop = self.start + len(self.q_index)
        return self.launch.scores[self.start : stop], self.launch.matches[self.start : stop]


class PairQueue:
    """Flagged pairs of one run, scored on the GPU in large launches (own stream).

    Parameters
    ----------
    backend : CudaBackend
        Gives ``_cuda``, ``_k`` (the kernels), the stream and scratch of the pair
        kernel (one per backend) and counts ``rescored_pairs`` (left to the host).
    queries, library : PreparedSpectra
    dq, dl : Resident
        Their device copies.
    params : SearchParameters
    """

    def __init__(
        self,
        backend: Any,
        queries: PreparedSpectra,
        library: PreparedSpectra,
        dq: Resident,
        dl: Resident,
        params: SearchParameters,
    ) -> None:
        self.backend, self.cuda, self.kernels = backend, backend._cuda, backend._k
        self.queries, self.library, self.dq, self.dl = queries, library, dq, dl
        self.tolerance = float(score_tolerance(params))
        self.kind = int(score_kind(params))
        self.threshold = float(params.threshold)
        self.stream = backend.pipeline.pair_stream()
        self.scratch = backend.pipeline.pair_scratch()
        self._waiting: list[QueuedScores] = []
        self._count = 0

    def add(self, q_index: np.ndarray, l_index: np.ndarray) -> QueuedScores:
        """Queue pairs (absolute indexes); launch when enough are waiting."""
        handle = QueuedScores(self, np.asarray(q_index, np.int64), np.asarray(l_index, np.int64))
        self._waiting.append(handle)
        self._count += len(handle.q_index)
        if self._count >= LAUNCH_PAIRS:
            self.flush()
        return handle

    def flush(self) -> None:
        """Launch every waiting pair now (fewer than the backend's ``pair_gpu_min``: on
        the host's threads, which take a few pairs sooner than a launch that waits for
        its longest merge)."""
        if not self._waiting:
            return
        if self._count < self.backend.pair_gpu_min:
            for h in self._waiting:
                h.host = submit_rescore(
                    self.queries, self.library, h.q_index, h.l_index, self.tolerance, self.kind,
                    self.threshold,
                )  # fmt: skip
            self.backend.rescored_pairs += self._count
            self._waiting, self._count = [], 0
            return
        self.backend.gpu_scored_pairs += self._count
        q = np.concatenate([h.q_index for h in self._waiting])
        lib = np.concatenate([h.l_index for h in self._waiting])
        launch = _Launch(self, q, lib)
        start = 0
        for h in self._waiting:
            h.launch, h.start = launch, start
            start += len(h.q_index)
        self._waiting, self._count = [], 0
