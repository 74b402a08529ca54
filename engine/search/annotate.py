"""Hits as chemists read them: metadata of both spectra, evidence, and the search's context."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from engine.collection import LIBRARY_FILE_KEY, library_label
from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search.ambiguity import AMBIGUITY_COLUMNS, IsomerNames, ambiguity_columns
from engine.search.evidence import evidence

__all__ = [
    "HIT_COLUMNS",
    "ION_MODE_NAMES",
    "METADATA_KEYS",
    "SearchContext",
    "hit_columns",
]

#: Output columns, in order.  The first six are the core of every hit list.
HIT_COLUMNS = (
    "query_index",
    "query_id",
    "library_index",
    "library_id",
    "score",
    "matches",
    "q_value",
    "reverse_score",
    "library_explained",
    "query_precursor_mz",
    "library_precursor_mz",
    "precursor_mz_delta",
    "query_name",
    "library_name",
    "library_smiles",
    "library_inchikey",
    "library_formula",
    "library_adduct",
    "library_ion_mode",
    "query_ion_mode",
    "library_instrument_type",
    "library_instrument",
    "library_collision_energy",
    "library_fragmentation_mode",
    "library_retention_time",
    "library_splash",
    "library_license",
    "library_authors",
    "library_file",
    *AMBIGUITY_COLUMNS,  # tied, tied_compounds, few_peaks, isomers (engine.search.ambiguity)
)

#: Metadata keys read for a column, the first present (files name them differently).
METADATA_KEYS: dict[str, tuple[str, ...]] = {
    "library_instrument_type": ("instrument_type", "instrumenttype"),
    "library_instrument": ("instrument", "source_instrument"),
    "library_collision_energy": ("collision_energy", "collisionenergy", "ce"),
    "library_fragmentation_mode": ("fragmentation_mode", "fragmentation", "fragmentation_method"),
    "library_retention_time": ("rtinseconds", "retention_time", "retentiontime", "rt"),
    "library_splash": ("splash",),
    "library_license": ("license", "licence"),
    "library_authors": ("authors", "author", "datacollector", "pi"),
}

ION_MODE_NAMES = np.array(["negative", "unknown", "positive"], dtype=object)


def hit_columns(
    hits: HitTable,
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters | None = None,
    isomers: IsomerNames | None = None,
    q_value: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """The user-facing columns of ``hits``, in :data:`HIT_COLUMNS` order.

    Parameters
    ----------
    hits : HitTable
    queries, library : SpectrumLibrary
        The spectra the hit indexes refer to.
    params : SearchParameters, optional
        The search's parameters: with them the reverse score and the explained
        library intensity are computed (:func:`engine.search.evidence`), else NaN.
    isomers : callable, optional
        Library rows to isomer names (:class:`engine.analyses.qc.IsomerCheck`) for the
        ``isomers`` column (else empty).  The ambiguity columns
        (:func:`engine.search.ambiguity_columns`) need each query's hits all present.
    q_value : ndarray, optional
        Each hit's q-value (:mod:`engine.search.fdr`), else NaN.

    Returns
    -------
    dict of str to ndarray
    """
    q, l = hits.query_index, hits.library_index
    q_prec, l_prec = queries.precursor_mz[q], library.precursor_mz[l]
    qm, lm = queries.metadata, library.metadata
    if params is not None:
        reverse, explained = evidence(hits, queries, library, params)
    else:
        reverse = explained = np.full(len(hits), np.nan)
    columns = {
        "query_index": q,
        "query_id": qm["id"][q],
        "library_index": l,
        "library_id": lm["id"][l],
        "score": hits.score,
        "matches": hits.matches,
        "q_value": np.full(len(hits), np.nan) if q_value is None else q_value,
        "reverse_score": reverse,
        "library_explained": explained,
        "query_precursor_mz": q_prec,
        "library_precursor_mz": l_prec,
        "precursor_mz_delta": l_prec - q_prec,
        "query_name": qm["name"][q],
        "library_name": lm["name"][l],
        "library_smiles": lm["smiles"][l],
        "library_inchikey": lm["inchikey"][l],
        "library_formula": lm["formula"][l],
        "library_adduct": lm["adduct"][l],
        "library_ion_mode": ION_MODE_NAMES[library.polarity()[l].astype(np.int64) + 1],
        "query_ion_mode": ION_MODE_NAMES[queries.polarity()[q].astype(np.int64) + 1],
    }
    for name, keys in METADATA_KEYS.items():
        columns[name] = _first_present(lm, keys, l)
    if LIBRARY_FILE_KEY in lm:  # several libraries searched as one
        columns["library_file"] = lm[LIBRARY_FILE_KEY][l]
    else:
        columns["library_file"] = np.full(len(l), library_label(library), dtype=object)
    columns.update(ambiguity_columns(hits, library, isomers))
    return columns


def _first_present(metadata: Mapping[str, np.ndarray], keys: tuple[str, ...], rows) -> np.ndarray:
    """Per row, the first non-empty value among metadata ``keys`` ("" when none)."""
    out = np.full(len(rows), "", dtype=object)
    for key in reversed(keys):
        column = metadata.get(key)
        if column is not None:
            values = column[rows]
            filled = values != ""
            out[filled] = values[filled]
    return out


@dataclass(frozen=True, eq=False)
class SearchContext:
    """What a search's hits refer to; lets a :class:`HitTable` annotate itself."""

    queries: SpectrumLibrary
    library: SpectrumLibrary
    params: SearchParameters
    isomers: IsomerNames | None = None
    #: q-values of hits (``FdrEstimate.hit_q_values``), when the search estimated them.
    q_values: Callable[[HitTable], np.ndarray] | None = None

    def columns(self, hits: HitTable) -> dict[str, np.ndarray]:
        """:func:`hit_columns` of ``hits`` in this context."""
        q = None if self.q_values is None else self.q_values(hits)
        return hit_columns(hits, self.queries, self.library, self.params, self.isomers, q)
