"""Linked pairs: an exact all-against-all search of a spectrum set within its precursor window."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.api import search_job
from engine.backends import Backend
from engine.cluster.params import ClusterParameters
from engine.distributed import STALL_TIMEOUT
from engine.library import SpectrumLibrary
from engine.search import CancelToken, SearchProgress

__all__ = ["LinkedPairs", "linked_pairs"]


@dataclass(frozen=True)
class LinkedPairs:
    """Pairs ``(first[k], second[k])`` of spectra with ``first < second`` and their similarity.

    Attributes
    ----------
    n : int
        Number of spectra.
    first, second : ndarray of int64
        Spectrum indexes of each pair, ``first < second``, sorted by
        ``(first, second)``.
    score : ndarray of float64
        Exact similarity of each pair (at least the cut).
    scored : int
        Spectrum pairs in the search's batches (both directions; the precursor
        window's blocks, before the exact window test and the pruning).
    """

    n: int
    first: np.ndarray
    second: np.ndarray
    score: np.ndarray
    scored: int = 0

    def __len__(self) -> int:
        return len(self.first)


def linked_pairs(
    spectra: SpectrumLibrary,
    params: ClusterParameters,
    *,
    backend: str | Backend = "auto",
    client: object | None = None,
    on_progress: Callable[[SearchProgress], None] | None = None,
    on_message: Callable[[str], None] | None = None,
    cancel_token: CancelToken | None = None,
    cpu_threads: int | None = None,
    stall_timeout: float = STALL_TIMEOUT,
) -> tuple[LinkedPairs, str]:
    """Every linked pair of ``spectra`` (already preprocessed), found by the engine's search.

    The set is searched against itself (``engine.api.search_job`` with the
    similarity cut as threshold and every hit kept), so the exact kernels and
    their upper-bound pruning and precursor window decide which pairs are
    scored.  Of each pair the hit with the lower index as query is kept (the
    scores are symmetric; the precursor window in ppm is taken around the
    query's precursor).  Pairs of different known charges are dropped when
    ``params.match_charge``.

    Returns
    -------
    pairs : LinkedPairs
    device : str
        Where the search ran.
    """
    search = dataclasses.replace(params.search_parameters(), preprocess="none")
    job = search_job(
        spectra, spectra, search, client=client, backend=backend, on_progress=on_progress,
        on_message=on_message, cancel_token=cancel_token, cpu_threads=cpu_threads,
        keep_hits=False, stall_timeout=stall_timeout,
    )  # fmt: skip
    charge = np.asarray(spectra.charge, dtype=np.int64)
    firsts, seconds, scores = [], [], []
    for chunk in job:
        q, l = chunk.query_index, chunk.library_index
        keep = q < l
        if params.match_charge:
            cq, cl = charge[q], charge[l]
            keep &= (cq == 0) | (cl == 0) | (cq == cl)
        firsts.append(q[keep])
        seconds.append(l[keep])
        scores.append(chunk.score[keep])
    first = np.concatenate(firsts) if firsts else np.empty(0, np.int64)
    second = np.concatenate(seconds) if seconds else np.empty(0, np.int64)
    score = np.concatenate(scores) if scores else np.empty(0, np.float64)
    order = np.lexsort((second, first))
    pairs = LinkedPairs(
        len(spectra),
        first[order].astype(np.int64),
        second[order].astype(np.int64),
        score[order].astype(np.float64),
        int(job.progress.pairs_done),
    )
    return pairs, job.backend.device
