"""Analysis outputs on disk: one writability check, one atomic writer, one table writer."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from engine.atomic import atomic_path

__all__ = ["TABLE_SUFFIXES", "OutputPathError", "check_writable", "write_atomic", "write_table"]

#: File name endings of tables (TSV, or CSV for ``.csv``).
TABLE_SUFFIXES = (".tsv", ".csv", ".txt")


class OutputPathError(OSError, ValueError):
    """An output path no file can be written to (an ``OSError`` and a ``ValueError``)."""


def check_writable(path: str | os.PathLike, suffixes: tuple[str, ...] = ()) -> Path:
    """``path`` if a file can be written there (before any work), else an error naming it.

    Parameters
    ----------
    path : path-like
    suffixes : tuple of str
        Endings the file name may have (any when empty).

    Raises
    ------
    OutputPathError
        The name has another ending, the path is a directory, or its directory
        does not exist or is not writable.
    """
    path = Path(path)
    parent = path.parent
    if suffixes and path.suffix.lower() not in suffixes:
        raise OutputPathError(f"{path}: the file name must end in {' or '.join(suffixes)}")
    if path.is_dir():
        raise OutputPathError(f"{path}: cannot write: it is a directory")
    if not parent.is_dir():
        raise OutputPathError(f"{path}: cannot write: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"{path}: cannot write: {parent} is not writable")
    return path


def write_atomic(
    path: str | os.PathLike, write: Callable[[Path], None], suffixes: tuple[str, ...] = ()
) -> Path:
    """Call ``write(temporary_path)`` beside ``path``, then rename the file onto ``path``.

    ``path`` is checked first (:func:`check_writable`); readers never see a
    half-written file, and a failed write leaves an existing ``path`` as it was.
    """
    path = check_writable(path, suffixes)
    with atomic_path(path, fsync=True) as tmp:
        write(tmp)
    return path


def write_table(
    path: str | os.PathLike, frame, suffixes: tuple[str, ...] = (), *, neutral: bool = False
) -> Path:
    """A ``pandas.DataFrame`` as TSV (CSV for a ``.csv`` suffix), atomically.

    ``neutral``: text cells that a spreadsheet would run as a formula are
    neutralised (:func:`engine.export.cells.neutralise`).  Reads back with
    ``pandas.read_csv(path, sep="\\t")``.
    """
    if neutral:
        from pandas.api.types import is_string_dtype

        from engine.export.cells import neutralise

        frame = frame.copy(deep=False)
        for name in frame.columns:
            if is_string_dtype(frame[name]):  # text columns (pandas 3: ``str``, not ``object``)
                frame[name] = neutralise(frame[name].to_numpy())
    sep = "," if Path(path).suffix.lower() == ".csv" else "\t"
    return write_atomic(path, lambda tmp: frame.to_csv(tmp, sep=sep, index=False), suffixes)
