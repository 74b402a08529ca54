"""Hit lists as tables: the columns users see, written atomically with provenance.

The same :func:`hit_columns` feeds the ``simms`` CLI, the GUI results table and
the exports, so every view of a search shows the same numbers.  Files are
written by :class:`HitWriter`, chunk by chunk as a search streams its hits, so
memory stays bounded whatever the number of hits.

TSV and CSV files read back whole with ``pandas.read_csv(path, sep="\t",
comment="#")`` (``sep=","`` for CSV) or :func:`read_hits`:

- ``#`` lines before the header row hold the provenance; ``# complete: yes`` or
  ``# complete: no (why)`` says whether the search ran to its end;
- text fields are always quoted, so a ``#`` inside a SMILES is never taken for
  a comment (pandas' default C parser honours quotes);
- a text field that a spreadsheet would run as a formula (it starts with ``=``,
  ``+``, ``-``, ``@``, a tab or a carriage return) gets a leading ``'``;
  :func:`read_hits` removes it again;
- m/z columns are rounded to 8 decimals (1e-8 Da, far below any instrument's
  precision) so they print as they were read, e.g. ``112.1258``.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np

from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters

if TYPE_CHECKING:  # pandas is imported where it is used: writing TSV/CSV needs none
    import pandas as pd

__all__ = [
    "HIT_COLUMNS",
    "HitWriter",
    "check_output",
    "hit_columns",
    "provenance_lines",
    "read_hits",
    "write_hits",
]

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

_ION_MODE = np.array(["negative", "unknown", "positive"], dtype=object)


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
        "library_ion_mode": _ION_MODE[library.ion_mode[l].astype(np.int64) + 1],
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
    from engine import __version__

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


#: Suffixes of the hit-list formats.
_FORMATS = {
    "tsv": "tsv",
    "txt": "tsv",
    "tab": "tsv",
    "csv": "csv",
    "parquet": "parquet",
    "pq": "parquet",
}
#: Columns rounded to 8 decimals on output (m/z values and their differences).
_MZ_COLUMNS = ("query_precursor_mz", "library_precursor_mz", "precursor_mz_delta")
#: Rows formatted at a time: bounds the writer's memory (about 1 KB a row while formatting).
_ROWS_AT_ONCE = 100_000
#: Width of the ``# complete: ...`` line, overwritten in place when the file is closed.
_STATUS_WIDTH = 200
#: Characters that make a spreadsheet cell a formula (OWASP CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def check_output(path: str | Path, format: str | None = None) -> tuple[Path, str]:
    """Check that a hit list can be written to ``path``, before any search runs.

    Parameters
    ----------
    path : str or Path
        The file to write.
    format : {"tsv", "csv", "parquet"}, optional
        Taken from the suffix when omitted (no suffix: TSV).

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
            f"{path}: unknown hit-list format {name!r} (use .tsv, .csv or .parquet; "
            "spreadsheets open .csv and .tsv)"
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

    Notes
    -----
    Rows are written in the order the chunks arrive: grouped by query, each
    query's hits by score descending then library index.  Without a precursor
    window queries come in ascending order; with one, in precursor order.
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
    ) -> None:
        self.queries, self.library = queries, library
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
        if len(hits) > _ROWS_AT_ONCE:  # a batch of all-hits search can hold millions
            for start in range(0, len(hits), _ROWS_AT_ONCE):
                stop = min(start + _ROWS_AT_ONCE, len(hits))
                self.write(hits.take(np.arange(start, stop)))
            return
        if self.format == "parquet":
            self._write_parquet(_frame(hit_columns(hits, self.queries, self.library)))
        else:
            self._emit_text(_delimited_rows(hits, self.queries, self.library, self._sep))
        self.rows += len(hits)

    def close(self, *, complete: bool = True, note: str = "") -> Path | None:
        """Finish the file: mark it complete or not, flush it to disk, move it into place.

        Parameters
        ----------
        complete : bool
            Whether every hit of the search was written.
        note : str
            Why it is incomplete (one line), e.g. ``"cancelled"``.

        Returns
        -------
        Path or None
            The file written (None for a stream).
        """
        status = "yes" if complete else "no" + (f" ({_one_line(note)})" if note else "")
        if self._path is None:
            self._emit_text(f"# complete: {status}\n")
            self._stream.flush()
            return None
        try:
            if self.format == "parquet":
                if self._parquet is None:
                    self._write_parquet(
                        _frame(hit_columns(HitTable.empty(), self.queries, self.library))
                    )
                self._parquet.add_key_value_metadata({"simms_complete": status})
                self._parquet.close()
                self._parquet = None
                _fsync(self._tmp)
            else:
                line = f"# complete: {status}"[: _STATUS_WIDTH - 1]
                self._fh.seek(self._status_at)
                self._fh.write(line.ljust(_STATUS_WIDTH - 1).encode("utf-8"))
                self._fh.flush()
                os.fsync(self._fh.fileno())
                self._fh.close()
                self._fh = None
            os.chmod(self._tmp, 0o666 & ~_umask())
            os.replace(self._tmp, self._path)
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
        fd, self._tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
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


def _delimited_rows(
    hits: HitTable, queries: SpectrumLibrary, library: SpectrumLibrary, sep: str
) -> str:
    """The TSV/CSV rows of one chunk, one line each.

    Text fields depend only on the query or the library spectrum, so each is
    formatted once per distinct spectrum of the chunk (quoted, guarded) and
    rows are then joined from ready-made pieces: about a microsecond a row.
    """
    q_unique, q_at = np.unique(hits.query_index, return_inverse=True)
    l_unique, l_at = np.unique(hits.library_index, return_inverse=True)
    q_cols = hit_columns(HitTable.from_arrays(q_unique, q_unique, [0] * len(q_unique),
                                              [0] * len(q_unique)), queries, queries)  # fmt: skip
    l_cols = hit_columns(HitTable.from_arrays(l_unique, l_unique, [0] * len(l_unique),
                                              [0] * len(l_unique)), library, library)  # fmt: skip
    fields: list[list[str]] = []
    for name in HIT_COLUMNS:
        if name == "query_index":
            fields.append(_integers(hits.query_index))
        elif name == "library_index":
            fields.append(_integers(hits.library_index))
        elif name == "score":
            fields.append(_floats(hits.score))
        elif name == "matches":
            fields.append(_integers(hits.matches))
        elif name == "precursor_mz_delta":
            delta = (
                library.precursor_mz[hits.library_index] - queries.precursor_mz[hits.query_index]
            )
            fields.append(_floats(np.round(delta, 8)))
        else:
            per_query = name.startswith("query_")
            values = (q_cols if per_query else l_cols)[name]
            text = _floats(np.round(values, 8)) if name in _MZ_COLUMNS else _quoted(values)
            at = q_at if per_query else l_at
            fields.append(np.asarray(text, dtype=object)[at].tolist())
    return "\n".join(map(sep.join, zip(*fields, strict=True))) + "\n"


def _integers(values: np.ndarray) -> list[str]:
    return list(map(str, values.tolist()))


def _floats(values: np.ndarray) -> list[str]:
    """Shortest round-trip text of each float; NaN as an empty field."""
    return ["" if v != v else repr(v) for v in values.tolist()]


def _quoted(values: np.ndarray) -> list[str]:
    """Text fields quoted (so ``#`` is never a comment) and guarded against formulas."""
    return ['"' + str(v).replace('"', '""') + '"' for v in _neutralise(values)]


def _frame(columns: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """The columns as written: m/z rounded, text neutralised for spreadsheets."""
    import pandas as pd

    out = {}
    for name, values in columns.items():
        if name in _MZ_COLUMNS:
            values = np.round(values.astype(np.float64), 8)
        elif values.dtype == object:
            values = _neutralise(values)
        out[name] = values
    return pd.DataFrame(out, columns=list(columns))


def _neutralise(values: np.ndarray) -> np.ndarray:
    """Prefix ``'`` to text a spreadsheet would run as a formula."""
    out = np.empty(len(values), dtype=object)
    out[:] = ["'" + v if v.startswith(_FORMULA_START) else v for v in map(str, values)]
    return out


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_hits(
    path: str | Path,
    hits: HitTable,
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters,
    *,
    backend: str = "",
    device: str = "",
    format: str | None = None,
    extra_provenance: Mapping[str, object] | None = None,
    chunk_rows: int = 200_000,
) -> Path:
    """Write a whole hit list atomically (a :class:`HitWriter` fed in chunks).

    Parameters
    ----------
    path : str or Path
        Output file (``.tsv``/``.txt``, ``.csv`` or ``.parquet``).
    hits, queries, library, params
        The search and its inputs.
    backend, device : str
        Where it ran, for the provenance header.
    format : {"tsv", "csv", "parquet"}, optional
        Taken from the suffix when omitted.
    extra_provenance : mapping, optional
        More provenance items.
    chunk_rows : int
        Rows formatted at a time (bounds memory).

    Returns
    -------
    Path
        The file written.

    Notes
    -----
    Read TSV/CSV back with ``pandas.read_csv(path, sep="\\t", comment="#")`` or
    :func:`read_hits`.  Parquet stores the provenance in the schema metadata.
    """
    with HitWriter(
        path, queries, library, params, backend=backend, device=device, format=format,
        extra_provenance=extra_provenance,
    ) as writer:  # fmt: skip
        for start in range(0, len(hits), chunk_rows):
            writer.write(hits.take(np.arange(start, min(start + chunk_rows, len(hits)))))
        return writer.close()


def read_hits(path: str | Path) -> tuple[dict[str, np.ndarray], list[str]]:
    """Read a TSV/CSV hit list written by :func:`write_hits` or the ``simms`` CLI.

    Returns
    -------
    columns : dict of str to ndarray
        Numeric columns as numbers, the rest as strings (spreadsheet guards removed).
    provenance : list of str
        The ``#`` lines, without the ``# ``.
    """
    import pandas as pd

    path = Path(path)
    sep = "," if path.suffix.lower() == ".csv" else "\t"
    with open(path, encoding="utf-8") as fh:
        provenance = [ln[2:].rstrip() for ln in fh if ln.startswith("#")]
    text = {name: str for name in HIT_COLUMNS if name not in _NUMERIC}
    frame = pd.read_csv(path, sep=sep, comment="#", dtype=text, keep_default_na=False)
    out: dict[str, np.ndarray] = {}
    for name in frame.columns:
        values = frame[name]
        if name in _NUMERIC:
            values = pd.to_numeric(values.replace("", np.nan))
            out[name] = values.to_numpy(dtype=np.int64 if name in _INTEGER else np.float64)
        else:
            guarded = values.str.match(r"^'[=+\-@\t\r]")
            out[name] = values.where(~guarded, values.str[1:]).to_numpy(dtype=object)
    return out, provenance


_INTEGER = ("query_index", "library_index", "matches")
_NUMERIC = (*_INTEGER, "score", *_MZ_COLUMNS)
