"""Build a molecular network from the engine's exact all-vs-all search."""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from engine.analyses.networking.components import component_labels, limit_component_size
from engine.analyses.networking.edges import select_edges
from engine.analyses.networking.model import LABEL_FLOOR, NetworkSettings, SpectrumNetwork
from engine.analyses.run import RunOptions, self_search
from engine.api import as_library, parameters_with
from engine.library import SpectrumLibrary
from engine.params import SearchParameters

__all__ = ["NETWORK_DEFAULTS", "network", "network_parameters"]

#: Score settings of a network when none are given: analog mode (modified cosine on
#: GNPS-style peaks, 0.02 Da, score >= 0.7 with >= 6 matched peaks, same ion mode)
#: with no limit on the precursor shift, as GNPS molecular networking links
#: spectra whatever their mass difference.
NETWORK_DEFAULTS: dict[str, object] = {"mode": "analog", "precursor_tolerance": None}


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


def _settings(settings: NetworkSettings | None, keywords: dict[str, object]) -> NetworkSettings:
    """``settings`` with the :class:`NetworkSettings` fields among ``keywords`` (taken out)."""
    names = [f.name for f in dataclasses.fields(NetworkSettings)]
    given = {name: keywords.pop(name) for name in names if name in keywords}
    return dataclasses.replace(settings or NetworkSettings(), **given)


def network(
    spectra: SpectrumLibrary | str | os.PathLike,
    params: SearchParameters | None = None,
    *,
    settings: NetworkSettings | None = None,
    library: SpectrumLibrary | str | os.PathLike | None = None,
    library_params: SearchParameters | None = None,
    label_floor: tuple[float, int] = LABEL_FLOOR,
    run: RunOptions | None = None,
    **keywords: object,
) -> SpectrumNetwork:
    """The molecular network of ``spectra`` (GNPS-style, matchms ``SimilarityNetwork`` rules).

    Every pair of ``spectra`` is scored by the exact all-vs-all search
    (:func:`~engine.analyses.run.self_search`); each spectrum then proposes links
    to its best neighbours (:func:`.select_edges`), and components larger than
    ``max_component_size`` lose their weakest edges (:func:`.limit_component_size`).

    Parameters
    ----------
    spectra : SpectrumLibrary or path
        The nodes.
    params : SearchParameters, optional
        Score settings (default :data:`NETWORK_DEFAULTS`); ``threshold`` and
        ``min_matches`` decide which pairs can be edges (``top_n`` is ignored).
    settings : NetworkSettings, optional
        How edges are chosen (GNPS defaults: top 10, 10 links, ``"single"``,
        components of up to 100).
    library : SpectrumLibrary or path, optional
        Search every spectrum against it and label nodes with their best hit.
    library_params : SearchParameters, optional
        Settings of that search (default: identity mode).
    label_floor : (float, int), default (0.7, 6)
        Score and matched peaks a best hit needs to label its node (GNPS's floor);
        weaker best hits are still listed in the node's ``library_*`` columns.
    run : RunOptions, optional
        Where and how the searches run: progress comes from the all-vs-all
        search, then from the library search.
    **keywords
        Fields of :class:`NetworkSettings` (``top_n=5``) or :class:`RunOptions`
        (``backend="cpu"``), then of :class:`SearchParameters` (``tolerance=0.1``).

    Returns
    -------
    SpectrumNetwork

    Raises
    ------
    AnalysisCancelled
        When the run was cancelled (during either search).

    Examples
    --------
    >>> net = engine.network("spectra.mgf", top_n=5, tolerance=0.1)  # doctest: +SKIP
    """
    settings = _settings(settings, keywords)
    run = RunOptions.take(keywords, run)
    params = network_parameters(params, **keywords)
    spectra = as_library(spectra)
    hits, _ = self_search(spectra, params, run)
    n = len(spectra)
    rows, edges = select_edges(
        hits.query_index, hits.library_index, hits.score, n, top_n=settings.top_n,
        max_links=settings.max_links, link_method=settings.link_method,
    )  # fmt: skip
    score, matches = hits.score[rows], hits.matches[rows]
    keep = limit_component_size(edges, score, n, settings.max_component_size)
    edges, score, matches = edges[keep], score[keep], matches[keep]
    component, size = component_labels(edges, n)
    lib = library_hits = None
    if library is not None:
        lib = as_library(library)
        lp = dataclasses.replace(library_params or SearchParameters(), top_n=1)
        library_hits = run.search(spectra, lib, lp).with_context(None)
    return SpectrumNetwork(
        spectra=spectra, edges=edges.astype(np.int64), score=score, matches=matches,
        component=component, component_size=size, params=params, settings=settings,
        library=lib, library_hits=library_hits, removed_edges=int((~keep).sum()),
        label_floor=(float(label_floor[0]), int(label_floor[1])),
    )  # fmt: skip
