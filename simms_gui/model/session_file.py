"""Session files: save what a user loaded, set and found, and open it again.

A session file (``*.simms``) is a zip archive holding ``manifest.json`` (the
files by path and content hash, the parameters, the selection) and
``hits.tsv`` (the hits of the last search); ``docs/session-format.md``
describes both.  Spectra are not copied: a library is found again by its path
and checked by its SHA-256, and a file whose content changed is reported and
its hits are not restored (their indexes would point at other spectra).

No Qt here: :class:`OpenSessionTask` reads the files (:func:`read_session`)
and hands them to the session (:func:`apply_session`), in the session's task
runner; the session announces what changed.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine import HitTable, SearchParameters, SpectrumLibrary, load_library
from engine.atomic import atomic_path
from simms_gui.model.analyses import LoadTask
from simms_gui.model.answers import SavedQValues
from simms_gui.model.files import LoadedFile
from simms_gui.model.requests import TableView
from simms_gui.model.tasks import Task
from simms_gui.version import __version__

__all__ = [
    "FORMAT",
    "SUFFIX",
    "VERSION",
    "OpenSessionTask",
    "OpenedSession",
    "SessionFileError",
    "apply_session",
    "file_sha256",
    "open_session",
    "read_session",
    "save_session",
]

#: The manifest's ``format`` field, and the version this code writes and reads.
FORMAT, VERSION = "simms-session", 1
#: File name ending of session files.
SUFFIX = ".simms"
_HIT_COLUMNS = ("query_index", "library_index", "score", "matches")
#: The hits' q-values (a search with FDR), row by row with ``hits.tsv``.
Q_VALUES = "q_values.tsv"


class SessionFileError(ValueError):
    """A session file that cannot be read (the message names the file and why)."""


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes (the hash the library cache keys on)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _file_entry(entry: LoadedFile, folder: Path) -> dict[str, object]:
    source = entry.spectra.source
    sha = source.sha256 if source is not None and source.sha256 else file_sha256(entry.path)
    path = entry.path.resolve()
    try:
        relative = os.path.relpath(path, folder)
    except ValueError:  # another drive on Windows
        relative = None
    return {
        "path": str(path),
        "relative_path": relative,
        "sha256": sha,
        "spectra": len(entry.spectra),
    }


def _index_of(entry: LoadedFile | None, entries: list[LoadedFile]) -> int | None:
    return next((k for k, e in enumerate(entries) if e is entry), None)


def save_session(session: Any, path: str | Path) -> Path:
    """Write ``session`` to ``path`` (a zip; written to a temporary file, then renamed).

    Returns
    -------
    Path
        The file written (``.simms`` appended when ``path`` has no suffix).
    """
    path = Path(path)
    if not path.suffix:
        path = path.with_suffix(SUFFIX)
    folder = path.resolve().parent
    files = list(session.libraries)
    queries = session.queries
    hit_queries, hit_library = session.hits_files
    if hit_library is not None and hit_library.path.is_dir():
        raise ValueError(
            f"{hit_library.path}: a repository search's hits are not kept in session files "
            "(export them, or the repository summary)"
        )
    search = None
    if hit_queries is not None and hit_library is not None and session.hits_queries is not None:
        # the hits' files are saved too when they are no longer the loaded ones
        if hit_library not in files:
            files.append(hit_library)
        search = {
            "queries": _file_entry(hit_queries, folder),
            "library": _index_of(hit_library, files),
            "parameters": session.params.to_dict(),
            "backend": session.backend,
            "device": session.device,
            "cancelled": session.cancelled,
            "hits": "hits.tsv",
            "count": len(session.hits),
        }
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "saved": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "simms_version": __version__,
        "libraries": [_file_entry(e, folder) for e in files],
        "loaded_libraries": len(session.libraries),
        "active": session.active,
        "queries": None if queries is None else _file_entry(queries, folder),
        "parameters": session.params.to_dict(),
        "search": search,
        "selection": {
            "hit": None if session.selected_hit is None else list(session.selected_hit),
            "queries": list(session.selected_queries),
        },
        "table": session.table_view.to_dict(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path, suffix=".tmp") as tmp:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
            z.writestr("manifest.json", json.dumps(manifest, indent=2))
            if search is not None:
                z.writestr("hits.tsv", _hits_tsv(session.hits))
                if session.q_values is not None:  # a search with FDR: its q-values, row by row
                    z.writestr(Q_VALUES, _q_values_tsv(session.q_values(session.hits)))
    session.unsaved = False
    return path


def _hits_tsv(hits: HitTable) -> str:
    frame = pd.DataFrame({name: getattr(hits, name) for name in _HIT_COLUMNS})
    # 17 significant digits read back to the same float64: the hits reopen bit for bit
    return frame.to_csv(sep="\t", index=False, float_format="%.17g", lineterminator="\n")


def _q_values_tsv(q_value: np.ndarray) -> str:
    frame = pd.DataFrame({"q_value": q_value})
    return frame.to_csv(sep="\t", index=False, float_format="%.17g", lineterminator="\n")


def _read_q_values(data: bytes, name: str, rows: int) -> np.ndarray:
    try:
        q_value = pd.read_csv(io.BytesIO(data), sep="\t")["q_value"].to_numpy(np.float64)
    except (ValueError, KeyError, pd.errors.ParserError) as exc:
        raise SessionFileError(f"{name}: {Q_VALUES} is unreadable ({exc})") from None
    if len(q_value) != rows:
        raise SessionFileError(f"{name}: {Q_VALUES} has {len(q_value)} rows for {rows} hits")
    return q_value


def _read_hits(data: bytes, name: str) -> HitTable:
    try:
        frame = pd.read_csv(
            io.BytesIO(data), sep="\t",
            dtype={"query_index": np.int64, "library_index": np.int64, "score": str,
                   "matches": np.int32},
        )  # fmt: skip
        # numpy parses the text exactly (correctly rounded): bit-for-bit scores
        frame["score"] = frame["score"].to_numpy(dtype=str).astype(np.float64)
    except (ValueError, pd.errors.ParserError) as exc:
        raise SessionFileError(f"{name}: hits.tsv is unreadable ({exc})") from None
    if tuple(frame.columns) != _HIT_COLUMNS:
        raise SessionFileError(f"{name}: hits.tsv has no header {'/'.join(_HIT_COLUMNS)}")
    return HitTable.from_arrays(*(frame[c].to_numpy() for c in _HIT_COLUMNS))


@dataclass
class OpenedSession:
    """A session file read: its files loaded, ready for :func:`apply_session`.

    Attributes
    ----------
    path : Path
    manifest : dict
    libraries : list of LoadedFile or None
        One per manifest library (None: missing, unreadable).
    queries, hit_queries : LoadedFile or None
    hits : HitTable or None
        None when no search was saved or its files changed.
    problems : list of str
        One line each: files missing, unreadable or changed since the save.
    """

    path: Path
    manifest: dict
    libraries: list[LoadedFile | None] = field(default_factory=list)
    queries: LoadedFile | None = None
    hit_queries: LoadedFile | None = None
    hits: HitTable | None = None
    problems: list[str] = field(default_factory=list)
    #: The hits' saved q-values (a search with FDR), one per hit, else None.
    q_value: np.ndarray | None = None


def _manifest(path: Path) -> tuple[dict, zipfile.ZipFile]:
    try:
        z = zipfile.ZipFile(path)
        manifest = json.loads(z.read("manifest.json"))
    except (OSError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise SessionFileError(f"{path}: not a SimMS session file ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise SessionFileError(f"{path}: not a SimMS session file (no format {FORMAT!r})")
    if manifest.get("version") != VERSION:
        raise SessionFileError(
            f"{path}: session format version {manifest.get('version')!r}, this SimMS reads "
            f"version {VERSION}"
        )
    return manifest, z


def _find(entry: dict, folder: Path) -> Path | None:
    for candidate in (entry.get("path"), entry.get("relative_path")):
        if candidate and (folder / candidate).is_file():
            return folder / candidate  # an absolute path replaces the folder
    return None


def read_session(
    path: str | Path,
    read: Callable[[Path], SpectrumLibrary] = load_library,
) -> OpenedSession:
    """Read a session file and load the spectrum files it names (no session changes).

    Parameters
    ----------
    path : str or Path
    read : callable
        ``read(path) -> SpectrumLibrary`` (default :func:`engine.load_library`;
        :class:`OpenSessionTask` passes one that reports progress and can be cancelled).

    Raises
    ------
    SessionFileError
        The file is not a session file of a version this code reads.
    """
    path = Path(path)
    manifest, z = _manifest(path)
    folder = path.resolve().parent
    opened = OpenedSession(path, manifest)
    changed: set[Path] = set()  # files whose content differs from the saved hash
    loaded: dict[Path, LoadedFile] = {}

    def load(entry: dict | None, what: str) -> LoadedFile | None:
        if not entry:
            return None
        found = _find(entry, folder)
        if found is None:
            opened.problems.append(f"{what} {entry.get('path')}: not found")
            return None
        if found in loaded:
            return loaded[found]
        try:
            spectra = read(found)
        except Exception as exc:  # noqa: BLE001 - one unreadable file does not stop the rest
            opened.problems.append(f"{what} {found}: {exc}")
            return None
        source = spectra.source
        sha = source.sha256 if source is not None and source.sha256 else file_sha256(found)
        if sha != entry.get("sha256"):
            opened.problems.append(
                f"{what} {found}: changed since the session was saved (content hash "
                f"{sha[:12]}…, saved {str(entry.get('sha256'))[:12]}…)"
            )
            changed.add(found)
        loaded[found] = LoadedFile(found, spectra)
        return loaded[found]

    entries = manifest.get("libraries") or []
    opened.libraries = [load(e, "library") for e in entries]
    opened.queries = load(manifest.get("queries"), "queries")
    search = manifest.get("search")
    if search:
        opened.hit_queries = load(search.get("queries"), "queries")
        k = search.get("library")
        library = opened.libraries[k] if isinstance(k, int) and 0 <= k < len(entries) else None
        fresh = (
            library is not None
            and opened.hit_queries is not None
            and not {library.path, opened.hit_queries.path} & changed
        )
        if fresh:
            hits = _read_hits(z.read(search.get("hits", "hits.tsv")), str(path))
            n_q, n_l = len(opened.hit_queries.spectra), len(library.spectra)
            if len(hits) and (hits.query_index.max() >= n_q or hits.library_index.max() >= n_l):
                opened.problems.append(f"{path}: hits point past the end of their files")
            else:
                opened.hits = hits
                if Q_VALUES in z.namelist():
                    opened.q_value = _read_q_values(z.read(Q_VALUES), str(path), len(hits))
        else:
            opened.problems.append(
                f"{path}: the {search.get('count', 0):,} saved hits were not restored, as "
                "their files are missing or changed: search again"
            )
    z.close()
    return opened


def apply_session(session: Any, opened: OpenedSession) -> None:
    """Make ``session`` what ``opened`` holds: files, parameters, hits and selection."""
    m = opened.manifest
    n_loaded = int(m.get("loaded_libraries", len(opened.libraries)))
    libraries = [e for e in opened.libraries[:n_loaded] if e is not None]
    k = m.get("active", -1)
    active = opened.libraries[k] if isinstance(k, int) and 0 <= k < n_loaded else None
    session.set_libraries(
        libraries, next((j for j, e in enumerate(libraries) if e is active), len(libraries) - 1)
    )
    if opened.queries is not None:
        session.set_queries(opened.queries.path, opened.queries.spectra)
        # the same file object serves the hits when they were found with these queries
        if opened.hit_queries is opened.queries:
            opened.hit_queries = session.queries
    search = m.get("search") or {}
    library = None
    if isinstance(search.get("library"), int) and 0 <= search["library"] < len(opened.libraries):
        library = opened.libraries[search["library"]]
    params = SearchParameters.from_dict(search.get("parameters") or m.get("parameters") or {})
    session.table_view = TableView.from_dict(m.get("table"))
    session.restore(
        params,
        opened.hits,
        (opened.hit_queries, library),
        backend=str(search.get("backend", "")),
        device=str(search.get("device", "")),
        cancelled=bool(search.get("cancelled", False)),
        q_values=None if opened.q_value is None else SavedQValues(opened.hits, opened.q_value),
        path=opened.path,
        problems=tuple(opened.problems),
    )
    selection = m.get("selection") or {}
    hit = selection.get("hit")
    session.select(
        tuple(hit) if hit and opened.hits is not None else None, selection.get("queries")
    )


def open_session(session: Any, path: str | Path) -> list[str]:
    """Read ``path`` into ``session`` (:class:`OpenSessionTask`, waited for); the problems."""
    return session.open_session(path).wait(reraise=True).problems


class OpenSessionTask(Task):
    """Open a session file: its spectrum files read again, then handed to the session.

    ``load_progress`` follows the file being read (:class:`~simms_gui.model.analyses.LoadTask`).
    """

    def __init__(self, session: Any, path: str | Path) -> None:
        super().__init__(f"open {Path(path).name}")
        self.session, self.path = session, Path(path)
        self.reader = LoadTask(session, path)  # reads each file, reporting into this task
        self.reader.progressed.connect(self.report)
        self.load_progress = self.reader.load_progress

    def cancel(self) -> None:
        super().cancel()
        self.reader.cancel()

    def failed_text(self, exc: BaseException) -> str:
        return str(exc) if isinstance(exc, SessionFileError) else super().failed_text(exc)

    def run(self) -> OpenedSession:
        opened = read_session(self.path, self.reader.read)
        apply_session(self.session, opened)
        return opened
