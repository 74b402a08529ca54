"""Search hits checked against the library: isomers, and ties cut by the top-N.

:class:`IsomerCheck` flags a hit whose library spectrum is near-identical (the
library check's definition, :data:`QC_DEFAULTS`) to a spectrum of another
compound with the same formula: the library cannot tell those isomers apart, so
the hit cannot either.  :func:`complete_ties` keeps a tie at the best score whole
when the top-N would cut it (it would be cut by library position).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from engine.analyses.qc.check import QC_DEFAULTS, compound_keys
from engine.api import parameters_with
from engine.backends import Backend
from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search import TIE_TOLERANCE, SearchJob

__all__ = ["IsomerCheck", "complete_ties", "isomer_parameters"]


class IsomerCheck:
    """The isomers of library spectra, checked on demand and remembered.

    Call it with library rows; each row's value is ``""`` or the names of the
    other compounds (a different InChIKey first block, as the library check's
    conflicts, so stereoisomers are not flagged; the same formula) that have a
    spectrum near-identical to that row's spectrum, ``"; "``-joined
    alphabetically.  Only the rows asked for are checked (an exact search of
    those spectra against the library with :data:`QC_DEFAULTS`: cosine >= 0.95
    on the fragments, >= 3 matched fragments, precursors within 0.01 Da, same ion
    mode), so the cost follows the hits, not the library.

    Parameters
    ----------
    library : SpectrumLibrary
    params : SearchParameters, optional
        What "near-identical" means (default :data:`QC_DEFAULTS`).
    backend : str or Backend
        Where the check's search runs.

    Attributes
    ----------
    pairs : int
        Isomer pairs found so far (spectrum, other spectrum).
    """

    def __init__(
        self,
        library: SpectrumLibrary,
        params: SearchParameters | None = None,
        *,
        backend: str | Backend = "auto",
    ) -> None:
        if params is None:
            params = parameters_with(None, dict(QC_DEFAULTS), "IsomerCheck")
        self.library = library
        self.params = dataclasses.replace(params, top_n=0)
        self.backend = backend
        self.pairs = 0
        n = len(library)
        self._names = np.full(n, "", dtype=object)
        self._checked = np.zeros(n, dtype=bool)
        self._keys, self._from_inchikey = compound_keys(library)
        formula = library.metadata.get("formula")
        self._formula = (
            np.array([str(f).strip() for f in formula.tolist()], dtype=object)
            if formula is not None
            else np.full(n, "", dtype=object)
        )

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        """The isomer names of the library spectra at ``rows`` (checked if not yet)."""
        rows = np.asarray(rows, dtype=np.int64)
        todo = np.unique(rows[~self._checked[rows]])
        if len(todo):
            self._check(todo)
        return self._names[rows]

    def _check(self, rows: np.ndarray) -> None:
        lib = self.library
        self._checked[rows] = True
        # only spectra with another compound of their formula in the library can have
        # isomers: the others need no search (and no kernels compiled for it)
        rows, others = self._candidates(rows)
        if not len(rows):
            return
        hits = _search(lib.subset(rows), lib.subset(others), self.params, self.backend)
        a, b = rows[hits.query_index], others[hits.library_index]
        keys, formula = self._keys, self._formula
        isomer = (
            (a != b)
            & self._from_inchikey[a]
            & self._from_inchikey[b]
            & (keys[a] != keys[b])
            & (formula[a] == formula[b])
            & (formula[a] != "")
        )
        a, b = a[isomer], b[isomer]
        self.pairs += len(a)
        names = lib.metadata["name"]
        for spectrum in np.unique(a).tolist():
            others = b[a == spectrum]
            listed = sorted({str(names[o]) for o in others.tolist()}, key=str.casefold)
            self._names[spectrum] = "; ".join(listed)

    def _candidates(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ``rows`` that have same-formula spectra of other compounds, and those spectra."""
        keys, formula, known = self._keys, self._formula, self._from_inchikey
        usable = known & (formula != "")
        rows = rows[usable[rows]]
        if not len(rows):
            return rows, rows
        wanted = np.isin(formula, np.unique(formula[rows])) & usable
        pool = np.flatnonzero(wanted)
        # per formula, how many distinct compounds: a row needs one besides its own
        pairs = np.unique(np.stack([formula[pool], keys[pool]]).astype(str), axis=1)
        groups, compounds = np.unique(pairs[0], return_counts=True)
        several = set(groups[compounds > 1].tolist())
        rows = rows[[str(f) in several for f in formula[rows].tolist()]]
        pool = pool[[str(f) in several for f in formula[pool].tolist()]]
        return rows, pool


def isomer_parameters(params: SearchParameters) -> SearchParameters:
    """The isomer check of a search: "near-identical" in the search's own score.

    The library check's thresholds (:data:`QC_DEFAULTS`: score >= 0.95, >= 3
    matched peaks, precursors within 0.01 Da, same ion mode, every pair) on the
    search's score, tolerance and preprocessing: a flagged hit's compound has a
    same-formula spectrum of another compound that *this search* cannot tell
    apart from the hit's, and the check runs on the kernels the search has
    compiled already (the library check's own cosine would compile a second
    family on a first run).
    """
    return dataclasses.replace(
        params,
        threshold=float(QC_DEFAULTS["threshold"]),
        min_matches=int(QC_DEFAULTS["min_matches"]),
        precursor_tolerance=float(QC_DEFAULTS["precursor_tolerance"]),
        precursor_unit=str(QC_DEFAULTS["precursor_unit"]),
        match_ion_mode=True,
        top_n=0,
        fdr=None,
    )


def _search(
    queries: SpectrumLibrary, library: SpectrumLibrary, params: SearchParameters, backend
) -> HitTable:
    """Every hit of a small local search (run inside another search's output)."""
    return SearchJob(queries, library, params, backend=backend).run()


def complete_ties(
    hits: HitTable,
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters,
    *,
    backend: str | Backend = "auto",
) -> HitTable:
    """``hits`` with every tie at a query's best score kept whole.

    When all of a query's ``params.top_n`` hits tie at its best score (within
    :data:`engine.search.TIE_TOLERANCE`), the top-N may have cut the tie by
    library position; such queries are searched again without the top-N and all
    their tied best hits are kept (more than ``top_n`` rows then).  Queries keep
    their order; each query's hits must all be in ``hits``.
    """
    top_n = params.top_n
    if top_n <= 0 or len(hits) == 0:
        return hits
    q = hits.query_index
    groups, first, at = np.unique(q, return_index=True, return_inverse=True)
    best = np.full(len(groups), -np.inf)
    np.maximum.at(best, at, hits.score)
    tied = hits.score >= best[at] - TIE_TOLERANCE
    n_tied = np.bincount(at, weights=tied, minlength=len(groups))
    n_rows = np.bincount(at, minlength=len(groups))
    cut = (n_tied >= top_n) & (n_rows == n_tied)
    if not cut.any():
        return hits
    again = _search(
        queries.subset(groups[cut]), library, dataclasses.replace(params, top_n=0), backend
    )
    again = HitTable(
        groups[cut][again.query_index], again.library_index, again.score, again.matches,
        context=hits.context,
    )  # fmt: skip
    _, a_at = np.unique(again.query_index, return_inverse=True)
    a_best = np.full(int(cut.sum()), -np.inf)
    np.maximum.at(a_best, a_at, again.score)
    again = again.take(again.score >= a_best[a_at] - TIE_TOLERANCE)
    kept = hits.take(~np.isin(q, groups[cut]))
    merged = HitTable.concat([kept, again]).with_context(hits.context)
    # queries in their order in ``hits``; each query's hits by score, then library index
    rank = np.empty(len(groups), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(groups))
    query_rank = rank[np.searchsorted(groups, merged.query_index)]
    order = np.lexsort((merged.library_index, -merged.score, query_rank))
    return merged.take(order)
