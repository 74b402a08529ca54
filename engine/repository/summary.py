"""Repository hits as tables: each hit with its file, and per file / dataset summaries."""

from __future__ import annotations

import numpy as np

from engine.hits import HitTable
from engine.library import SpectrumLibrary

__all__ = ["hits_frame", "summary"]

BY = {"file": ["dataset", "file"], "dataset": ["dataset"]}


def hits_frame(repository, hits: HitTable, queries: SpectrumLibrary | None = None):
    """``hits`` (repository indexes) as a ``pandas.DataFrame``.

    Columns: ``query_index`` (and ``query_id`` when ``queries`` is given),
    ``repository_index``, ``score``, ``matches``, then where each spectrum comes
    from: ``dataset``, ``file``, ``file_index`` (its position in the file),
    ``shard``, ``id``, ``name``, ``inchikey``, ``precursor_mz``; and
    ``synthetic`` (True for every hit of a synthetic repository).
    """
    import pandas as pd

    records = repository.records(hits.library_index)
    frame = {"query_index": hits.query_index}
    if queries is not None:
        frame["query_id"] = np.asarray(queries.ids, dtype=object)[hits.query_index]
    frame.update(
        repository_index=hits.library_index,
        score=hits.score,
        matches=hits.matches,
        dataset=records["dataset"],
        file=records["file"],
        file_index=records["file_index"],
        shard=records["shard"],
        id=records["id"],
        name=records["name"],
        inchikey=records["inchikey"],
        precursor_mz=records["precursor_mz"],
        synthetic=np.full(len(hits), repository.synthetic),
    )
    return pd.DataFrame(frame)


def summary(
    repository, hits: HitTable, queries: SpectrumLibrary | None = None, *, by: str = "file"
):
    """Per query, which files (or datasets) hold its hits: how many, the best score.

    Only the hits given count: for "every file that contains the compound",
    search with ``top_n=0`` and a score ``threshold``.

    Parameters
    ----------
    by : {"file", "dataset"}

    Returns
    -------
    pandas.DataFrame
        One row per query and file (or dataset): ``query_index`` (``query_id``),
        ``dataset`` (and ``file``), ``hits``, ``best_score``, ``mean_score``,
        ``best_repository_index``, ``best_id``, ``best_file_index``; and
        ``synthetic``.  Sorted by query, then best score descending.
    """
    if by not in BY:
        raise ValueError(f"by must be 'file' or 'dataset', not {by!r}")
    frame = hits_frame(repository, hits, queries)
    keys = ["query_index", *(["query_id"] if queries is not None else []), *BY[by]]
    ordered = frame.sort_values(
        ["query_index", "score", "repository_index"], ascending=[True, False, True], kind="stable"
    )
    grouped = ordered.groupby(keys, sort=False)
    table = grouped.agg(
        hits=("score", "size"),
        best_score=("score", "first"),
        mean_score=("score", "mean"),
        best_repository_index=("repository_index", "first"),
        best_id=("id", "first"),
        best_file_index=("file_index", "first"),
    ).reset_index()
    table["synthetic"] = repository.synthetic
    return table.sort_values(
        ["query_index", "best_score", "best_repository_index"],
        ascending=[True, False, True], kind="stable",
    ).reset_index(drop=True)  # fmt: skip
