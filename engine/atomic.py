"""Files that appear whole or not at all: written beside their target, then renamed onto it.

Every file the engine and the window write for users (hit exports, MGF,
networks, cluster tables, sessions, library cache entries) goes through here,
so a reader never sees a half-written file, a failed write leaves an existing
file as it was, and the file gets the permissions any new file gets
(``0o666`` less the umask), not the private ``0o600`` of a temporary file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_path", "file_mode", "fsync_file", "publish", "temporary_beside"]


def file_mode() -> int:
    """Permission bits of a newly created file: ``0o666`` less the process's umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def temporary_beside(path: str | os.PathLike, suffix: str = ".part") -> tuple[int, Path]:
    """An open descriptor and the path of a new hidden temporary file in ``path``'s folder."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    return fd, Path(tmp)


def fsync_file(path: str | os.PathLike) -> None:
    """Flush ``path``'s data to the disk (a rename after it cannot publish a torn file)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(tmp: str | os.PathLike, path: str | os.PathLike) -> Path:
    """Give ``tmp`` a new file's permissions and rename it onto ``path`` (atomic)."""
    os.chmod(tmp, file_mode())
    os.replace(tmp, path)
    return Path(path)


@contextmanager
def atomic_path(
    path: str | os.PathLike, *, suffix: str = ".part", fsync: bool = False
) -> Iterator[Path]:
    """A temporary path beside ``path``, renamed onto it when the block ends without error.

    Parameters
    ----------
    path : path-like
        The file to (re)place.
    suffix : str
        Suffix of the hidden temporary file.
    fsync : bool
        Flush the file to the disk before the rename.

    Yields
    ------
    Path
        Where to write; on any error (including Ctrl-C) it is removed and
        ``path`` is left as it was.

    Examples
    --------
    >>> with atomic_path("hits.tsv") as tmp:  # doctest: +SKIP
    ...     frame.to_csv(tmp, sep="\\t")
    """
    fd, tmp = temporary_beside(path, suffix)
    os.close(fd)
    try:
        yield tmp
        if fsync:
            fsync_file(tmp)
        publish(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
