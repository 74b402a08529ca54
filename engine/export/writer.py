"""Hit lists written atomically, chunk by chunk, with their provenance."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from engine.atomic import fsync_file, publish, temporary_beside
from engine.export.cells import delimited_rows, frame_for_writing
from engine.export.columns import HIT_COLUMNS, hit_columns, provenance_lines
from engine.export.queries import QueryTally, queries_path, write_queries
from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search import SearchContext, order_ties
from engine.search.ambiguity import IsomerNames

if TYPE_CHECKING:  # pandas is imported where it is used: writing TSV/CSV needs none
    import pandas as pd

__all__ = ["HitWriter", "check_output", "write_hits"]

#: Suffixes of the hit-list formats.
_FORMATS = {
    "tsv": "tsv",
    "txt": "tsv",
    "tab": "tsv",
    "csv": "csv",
    "parquet": "parquet",
    "pq": "parquet",
    "mztab": "mztab",
    "gnps": "gnps",
}

#: Rows formatted at a time: bounds the writer's memory (about 1 KB a row while formatting).
_ROWS_AT_ONCE = 100_000
#: Width of the ``# complete: ...`` line, overwritten in place when the file is closed.
_STATUS_WIDTH = 200


def check_output(path: str | Path, format: str | None = None) -> tuple[Path, str]:
    """Check that a hit list can be written to ``path``, before any search runs.

    Parameters
    ----------
    path : str or Path
        The file to write.
    format : {"tsv", "csv", "parquet", "mztab", "gnps"}, optional
        Taken from the suffix when omitted (no suffix: TSV; ``.mztab``: mzTab-M;
        the GNPS-style TSV only when asked for).

    Returns
    -------
    path : Path
    format : str

    Raises
    ------
    ValueError
        Unknown format (e.g. ``.xlsx``), or Parquet without pyarrow.
    OSError
        The directory is missing (it is never created), the path is a
        directory or not a regular file, or the directory is not writable.
    """
    path = Path(path)
    name = (format or path.suffix.lstrip(".") or "tsv").lower()
    if name not in _FORMATS:
        raise ValueError(
            f"{path}: unknown hit-list format {name!r} (use .tsv, .csv, .parquet or .mztab, "
            "or format gnps; spreadsheets open .csv and .tsv)"
        )
    fmt = _FORMATS[name]
    if fmt == "parquet":
        try:
            import pyarrow.parquet  # noqa: F401
        except ImportError:
            raise ValueError(
                f"{path}: Parquet output needs pyarrow (pip install pyarrow)"
            ) from None
    parent = path.parent
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise OSError(f"{path}: cannot write the hit list: {parent} {what}")
    if path.is_dir():
        raise OSError(f"{path}: cannot write the hit list: it is a directory")
    if path.exists() and not stat.S_ISREG(path.stat().st_mode):
        raise OSError(f"{path}: cannot write the hit list: not a regular file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OSError(f"{path}: cannot write the hit list: {parent} is not writable")
    return path, fmt


class HitWriter:
    """Write a hit list chunk by chunk as a search streams it; atomic and bounded in memory.

    Open it before the search (every check of the output runs here, and the
    temporary file is created at once, so a bad path or a read-only disk fails
    before any work), :meth:`write` each hit chunk as it arrives, then
    :meth:`close` it, saying whether the search ran to its end.  Until then the
    rows live in a temporary file beside the target; :meth:`close` renames it
    into place, so the target is never seen half-written.  Used as a context
    manager, an exception aborts (the temporary file is removed).

    Parameters
    ----------
    target : str, Path or text stream
        Output file (``.tsv``, ``.txt``, ``.csv`` or ``.parquet``), or an open
        text stream such as ``sys.stdout`` (TSV, or CSV with ``format="csv"``).
    queries, library : SpectrumLibrary
        The spectra the hit indexes refer to.
    params : SearchParameters
        The search's parameters (provenance).
    backend, device : str
        Where the search runs (provenance).
    format : {"tsv", "csv", "parquet"}, optional
        Taken from the file's suffix when omitted.
    extra_provenance : mapping, optional
        More ``key: value`` provenance items.
    isomers : callable, optional
        Library rows to isomer names for the ``isomers`` column
        (:class:`engine.analyses.qc.IsomerCheck`).
    adjust : callable, optional
        Applied to each chunk before it is written (e.g.
        :func:`engine.analyses.qc.complete_ties`).
    q_values : callable, optional
        The q-values of a chunk of hits (``FdrSearchJob.q_values``), column ``q_value``.

    Notes
    -----
    Rows are written in the order the chunks arrive: grouped by query, each
    query's hits by score descending; hits tied at a query's best score in the
    order of :func:`engine.search.order_ties` (never by library position), the
    others by library index.  Each chunk must hold all hits of its queries (as a
    search streams them).  Without a precursor window queries come in ascending
    order; with one, in precursor order.  A file target gets the queries table
    beside it (:func:`engine.export.queries_path`), written by :meth:`close`.
    """

    def __init__(
        self,
        target: str | Path | IO[str],
        queries: SpectrumLibrary,
        library: SpectrumLibrary,
        params: SearchParameters,
        *,
        backend: str = "",
        device: str = "",
        format: str | None = None,
        extra_provenance: Mapping[str, object] | None = None,
        isomers: IsomerNames | None = None,
        adjust: Callable[[HitTable], HitTable] | None = None,
        q_values: Callable[[HitTable], np.ndarray] | None = None,
    ) -> None:
        self.queries, self.library, self.params = queries, library, params
        self.isomers, self.adjust, self.q_values = isomers, adjust, q_values
        self.context = SearchContext(queries, library, params, isomers, q_values)
        self.tally = QueryTally(queries, library)
        self.rows = 0
        self._stream: IO[str] | None = None
        self._path: Path | None = None
        self._tmp: str | None = None
        self._fh: IO[bytes] | None = None
        self._parquet = None
        self._status_at = -1
        header = provenance_lines(
            queries, library, params, backend=backend, device=device, extra=extra_provenance
        )
        if isinstance(target, str | os.PathLike):
            self._path, self.format = check_output(target, format)
            if self.format in ("mztab", "gnps"):
                raise ValueError(
                    f"{target}: HitWriter writes TSV, CSV or Parquet; "
                    f"engine.export.open_writer writes {self.format}"
                )
        else:
            self._stream, self.format = target, (format or "tsv").lower()
            if self.format not in ("tsv", "csv"):
                raise ValueError(f"a stream takes TSV or CSV, not {self.format!r}")
        self._sep = "," if self.format == "csv" else "\t"
        self._header = header
        if self._path is not None:
            self._open_file()
        else:
            self._emit_text("".join(f"{line}\n" for line in header) + self._names_row())

    # -- public -----------------------------------------------------------------------
    def write(self, hits: HitTable) -> None:
        """Append one chunk of hits (memory: this chunk's rows only)."""
        if len(hits) == 0:
            return
        if self.adjust is not None:
            hits = self.adjust(hits)
        hits = order_ties(hits, self.queries, self.library, self.params)
        self.tally.add(hits)
        # a batch of an all-hits search can hold millions: format it in pieces of
        # whole queries (the ambiguity columns need each query's hits together)
        for piece in _pieces(hits.query_index, _ROWS_AT_ONCE):
            part = hits if len(piece) == len(hits) else hits.take(piece)
            if self.format == "parquet":
                self._write_parquet(frame_for_writing(self.context.columns(part)))
            else:
                self._emit_text(delimited_rows(part, self.context, self._sep))
            self.rows += len(part)

    def close(
        self,
        *,
        complete: bool = True,
        note: str = "",
        incomplete: np.ndarray | tuple = (),
        status: np.ndarray | None = None,
    ) -> Path | None:
        """Finish the file: mark it complete or not, flush it to disk, move it into place.

        Parameters
        ----------
        complete : bool
            Whether every hit of the search was written.
        note : str
            Why it is incomplete (one line), e.g. ``"cancelled"``.
        incomplete : sequence of int
            Queries whose search did not finish (for the queries table).
        status : ndarray of str, optional
            Each query's status (:func:`engine.search.query_status`), when the
            caller has it; else computed from the hits written.

        Returns
        -------
        Path or None
            The file written (None for a stream).
        """
        mark = "yes" if complete else "no" + (f" ({_one_line(note)})" if note else "")
        if self._path is None:
            self._emit_text(f"# complete: {mark}\n")
            self._stream.flush()
            return None
        try:
            table = self.tally.columns(self.params, incomplete, status)
            write_queries(queries_path(self._path), table)
            if self.format == "parquet":
                if self._parquet is None:
                    self._write_parquet(
                        frame_for_writing(hit_columns(HitTable.empty(), self.queries, self.library))
                    )
                self._parquet.add_key_value_metadata({"simms_complete": mark})
                self._parquet.close()
                self._parquet = None
                fsync_file(self._tmp)
            else:
                line = f"# complete: {mark}"[: _STATUS_WIDTH - 1]
                self._fh.seek(self._status_at)
                self._fh.write(line.ljust(_STATUS_WIDTH - 1).encode("utf-8"))
                self._fh.flush()
                os.fsync(self._fh.fileno())
                self._fh.close()
                self._fh = None
            publish(self._tmp, self._path)
            self._tmp = None
        except BaseException:
            self.abort()
            raise
        return self._path

    def abort(self) -> None:
        """Drop the temporary file; the target is left as it was."""
        for handle in (self._parquet, self._fh):
            try:
                if handle is not None:
                    handle.close()
            except Exception:  # noqa: BLE001, S110 - already failing; the file goes anyway
                pass
        self._parquet = self._fh = None
        if self._tmp is not None:
            Path(self._tmp).unlink(missing_ok=True)
            self._tmp = None

    def __enter__(self) -> HitWriter:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is not None:
            self.abort()
        elif self._tmp is not None or self._stream is not None:
            self.close()

    # -- internals --------------------------------------------------------------------
    def _open_file(self) -> None:
        path = self._path
        fd, self._tmp = temporary_beside(path)
        if self.format == "parquet":
            os.close(fd)
            return
        self._fh = os.fdopen(fd, "wb")
        try:
            lines = [ln for ln in self._header]
            head = "".join(f"{line}\n" for line in lines).encode("utf-8")
            self._fh.write(head)
            self._status_at = len(head)
            placeholder = "# complete: no (the search did not finish)"
            self._fh.write(placeholder.ljust(_STATUS_WIDTH - 1).encode("utf-8") + b"\n")
            self._fh.write(self._names_row().encode("utf-8"))
        except BaseException:
            self.abort()
            raise

    def _names_row(self) -> str:
        return self._sep.join(HIT_COLUMNS) + "\n"

    def _emit_text(self, text: str) -> None:
        if self._stream is not None:
            self._stream.write(text)
        else:
            self._fh.write(text.encode("utf-8"))

    def _write_parquet(self, frame: pd.DataFrame) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(frame, preserve_index=False)
        if self._parquet is None:
            meta = {b"simms_provenance": "\n".join(self._header).encode()}
            schema = table.schema.with_metadata(meta)
            self._parquet = pq.ParquetWriter(self._tmp, schema)
        self._parquet.write_table(table.cast(self._parquet.schema))


def _pieces(query: np.ndarray, rows: int) -> list[np.ndarray]:
    """Row ranges of at most about ``rows`` rows each that never split a query's run
    (a query with more rows than that is one piece)."""
    if len(query) <= rows:
        return [np.arange(len(query))]
    starts = np.flatnonzero(np.concatenate(([True], query[1:] != query[:-1])))
    bounds, previous = [0], 0
    for s in [*starts[1:].tolist(), len(query)]:
        if s - bounds[-1] > rows and previous > bounds[-1]:
            bounds.append(previous)  # the piece ends before the query that overflows it
        previous = s
    bounds.append(len(query))
    return [np.arange(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def write_hits(
    path: str | Path,
    hits: HitTable,
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters,
    *,
    chunk_rows: int = 200_000,
    **options: Any,
) -> Path:
    """Write a whole hit list atomically (a :class:`HitWriter` fed in chunks).

    Parameters
    ----------
    path : str or Path
        Output file (``.tsv``/``.txt``, ``.csv`` or ``.parquet``).
    hits, queries, library, params
        The search and its inputs.
    chunk_rows : int
        Rows formatted at a time (bounds memory).
    **options
        Keywords of :class:`HitWriter`: ``backend``, ``device`` (provenance),
        ``format`` (``"tsv"``, ``"csv"``, ``"parquet"``; from the suffix when
        omitted), ``extra_provenance``, ``isomers``, ``adjust``, ``q_values``.

    Returns
    -------
    Path
        The file written.

    Notes
    -----
    Read TSV/CSV back with ``pandas.read_csv(path, sep="\\t", comment="#")`` or
    :func:`read_hits`.  Parquet stores the provenance in the schema metadata.
    """
    with HitWriter(path, queries, library, params, **options) as writer:
        for start in range(0, len(hits), chunk_rows):
            writer.write(hits.take(np.arange(start, min(start + chunk_rows, len(hits)))))
        return writer.close()
