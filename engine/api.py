"""The engine's entry points: one search, a score matrix, and a job that streams hits.

This is the one place that picks a local search or a Dask cluster; the CLI, the
desktop application and scripts all come through here.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable

import numpy as np

from engine.backends import Backend, PreparedSpectra, cpu_fallback, get_backend
from engine.distributed import STALL_TIMEOUT, DaskSearchJob
from engine.hits import HitTable
from engine.io import load_library
from engine.library import SpectrumLibrary
from engine.params import SearchParameters, check_keywords
from engine.search import CancelToken, SearchContext, SearchJob, SearchProgress
from engine.search.fdr import FdrSearchJob, inner_search

__all__ = ["as_library", "parameters_with", "score_matrix", "search", "search_job"]

log = logging.getLogger(__name__)


def as_library(spectra: SpectrumLibrary | str | os.PathLike) -> SpectrumLibrary:
    """``spectra`` itself, or the library read from a spectrum file path (cached)."""
    if isinstance(spectra, SpectrumLibrary):
        return spectra
    if isinstance(spectra, str | os.PathLike):
        return load_library(spectra)
    raise TypeError(
        f"expected a SpectrumLibrary or a spectrum file path, not {type(spectra).__name__}"
    )


def parameters_with(
    params: SearchParameters | None, overrides: dict[str, object], caller: str
) -> SearchParameters:
    """``params`` with keyword ``overrides`` (made from them when ``params`` is None).

    Raises ``TypeError`` naming every keyword that is no parameter.
    """
    check_keywords(SearchParameters, overrides, caller, "search parameters")
    if params is None:
        return SearchParameters(**overrides)
    if not isinstance(params, SearchParameters):
        raise TypeError(f"params must be SearchParameters, not {type(params).__name__}")
    if "mode" in overrides and overrides["mode"] != params.mode:
        raise ValueError(
            "give mode either in SearchParameters or as a keyword argument, not both "
            "(a mode fills in the fields left out, and params has them all)"
        )
    return dataclasses.replace(params, **overrides) if overrides else params


def search_job(
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters | None = None,
    *,
    client=None,
    backend: str | Backend = "auto",
    on_progress: Callable[[SearchProgress], None] | None = None,
    on_message: Callable[[str], None] | None = None,
    cancel_token: CancelToken | None = None,
    cpu_threads: int | None = None,
    keep_hits: bool = True,
    own_client: bool = False,
    stall_timeout: float = STALL_TIMEOUT,
) -> SearchJob | DaskSearchJob:
    """A search job of ``queries`` against ``library``, local or on a Dask cluster.

    Iterate the job for :class:`~engine.hits.HitTable` chunks of final hits, or
    call its ``run()``; ``cancel()``, ``progress``, ``messages`` and ``hits`` work
    the same on both kinds.

    Parameters
    ----------
    queries, library : SpectrumLibrary
        Spectra to search, and to search in.
    params : SearchParameters, optional
        Score, tolerances and filters (defaults: cosine, 0.1 Da, top 10).
    client : dask.distributed.Client, optional
        Run on this cluster (:class:`engine.distributed.DaskSearchJob`); otherwise
        in this process (:class:`engine.search.SearchJob`).
    backend : str or Backend
        ``"auto"``, ``"cpu"``, ``"cuda"``; locally also a backend instance.  On a
        cluster it names each worker's backend.
    on_progress, on_message, cancel_token
        Progress callback, one-line notices, and a shared cancellation token.
    cpu_threads : int, optional
        Threads of a local CPU backend (default: all cores).
    keep_hits : bool, default True
        A local job keeps its chunks for ``hits``; False keeps memory bounded for a
        caller that writes chunks away.  A Dask job always keeps them (its query
        blocks finish in any order, so ``hits`` sorts them at the end).
    own_client : bool, default False
        Close ``client`` (and its local cluster) when the Dask job ends.
    stall_timeout : float, default 60
        Dask only: seconds a worker may go without a heartbeat (stopped, swapping,
        stuck on a dead mount) before it is treated as lost and its tasks are
        redone on the other workers.

    Returns
    -------
    SearchJob, DaskSearchJob or FdrSearchJob
        With ``params.fdr`` set, an :class:`~engine.search.fdr.FdrSearchJob` around
        one of the others (its hits come in one chunk at the end, with q-values).
    """
    if params is not None and params.fdr is not None:
        target_decoy, inner_params = inner_search(library, params)
        inner = search_job(
            queries, target_decoy, inner_params, client=client, backend=backend,
            on_progress=on_progress, on_message=on_message, cancel_token=cancel_token,
            cpu_threads=cpu_threads, own_client=own_client, stall_timeout=stall_timeout,
        )  # fmt: skip
        return FdrSearchJob(inner, queries, library, params, keep_hits=keep_hits)
    callbacks = {"on_progress": on_progress, "on_message": on_message, "cancel_token": cancel_token}
    if client is not None:
        return DaskSearchJob(
            queries, library, params, client=client, backend=backend, own_client=own_client,
            stall_timeout=stall_timeout, **callbacks,
        )  # fmt: skip
    return SearchJob(
        queries, library, params, backend=backend, cpu_threads=cpu_threads,
        keep_hits=keep_hits, **callbacks,
    )  # fmt: skip


def search(
    queries: SpectrumLibrary | str | os.PathLike,
    library: SpectrumLibrary | str | os.PathLike,
    params: SearchParameters | None = None,
    *,
    backend: str | Backend = "auto",
    on_progress: Callable[[SearchProgress], None] | None = None,
    cancel_token: CancelToken | None = None,
    client=None,
    stall_timeout: float = STALL_TIMEOUT,
    **param_overrides,
) -> HitTable:
    """Search ``queries`` against ``library`` and return all hits.

    Parameters
    ----------
    queries, library : SpectrumLibrary or path
        Spectra, or spectrum files (MGF, MSP, mzML, mzXML, JSON, optionally gzipped; read
        through the library cache with :func:`~engine.io.load_library`).
    params : SearchParameters, optional
        Base parameters (default: identity mode).
    **param_overrides
        Fields of :class:`SearchParameters` (``mode="analog"``,
        ``tolerance=0.02``, ``top_n=5``, ...).  Without ``params`` they make the
        parameters (a ``mode`` fills the fields not given); with ``params`` they
        replace single fields of it.  ``fdr=0.05`` estimates a q-value per hit
        (column ``q_value``; ``decoys=`` picks the scheme) and keeps the hits with
        ``q_value <= 0.05``.

    Raises
    ------
    TypeError
        For a keyword argument that is not a field of :class:`SearchParameters`
        (a misspelt ``tolerence=0.1`` must never be ignored).

    Examples
    --------
    >>> hits = engine.search("queries.mgf", "library.mgf")  # doctest: +SKIP
    >>> hits = engine.search(q, lib, mode="analog", precursor_tolerance=50)  # doctest: +SKIP
    backend, on_progress, cancel_token
        See :class:`~engine.search.SearchJob`.
    client : dask.distributed.Client, optional
        Run on this Dask cluster instead (:mod:`engine.distributed`); hits are
        identical to a single-process search.
    stall_timeout : float, default 60
        With ``client``: seconds a worker may go without a heartbeat before its
        tasks are redone on the other workers.

    Returns
    -------
    HitTable
        Hits in canonical order (query, score descending, library index); they
        know their search, so ``hits.to_pandas()`` gives the annotated frame.
    """
    params = parameters_with(params, param_overrides, "search")
    queries, library = as_library(queries), as_library(library)
    job = search_job(
        queries, library, params, client=client, backend=backend, on_progress=on_progress,
        cancel_token=cancel_token, stall_timeout=stall_timeout,
    )  # fmt: skip
    hits = job.run()
    q_values = job.estimate.hit_q_values if isinstance(job, FdrSearchJob) else None
    return hits.with_context(SearchContext(queries, library, params, q_values=q_values))


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
    params = params or SearchParameters()
    engine_backend = backend if isinstance(backend, Backend) else get_backend(backend)
    q = PreparedSpectra.for_search(queries, params)
    l = PreparedSpectra.for_search(library, params)
    try:
        return engine_backend.dense(q, l, params)
    except Exception as exc:
        cpu, notice = cpu_fallback(engine_backend, exc, "computing the matrix on the CPU")
        log.warning(notice)
        if on_message is not None:
            on_message(notice)
        return cpu.dense(q, l, params)
