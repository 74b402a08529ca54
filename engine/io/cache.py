"""On-disk library cache keyed by the file's content (sha256) and the reader version.

A library read once is saved as ``<sha256>-r<READER_VERSION>.npz`` (no pickles, see
:meth:`SpectrumLibrary.save`); the same bytes, under any path, then load that file
instead of being parsed.  Bump :data:`READER_VERSION` whenever the readers' output
changes.  The format is told from the content, so it needs no place in the key.

An entry is used only when it is a regular file (never a link) whose arrays pass
every check the kernels rely on, match the digest in its header, and whose header
names the same content hash and reader version as the key; any other entry is
reported, ignored and replaced.  Entries are written through unique temporary files.

Files already hashed are not read again: a side record ``files/<sha256 of the
resolved path>.json`` keeps the file's resolved path, size, modification time (ns),
inode, device, a digest of its first and last :data:`PROBE_BYTES` and its sha256,
trusted only while all of these match.  No record is written for a file modified
less than :data:`SETTLE_NS` before, so an edit within the clock's resolution cannot hide.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
import warnings
from pathlib import Path

from engine.atomic import atomic_path
from engine.io._build import Progress, report_progress
from engine.io.reader import read_library
from engine.io.stream import checked_size, file_digest
from engine.library import SpectrumLibrary

__all__ = [
    "PROBE_BYTES",
    "READER_VERSION",
    "SETTLE_NS",
    "cache_path",
    "default_cache_dir",
    "known_digest",
    "load_library",
]

#: Version of the readers' output and the entries' layout; part of the cache key.
#: 5: the MSP flavours, mzXML and JSON readers; metadata stored dictionary-encoded.
READER_VERSION = 6
#: Bytes at each end of a file whose digest a side record keeps.
PROBE_BYTES = 1 << 16
#: A file modified less than this long ago (ns) gets no side record yet.
SETTLE_NS = 2_000_000_000
#: Share of the progress bar for hashing a file not seen before (the parse takes the rest).
_HASH_SHARE = 0.1


def default_cache_dir() -> Path:
    """``$SIMMS_CACHE_DIR``, else ``$XDG_CACHE_HOME/simms``, else ``~/.cache/simms``."""
    if os.environ.get("SIMMS_CACHE_DIR"):
        return Path(os.environ["SIMMS_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "simms"
    return Path.home() / ".cache" / "simms"


def cache_path(sha256: str, cache_dir: str | Path | None = None) -> Path:
    """Cache file of the content with digest ``sha256``."""
    return _directory(cache_dir) / f"{sha256}-r{READER_VERSION}.npz"


def _directory(cache_dir: str | Path | None) -> Path:
    return Path(cache_dir) if cache_dir is not None else default_cache_dir()


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
        As in :func:`engine.io.read_library`: hashing a file not seen before takes
        the first tenth, the parse the rest.

    Returns
    -------
    SpectrumLibrary
        As :func:`engine.io.read_library` returns it; ``source.path`` and
        ``report.path`` name ``path`` even when the entry came from another copy.

    Raises
    ------
    SpectrumFileError
        The file cannot be read (cache problems only warn).
    LoadCancelled
        ``progress`` returned ``False``.
    """
    if not cache:
        return read_library(path, format=format, progress=progress)
    directory = _directory(cache_dir)
    size = checked_size(path)
    sha = known_digest(path, directory)
    parse_from = 0
    if sha is None:
        parse_from = int(size * _HASH_SHARE)

        def hashing(done: int, total: int) -> None:
            report_progress(progress, done * parse_from // max(total, 1), size, str(path))

        seen = _stat(path)
        sha = file_digest(path, hashing if progress is not None else None)
        _remember(path, directory, seen, sha)
    target = cache_path(sha, directory)
    if os.path.lexists(target):
        try:
            cached = _renamed(_load_entry(target, sha), str(path))
        except Exception as exc:  # noqa: BLE001 - a bad cache entry is re-read
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            warnings.warn(f"ignoring unreadable cache file {target}: {reason}", stacklevel=2)
        else:
            report_progress(progress, size, size, str(path))
            return cached

    def parsing(done: int, total: int) -> object:
        return progress(parse_from + (size - parse_from) * done // max(total, 1), size)

    seen = _stat(path)
    library = read_library(path, format=format, progress=parsing if progress else None)
    sha = library.source.sha256 if library.source is not None else sha
    _remember(path, directory, seen, sha)
    target = cache_path(sha, directory)
    try:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        library.save(target, extra={"cache_key": sha, "reader_version": READER_VERSION})
    except Exception as exc:  # noqa: BLE001 - caching is best effort
        warnings.warn(f"could not write library cache {target}: {exc}", stacklevel=2)
    return library


def known_digest(path: str | Path, cache_dir: str | Path | None = None) -> str | None:
    """The sha256 of ``path`` from its side record, when the file is unchanged since (else None)."""
    directory = _directory(cache_dir)
    try:
        seen = _stat(path)
        record = json.loads(_side_record(path, directory).read_text(encoding="utf-8"))
        if not isinstance(record, dict) or record.get("file") != list(seen):
            return None
        if record.get("reader_version") != READER_VERSION:
            return None
        sha = record.get("sha256")
        if not (isinstance(sha, str) and len(sha) == 64 and set(sha) <= set("0123456789abcdef")):
            return None
        if record.get("probe") != _probe(path, seen[1]) or _stat(path) != seen:
            return None
    except (OSError, ValueError):
        return None
    return sha


def _stat(path: str | Path) -> tuple:
    st = os.stat(path)
    return (str(Path(path).resolve()), st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


def _side_record(path: str | Path, directory: Path) -> Path:
    name = hashlib.sha256(str(Path(path).resolve()).encode("utf-8", "surrogatepass")).hexdigest()
    return directory / "files" / f"{name}.json"


def _probe(path: str | Path, size: int) -> str:
    """Digest of the first and last :data:`PROBE_BYTES` of the file."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        digest.update(fh.read(PROBE_BYTES))
        fh.seek(max(size - PROBE_BYTES, 0))
        digest.update(fh.read(PROBE_BYTES))
    return digest.hexdigest()


def _remember(path: str | Path, directory: Path, seen: tuple, sha: str) -> None:
    """Write the side record of ``path`` (best effort) if it was unchanged while read."""
    try:
        if _stat(path) != seen or time.time_ns() - seen[2] < SETTLE_NS:
            return
        record = {
            "file": list(seen),
            "probe": _probe(path, seen[1]),
            "sha256": sha,
            "reader_version": READER_VERSION,
        }
        target = _side_record(path, directory)
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        target.parent.mkdir(mode=0o700, exist_ok=True)
        with atomic_path(target, suffix=".tmp") as tmp:
            tmp.write_text(json.dumps(record), encoding="utf-8")
    except OSError:
        pass


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
