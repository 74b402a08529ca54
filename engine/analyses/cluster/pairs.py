"""Linked pairs: an exact all-against-all search of a spectrum set within its precursor window."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from engine.analyses.cluster.params import ClusterParameters
from engine.analyses.run import RunOptions, self_search
from engine.library import SpectrumLibrary

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
    spectra: SpectrumLibrary, params: ClusterParameters, run: RunOptions | None = None
) -> tuple[LinkedPairs, str]:
    """Every linked pair of ``spectra`` (already preprocessed), found by the engine's search.

    The set is searched against itself (:func:`~engine.analyses.run.self_search`
    with the similarity cut as threshold and every hit kept), so the exact
    kernels and their upper-bound pruning and precursor window decide which
    pairs are scored.  Of each pair the hit with the lower index as query is
    kept (the scores are symmetric; the precursor window in ppm is taken around
    the query's precursor).  Pairs of different known charges are dropped when
    ``params.match_charge``.

    Returns
    -------
    pairs : LinkedPairs
    device : str
        Where the search ran.

    Raises
    ------
    AnalysisCancelled
        When the run's cancel token was cancelled.
    """
    search = dataclasses.replace(params.search_parameters(), preprocess="none")
    charge = np.asarray(spectra.charge, dtype=np.int64)

    def keep(q: np.ndarray, l: np.ndarray) -> np.ndarray:
        mask = q < l
        if params.match_charge:
            cq, cl = charge[q], charge[l]
            mask &= (cq == 0) | (cl == 0) | (cq == cl)
        return mask

    hits, job = self_search(spectra, search, RunOptions.take({}, run), keep)
    first, second = hits.query_index, hits.library_index
    order = np.lexsort((second, first))
    pairs = LinkedPairs(
        len(spectra),
        first[order].astype(np.int64),
        second[order].astype(np.int64),
        hits.score[order].astype(np.float64),
        int(job.progress.pairs_done),
    )
    return pairs, job.backend.device
