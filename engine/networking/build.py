"""Build a molecular network from the engine's exact all-vs-all search."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

import numpy as np

from engine.api import as_library, parameters_with, search_job
from engine.backends import Backend
from engine.distributed import STALL_TIMEOUT
from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.networking.components import component_labels, limit_component_size
from engine.networking.edges import select_edges
from engine.networking.model import LABEL_FLOOR, NetworkSettings, SpectrumNetwork
from engine.params import SearchParameters
from engine.search import CancelToken, SearchProgress

__all__ = ["NETWORK_DEFAULTS", "AnalysisCancelled", "network", "network_parameters", "run_search"]

#: Score settings of a network when none are given: analog mode (modified cosine on
#: GNPS-style peaks, 0.02 Da, score >= 0.7 with >= 6 matched peaks, same ion mode)
#: with no limit on the precursor shift, as GNPS molecular networking links
#: spectra whatever their mass difference.
NETWORK_DEFAULTS: dict[str, object] = {"mode": "analog", "precursor_tolerance": None}


class AnalysisCancelled(Exception):
    """A network or library check was cancelled before it finished (nothing to keep)."""


def network_parameters(
    params: SearchParameters | None = None, **overrides: object
) -> SearchParameters:
    """The score parameters of a network: :data:`NETWORK_DEFAULTS` unless given.

    ``top_n`` is always 0 (every pair above the threshold is a candidate edge).
    """
    if params is None:
        given = {**NETWORK_DEFAULTS, **overrides}
        if "mode" in overrides and overrides["mode"] != NETWORK_DEFAULTS["mode"]:
            given = dict(overrides)  # another mode: its own presets
        params = parameters_with(None, given, "network")
    else:
        params = parameters_with(params, overrides, "network")
    return dataclasses.replace(params, top_n=0)


def run_search(
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters,
    *,
    backend: str | Backend,
    client: object | None = None,
    on_progress: Callable[[SearchProgress], None] | None,
    on_message: Callable[[str], None] | None,
    cancel_token: CancelToken,
    cpu_threads: int | None,
    stall_timeout: float = STALL_TIMEOUT,
) -> HitTable:
    """Every hit of one local search; :class:`AnalysisCancelled` when cancelled."""
    job = search_job(
        queries, library, params, client=client, backend=backend, on_progress=on_progress,
        on_message=on_message, cancel_token=cancel_token, cpu_threads=cpu_threads,
        stall_timeout=stall_timeout,
    )  # fmt: skip
    hits = job.run()
    if cancel_token.cancelled:
        raise AnalysisCancelled("cancelled")
    return hits


def network(
    spectra: SpectrumLibrary | str | os.PathLike,
    params: SearchParameters | None = None,
    *,
    top_n: int = 10,
    max_links: int = 10,
    link_method: str = "single",
    max_component_size: int = 100,
    library: SpectrumLibrary | str | os.PathLike | None = None,
    library_params: SearchParameters | None = None,
    label_floor: tuple[float, int] = LABEL_FLOOR,
    backend: str | Backend = "auto",
    client: object | None = None,
    on_progress: Callable[[SearchProgress], None] | None = None,
    on_message: Callable[[str], None] | None = None,
    cancel_token: CancelToken | None = None,
    cpu_threads: int | None = None,
    stall_timeout: float = STALL_TIMEOUT,
    **param_overrides: object,
) -> SpectrumNetwork:
    """The molecular network of ``spectra`` (GNPS-style, matchms ``SimilarityNetwork`` rules).

    Every pair of ``spectra`` is scored by the engine's exact search (queries =
    library = ``spectra``, all hits above the threshold, self pairs dropped);
    each spectrum then proposes links to its best neighbours
    (:func:`engine.networking.edges.select_edges`), and components larger than
    ``max_component_size`` lose their weakest edges
    (:func:`engine.networking.components.limit_component_size`).

    Parameters
    ----------
    spectra : SpectrumLibrary or path
        The nodes.
    params : SearchParameters, optional
        Score settings; default :data:`NETWORK_DEFAULTS` (analog mode without a
        precursor window).  ``threshold`` and ``min_matches`` decide which pairs
        can be edges; ``top_n`` is ignored (see ``top_n`` below).
    top_n, max_links, link_method, max_component_size
        See :class:`~engine.networking.model.NetworkSettings` (GNPS defaults 10,
        10, ``"single"``, 100).
    library : SpectrumLibrary or path, optional
        Search every spectrum against it and label nodes with their best hit.
    library_params : SearchParameters, optional
        Settings of that search (default: identity mode).
    label_floor : (float, int), default (0.7, 6)
        Score and matched peaks a best hit needs to label its node (GNPS's floor);
        weaker best hits are still listed in the node's ``library_*`` columns.
    backend, client, on_progress, on_message, cancel_token, cpu_threads, stall_timeout
        As in :func:`engine.search_job` (``client``: a ``dask.distributed.Client``
        runs the searches on its cluster); progress comes from the all-vs-all
        search, then from the library search.
    **param_overrides
        Fields of :class:`SearchParameters` (``score="cosine"``, ``tolerance=0.1``).

    Returns
    -------
    SpectrumNetwork

    Raises
    ------
    AnalysisCancelled
        When ``cancel_token`` was cancelled.

    Examples
    --------
    >>> net = engine.networking("spectra.mgf", preprocess="none", tolerance=0.1)  # doctest: +SKIP
    >>> engine.networking.write_graphml(net, "net.graphml")  # doctest: +SKIP
    """
    settings = NetworkSettings(top_n, max_links, link_method, max_component_size)
    params = network_parameters(params, **param_overrides)
    spectra = as_library(spectra)
    token = cancel_token or CancelToken()
    common = {
        "backend": backend, "client": client, "on_progress": on_progress, "on_message": on_message,
        "cancel_token": token, "cpu_threads": cpu_threads, "stall_timeout": stall_timeout,
    }  # fmt: skip
    hits = run_search(spectra, spectra, params, **common)
    n = len(spectra)
    rows, edges = select_edges(
        hits.query_index, hits.library_index, hits.score, n, top_n=settings.top_n,
        max_links=settings.max_links, link_method=settings.link_method,
    )  # fmt: skip
    score, matches = hits.score[rows], hits.matches[rows]
    keep = limit_component_size(edges, score, n, settings.max_component_size)
    removed = int((~keep).sum())
    edges, score, matches = edges[keep], score[keep], matches[keep]
    component, size = component_labels(edges, n)
    lib = library_hits = None
    if library is not None:
        lib = as_library(library)
        lp = dataclasses.replace(library_params or SearchParameters(), top_n=1)
        library_hits = run_search(spectra, lib, lp, **common).with_context(None)
    return SpectrumNetwork(
        spectra=spectra, edges=edges.astype(np.int64), score=score, matches=matches,
        component=component, component_size=size, params=params, settings=settings,
        library=lib, library_hits=library_hits, removed_edges=removed,
        label_floor=(float(label_floor[0]), int(label_floor[1])),
    )  # fmt: skip
