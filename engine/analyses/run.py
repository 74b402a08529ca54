"""How an analysis runs its searches: one options tuple, one cancellation, one self-search.

Clustering, molecular networks and the library check all score a spectrum set
against itself with the engine's exact search (:func:`engine.api.search_job`);
:class:`RunOptions` carries where and how those searches run (the keywords of
``search_job``), :class:`AnalysisCancelled` is what any of them raises when
cancelled, and :func:`self_search` is their one all-against-all search.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from engine.api import search_job
from engine.backends import Backend
from engine.distributed import STALL_TIMEOUT
from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search import CancelToken, SearchProgress

__all__ = ["AnalysisCancelled", "RunOptions", "self_search"]


class AnalysisCancelled(Exception):
    """A clustering, network or library check was cancelled before it finished (nothing to keep)."""


class RunOptions(NamedTuple):
    """Where and how an analysis runs its searches: the run keywords of :func:`engine.search_job`.

    Parameters
    ----------
    backend : str or Backend
        ``"auto"``, ``"cpu"``, ``"cuda"`` or a backend instance.
    client : dask.distributed.Client, optional
        Run the searches on this Dask cluster.
    on_progress, on_message : callable, optional
        Progress of each search, and one-line notices.
    cancel_token : CancelToken, optional
        Shared cancellation; :meth:`take` always gives one.
    cpu_threads : int, optional
        Threads of a local CPU backend (default: all cores).
    stall_timeout : float
        Dask only: seconds a silent worker is given before its tasks are redone.
    """

    backend: str | Backend = "auto"
    client: object | None = None
    on_progress: Callable[[SearchProgress], None] | None = None
    on_message: Callable[[str], None] | None = None
    cancel_token: CancelToken | None = None
    cpu_threads: int | None = None
    stall_timeout: float = STALL_TIMEOUT

    @classmethod
    def take(cls, keywords: dict[str, object], run: RunOptions | None = None) -> RunOptions:
        """``run`` with the run keywords found in ``keywords`` (removed from it), and a token.

        So an analysis called as ``network(spectra, backend="cpu", threshold=0.8)``
        gets ``backend`` here and leaves ``threshold`` to its parameters.
        """
        given = {name: keywords.pop(name) for name in cls._fields if name in keywords}
        run = (run or cls())._replace(**given)
        return run if run.cancel_token is not None else run._replace(cancel_token=CancelToken())

    def job(
        self, queries: SpectrumLibrary, library: SpectrumLibrary, params: SearchParameters, **extra
    ):
        """The search job of ``queries`` against ``library`` (:func:`engine.search_job`)."""
        return search_job(queries, library, params, **self._asdict(), **extra)

    def search(
        self, queries: SpectrumLibrary, library: SpectrumLibrary, params: SearchParameters
    ) -> HitTable:
        """Every hit of one search; :class:`AnalysisCancelled` when cancelled."""
        hits = self.job(queries, library, params).run()
        self.check()
        return hits

    def check(self, what: str = "cancelled") -> None:
        """Raise :class:`AnalysisCancelled` when the token was cancelled."""
        if self.cancel_token is not None and self.cancel_token.cancelled:
            raise AnalysisCancelled(what)

    def say(self, message: str) -> None:
        """Pass a one-line notice to ``on_message``, if any."""
        if self.on_message is not None:
            self.on_message(message)


def self_search(
    spectra: SpectrumLibrary,
    params: SearchParameters,
    run: RunOptions,
    keep: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> tuple[HitTable, object]:
    """Every hit of ``spectra`` searched against itself, self pairs left out.

    The exact kernels, their upper-bound pruning and the precursor window decide
    which pairs are scored; each pair comes as two hits when the search finds
    it both ways (a precursor window in ppm is taken around the query, so a pair
    can be found one way only).  The job streams its chunks (memory stays
    bounded by what is kept).

    Parameters
    ----------
    spectra : SpectrumLibrary
        The set, preprocessed as ``params.preprocess`` says.
    params : SearchParameters
        The search; ``top_n`` 0 keeps every hit above the threshold.
    run : RunOptions
        Where it runs (its ``cancel_token`` is checked at the end).
    keep : callable, optional
        ``keep(query_index, library_index)``: a mask of the hits to keep.

    Returns
    -------
    hits : HitTable
        The hits kept, in the order the search streamed them.
    job
        The finished job (``backend.device``, ``progress.pairs_done``).

    Raises
    ------
    AnalysisCancelled
        When the run's token was cancelled.
    """
    job = run.job(spectra, spectra, params, keep_hits=False)
    chunks = []
    for chunk in job:
        q, l = chunk.query_index, chunk.library_index
        mask = q != l
        if keep is not None:
            mask &= keep(q, l)
        chunks.append(chunk.take(mask))
    run.check()
    return HitTable.concat(chunks), job
