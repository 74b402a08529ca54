"""What every search job shares: callbacks, cancellation, hits kept so far."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search.progress import CancelToken, SearchProgress

if TYPE_CHECKING:
    from engine.backends import PreparedSpectra

__all__ = ["StreamingJob"]


class StreamingJob:
    """Base of a search that streams :class:`~engine.hits.HitTable` chunks of final hits.

    Subclasses implement ``__iter__`` and hand each chunk to :meth:`_keep`.

    Parameters
    ----------
    queries, library : SpectrumLibrary
        Spectra to search, and to search in.
    params : SearchParameters, optional
        Score, tolerances and filters.
    on_progress : callable, optional
        Called with a :class:`SearchProgress` as the job advances.
    on_message : callable, optional
        Called with one-line notices (e.g. a GPU failure and the CPU fallback).
    cancel_token : CancelToken, optional
        Shared token; a new one is made when omitted.
    keep_hits : bool, default True
        Keep every streamed chunk for :attr:`hits`.  A caller that writes the
        chunks away as they come (the CLI) passes False so memory stays bounded.
    """

    def __init__(
        self,
        queries: SpectrumLibrary,
        library: SpectrumLibrary | PreparedSpectra,
        params: SearchParameters | None = None,
        *,
        on_progress: Callable[[SearchProgress], None] | None = None,
        on_message: Callable[[str], None] | None = None,
        cancel_token: CancelToken | None = None,
        keep_hits: bool = True,
    ) -> None:
        self.queries = queries
        self.library = library
        self.params = params or SearchParameters()
        self.keep_hits = keep_hits
        self.messages: list[str] = []
        self.cancel_token = cancel_token or CancelToken()
        self.progress = SearchProgress()
        self.finished = False
        #: Queries whose hits a cancellation (or a lost cluster) cut short: their hits
        #: are the best among the library spectra scored so far.
        self.incomplete_queries = np.empty(0, dtype=np.int64)
        self._on_progress = on_progress
        self._on_message = on_message
        self._chunks: list[HitTable] = []

    # -- control ----------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop soon; hits found so far are kept."""
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
        # chunks are each sorted; they need no merge when their query ranges do not
        # overlap (chunks of query blocks that finished out of order, e.g. on Dask)
        chunks = sorted((c for c in self._chunks if len(c)), key=lambda c: int(c.query_index[0]))
        hits = HitTable.concat(chunks)
        ordered = all(
            a.query_index[-1] < b.query_index[0] for a, b in zip(chunks, chunks[1:], strict=False)
        )
        return hits if ordered else hits.sorted()

    def run(self) -> HitTable:
        """Run to the end (or cancellation) and return all hits."""
        for _ in self:
            pass
        return self.hits

    def __iter__(self) -> Iterator[HitTable]:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- for subclasses ---------------------------------------------------------------
    def _say(self, message: str) -> None:
        self.messages.append(message)
        if self._on_message is not None:
            self._on_message(message)

    def _report(self) -> None:
        if self._on_progress is not None:
            self._on_progress(self.progress)

    def _keep(self, hits: HitTable) -> HitTable:
        """Count a final chunk of hits (and keep it for :attr:`hits`); return it."""
        if self.keep_hits:
            self._chunks.append(hits)
        self.progress.hits += len(hits)
        return hits
