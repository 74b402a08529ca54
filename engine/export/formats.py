"""One way to open any hit-list output: streamed tables, or whole-search documents."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO

import numpy as np

from engine.export.gnps import write_gnps
from engine.export.mztab import write_mztab
from engine.export.writer import HitWriter, check_output
from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search.ambiguity import IsomerNames

__all__ = ["DocumentWriter", "open_writer"]


class DocumentWriter:
    """A :class:`HitWriter` look-alike for formats written whole (mzTab-M, GNPS TSV).

    Chunks are kept (in memory) and the file is written atomically by
    :meth:`close`; nothing is written on :meth:`abort`.  The GNPS TSV gets the
    queries table beside it (``name.queries.tsv``); mzTab-M holds it (SMF rows).
    """

    def __init__(
        self,
        target: str | os.PathLike | IO[str],
        queries: SpectrumLibrary,
        library: SpectrumLibrary,
        params: SearchParameters,
        *,
        format: str,
        extra_provenance: Mapping[str, object] | None = None,
        isomers: IsomerNames | None = None,
        adjust: Callable[[HitTable], HitTable] | None = None,
        q_values: Callable[[HitTable], np.ndarray] | None = None,
    ) -> None:
        self.target, self.format, self.q_values = target, format, q_values
        self.queries, self.library, self.params = queries, library, params
        self.extra, self.isomers, self.adjust = dict(extra_provenance or {}), isomers, adjust
        self.rows = 0
        self._chunks: list[HitTable] = []

    def write(self, hits: HitTable) -> None:
        """Keep one chunk of hits (each query's hits all in it)."""
        if self.adjust is not None and len(hits):
            hits = self.adjust(hits)
        if len(hits):
            self._chunks.append(hits)
            self.rows += len(hits)

    def close(
        self,
        *,
        complete: bool = True,
        note: str = "",
        incomplete: np.ndarray | tuple = (),
        status: np.ndarray | None = None,
    ) -> Path | None:
        """Write the file (and the GNPS TSV's queries table); see :meth:`HitWriter.close`."""
        hits = HitTable.concat(self._chunks)
        self._chunks = []
        if self.format == "mztab":
            extra = {**self.extra, "complete": "yes" if complete else f"no ({note})"}
            return write_mztab(
                self.target, hits, self.queries, self.library, self.params,
                isomers=self.isomers, status=status, incomplete=incomplete, complete=complete,
                extra_provenance=extra, q_values=self.q_values,
            )  # fmt: skip
        return write_gnps(
            self.target, hits, self.queries, self.library, self.params, isomers=self.isomers,
            status=status, incomplete=incomplete, q_values=self.q_values,
        )  # fmt: skip

    def abort(self) -> None:
        """Drop the hits kept; nothing is written."""
        self._chunks = []


def open_writer(
    target: str | os.PathLike | IO[str],
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters,
    *,
    format: str | None = None,
    backend: str = "",
    device: str = "",
    extra_provenance: Mapping[str, object] | None = None,
    isomers: IsomerNames | None = None,
    adjust: Callable[[HitTable], HitTable] | None = None,
    q_values: Callable[[HitTable], np.ndarray] | None = None,
) -> HitWriter | DocumentWriter:
    """A writer for ``target`` in any hit-list format (see :func:`check_output`).

    TSV, CSV and Parquet stream (:class:`HitWriter`); mzTab-M (``.mztab``) and
    the GNPS-style TSV (``format="gnps"``) are written whole at :meth:`close`.
    ``adjust`` is applied to each chunk before it is written (the CLI passes
    :func:`engine.analyses.qc.complete_ties`); ``isomers`` fills the ``isomers`` column and
    ``q_values`` (``FdrSearchJob.q_values``) the ``q_value`` column.
    """
    if isinstance(target, str | os.PathLike):
        _, fmt = check_output(target, format)
    else:
        fmt = (format or "tsv").lower()
    if fmt in ("mztab", "gnps"):
        provenance = {"backend": f"{backend} ({device})" if device else backend,
                      **(extra_provenance or {})}  # fmt: skip
        return DocumentWriter(
            target, queries, library, params, format=fmt, extra_provenance=provenance,
            isomers=isomers, adjust=adjust, q_values=q_values,
        )  # fmt: skip
    return HitWriter(
        target, queries, library, params, backend=backend, device=device, format=fmt,
        extra_provenance=extra_provenance, isomers=isomers, adjust=adjust, q_values=q_values,
    )  # fmt: skip
