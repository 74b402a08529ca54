"""One query/library pair as the search scored it: preprocessed peaks and matched peaks.

Headless (no Qt): the mirror plot and matched-peaks table draw what this computes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine import HitTable, SearchParameters, SpectrumLibrary
from engine.export import hit_columns
from engine.matching import PeakMatches, entropy_matches, greedy_matches
from engine.preprocess import pipeline_from_spec

__all__ = [
    "SpectrumPair",
    "compute_pair",
    "mirror_arguments",
    "pair_title",
    "spectrum_label",
    "spectrum_name",
]


@dataclass(frozen=True)
class SpectrumPair:
    """A query/library pair as scored: preprocessed peaks and their greedy matches."""

    query_mz: np.ndarray
    query_intensity: np.ndarray
    library_mz: np.ndarray
    library_intensity: np.ndarray
    query_precursor: float
    library_precursor: float
    matches: PeakMatches
    query_label: str
    library_label: str
    query_name: str = ""
    library_name: str = ""


def spectrum_name(spectra: SpectrumLibrary, index: int) -> str:
    """The compound's name (else the title, the ID, ``spectrum N``)."""
    meta = spectra.metadata
    name = str(meta["name"][index]) or str(meta.get("title", meta["id"])[index])
    return name or str(meta["id"][index]) or f"spectrum {index}"


def spectrum_label(spectra: SpectrumLibrary, index: int) -> str:
    """``name (ID)``, as captions and lists show a spectrum."""
    meta = spectra.metadata
    name = str(meta["name"][index]) or str(meta.get("title", meta["id"])[index])
    sid = str(meta["id"][index])
    return f"{name} ({sid})" if sid and sid != name else name or f"spectrum {index}"


def pair_title(pair: SpectrumPair) -> str:
    """What the mirror plot's title says after the score: the library compound.

    The query is named by its caption; the title names what a chemist looks
    for, the compound the hit proposes, and nothing before it to be cut.
    """
    return pair.library_name or pair.library_label


def mirror_arguments(
    pair: SpectrumPair,
    params: SearchParameters,
    *,
    title: str | None = None,
    sides: tuple[str, str] = ("query", "library"),
) -> tuple[tuple, dict]:
    """Arguments of ``MirrorFigure.set_pair`` for ``pair`` scored with ``params``.

    The one place the window, its exports and ``simms_gui.mirror_figure`` get
    their figure's texts from.
    """
    args = (pair.query_mz, pair.query_intensity, pair.library_mz, pair.library_intensity)
    kwargs = dict(
        title=pair_title(pair) if title is None else title,
        query_label=pair.query_label,
        library_label=pair.library_label,
        score_name=params.score_label,
        query_precursor_mz=pair.query_precursor,
        library_precursor_mz=pair.library_precursor,
        sides=sides,
    )
    return (*args, pair.matches), kwargs


def compute_pair(
    queries: SpectrumLibrary,
    query_index: int,
    library: SpectrumLibrary,
    library_index: int,
    params: SearchParameters,
) -> SpectrumPair:
    """Preprocess both spectra as the search did and match their peaks as it did.

    Modified cosine passes both precursor m/z to ``engine.matching.greedy_matches``;
    entropy similarity shows the cleaned peaks and ``engine.matching.entropy_matches``.
    """
    pipeline = pipeline_from_spec(params.preprocess)
    q = pipeline(queries.subset([query_index]))
    lib = pipeline(library.subset([library_index]))
    qmz, qint = q.peaks(0)
    lmz, lint = lib.peaks(0)
    q_prec, l_prec = float(q.precursor_mz[0]), float(lib.precursor_mz[0])
    if params.entropy:  # the cleaned peaks the entropy search scored
        (qmz, qint), (lmz, lint), matches = entropy_matches(
            qmz, qint, lmz, lint, tolerance=params.tolerance,
            weighted=params.score == "entropy",
            precursor_mz1=q_prec if np.isfinite(q_prec) else None,
            precursor_mz2=l_prec if np.isfinite(l_prec) else None,
        )  # fmt: skip
    else:
        matches = greedy_matches(
            qmz, qint, lmz, lint,
            tolerance=params.tolerance,
            mz_power=params.mz_power,
            intensity_power=params.intensity_power,
            precursor_mz1=q_prec if params.modified else None,
            precursor_mz2=l_prec if params.modified else None,
        )  # fmt: skip
    return SpectrumPair(
        qmz, qint, lmz, lint, q_prec, l_prec, matches,
        spectrum_label(queries, query_index), spectrum_label(library, library_index),
        spectrum_name(queries, query_index), spectrum_name(library, library_index),
    )  # fmt: skip


def pair_row(
    queries: SpectrumLibrary,
    query_index: int,
    library: SpectrumLibrary,
    library_index: int,
    params: SearchParameters,
    pair: SpectrumPair,
) -> dict[str, object]:
    """The hit-table row of a pair scored outside a search (a heatmap cell, a network edge).

    The same columns as the table's (``engine.export.hit_columns``: names, IDs,
    precursors, reverse score, the library record's metadata), so the hit pane
    shows any pair as it shows a hit.
    """
    hits = HitTable.from_arrays(
        [query_index], [library_index], [pair.matches.score], [pair.matches.matches]
    )
    return {k: v[0] for k, v in hit_columns(hits, queries, library, params).items()}
