"""On-disk library cache keyed by the file's content (sha256) and the reader version.

A library read once is saved as ``<sha256>-r<READER_VERSION>.npz`` (no pickles,
see :meth:`SpectrumLibrary.save`) in the cache directory; reading the same bytes
again, under any path, loads that file instead of parsing.  Bump
:data:`READER_VERSION` whenever the readers' output changes.  The format needs
no place in the key: it is told from the content (a ``format=`` that disagrees
with the content is an error, never another parse), so equal bytes always give
the same format; the entry records it in ``library.source.format``.

The cache trusts nothing it reads: an entry is used only when it is a regular
file (never a link), its arrays pass every check the kernels rely on, they match
the digest in its header, and the header names the same content hash and reader
version as the key.  Any other entry is reported, ignored and replaced.  Entries
are written through unique temporary files, so concurrent loaders never collide.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import warnings
from pathlib import Path

from engine.io._build import Progress, report_progress
from engine.io.reader import read_raw
from engine.io.sniff import open_raw, read_bytes
from engine.library import SpectrumLibrary

__all__ = ["READER_VERSION", "default_cache_dir", "cache_path", "load_library"]

#: Version of the readers' output and the entries' layout; part of the cache key.
#: 5: the MSP flavours, mzXML and JSON readers; metadata stored dictionary-encoded.
READER_VERSION = 5


def default_cache_dir() -> Path:
    """``$SIMMS_CACHE_DIR``, else ``$XDG_CACHE_HOME/simms``, else ``~/.cache/simms``."""
    if os.environ.get("SIMMS_CACHE_DIR"):
        return Path(os.environ["SIMMS_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "simms"
    return Path.home() / ".cache" / "simms"


def cache_path(sha256: str, cache_dir: str | Path | None = None) -> Path:
    """Cache file of the content with digest ``sha256``."""
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return directory / f"{sha256}-r{READER_VERSION}.npz"


def load_library(
    path: str | Path,
    *,
    cache: bool = True,
    cache_dir: str | Path | None = None,
    format: str | None = None,
    progress: Progress | None = None,
) -> SpectrumLibrary:
    """Read a library file through the on-disk cache.

    Parameters
    ----------
    path : str or Path
        MGF, MSP, mzML, mzXML or JSON file, plain or gzip (see :func:`engine.io.read_library`).
    cache : bool, default True
        Use the cache; False always parses the file (and writes nothing).
    cache_dir : str or Path, optional
        Cache directory (default :func:`default_cache_dir`).
    format : {"mgf", "msp", "mzml", "mzxml", "json"}, optional
        Force a format, as in :func:`engine.io.read_library`.
    progress : callable, optional
        ``progress(done_bytes, total_bytes)``, as in :func:`engine.io.read_library`;
        a library found in the cache reports once, with the file's size.

    Returns
    -------
    SpectrumLibrary
        As :func:`engine.io.read_library` returns it; ``source.path`` and
        ``report.path`` name ``path`` even when the cache entry came from
        another copy of the same bytes.

    Raises
    ------
    SpectrumFileError
        The file cannot be read (cache problems only warn).
    LoadCancelled
        ``progress`` returned ``False``.
    """
    disk = read_bytes(path)
    if not cache:
        return read_raw(open_raw(path, disk), format=format, progress=progress)
    sha = hashlib.sha256(disk).hexdigest()
    target = cache_path(sha, cache_dir)
    if os.path.lexists(target):
        try:
            cached = _renamed(_load_entry(target, sha), str(path))
        except Exception as exc:  # noqa: BLE001 - a bad cache entry is re-read
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            warnings.warn(f"ignoring unreadable cache file {target}: {reason}", stacklevel=2)
        else:
            report_progress(progress, len(disk), len(disk), str(path))
            return cached
    library = read_raw(open_raw(path, disk), format=format, progress=progress)
    try:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        library.save(target, extra={"cache_key": sha, "reader_version": READER_VERSION})
    except Exception as exc:  # noqa: BLE001 - caching is best effort
        warnings.warn(f"could not write library cache {target}: {exc}", stacklevel=2)
    return library


def _load_entry(target: Path, sha: str) -> SpectrumLibrary:
    """The cached library of content ``sha``; ValueError/OSError when the entry is not it."""
    if target.is_symlink() or not target.is_file():
        raise ValueError("not a regular file (a link or something else)")
    library, header = SpectrumLibrary._from_npz(target)  # noqa: SLF001 - the cache's own reader
    if header.get("cache_key") != sha or header.get("reader_version") != READER_VERSION:
        raise ValueError("it holds another file's spectra (its key does not match)")
    if library.source is None or library.source.sha256 != sha:
        raise ValueError("its source does not match the file")
    return library


def _renamed(library: SpectrumLibrary, path: str) -> SpectrumLibrary:
    source = library.source
    if source is not None and source.path != path:
        source = dataclasses.replace(source, path=path)
    report = library.report
    if report is not None and getattr(report, "path", path) != path:
        report = dataclasses.replace(report, path=path)
    return dataclasses.replace(library, source=source, report=report)
