"""Hit lists as tables: the columns users see, written atomically with provenance.

The same :func:`hit_columns` feeds the ``simms`` CLI, the GUI results table and
the exports, so every view of a search shows the same numbers.
"""

from __future__ import annotations

import csv
import datetime as _dt
import os
import platform
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from engine.hits import HitTable
from engine.library import SpectrumLibrary
from engine.params import SearchParameters

__all__ = ["HIT_COLUMNS", "hit_columns", "provenance_lines", "write_hits", "read_hits"]

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


def _format(value) -> str:
    if isinstance(value, float | np.floating):
        return "" if np.isnan(value) else repr(float(value))
    return str(value)


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
) -> Path:
    """Write a hit list atomically (temporary file, then rename).

    Parameters
    ----------
    path : str or Path
        Output file; ``-`` is not accepted here (the CLI streams to stdout itself).
    hits, queries, library, params
        The search and its inputs.
    backend, device : str
        Where it ran, for the provenance header.
    format : {"tsv", "csv", "parquet"}, optional
        Taken from the suffix when omitted (``.tsv``/``.txt`` → TSV).

    Returns
    -------
    Path
        The file written.

    Notes
    -----
    TSV and CSV start with ``#`` provenance lines (read them back with
    ``pandas.read_csv(path, sep="\\t", comment="#")`` or :func:`read_hits`).
    Parquet stores the provenance in the schema metadata.
    """
    path = Path(path)
    fmt = (format or path.suffix.lstrip(".") or "tsv").lower()
    fmt = {"txt": "tsv", "tab": "tsv", "pq": "parquet"}.get(fmt, fmt)
    if fmt not in ("tsv", "csv", "parquet"):
        raise ValueError(f"{path}: unknown hit-list format {fmt!r} (use .tsv, .csv or .parquet)")
    columns = hit_columns(hits, queries, library)
    header = provenance_lines(
        queries, library, params, backend=backend, device=device, extra=extra_provenance
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        if fmt == "parquet":
            os.close(fd)
            _write_parquet(tmp, columns, header)
        else:
            with os.fdopen(fd, "w", newline="", encoding="utf-8") as fh:
                write_delimited(fh, columns, header, delimiter="\t" if fmt == "tsv" else ",")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_delimited(fh, columns: Mapping[str, np.ndarray], header: list[str], *, delimiter: str):
    """Write provenance lines, a header row and the rows of ``columns`` to ``fh``."""
    for line in header:
        fh.write(line + "\n")
    writer = csv.writer(fh, delimiter=delimiter, lineterminator="\n")
    writer.writerow(columns.keys())
    cols = [[_format(v) for v in col] for col in columns.values()]
    writer.writerows(zip(*cols, strict=True))


def _write_parquet(path: str, columns: Mapping[str, np.ndarray], header: list[str]) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise RuntimeError("Parquet export needs pyarrow: pip install pyarrow") from exc
    table = pa.table({k: (v.astype(str) if v.dtype == object else v) for k, v in columns.items()})
    meta = {b"simms_provenance": "\n".join(header).encode()}
    pq.write_table(table.replace_schema_metadata(meta), path)


def read_hits(path: str | Path) -> tuple[dict[str, np.ndarray], list[str]]:
    """Read a TSV/CSV hit list written by :func:`write_hits`.

    Returns
    -------
    columns : dict of str to ndarray
        Numeric columns as numbers, the rest as strings.
    provenance : list of str
        The ``#`` header lines, without the ``# ``.
    """
    path = Path(path)
    delimiter = "," if path.suffix.lower() == ".csv" else "\t"
    with open(path, encoding="utf-8", newline="") as fh:
        lines = fh.read().splitlines()
    provenance = [ln[2:] for ln in lines if ln.startswith("#")]
    rows = list(csv.reader([ln for ln in lines if not ln.startswith("#")], delimiter=delimiter))
    names, body = rows[0], rows[1:]
    out: dict[str, np.ndarray] = {}
    for k, name in enumerate(names):
        values = [r[k] for r in body]
        try:
            out[name] = np.array([float(v) if v else np.nan for v in values])
            if name in ("query_index", "library_index", "matches"):
                out[name] = out[name].astype(np.int64)
        except ValueError:
            out[name] = np.array(values, dtype=object)
    return out, provenance
