"""The one-call search on a Dask cluster: :func:`search` runs a :class:`.job.DaskSearchJob`."""

from __future__ import annotations

from collections.abc import Callable

from engine.distributed.job import DaskSearchJob
from engine.distributed.watch import STALL_TIMEOUT
from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search import CancelToken, SearchProgress

__all__ = ["search"]


def search(
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters | None = None,
    *,
    client,
    backend: str = "auto",
    on_progress: Callable[[SearchProgress], None] | None = None,
    cancel_token: CancelToken | None = None,
    n_shards: int | None = None,
    max_block_queries: int | None = None,
    stall_timeout: float = STALL_TIMEOUT,
    **param_overrides,
) -> HitTable:
    """:func:`engine.search` on a Dask cluster: the same hits, in canonical order.

    The keywords are those of :class:`DaskSearchJob`; ``param_overrides`` are
    fields of :class:`SearchParameters` that replace those of ``params``.
    """
    params = params or SearchParameters()
    if param_overrides:
        params = SearchParameters.from_dict({**params.to_dict(), **param_overrides})
    job = DaskSearchJob(
        queries, library, params, client=client, backend=backend, on_progress=on_progress,
        cancel_token=cancel_token, n_shards=n_shards, max_block_queries=max_block_queries,
        stall_timeout=stall_timeout,
    )  # fmt: skip
    return job.run()
