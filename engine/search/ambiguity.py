"""Ambiguity, shown: ties at the best score, few matched peaks, isomers.

A best hit a chemist cannot defend alone is flagged, never silently ranked:

* **ties** - hits whose score is within :data:`TIE_TOLERANCE` of their query's
  best score are the query's *best hits*; column ``tied`` gives how many there
  are (0 on the other rows) and ``tied_compounds`` names the distinct compounds
  among them when there are two or more (itaconic, mesaconic and citraconic
  acid all score 1.0 on one matched fragment in MassBank).  They are ordered by
  :func:`order_ties`'s key, which is chemistry-neutral and never the library
  position;
* **few peaks** - ``few_peaks`` is True where at most :data:`FEW_PEAKS` peaks
  matched: one or two shared fragments give a high score to many compounds of
  the same ion;
* **isomers** - on best hits, ``isomers`` names the other compounds of the
  same formula whose library spectrum is near-identical to the hit's (the
  library check, :mod:`engine.analyses.qc`); filled when a search is given an isomer
  check.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search.evidence import evidence

__all__ = [
    "AMBIGUITY_COLUMNS",
    "FEW_PEAKS",
    "TIE_TOLERANCE",
    "IsomerNames",
    "ambiguity_columns",
    "best_rows",
    "compound_key",
    "distinct_compounds",
    "order_ties",
]

#: Scores this close to a query's best score tie with it.
TIE_TOLERANCE = 1e-9
#: Best hits with at most this many matched peaks are flagged ``few_peaks``.
FEW_PEAKS = 2
#: The columns :func:`ambiguity_columns` gives.
AMBIGUITY_COLUMNS = ("tied", "tied_compounds", "few_peaks", "isomers")

#: Given library rows, the isomer names of each ("" for none): see
#: :class:`engine.analyses.qc.IsomerCheck`.
IsomerNames = Callable[[np.ndarray], np.ndarray]


def compound_key(library: SpectrumLibrary, rows: np.ndarray) -> np.ndarray:
    """The compound of each of ``library``'s spectra at ``rows``: its whole InChIKey
    (upper case; stereoisomers such as mesaconic and citraconic acid differ) where
    it has a well-formed one, else ``"name:"`` and its name in lower case."""
    inchikey = library.metadata["inchikey"][rows]
    names = library.metadata["name"][rows]
    out = np.empty(len(rows), dtype=object)
    for k, (key, name) in enumerate(zip(inchikey.tolist(), names.tolist(), strict=True)):
        key = str(key).strip().upper()
        well_formed = len(key) == 27 and key[14] == "-" and key[25] == "-"
        out[k] = key if well_formed else "name:" + str(name).strip().lower()
    return out


def distinct_compounds(library: SpectrumLibrary, rows: np.ndarray) -> np.ndarray:
    """Positions in ``rows`` of the first spectrum of each distinct compound, in order.

    Two spectra are of one compound when their InChIKeys are equal, or their
    names are, ignoring case (a record without an InChIKey is matched by its
    name).  Stereoisomers are different compounds here.
    """
    rows = np.asarray(rows, dtype=np.int64)
    keys = compound_key(library, rows)
    names = [str(v).strip().casefold() for v in library.metadata["name"][rows].tolist()]
    parent = list(range(len(rows)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    seen: dict[str, int] = {}
    for i, (key, name) in enumerate(zip(keys.tolist(), names, strict=True)):
        for label in (key, "name:" + name):
            if label in seen:
                a, b = root(seen[label]), root(i)
                parent[max(a, b)] = min(a, b)
            else:
                seen[label] = i
    return np.array([i for i in range(len(rows)) if root(i) == i], dtype=np.int64)


def best_rows(hits: HitTable) -> tuple[np.ndarray, np.ndarray]:
    """Which rows tie with their query's best score, and the query's best score per row.

    Returns
    -------
    is_best : ndarray of bool
    best : ndarray of float64
        The best score of each row's query (among ``hits``).
    """
    if len(hits) == 0:
        return np.zeros(0, dtype=bool), np.zeros(0)
    queries, at = np.unique(hits.query_index, return_inverse=True)
    best = np.full(len(queries), -np.inf)
    np.maximum.at(best, at, hits.score)
    best = best[at]
    return hits.score >= best - TIE_TOLERANCE, best


def order_ties(
    hits: HitTable,
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters | None = None,
) -> HitTable:
    """``hits`` with each query's tied best hits in a chemistry-neutral order.

    Rows stay grouped by query as they come; only the best hits of a query (those
    within :data:`TIE_TOLERANCE` of its best score, which the canonical order
    keeps together, ordered there by library position) are reordered, by:

    1. more matched peaks first;
    2. higher reverse score (the score on the library's peaks) first;
    3. more explained library intensity first (2 and 3 need ``params``);
    4. library compound name, case-insensitive, alphabetically;
    5. library InChIKey, then library spectrum id, alphabetically.

    Scores differing by less than :data:`TIE_TOLERANCE` are treated as equal
    (rounding must not decide).  Each query's hits must all be in ``hits`` (as in
    every chunk a search streams).
    """
    is_best, _ = best_rows(hits)
    if len(hits) == 0:
        return hits
    q = hits.query_index
    tied_query = np.zeros(len(hits), dtype=bool)
    groups, at, counts = np.unique(q[is_best], return_inverse=True, return_counts=True)
    if not (counts > 1).any():
        return hits
    several = np.isin(q, groups[counts > 1]) & is_best
    rows = np.flatnonzero(several)
    tied_query[rows] = True
    sub = hits.take(rows)
    if params is not None:
        reverse, explained = evidence(sub, queries, library, params)
    else:
        reverse = explained = np.zeros(len(rows))
    lm = library.metadata
    names = np.array([str(v).casefold() for v in lm["name"][sub.library_index]], dtype=object)
    keys = (
        lm["id"][sub.library_index].astype(str),
        lm["inchikey"][sub.library_index].astype(str),
        names.astype(str),
        -np.nan_to_num(explained, nan=-np.inf),
        -np.nan_to_num(reverse, nan=-np.inf),
        -sub.matches.astype(np.int64),
        sub.query_index,
    )
    within = np.lexsort(keys)
    # each query's best rows are contiguous in the input; refill its slots in key order
    order = np.arange(len(hits))
    order[rows[np.argsort(sub.query_index, kind="stable")]] = rows[within]
    return hits.take(order)


def ambiguity_columns(
    hits: HitTable, library: SpectrumLibrary, isomers: IsomerNames | None = None
) -> dict[str, np.ndarray]:
    """The ambiguity flags of ``hits`` (each query's hits all present).

    Returns
    -------
    dict of str to ndarray
        ``tied`` (int64): on a query's best hits, how many hits share its best
        score (within :data:`TIE_TOLERANCE`), 0 on its other hits;
        ``tied_compounds`` (str): on best hits, the names of the distinct
        compounds among them (:func:`distinct_compounds`), ``"; "``-joined in
        row order, when there are two or more, else ``""``;
        ``few_peaks`` (bool): at most :data:`FEW_PEAKS` matched peaks;
        ``isomers`` (str): on best hits, from ``isomers`` (see
        :class:`engine.analyses.qc.IsomerCheck`); ``""`` when there are none, on the other
        hits, or when no check was given.
    """
    n = len(hits)
    is_best, _ = best_rows(hits)
    tied = np.zeros(n, dtype=np.int64)
    tied_compounds = np.full(n, "", dtype=object)
    if n:
        best = np.flatnonzero(is_best)
        groups, at, counts = np.unique(
            hits.query_index[best], return_inverse=True, return_counts=True
        )
        tied[best] = counts[at]
        for g in np.flatnonzero(counts > 1):
            rows = best[at == g]
            first = distinct_compounds(library, hits.library_index[rows])
            if len(first) > 1:
                names = library.metadata["name"][hits.library_index[rows[first]]]
                tied_compounds[rows] = "; ".join(str(v) for v in names)
    isomer_names = np.full(n, "", dtype=object)
    if isomers is not None and is_best.any():  # best hits only: the cost follows the queries
        isomer_names[is_best] = isomers(hits.library_index[is_best])
    return {
        "tied": tied,
        "tied_compounds": tied_compounds,
        "few_peaks": np.asarray(hits.matches <= FEW_PEAKS, dtype=bool),
        "isomers": isomer_names,
    }
