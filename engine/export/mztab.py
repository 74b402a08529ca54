"""Hit lists as mzTab-M 2.0 (HUPO-PSI metabolomics), readable by ``pyteomics.mztab``.

Layout (one file, tab-separated, ``null`` for missing values):

* ``MTD`` - provenance: the software and every search parameter
  (``software[1]-setting[k]``), the query file (``ms_run[1]``; spectra are
  referred to as ``ms_run[1]:index=N``, N from 0 in file order), the library
  files (``database[k]``, with their SHA-256), the scores as
  ``id_confidence_measure[k]``;
* ``SML`` - one row per query with hits: its identification, the best hit; when
  several compounds tie at the best score, all of them, ``|``-separated (the
  mzTab-M way to give an ambiguous identification); ``reliability`` 2
  (putatively annotated compound: a library spectrum match, MSI level 2);
* ``SMF`` - one row per query (every query, with hits or not): its precursor
  m/z, its status (``opt_global_status``: hits, or why there are none) and the
  ``SME_ID_REF_ambiguity_code`` 1 where the best hits tie among compounds;
* ``SME`` - one row per hit: the library spectrum and compound, both precursor
  m/z, the scores, ``rank`` (tied best hits share rank 1), and the ambiguity
  flags as ``opt_global_*`` columns.

Read it with ``pyteomics.mztab.MzTab(path)``: ``.small_molecule_evidence_table``
holds the hits.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO

import numpy as np

from engine.atomic import atomic_path
from engine.collection import LIBRARY_FILE_KEY
from engine.export.columns import hit_columns
from engine.export.queries import QueryTally
from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search import order_ties
from engine.search.ambiguity import IsomerNames, distinct_compounds
from engine.version import __version__

__all__ = ["MZTAB_VERSION", "mztab_lines", "write_mztab"]

MZTAB_VERSION = "2.0.0-M"

_SML = (
    "SML_ID", "SMF_ID_REFS", "database_identifier", "chemical_formula", "smiles", "inchi",
    "chemical_name", "uri", "theoretical_neutral_mass", "adduct_ions", "reliability",
    "best_id_confidence_measure", "best_id_confidence_value", "abundance_assay[1]",
    "abundance_study_variable[1]", "abundance_variation_study_variable[1]",
    "opt_global_tied", "opt_global_few_peaks", "opt_global_isomers",
)  # fmt: skip
_SMF = (
    "SMF_ID", "SME_ID_REFS", "SME_ID_REF_ambiguity_code", "adduct_ion", "isotopomer",
    "exp_mass_to_charge", "charge", "retention_time_in_seconds",
    "retention_time_in_seconds_start", "retention_time_in_seconds_end", "abundance_assay[1]",
    "opt_global_query_index", "opt_global_query_id", "opt_global_query_name",
    "opt_global_status", "opt_global_hits",
)  # fmt: skip
_SME_FIXED = (
    "SME_ID", "evidence_input_id", "database_identifier", "chemical_formula", "smiles", "inchi",
    "chemical_name", "uri", "derivatized_form", "adduct_ion", "exp_mass_to_charge", "charge",
    "theoretical_mass_to_charge", "spectra_ref", "identification_method", "ms_level",
)  # fmt: skip
#: Hit columns written as ``opt_global_<name>`` in SME rows.
_SME_OPTIONAL = (
    "query_index", "query_id", "library_index", "library_id", "matches", "library_explained",
    "precursor_mz_delta", "library_inchikey", "library_file", "tied", "tied_compounds",
    "few_peaks", "isomers",
)  # fmt: skip


def _text(value: object) -> str:
    """One mzTab cell: ``null`` for missing, no tabs or line breaks."""
    if value is None:
        return "null"
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, float | np.floating):
        return "null" if value != value else repr(float(value))
    if isinstance(value, int | np.integer):
        return str(int(value))
    text = " ".join(str(value).split())
    return text if text else "null"


def _param(name: str, value: object = "") -> str:
    """A user parameter ``[, , name, value]`` (commas in the name would split it)."""
    return f"[, , {str(name).replace(',', ';')}, {str(value).replace(',', ';')}]"


def _score_name(params: SearchParameters) -> str:
    return {
        "cosine": "greedy cosine score",
        "modified_cosine": "modified cosine score",
        "entropy": "spectral entropy similarity",
        "unweighted_entropy": "unweighted spectral entropy similarity",
    }.get(params.score, params.score)


def mztab_lines(
    hits: HitTable,
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters,
    *,
    isomers: IsomerNames | None = None,
    status: np.ndarray | None = None,
    incomplete: np.ndarray | tuple = (),
    complete: bool = True,
    extra_provenance: Mapping[str, object] | None = None,
    q_values: Callable[[HitTable], np.ndarray] | None = None,
) -> list[str]:
    """The lines of the mzTab-M file of a search (see :func:`write_mztab`)."""
    hits = order_ties(hits, queries, library, params)
    q = None if q_values is None else q_values(hits)
    cols = hit_columns(hits, queries, library, params, isomers, q)
    inchi = library.metadata.get("inchi")
    if inchi is not None:
        cols["library_inchi"] = inchi[hits.library_index]
    tally = QueryTally(queries, library)
    tally.add(hits)
    table = tally.columns(params, incomplete, status)
    measures = [_score_name(params), "matched peaks", "reverse score"]
    # q_value (engine.search.fdr): when the hit columns carry a q-value, it is one more
    # identification confidence measure, and SML's best_id_confidence stays the score.
    has_q = q is not None
    if has_q:
        measures.append("q-value")
    lines = _metadata(queries, library, params, measures, complete, extra_provenance)
    # sections in the order mzTab-M requires: MTD, SML, SMF, SME (a blank line between)
    lines += ["", *_small_molecules(hits, cols, library, measures)]
    lines += ["", *_features(hits, table, queries)]
    lines += ["", *_evidence(hits, cols, queries, params, measures, has_q)]
    return lines


def _metadata(queries, library, params, measures, complete, extra) -> list[str]:
    def mtd(key: str, value: object) -> str:
        return f"MTD\t{key}\t{_text(value)}"

    now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    query_path = queries.source.path if queries.source is not None else ""
    lines = [
        mtd("mzTab-version", MZTAB_VERSION),
        mtd("mzTab-ID", f"SimMS-{now}"),
        mtd("title", f"SimMS library search of {Path(query_path).name or 'in-memory spectra'}"),
        mtd("description", f"{len(queries)} query spectra searched against {len(library)} "
                           f"library spectra; complete: {'yes' if complete else 'no'}"),
        mtd("software[1]", _param("SimMS desktop", __version__)),
    ]  # fmt: skip
    settings = {**params.to_dict(), **(extra or {})}
    for k, (name, value) in enumerate(settings.items(), start=1):
        lines.append(mtd(f"software[1]-setting[{k}]", f"{name}={value}"))
    lines += [
        mtd("quantification_method", "[MS, MS:1001834, LC-MS label-free quantitation analysis, ]"),
        mtd("ms_run[1]-location", Path(query_path).absolute().as_uri() if query_path
            else "file:///in-memory"),
        mtd("ms_run[1]-id_format", "[MS, MS:1000774, multiple peak list nativeID format, ]"),
        mtd("assay[1]", "query spectra"),
        mtd("assay[1]-ms_run_ref", "ms_run[1]"),
        mtd("study_variable[1]", "undefined"),
        mtd("study_variable[1]-assay_refs", "assay[1]"),
        mtd("study_variable[1]-description", "query spectra"),
        mtd("cv[1]-label", "MS"),
        mtd("cv[1]-full_name", "PSI-MS controlled vocabulary"),
        mtd("cv[1]-version", "4.1.0"),
        mtd("cv[1]-uri", "https://raw.githubusercontent.com/HUPO-PSI/psi-ms-CV/master/psi-ms.obo"),
    ]  # fmt: skip
    for k, source in enumerate(_library_sources(library), start=1):
        path, sha = source
        lines += [
            mtd(f"database[{k}]", _param("spectral library", Path(path).name)),
            mtd(f"database[{k}]-prefix", None),
            mtd(f"database[{k}]-version", f"sha256 {sha}" if sha else "Unknown"),
            mtd(f"database[{k}]-uri", Path(path).absolute().as_uri() if path else None),
        ]
    lines += [
        mtd("small_molecule-quantification_unit", _param("none (identification only)")),
        mtd("small_molecule_feature-quantification_unit", _param("none (identification only)")),
        mtd("small_molecule-identification_reliability",
            "[MS, MS:1002896, compound identification confidence level, ]"),
    ]  # fmt: skip
    for k, name in enumerate(measures, start=1):
        lines.append(mtd(f"id_confidence_measure[{k}]", _param(name)))
    return lines


def _library_sources(library: SpectrumLibrary) -> list[tuple[str, str]]:
    """(path, sha256) of each library file searched ("", "" when in memory)."""
    if library.source is not None:
        return [(str(library.source.path), library.source.sha256)]
    files = library.metadata.get(LIBRARY_FILE_KEY)  # several libraries searched as one
    if files is not None and len(files):
        return [(str(name), "") for name in dict.fromkeys(files.tolist())]
    return [("", "")]


def _charge(mode: str) -> str:
    return {"positive": "1", "negative": "-1"}.get(str(mode), "null")


def _evidence(hits, cols, queries, params, measures, has_q) -> list[str]:
    header = [*_SME_FIXED, *(f"id_confidence_measure[{k}]" for k in range(1, len(measures) + 1)),
              "rank", *(f"opt_global_{n}" for n in _SME_OPTIONAL)]  # fmt: skip
    lines = ["SEH\t" + "\t".join(header)]
    method = _param(f"SimMS spectral library search ({_score_name(params)})")
    rank = _ranks(hits, cols["tied"])
    for r in range(len(hits)):
        row = [
            r + 1, f"query_index={cols['query_index'][r]}", cols["library_id"][r],
            cols["library_formula"][r], cols["library_smiles"][r], _inchi(cols, r),
            cols["library_name"][r], None, None, cols["library_adduct"][r],
            cols["query_precursor_mz"][r], _charge(cols["query_ion_mode"][r]),
            cols["library_precursor_mz"][r], f"ms_run[1]:index={cols['query_index'][r]}",
            method, "[MS, MS:1000511, ms level, 2]", cols["score"][r], cols["matches"][r],
            cols["reverse_score"][r],
        ]  # fmt: skip
        if has_q:
            row.append(cols["q_value"][r])
        row.append(rank[r])
        row += [cols[n][r] for n in _SME_OPTIONAL]
        lines.append("SME\t" + "\t".join(_text(v) for v in row))
    return lines


def _inchi(cols: Mapping[str, np.ndarray], r: int) -> object:
    inchi = cols.get("library_inchi")
    return None if inchi is None else inchi[r]


def _ranks(hits: HitTable, tied: np.ndarray) -> np.ndarray:
    """Rank of each hit in its query: tied best hits share rank 1, the next is 1 + ties."""
    first = np.ones(len(hits), dtype=bool)
    first[1:] = hits.query_index[1:] != hits.query_index[:-1]
    start = np.maximum.accumulate(np.where(first, np.arange(len(hits)), 0))
    position = np.arange(len(hits)) - start + 1
    return np.where(tied > 0, 1, position)


def _features(hits, table, queries) -> list[str]:
    sme = {}
    for r, q in enumerate(hits.query_index.tolist()):
        sme.setdefault(q, []).append(r + 1)
    rt = queries.metadata.get("rtinseconds")
    lines = ["SFH\t" + "\t".join(_SMF)]
    for q in range(len(queries)):
        refs = sme.get(q)
        ambiguous = 1 if table["tied_compounds"][q] else None
        retention = rt[q] if rt is not None and str(rt[q]).strip() else None
        row = [
            q + 1, "|".join(map(str, refs)) if refs else None, ambiguous, None, None,
            table["query_precursor_mz"][q], _charge(table["query_ion_mode"][q]), retention,
            None, None, None, q, table["query_id"][q], table["query_name"][q],
            table["status"][q], table["hits"][q],
        ]  # fmt: skip
        lines.append("SMF\t" + "\t".join(_text(v) for v in row))
    return lines


def _small_molecules(hits, cols, library, measures) -> list[str]:
    lines = ["SMH\t" + "\t".join(_SML)]
    best = np.flatnonzero(cols["tied"] > 0)
    by_query: dict[int, list[int]] = {}
    for r in best.tolist():
        by_query.setdefault(int(hits.query_index[r]), []).append(r)
    for k, (q, rows) in enumerate(by_query.items(), start=1):
        # one value per distinct compound among the tied best hits, "|"-separated
        chosen = [rows[i] for i in distinct_compounds(library, hits.library_index[rows])]

        def joined(name: str, chosen: list[int] = chosen) -> str:
            return "|".join(_text(cols[name][r]).replace("|", "/") for r in chosen)

        row = [
            k, q + 1, joined("library_id"), joined("library_formula"), joined("library_smiles"),
            "|".join(_text(_inchi(cols, r)) for r in chosen), joined("library_name"), None,
            None, joined("library_adduct"), 2, _param(measures[0]), cols["score"][rows[0]],
            None, None, None, cols["tied"][rows[0]], bool(cols["few_peaks"][rows[0]]),
            cols["isomers"][rows[0]],
        ]  # fmt: skip
        lines.append("SML\t" + "\t".join(_text(v) for v in row))
    return lines


def write_mztab(
    target: str | os.PathLike | IO[str],
    hits: HitTable,
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters,
    **kwargs: object,
) -> Path | None:
    """Write a search's hits as mzTab-M 2.0, atomically.

    Parameters
    ----------
    target : str, Path or text stream
        The ``.mztab`` file (or a stream).
    hits, queries, library, params
        The search (each query's hits all present).
    **kwargs
        ``isomers``, ``status``, ``incomplete``, ``complete``,
        ``extra_provenance``, ``q_values``: see :func:`mztab_lines`.

    Returns
    -------
    Path or None
        The file written (None for a stream).
    """
    text = "\n".join(mztab_lines(hits, queries, library, params, **kwargs)) + "\n"
    if not isinstance(target, str | os.PathLike):
        target.write(text)
        return None
    with atomic_path(target, fsync=True) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")
    return Path(target)
