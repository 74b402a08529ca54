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

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from engine.backends import Backend, Batch, CpuBackend, PreparedSpectra, get_backend
from engine.hits import HitTable
from engine.kernels.cancel import new_flag
from engine.library import SpectrumLibrary
from engine.params import SearchParameters

__all__ = ["CancelToken", "SearchJob", "SearchProgress", "search", "score_matrix"]

#: Query blocks start this small so the first hits arrive quickly, then double.
FIRST_QUERY_BLOCK = 64

log = logging.getLogger(__name__)


class CancelToken:
    """Thread-safe cancellation flag shared by a job and whoever may stop it.

    Safe to call from a signal handler.  Besides the event, the token holds
    :attr:`flag`, a one-byte array the CPU kernels poll between pairs, so a
    cancellation reaches a batch in flight, not only the next batch.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        #: ``flag[0]`` becomes 1 on :meth:`cancel` (read by the numba kernels).
        self.flag = new_flag()

    def cancel(self) -> None:
        """Ask the job to stop; the batch in flight returns what it has scored."""
        self.flag[0] = 1
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._event.is_set()


@dataclass
class SearchProgress:
    """Where a search stands.

    Attributes
    ----------
    pairs_done, pairs_total : int
        Spectrum pairs scored so far, and to score in all (pairs outside a
        precursor window are never planned, so they do not count).
    hits : int
        Hits streamed out so far.
    elapsed : float
        Seconds since the job started.
    """

    pairs_done: int = 0
    pairs_total: int = 0
    hits: int = 0
    elapsed: float = 0.0

    @property
    def fraction(self) -> float:
        """Done fraction in [0, 1]."""
        return 1.0 if self.pairs_total == 0 else self.pairs_done / self.pairs_total

    @property
    def pairs_per_second(self) -> float:
        """Average rate so far."""
        return self.pairs_done / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def seconds_left(self) -> float:
        """Estimated time to finish at the current rate (inf before the first batch)."""
        rate = self.pairs_per_second
        return (self.pairs_total - self.pairs_done) / rate if rate > 0 else float("inf")


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


class SearchJob:
    """One search of ``queries`` against ``library``.

    Iterate over the job (or call :meth:`run`) to execute it; each item is a
    :class:`~engine.hits.HitTable` chunk of final hits in original indexes.  The
    job may run in a worker thread while another thread calls :meth:`cancel`.

    Parameters
    ----------
    queries, library : SpectrumLibrary
        Spectra to search, and to search in.
    params : SearchParameters, optional
        Score, tolerances and filters (defaults: cosine, 0.1 Da, top 10).
    backend : str or Backend
        ``"auto"`` (CUDA when usable, else CPU), ``"cpu"``, ``"cuda"`` or a
        backend instance (e.g. one that keeps a library resident).
    on_progress : callable, optional
        Called with a :class:`SearchProgress` after every batch.
    on_message : callable, optional
        Called with one-line notices (e.g. a GPU failure and the CPU fallback).
    cancel_token : CancelToken, optional
        Shared token; a new one is made when omitted.
    cpu_threads : int, optional
        Threads of the CPU backend (default: all cores; a GUI passes
        :func:`engine.backends.interactive_threads` to keep a core for itself).
    keep_hits : bool, default True
        Keep every streamed chunk for :attr:`hits`.  A caller that writes the
        chunks away as they come (the CLI) passes False so memory stays bounded.
    """

    def __init__(
        self,
        queries: SpectrumLibrary,
        library: SpectrumLibrary,
        params: SearchParameters | None = None,
        *,
        backend: str | Backend = "auto",
        on_progress: Callable[[SearchProgress], None] | None = None,
        on_message: Callable[[str], None] | None = None,
        cancel_token: CancelToken | None = None,
        cpu_threads: int | None = None,
        keep_hits: bool = True,
    ) -> None:
        self.queries = queries
        self.keep_hits = keep_hits
        self.library = library
        self.params = params or SearchParameters()
        self.messages: list[str] = []
        self._on_progress = on_progress
        self._on_message = on_message
        self.cancel_token = cancel_token or CancelToken()
        self.cpu_threads = cpu_threads
        self.backend = (
            backend
            if isinstance(backend, Backend)
            else get_backend(backend, on_message=self._say, cpu_threads=cpu_threads)
        )
        self.progress = SearchProgress()
        self._chunks: list[HitTable] = []
        self.finished = False
        #: Queries whose library scan a cancellation cut short: their hits are the
        #: best among the library batches scored so far, not necessarily their final top-N.
        self.incomplete_queries = np.empty(0, dtype=np.int64)

    # -- control ----------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop after the batch in flight; hits found so far are kept."""
        self.cancel_token.cancel()

    @property
    def cancelled(self) -> bool:
        """True when the job was cancelled."""
        return self.cancel_token.cancelled

    @property
    def hits(self) -> HitTable:
        """All hits streamed so far, in canonical order."""
        if not self.keep_hits:
            raise RuntimeError("this job was made with keep_hits=False: use its chunks")
        chunks = [c for c in self._chunks if len(c)]
        hits = HitTable.concat(chunks)
        # chunks are each sorted; they need no merge when their query ranges ascend
        ordered = all(
            a.query_index[-1] < b.query_index[0] for a, b in zip(chunks, chunks[1:], strict=False)
        )
        return hits if ordered else hits.sorted()

    def run(self) -> HitTable:
        """Run to the end (or cancellation) and return all hits."""
        for _ in self:
            pass
        return self.hits

    def __iter__(self) -> Iterator[HitTable]:
        start = time.perf_counter()
        plan = self._plan()
        self.progress = SearchProgress(pairs_total=plan.pairs)
        # One stream of batches over all query blocks, so a pipelined backend
        # (CUDA) never drains between blocks; a block's hits go out once its last
        # batch is in.
        batches = [b for _, block in plan.blocks for b in block]
        block_of = np.repeat(np.arange(len(plan.blocks)), [len(b) for _, b in plan.blocks])
        left = [len(b) for _, b in plan.blocks]
        partial: list[HitTable] = []
        k = 0
        try:
            for n, (batch, hits) in enumerate(self._run_batches(plan, batches)):
                k = block_of[n]
                left[k] -= 1
                self.progress.pairs_done += batch.pairs
                self.progress.elapsed = time.perf_counter() - start
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
            self.progress.elapsed = time.perf_counter() - start

    # -- internals --------------------------------------------------------------------
    def _say(self, message: str) -> None:
        self.messages.append(message)
        if self._on_message is not None:
            self._on_message(message)

    def _report(self) -> None:
        if self._on_progress is not None:
            self._on_progress(self.progress)

    def _emit(self, plan: _Plan, parts: list[HitTable]) -> HitTable:
        hits = HitTable.concat(parts)
        q, l = hits.query_index, hits.library_index
        if plan.query_order is not None:
            q = plan.query_order[q]
        if plan.library_order is not None:
            l = plan.library_order[l]
        hits = HitTable(q, l, hits.score, hits.matches).top_per_query(self.params.top_n)
        if self.keep_hits:
            self._chunks.append(hits)
        self.progress.hits += len(hits)
        return hits

    def _run_batches(self, plan: _Plan, batches: list[Batch]) -> Iterator[tuple[Batch, HitTable]]:
        """Run the batches in order; on a backend failure continue on the CPU."""
        params = self.params
        if plan.library_order is not None and params.top_n:
            # Backends break score ties by position, and positions here are in
            # precursor order: keep every hit and let _emit take the top-N by
            # original library index (windowed searches have few hits per query).
            params = replace(params, top_n=0)
        if isinstance(self.backend, CpuBackend):
            self.backend.stop = self.cancel_token.flag
        done = 0
        try:
            for item in self.backend.run_batches(plan.queries, plan.library, batches, params):
                done += 1
                yield item
                if self.cancelled:
                    return
        except Exception as exc:
            if isinstance(self.backend, CpuBackend):
                raise
            self._say(
                f"{self.backend.name} backend failed ({type(exc).__name__}: {exc}); "
                "continuing on the CPU"
            )
            self.backend = CpuBackend(self.cpu_threads)
            self.backend.stop = self.cancel_token.flag
            for batch in batches[done:]:
                yield (
                    batch,
                    self.backend.score_batch(plan.queries, plan.library, batch, params),
                )
                if self.cancelled:
                    return

    def _plan(self) -> _Plan:
        from engine.preprocess import pipeline_from_spec

        p = self.params
        pipeline = pipeline_from_spec(p.preprocess)
        powers = {"mz_power": p.mz_power, "intensity_power": p.intensity_power}
        queries = PreparedSpectra.from_library(pipeline(self.queries), **powers)
        library = PreparedSpectra.from_library(pipeline(self.library), **powers)
        plan = _Plan(queries, library, None, None)
        nq, nl = len(queries), len(library)
        q_size, size = self.backend.block_shape(p.batch_size)
        if nq == 0 or nl == 0:
            return plan
        if p.precursor_tolerance is None:
            for q0, q1 in _growing_blocks(nq, q_size):
                batches = [Batch(q0, q1, l0, min(l0 + size, nl)) for l0 in range(0, nl, size)]
                plan.blocks.append(((q0, q1), batches))
            return plan
        # Precursor window: sort both sides by precursor m/z (unknown precursors last,
        # they can never match) and give each query block only its library window.
        plan.query_order = np.argsort(queries.precursor_mz, kind="stable")
        plan.library_order = np.argsort(library.precursor_mz, kind="stable")
        plan.queries = queries.reordered(plan.query_order)
        plan.library = library.reordered(plan.library_order)
        q_prec, l_prec = plan.queries.precursor_mz, plan.library.precursor_mz
        for q0, q1 in _growing_blocks(nq, q_size):
            lo, hi = (
                np.nanmin(q_prec[q0:q1], initial=np.inf),
                np.nanmax(q_prec[q0:q1], initial=-np.inf),
            )
            if not np.isfinite(lo):
                continue  # no query in the block has a precursor: nothing can match
            tol_lo = p.precursor_tolerance * (lo * 1e-6 if p.precursor_unit == "ppm" else 1.0)
            tol_hi = p.precursor_tolerance * (hi * 1e-6 if p.precursor_unit == "ppm" else 1.0)
            # widen by a hair so float rounding at the window edge never drops a pair;
            # the kernel applies the exact window test to every pair
            l_lo = int(np.searchsorted(l_prec, lo - tol_lo * (1 + 1e-9) - 1e-9, side="left"))
            l_hi = int(np.searchsorted(l_prec, hi + tol_hi * (1 + 1e-9) + 1e-9, side="right"))
            batches = [Batch(q0, q1, l0, min(l0 + size, l_hi)) for l0 in range(l_lo, l_hi, size)]
            if batches:
                plan.blocks.append(((q0, q1), batches))
        return plan


def _growing_blocks(n: int, size: int) -> list[tuple[int, int]]:
    """Split ``range(n)`` into blocks that start small and double up to ``size``."""
    blocks, start, step = [], 0, min(FIRST_QUERY_BLOCK, size)
    while start < n:
        stop = min(start + step, n)
        blocks.append((start, stop))
        start, step = stop, min(step * 2, size)
    return blocks


def search(
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters | None = None,
    *,
    backend: str | Backend = "auto",
    on_progress: Callable[[SearchProgress], None] | None = None,
    cancel_token: CancelToken | None = None,
    client=None,
    **param_overrides,
) -> HitTable:
    """Search ``queries`` against ``library`` and return all hits.

    Parameters
    ----------
    queries, library : SpectrumLibrary
    params : SearchParameters, optional
        Base parameters; keyword arguments (``tolerance=0.02, top_n=5``, ...)
        override single fields.
    backend, on_progress, cancel_token
        See :class:`SearchJob`.
    client : dask.distributed.Client, optional
        Run on this Dask cluster instead (:mod:`engine.distributed`); hits are
        identical to a single-process search.

    Returns
    -------
    HitTable
        Hits in canonical order (query, score descending, library index).
    """
    params = params or SearchParameters()
    if param_overrides:
        params = SearchParameters.from_dict({**params.to_dict(), **param_overrides})
    if client is not None:
        from engine import distributed

        return distributed.search(
            queries, library, params, client=client, backend=backend,
            on_progress=on_progress, cancel_token=cancel_token,
        )  # fmt: skip
    progress = {"on_progress": on_progress, "cancel_token": cancel_token}
    return SearchJob(queries, library, params, backend=backend, **progress).run()


def score_matrix(
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters | None = None,
    *,
    backend: str | Backend = "auto",
    on_message: Callable[[str], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Dense ``(scores, matches)`` of every query × library pair (heatmaps).

    Meant for blocks of up to a few thousand × a few thousand spectra; filters
    (threshold, top-N, precursor window) do not apply.
    """
    from engine.preprocess import pipeline_from_spec

    params = params or SearchParameters()
    engine_backend = backend if isinstance(backend, Backend) else get_backend(backend)
    pipeline = pipeline_from_spec(params.preprocess)
    powers = {"mz_power": params.mz_power, "intensity_power": params.intensity_power}
    q = PreparedSpectra.from_library(pipeline(queries), **powers)
    l = PreparedSpectra.from_library(pipeline(library), **powers)
    try:
        return engine_backend.dense(q, l, params)
    except Exception as exc:
        if isinstance(engine_backend, CpuBackend):
            raise
        message = (
            f"{engine_backend.name} backend failed ({type(exc).__name__}: {exc}); "
            "computing the matrix on the CPU"
        )
        log.warning(message)
        if on_message is not None:
            on_message(message)
        return CpuBackend().dense(q, l, params)
