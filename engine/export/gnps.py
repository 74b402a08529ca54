"""Hit lists as GNPS library-search results (the TSV of GNPS' library search workflow).

Column names follow GNPS' library-match table, so tools that read GNPS results
read these: ``#Scan#`` (the query's ``SCANS`` field, else its 1-based position in
the query file), ``SpectrumFile``, ``Compound_Name``, ``Adduct``, ``MQScore``
(the search's score), ``SharedPeaks``, ``SpectrumID`` and ``LibraryID`` (the
library spectrum's id), ``LibraryName`` (its file), ``Smiles``, ``INCHI``,
``InChIKey``, ``Precursor_MZ`` and ``LibMZ`` (library precursor m/z),
``SpecMZ`` (query precursor m/z), ``MassDiff`` and ``MZErrorPPM`` (absolute,
library minus query), ``Ion_Mode``, ``Instrument``, ``Ion_Source`` (instrument
type), ``Data_Collector``; then SimMS's own columns, prefixed ``SimMS_``
(query id, indexes, reverse score, explained intensity, formula, and the
ambiguity flags ``SimMS_Tied``, ``SimMS_TiedCompounds``, ``SimMS_FewPeaks``,
``SimMS_Isomers``).  No comment lines (the header starts with ``#Scan#``):
``pandas.read_csv(path, sep="\\t")`` reads it.  Every query is in the sibling
``name.queries.tsv`` (:mod:`engine.export.queries`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import IO

import numpy as np

from engine.atomic import atomic_path
from engine.collection import library_label
from engine.export.cells import frame_for_writing
from engine.export.queries import QueryTally, queries_path, write_queries
from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search import SearchContext, order_ties
from engine.search.ambiguity import IsomerNames

__all__ = ["GNPS_COLUMNS", "gnps_columns", "write_gnps"]

#: GNPS column name: SimMS hit column it is taken from (None: computed).
_FROM_HIT = {
    "#Scan#": None,
    "SpectrumFile": None,
    "Compound_Name": "library_name",
    "Adduct": "library_adduct",
    "MQScore": "score",
    "SharedPeaks": "matches",
    "SpectrumID": "library_id",
    "LibraryID": "library_id",
    "LibraryName": "library_file",
    "Smiles": "library_smiles",
    "INCHI": None,
    "InChIKey": "library_inchikey",
    "Precursor_MZ": "library_precursor_mz",
    "LibMZ": "library_precursor_mz",
    "SpecMZ": "query_precursor_mz",
    "MassDiff": None,
    "MZErrorPPM": None,
    "Ion_Mode": "library_ion_mode",
    "Instrument": "library_instrument",
    "Ion_Source": "library_instrument_type",
    "Data_Collector": "library_authors",
    "SimMS_QueryID": "query_id",
    "SimMS_QueryIndex": "query_index",
    "SimMS_LibraryIndex": "library_index",
    "SimMS_ReverseScore": "reverse_score",
    "SimMS_LibraryExplained": "library_explained",
    "SimMS_Formula": "library_formula",
    "SimMS_Tied": "tied",
    "SimMS_TiedCompounds": "tied_compounds",
    "SimMS_FewPeaks": "few_peaks",
    "SimMS_Isomers": "isomers",
}
#: The columns of the GNPS-style TSV, in order (``SimMS_QValue`` is added when the
#: hits carry a ``q_value`` column).
GNPS_COLUMNS = tuple(_FROM_HIT)


def gnps_columns(hits: HitTable, context: SearchContext) -> dict[str, np.ndarray]:
    """The GNPS-named columns of ``context``'s ``hits`` (:data:`GNPS_COLUMNS`), as written."""
    cols = context.columns(hits)
    queries, library = context.queries, context.library
    q = hits.query_index
    scans = queries.metadata.get("scans")
    scan = (q + 1).astype(object)
    if scans is not None:
        given = scans[q]
        numeric = np.array([str(s).strip().isdigit() for s in given.tolist()], dtype=bool)
        scan[numeric] = [int(s) for s in given[numeric].tolist()]
    inchi = library.metadata.get("inchi")
    delta = np.abs(cols["precursor_mz_delta"].astype(np.float64))
    lib_mz = cols["library_precursor_mz"].astype(np.float64)
    out: dict[str, np.ndarray] = {}
    for name, source in _FROM_HIT.items():
        if source is not None:
            out[name] = cols[source]
        elif name == "#Scan#":
            out[name] = scan
        elif name == "SpectrumFile":
            out[name] = np.full(len(hits), library_label(queries), dtype=object)
        elif name == "INCHI":
            out[name] = inchi[hits.library_index] if inchi is not None else np.full(
                len(hits), "", dtype=object)  # fmt: skip
        elif name == "MassDiff":
            out[name] = np.round(delta, 8)
        elif name == "MZErrorPPM":
            with np.errstate(divide="ignore", invalid="ignore"):
                out[name] = np.round(delta / lib_mz * 1e6, 6)
    # q_value (engine.search.fdr): carried along when the hits have it (GNPS' own FDR
    # column is a different, per-search estimate, so the name stays ours)
    if context.q_values is not None:
        out["SimMS_QValue"] = cols["q_value"]
    return out


def write_gnps(
    target: str | os.PathLike | IO[str],
    hits: HitTable,
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters,
    *,
    isomers: IsomerNames | None = None,
    status: np.ndarray | None = None,
    incomplete: np.ndarray | tuple = (),
    q_values: Callable[[HitTable], np.ndarray] | None = None,
) -> Path | None:
    """Write a search's hits as a GNPS-style library-match TSV, atomically.

    Parameters
    ----------
    target : str, Path or text stream
    hits, queries, library, params
        The search (each query's hits all present); tied best hits in the order
        of :func:`engine.search.order_ties`.
    isomers : callable, optional
        Library rows to isomer names (:class:`engine.analyses.qc.IsomerCheck`).
    status, incomplete
        Each query's status, or the queries whose search did not finish, for the
        queries table (see :meth:`engine.export.QueryTally.columns`).
    q_values : callable, optional
        The hits' q-values (:mod:`engine.search.fdr`), column ``SimMS_QValue``.

    Returns
    -------
    Path or None
        The file written (None for a stream).  A file gets its queries table
        beside it, ``name.queries.tsv`` (:func:`engine.export.queries_path`).
    """
    hits = order_ties(hits, queries, library, params)
    context = SearchContext(queries, library, params, isomers, q_values)
    frame = frame_for_writing(gnps_columns(hits, context))
    if not isinstance(target, str | os.PathLike):
        frame.to_csv(target, sep="\t", index=False)
        return None
    tally = QueryTally(queries, library)
    tally.add(hits)
    write_queries(queries_path(target), tally.columns(params, incomplete, status))
    with atomic_path(target, fsync=True) as tmp:
        frame.to_csv(tmp, sep="\t", index=False)
    return Path(target)
