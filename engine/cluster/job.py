"""``cluster_spectra``: preprocess, find the linked pairs, link them into clusters."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable

from engine.api import as_library
from engine.backends import Backend
from engine.cluster.consensus import consensus_spectra
from engine.cluster.linkage import complete_linkage, medoids, single_linkage
from engine.cluster.pairs import linked_pairs
from engine.cluster.params import ClusterParameters
from engine.cluster.result import ClusterResult
from engine.distributed import STALL_TIMEOUT
from engine.library import SpectrumLibrary
from engine.params import check_keywords
from engine.preprocess import pipeline_from_spec
from engine.search import CancelToken, SearchProgress

__all__ = ["ClusterCancelled", "cluster_spectra", "cluster_parameters"]


class ClusterCancelled(Exception):
    """The clustering was cancelled (a partial clustering is never returned)."""


def cluster_parameters(
    params: ClusterParameters | None, overrides: dict[str, object]
) -> ClusterParameters:
    """``params`` with keyword ``overrides``; a TypeError names any keyword that is no field."""
    check_keywords(ClusterParameters, overrides, "cluster_spectra", "cluster parameters")
    if params is None:
        return ClusterParameters(**overrides)
    return dataclasses.replace(params, **overrides) if overrides else params


def cluster_spectra(
    spectra: SpectrumLibrary | str | os.PathLike,
    params: ClusterParameters | None = None,
    *,
    consensus: bool = False,
    backend: str | Backend = "auto",
    client: object | None = None,
    on_progress: Callable[[SearchProgress], None] | None = None,
    on_message: Callable[[str], None] | None = None,
    cancel_token: CancelToken | None = None,
    cpu_threads: int | None = None,
    stall_timeout: float = STALL_TIMEOUT,
    **param_overrides,
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
        (:func:`~engine.cluster.consensus_spectra`).
    backend, client, on_progress, on_message, cancel_token, cpu_threads, stall_timeout
        As for :func:`engine.search_job` (``client``: a ``dask.distributed.Client``
        scores the pairs on its cluster); progress comes from the pair search.
    **param_overrides
        Fields of :class:`ClusterParameters` (``threshold=0.8``, ``linkage="single"``).

    Returns
    -------
    ClusterResult
        ``.labels``, ``.representatives``, ``.to_pandas()``, ``.write_table()``,
        ``.write_representatives()``.

    Raises
    ------
    ClusterCancelled
        When ``cancel_token`` was cancelled.

    Examples
    --------
    >>> result = engine.cluster_spectra("spectra.mgf", threshold=0.9)  # doctest: +SKIP
    >>> result.to_pandas().groupby("cluster").size()                    # doctest: +SKIP
    """
    params = cluster_parameters(params, param_overrides)
    token = cancel_token or CancelToken()
    say = on_message or (lambda message: None)
    timings: dict[str, float] = {}

    def check() -> None:
        if token.cancelled:
            raise ClusterCancelled("clustering cancelled")

    t = time.perf_counter()
    spectra = as_library(spectra)
    timings["load"] = time.perf_counter() - t
    t = time.perf_counter()
    prepared = pipeline_from_spec(params.preprocess)(spectra)
    timings["preprocess"] = time.perf_counter() - t
    check()
    say(f"scoring pairs of {len(spectra):,} spectra within the precursor window")
    t = time.perf_counter()
    pairs, device = linked_pairs(
        prepared, params, backend=backend, client=client, on_progress=on_progress,
        on_message=on_message, cancel_token=token, cpu_threads=cpu_threads,
        stall_timeout=stall_timeout,
    )  # fmt: skip
    timings["pairs"] = time.perf_counter() - t
    check()
    say(f"{len(pairs):,} linked pairs; {params.linkage} linkage")
    t = time.perf_counter()
    if params.linkage == "single":
        labels = single_linkage(pairs)
    else:
        labels = complete_linkage(pairs, check)
    representatives, _ = medoids(labels, pairs)
    timings["linkage"] = time.perf_counter() - t
    check()
    spectra_consensus = None
    if consensus:
        t = time.perf_counter()
        spectra_consensus = consensus_spectra(
            spectra, labels, representatives, tolerance=params.tolerance
        )
        timings["consensus"] = time.perf_counter() - t
    return ClusterResult(
        spectra, params, labels, representatives, pairs, spectra_consensus, timings, device
    )
