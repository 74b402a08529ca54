"""The columns users see for a hit, and the provenance lines of a hit list."""

from __future__ import annotations

import datetime as _dt
import platform
from collections.abc import Mapping

import numpy as np

from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.version import __version__

__all__ = ["HIT_COLUMNS", "ION_MODE_NAMES", "MZ_COLUMNS", "hit_columns", "provenance_lines"]

#: Output columns, in order.  The first six are the core of every hit list.
HIT_COLUMNS = (
    "query_index",
    "query_id",
    "library_index",
    "library_id",
    "score",
    "matches",
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
)

ION_MODE_NAMES = np.array(["negative", "unknown", "positive"], dtype=object)


def hit_columns(
    hits: HitTable, queries: SpectrumLibrary, library: SpectrumLibrary
) -> dict[str, np.ndarray]:
    """The user-facing columns of ``hits``, in :data:`HIT_COLUMNS` order.

    Parameters
    ----------
    hits : HitTable
    queries, library : SpectrumLibrary
        The spectra the hit indexes refer to.

    Returns
    -------
    dict of str to ndarray
    """
    q, l = hits.query_index, hits.library_index
    q_prec, l_prec = queries.precursor_mz[q], library.precursor_mz[l]
    qm, lm = queries.metadata, library.metadata
    return {
        "query_index": q,
        "query_id": qm["id"][q],
        "library_index": l,
        "library_id": lm["id"][l],
        "score": hits.score,
        "matches": hits.matches,
        "query_precursor_mz": q_prec,
        "library_precursor_mz": l_prec,
        "precursor_mz_delta": l_prec - q_prec,
        "query_name": qm["name"][q],
        "library_name": lm["name"][l],
        "library_smiles": lm["smiles"][l],
        "library_inchikey": lm["inchikey"][l],
        "library_formula": lm["formula"][l],
        "library_adduct": lm["adduct"][l],
        "library_ion_mode": ION_MODE_NAMES[library.ion_mode[l].astype(np.int64) + 1],
    }


def provenance_lines(
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters,
    *,
    backend: str = "",
    device: str = "",
    extra: Mapping[str, object] | None = None,
) -> list[str]:
    """``# key: value`` lines that say how a hit list was made."""

    def describe(lib: SpectrumLibrary) -> str:
        if lib.source is None:
            return f"{len(lib)} spectra (in memory)"
        return f"{lib.source.path} (sha256 {lib.source.sha256}, {len(lib)} spectra)"

    items: dict[str, object] = {
        "software": f"SimMS desktop {__version__}",
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "queries": describe(queries),
        "library": describe(library),
        "parameters": " ".join(f"{k}={v}" for k, v in params.to_dict().items()),
        "backend": f"{backend} ({device})" if device else backend,
        "python": platform.python_version(),
        **(extra or {}),
    }
    return [f"# {k}: {v}" for k, v in items.items()]


#: Columns rounded to 8 decimals on output (m/z values and their differences).
MZ_COLUMNS = ("query_precursor_mz", "library_precursor_mz", "precursor_mz_delta")
