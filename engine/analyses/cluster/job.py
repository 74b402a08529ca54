"""``cluster_spectra``: preprocess, find the linked pairs, link them into clusters."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from engine.analyses.cluster.consensus import consensus_spectra
from engine.analyses.cluster.linkage import complete_linkage, medoids, single_linkage
from engine.analyses.cluster.pairs import linked_pairs
from engine.analyses.cluster.params import ClusterParameters
from engine.analyses.cluster.result import ClusterResult
from engine.analyses.run import RunOptions
from engine.api import as_library
from engine.library import SpectrumLibrary
from engine.params import check_keywords
from engine.preprocess import pipeline_from_spec

__all__ = ["cluster_parameters", "cluster_spectra"]


def cluster_parameters(
    params: ClusterParameters | None, overrides: dict[str, object]
) -> ClusterParameters:
    """``params`` with keyword ``overrides``; a TypeError names any keyword that is no field."""
    check_keywords(ClusterParameters, overrides, "cluster_spectra", "cluster parameters")
    if params is None:
        return ClusterParameters(**overrides)
    return dataclasses.replace(params, **overrides) if overrides else params


@contextmanager
def _timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    """Seconds of the block, as ``timings[stage]``."""
    start = time.perf_counter()
    yield
    timings[stage] = time.perf_counter() - start


def cluster_spectra(
    spectra: SpectrumLibrary | str | os.PathLike,
    params: ClusterParameters | None = None,
    *,
    consensus: bool = False,
    run: RunOptions | None = None,
    **keywords,
) -> ClusterResult:
    """Cluster a spectrum set (queries or a library) by exact spectral similarity.

    1. Preprocess the peaks (``params.preprocess``, default ``msas``).
    2. Find every linked pair: the set searched against itself with the
       engine's exact scores, precursor window and pruning, keeping every pair
       whose similarity reaches ``params.threshold``.
    3. Link: complete linkage (default) or single linkage at distance
       ``1 - threshold``, pairs not linked at distance 1.
    4. Each cluster's representative is its medoid (largest summed similarity
       to the other members; ties to the smaller index).

    Parameters
    ----------
    spectra : SpectrumLibrary or path
        The spectra, or a spectrum file (read through the library cache).
    params : ClusterParameters, optional
        Defaults: cosine, 0.02 Da, 20 ppm, similarity 0.9, complete linkage,
        ``msas`` preprocessing (see :class:`ClusterParameters` for why).
    consensus : bool
        Also build each cluster's consensus spectrum
        (:func:`~engine.analyses.cluster.consensus_spectra`).
    run : RunOptions, optional
        Where and how the pair search runs (progress comes from it).
    **keywords
        :class:`RunOptions` fields (``backend="cpu"``, ``cancel_token=token``),
        then :class:`ClusterParameters` ones (``threshold=0.8``, ``linkage="single"``).

    Returns
    -------
    ClusterResult
        ``.labels``, ``.representatives``, ``.to_pandas()``, ``.write_table()``,
        ``.write_representatives()``.

    Raises
    ------
    AnalysisCancelled
        When the cancel token was cancelled.

    Examples
    --------
    >>> result = engine.cluster_spectra("spectra.mgf", threshold=0.9)  # doctest: +SKIP
    >>> result.to_pandas().groupby("cluster").size()                    # doctest: +SKIP
    """
    run = RunOptions.take(keywords, run)
    params = cluster_parameters(params, keywords)
    timings: dict[str, float] = {}
    with _timed(timings, "load"):
        spectra = as_library(spectra)
    with _timed(timings, "preprocess"):
        prepared = pipeline_from_spec(params.preprocess)(spectra)
    run.check("clustering cancelled")
    run.say(f"scoring pairs of {len(spectra):,} spectra within the precursor window")
    with _timed(timings, "pairs"):
        pairs, device = linked_pairs(prepared, params, run)
    run.say(f"{len(pairs):,} linked pairs; {params.linkage} linkage")
    with _timed(timings, "linkage"):
        if params.linkage == "single":
            labels = single_linkage(pairs)
        else:
            labels = complete_linkage(pairs, lambda: run.check("clustering cancelled"))
        representatives, _ = medoids(labels, pairs)
    run.check("clustering cancelled")
    spectra_consensus = None
    if consensus:
        with _timed(timings, "consensus"):
            spectra_consensus = consensus_spectra(
                spectra, labels, representatives, tolerance=params.tolerance
            )
    return ClusterResult(
        spectra, params, labels, representatives, pairs, spectra_consensus, timings, device
    )
