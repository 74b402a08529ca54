"""Search jobs: queries × library in batches, hits streamed as they are final.

A :class:`SearchJob` plans the batches (with a precursor window, library and
queries are sorted by precursor m/z so each query block visits only the library
spectra it can match), runs them on a backend, keeps each query's top-N across
library blocks, and yields hit chunks as soon as a query block is complete.
Progress and cancellation go through plain callbacks and a token, never Qt.

Example
-------
>>> job = SearchJob(queries, library, SearchParameters(top_n=5))  # doctest: +SKIP
>>> for chunk in job:                                             # doctest: +SKIP
...     print(len(chunk), job.progress.pairs_per_second)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from engine.backends import (
    Backend,
    Batch,
    CpuBackend,
    PreparedSpectra,
    cpu_fallback,
    get_backend,
)
from engine.hits import HitTable
from engine.kernels.compile_note import on_compile
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search.evidence import evidence
from engine.search.prepare import COMPILING_MORE, prepare_kernels
from engine.search.progress import FIRST_QUERY_BLOCK, CancelToken, SearchProgress, query_blocks
from engine.search.streaming import StreamingJob
from engine.search.window import library_window, precursor_order, windowed_query_blocks

__all__ = ["SearchJob", "make_resident"]


@dataclass
class _Plan:
    """Batches grouped by query block, in the (possibly precursor-sorted) order."""

    queries: PreparedSpectra
    library: PreparedSpectra
    query_order: np.ndarray | None  # maps planned query position -> original index
    library_order: np.ndarray | None
    blocks: list[tuple[tuple[int, int], list[Batch]]] = field(default_factory=list)

    @property
    def pairs(self) -> int:
        return sum(b.pairs for _, batches in self.blocks for b in batches)


class SearchJob(StreamingJob):
    """One search of ``queries`` against ``library``.

    Iterate over the job (or call :meth:`run`) to execute it; each item is a
    :class:`~engine.hits.HitTable` chunk of final hits in original indexes.  The
    job may run in a worker thread while another thread calls :meth:`cancel`.

    Parameters
    ----------
    queries, library, params, on_progress, on_message, cancel_token, keep_hits
        As in :class:`~engine.search.StreamingJob` (``params`` defaults: cosine,
        0.1 Da, top 10; progress comes after every batch).  ``library`` may also
        be spectra that :meth:`PreparedSpectra.for_search
        <engine.backends.PreparedSpectra.for_search>` prepared for ``params``
        (a repository keeps its shards so, without their raw peaks).
    backend : str or Backend
        ``"auto"`` (CUDA when usable, else CPU), ``"cpu"``, ``"cuda"`` or a
        backend instance (e.g. one that keeps a library resident).
    cpu_threads : int, optional
        Threads of the CPU backend (default: all cores; a GUI passes
        :func:`engine.backends.interactive_threads` to keep a core for itself).
    """

    def __init__(
        self,
        queries: SpectrumLibrary,
        library: SpectrumLibrary | PreparedSpectra,
        params: SearchParameters | None = None,
        *,
        backend: str | Backend = "auto",
        on_progress: Callable[[SearchProgress], None] | None = None,
        on_message: Callable[[str], None] | None = None,
        cancel_token: CancelToken | None = None,
        cpu_threads: int | None = None,
        keep_hits: bool = True,
    ) -> None:
        super().__init__(
            queries, library, params, on_progress=on_progress, on_message=on_message,
            cancel_token=cancel_token, keep_hits=keep_hits,
        )  # fmt: skip
        self.cpu_threads = cpu_threads
        self._compile_pause = 0.0  # seconds of the search spent compiling (not timed)
        self._prepare_seconds = 0.0  # seconds its kernels took to be ready before it
        self.backend = (
            backend
            if isinstance(backend, Backend)
            else get_backend(backend, on_message=self._say, cpu_threads=cpu_threads)
        )

    def __iter__(self) -> Iterator[HitTable]:
        if not isinstance(self.backend, CpuBackend):
            yield from self._search()
            return
        # the waits for numba (the kernels for these settings; those for these spectra,
        # compiled on the first search that needs them): said, and not timed
        self._prepare_seconds = prepare_kernels(("cpu", self.params), self._run_tiny, self._say)
        stop_listening = on_compile(self._compiled_midway)
        try:
            yield from self._search()
        finally:
            stop_listening()

    @property
    def compile_seconds(self) -> float:
        """Seconds this search waited for numba (before it and midway), left out of
        ``progress.elapsed``; 0 once the kernels are compiled or cached."""
        return self._prepare_seconds + self._compile_pause

    def _compiled_midway(self, seconds: float | None) -> None:
        if seconds is None:
            self._say(COMPILING_MORE)
        else:
            self._compile_pause += seconds
            self._say(f"kernels for these spectra ready in {seconds:.0f} s (compiled once)")

    def _search(self) -> Iterator[HitTable]:
        start = time.perf_counter()
        self._compile_pause = 0.0
        plan = self._plan()
        self.progress = SearchProgress(pairs_total=plan.pairs)
        # One stream of batches over all query blocks, so a pipelined backend
        # (CUDA) never drains between blocks; a block's hits go out once its last
        # batch is in.
        batches = [b for _, block in plan.blocks for b in block]
        block_of = np.repeat(np.arange(len(plan.blocks)), [len(b) for _, b in plan.blocks])
        left = [len(b) for _, b in plan.blocks]
        partial: list[HitTable] = []
        k, seen = 0, 0
        try:
            for n, batch, hits in self._run_batches(plan, batches, block_of):
                k = block_of[n]
                if n < seen:  # the CPU redoes the block in flight: its partial hits go
                    partial = []
                    left[k] = len(plan.blocks[k][1])
                    self.progress.pairs_done -= sum(b.pairs for b in batches[n:seen])
                seen = n + 1
                left[k] -= 1
                self.progress.pairs_done += batch.pairs
                self.progress.elapsed = time.perf_counter() - start - self._compile_pause
                if self.params.top_n == 0:
                    if len(hits):
                        yield self._emit(plan, [hits])
                else:
                    partial.append(hits)
                    if left[k] == 0:
                        chunk = self._emit(plan, partial)
                        partial = []
                        if len(chunk):
                            yield chunk
                self._report()
                if self.cancelled:
                    break
            if self.cancelled:
                # the block in flight is incomplete even when its last batch came
                # back: the kernels cut a batch short as soon as the token is set
                if batches:
                    q0, q1 = plan.blocks[k][0]
                    block = np.arange(q0, q1)
                    self.incomplete_queries = (
                        block if plan.query_order is None else np.sort(plan.query_order[block])
                    )
                if partial:
                    chunk = self._emit(plan, partial)
                    if len(chunk):
                        yield chunk
                self._report()
                self._say("search cancelled: hits of the batches done so far are kept")
                return
            self.finished = True
        finally:
            self.progress.elapsed = time.perf_counter() - start - self._compile_pause

    # -- internals --------------------------------------------------------------------
    def _run_tiny(self, tiny: SpectrumLibrary) -> None:
        """This search on ``tiny`` (its kernels compiled or loaded), on a backend of its own,
        and its hits' evidence."""
        job = SearchJob(tiny, tiny, self.params, backend="cpu", cpu_threads=self.cpu_threads)
        hits = HitTable.concat(list(job))
        evidence(hits, tiny, tiny, self.params)  # the reverse scores every export writes

    def _emit(self, plan: _Plan, parts: list[HitTable]) -> HitTable:
        hits = HitTable.concat(parts)
        q, l = hits.query_index, hits.library_index
        if plan.query_order is not None:
            q = plan.query_order[q]
        if plan.library_order is not None:
            l = plan.library_order[l]
        return self._keep(HitTable(q, l, hits.score, hits.matches).top_per_query(self.params.top_n))

    def _run_batches(
        self, plan: _Plan, batches: list[Batch], block_of: np.ndarray
    ) -> Iterator[tuple[int, Batch, HitTable]]:
        """Run the batches in order, yielding ``(index, batch, hits)``; on a backend
        failure continue on the CPU.

        With a top-N the backend may hold a query's hits back until the last batch
        of its block (the device top-N does), so the CPU then redoes the whole
        block in flight, from its first batch: an index lower than one already
        yielded tells the caller to drop that block's partial hits.
        """
        params = self.params  # kernels rank ties by the library's original index
        if isinstance(self.backend, CpuBackend):
            self.backend.stop = self.cancel_token.flag
        done = 0
        try:
            items = self.backend.run_batches(
                plan.queries, plan.library, batches, params, across_batches=True
            )
            for batch, hits in items:
                yield done, batch, hits
                done += 1
                if self.cancelled:
                    return
        except Exception as exc:
            self.backend, notice = cpu_fallback(self.backend, exc, threads=self.cpu_threads)
            self._say(notice)
            self.backend.stop = self.cancel_token.flag
            restart = done
            if params.top_n > 0 and done < len(batches):
                restart = int(np.searchsorted(block_of, block_of[done]))
            for n in range(restart, len(batches)):
                yield (
                    n,
                    batches[n],
                    self.backend.score_batch(plan.queries, plan.library, batches[n], params),
                )
                if self.cancelled:
                    return

    def _plan(self) -> _Plan:
        p = self.params
        queries = PreparedSpectra.for_search(self.queries, p)
        library = PreparedSpectra.for_search(self.library, p)
        plan = _Plan(queries, library, None, None)
        nq, nl = len(queries), len(library)
        q_size, size = self.backend.block_shape(p.batch_size, p.top_n)
        if nq == 0 or nl == 0:
            return plan
        if p.precursor_tolerance is None:
            for q0, q1 in query_blocks(nq, q_size):
                batches = [Batch(q0, q1, l0, min(l0 + size, nl)) for l0 in range(0, nl, size)]
                plan.blocks.append(((q0, q1), batches))
            return plan
        # Precursor window: sort both sides by precursor m/z (unknown precursors last,
        # they can never match) and give each query block only its library window.
        plan.query_order, plan.queries = _by_precursor(queries)
        plan.library_order, plan.library = _by_precursor(library)
        blocks = windowed_query_blocks(
            plan.queries.precursor_mz, plan.library.precursor_mz, p, q_size,
            first_block=FIRST_QUERY_BLOCK, overhead_pairs=self.backend.block_overhead_pairs,
        )  # fmt: skip
        for q0, q1 in blocks:
            l_lo, l_hi = library_window(
                plan.queries.precursor_mz[q0:q1], plan.library.precursor_mz, p
            )
            batches = [Batch(q0, q1, l0, min(l0 + size, l_hi)) for l0 in range(l_lo, l_hi, size)]
            if batches:
                plan.blocks.append(((q0, q1), batches))
        return plan


def make_resident(
    library: SpectrumLibrary, params: SearchParameters | None = None, *, backend: Backend
) -> None:
    """Prepare ``library`` for searches with ``params`` and keep it on ``backend``'s device.

    What a first search would otherwise do on its way (preprocessing, weighting,
    the precursor order, the GPU copy and its peak indexes), done once ahead of it:
    every later :class:`SearchJob` of the same form on the same backend instance
    reuses it, so the first search takes what the next ones do.

    Parameters
    ----------
    library : SpectrumLibrary
    params : SearchParameters, optional
        The searches to prepare for (default: identity mode's defaults).
    backend : Backend
        The backend instance the searches will run on.
    """
    p = params or SearchParameters()
    prepared = PreparedSpectra.for_search(library, p)
    if p.precursor_tolerance is not None:
        _, prepared = _by_precursor(prepared)
    n = len(prepared)
    if n == 0:
        return
    _, size = backend.block_shape(p.batch_size, p.top_n)
    backend.make_resident(
        prepared, [Batch(0, 1, l0, min(l0 + size, n)) for l0 in range(0, n, size)], p
    )


def _by_precursor(spectra: PreparedSpectra) -> tuple[np.ndarray, PreparedSpectra]:
    """``spectra`` sorted by precursor m/z, and the order (built once per prepared set)."""

    def build() -> tuple[np.ndarray, PreparedSpectra]:
        order = precursor_order(spectra.precursor_mz)
        if np.array_equal(order, np.arange(len(order))):  # already in order (a repository shard)
            return order, spectra
        return order, spectra.reordered(order)

    return spectra.derived("by_precursor", build)
