"""A repository of spectra (:class:`engine.Repository`) as a session's search target.

While a repository is open (:meth:`RepositorySearches.open`) the
session's searches run :class:`RepositorySearchTask` through the same runner:
the engine's repository search over the shards, here (``cpu``, ``cuda``,
``auto``) or on a Dask cluster (``dask`` with the typed address).  Its final
hits stream through ``session.add_hits`` like any search's.  The spectra they
point to are gathered into one small library (:class:`HitSpectra`), so the hit
table, mirror plots and exports work as for a library file; each of those
spectra keeps its repository index, source file, dataset and position in the
file.  ``events.repository_summary`` carries which files and datasets hold
each query's hits (``Repository.summary``), as shards finish and once more,
``final``, when the search ends.  Nothing here holds the repository in memory.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np

from engine import HitTable, Repository, SpectrumLibrary, combine_libraries, get_backend
from engine.atomic import atomic_path
from engine.distributed import describe
from engine.library import peak_ranges
from simms_gui.model.analyses import SearchTask
from simms_gui.model.events import RepositoryOpened, RepositorySummary
from simms_gui.model.files import LoadedFile
from simms_gui.model.requests import SearchRequest
from simms_gui.model.tasks import Task

__all__ = [
    "RESIDENT_BYTES",
    "HitSpectra",
    "RepositorySearchTask",
    "RepositorySearches",
    "write_frame",
]

#: Opened shards kept in memory between searches (here, or on each Dask worker).
RESIDENT_BYTES = 1 << 30
#: Summaries and progress are announced at most this often while shards finish (seconds).
ANNOUNCE_INTERVAL = 0.25


class HitSpectra:
    """The repository spectra a search's hits point to, as one small library.

    Hits come with repository indexes; :meth:`add` returns them with indexes
    into :attr:`library` (each repository spectrum once, in order of arrival).
    Its metadata holds ``id``, ``name``, ``inchikey``, ``library_file`` (the
    source file), ``dataset``, ``file_index`` (position in the file),
    ``repository_index`` and ``shard``; its peaks are those the search scored
    (float32 m/z, intensities ``code * scale``).

    Parameters
    ----------
    repository : engine.Repository
    """

    def __init__(self, repository: Repository) -> None:
        self.repository = repository
        #: Repository index of each spectrum of :attr:`library`.
        self.index = np.empty(0, dtype=np.int64)
        self.library = SpectrumLibrary.from_peak_lists([], [])
        self._local: dict[int, int] = {}

    def add(self, hits: HitTable) -> HitTable:
        """``hits`` (repository indexes) with indexes into :attr:`library`, grown as needed."""
        new = [i for i in dict.fromkeys(hits.library_index.tolist()) if i not in self._local]
        if new:
            part = self._read(np.asarray(new, dtype=np.int64))
            self._local.update({i: len(self.index) + k for k, i in enumerate(new)})
            self.index = np.concatenate([self.index, np.asarray(new, dtype=np.int64)])
            self.library = combine_libraries([self.library, part]) if len(self.library) else part
        local = np.fromiter(
            (self._local[i] for i in hits.library_index.tolist()), np.int64, len(hits)
        )
        return HitTable(hits.query_index, local, hits.score, hits.matches)

    def repository_hits(self, hits: HitTable) -> HitTable:
        """``hits`` of :attr:`library` back in repository indexes, in canonical order."""
        return HitTable(hits.query_index, self.index[hits.library_index], hits.score, hits.matches)

    def _read(self, index: np.ndarray) -> SpectrumLibrary:
        """The stored spectra at repository ``index`` (in that order)."""
        records = self.repository.records(index)
        shards = {s.name: s for s in self.repository.shards}
        parts, rows_in_parts = [], []
        for name in dict.fromkeys(records["shard"].tolist()):
            rows = np.flatnonzero(records["shard"] == name)
            shard = shards[name]
            local = index[rows] - shard.start
            offsets = np.asarray(shard.array("offsets"))
            starts, counts = offsets[local], offsets[local + 1] - offsets[local]
            take = peak_ranges(starts, counts)
            scale = np.asarray(shard.array("scale"))[local].astype(np.float64)
            own = np.zeros(len(rows) + 1, dtype=np.int64)
            np.cumsum(counts, out=own[1:])
            metadata = {
                "id": records["id"][rows],
                "name": records["name"][rows],
                "inchikey": records["inchikey"][rows],
                "library_file": records["file"][rows],
                "dataset": records["dataset"][rows],
                "file_index": records["file_index"][rows].astype(str).astype(object),
                "repository_index": index[rows].astype(str).astype(object),
                "shard": records["shard"][rows],
            }
            parts.append(
                SpectrumLibrary(
                    mz=np.asarray(shard.array("mz")[take], dtype=np.float64),
                    # what the search reads: the stored code times its spectrum's scale
                    intensity=shard.array("intensity")[take].astype(np.float64)
                    * np.repeat(scale, counts),
                    offsets=own,
                    precursor_mz=np.asarray(records["precursor_mz"][rows], dtype=np.float64),
                    charge=np.asarray(shard.array("charge"))[local],
                    ion_mode=np.asarray(shard.array("ion_mode"))[local],
                    metadata=metadata,
                )
            )
            rows_in_parts.append(rows)
        joined = parts[0] if len(parts) == 1 else combine_libraries(parts)
        order = np.argsort(np.concatenate(rows_in_parts), kind="stable")
        return joined if np.array_equal(order, np.arange(len(order))) else joined.subset(order)


def repository_opened(repository: Repository) -> RepositoryOpened:
    """What the window shows of an opened repository."""
    files = repository.manifest["files"]
    prepared = repository.preparations()
    return RepositoryOpened(
        Path(repository.path), repository.info(prepared), len(repository),
        len(repository.manifest["shards"]), len(files),
        len({f["dataset"] for f in files}), repository.synthetic,
        max(prepared.values(), default=0),
    )  # fmt: skip


class RepositorySearchTask(SearchTask):
    """A search of the session's queries against its open repository.

    Attributes
    ----------
    request : SearchRequest
    repository : engine.Repository
    spectra : HitSpectra
        The spectra of the hits (the hit table's library).
    job : engine.repository.RepositorySearchJob or None
        The engine's job (made in the task's thread); ``job.progress`` says
        shards done and total and when the first hits came.
    """

    def __init__(self, session: Any, request: SearchRequest, client: object | None = None) -> None:
        Task.__init__(self, "repository search")
        self.session, self.request, self.client = session, request, client
        self.params = request.params
        self.queries: SpectrumLibrary = session.queries.spectra
        self.repository: Repository = session.repository
        self.spectra = HitSpectra(self.repository)
        self.library = self.spectra.library
        self.job = None
        self._where = (request.backend, "")
        self._summaries: list[tuple[object, object]] = []
        self._last = 0.0

    def run(self) -> HitTable:
        s, started = self.session, time.perf_counter()
        error = None
        try:
            client, backend = self.client, self.request.backend
            if backend == "dask" and client is None:
                client = s.dask.client(self.request.dask_address)
                s.events.message.emit(f"Connected: {describe(client)}")
            if client is not None:
                backend, self._where = "auto", ("dask", describe(client))
            else:
                backend = get_backend(backend, cpu_threads=s.runner.cpu_threads)
                self._where = (backend.name, backend.device)
            self.job = self.repository.search(
                self.queries, self.params, backend=backend, client=client,
                resident_bytes=RESIDENT_BYTES, on_shard=lambda name, hits: self._announce(),
                on_message=s.events.message.emit, cancel_token=self.token,
            )  # fmt: skip
            for chunk in self.job:
                self._add(chunk)
            self._announce(final=True)
        except Exception as exc:
            error = self.failed_text(exc)
            raise
        finally:
            s.finish_search(self, None, error, time.perf_counter() - started)
        return s.hits

    def _add(self, chunk: HitTable) -> None:
        """Final hits of some queries: into the session, and their summary rows."""
        s = self.session
        local = self.spectra.add(chunk)
        self.library = s.hits_library = self.spectra.library
        s.hits_files = (s.hits_files[0], LoadedFile(self.repository.path, self.library))
        s.add_hits(local)
        summary = self.repository.summary
        self._summaries.append(
            (summary(chunk, self.queries, by="file"), summary(chunk, self.queries, by="dataset"))
        )
        self._announce()

    def _announce(self, final: bool = False) -> None:
        """Progress (and the summary so far): throttled, always at the end."""
        now = time.monotonic()
        if self.job is None or not (final or now - self._last >= ANNOUNCE_INTERVAL):
            return
        self._last = now
        progress = dataclasses.replace(
            self.job.progress, shard_seconds=dict(self.job.progress.shard_seconds)
        )
        if progress.shards_total:
            self.report(progress.shards_done / progress.shards_total)
        s = self.session
        s.events.repository_progress.emit(progress)
        if final:
            hits = self.job.hits
            by_file = self.repository.summary(hits, self.queries, by="file")
            by_dataset = self.repository.summary(hits, self.queries, by="dataset")
        elif self._summaries:
            by_file, by_dataset = (_joined([p[k] for p in self._summaries]) for k in (0, 1))
        else:
            return
        summary = RepositorySummary(
            by_file, by_dataset, self.repository.path.name, self.repository.synthetic, final
        )
        s.repositories.summary_event = summary
        s.events.repository_summary.emit(summary)

    # -- what the session reads when the search ends ------------------------------------
    def ran_on(self) -> tuple[str, str]:
        return self._where

    def stopped(self) -> bool:
        return self.token.cancelled

    def incomplete_queries(self) -> np.ndarray:
        """Queries whose hits are not final (a stopped search: shards not searched)."""
        if self.job is None or not self.stopped():
            return np.empty(0, dtype=np.int64)
        done = set(self.job.progress.shard_seconds)
        rows = [r for shard, r in self.job.plan() if shard.name not in done]
        return np.unique(np.concatenate(rows)) if rows else np.empty(0, dtype=np.int64)


def _joined(frames: list) -> object:
    """Summary frames of disjoint queries as one, in the engine's order (query first)."""
    import pandas as pd

    joined = pd.concat(frames, ignore_index=True)
    return joined.sort_values("query_index", kind="stable").reset_index(drop=True)


class RepositorySearches:
    """A session's repository: what it searches while one is open, and the last
    repository search's spectra and summary (the session's ``repositories``).

    Parameters
    ----------
    session : Session
        The session whose searches run against the open repository.

    Attributes
    ----------
    repository : engine.Repository or None
        The open repository: searches run against it while it is open.
    hit_spectra : HitSpectra or None
        The spectra of the last repository search's hits.
    summary_event : RepositorySummary or None
        The last summary announced.
    """

    def __init__(self, session: Any) -> None:
        self._session = session
        self.repository: Repository | None = None
        self.hit_spectra: HitSpectra | None = None
        self.summary_event: RepositorySummary | None = None

    def open(self, path: str | Path) -> Repository:
        """Open the repository folder at ``path`` as the search target.

        Raises
        ------
        ValueError
            ``path`` holds no repository (the message names it and why).
        RuntimeError
            A search is running.
        """
        s = self._session
        if s.state == "running":
            raise RuntimeError("a search is running: stop it before opening a repository")
        repository = Repository(path)
        self.repository = repository
        s.events.repository.emit(repository_opened(repository))
        s._stale_changed()
        return repository

    def close(self) -> None:
        """Search the active library again (the repository's hits stay shown)."""
        s = self._session
        if self.repository is not None and s.state != "running":
            self.repository = None
            s.events.repository.emit(None)
            s._stale_changed()

    def search(self, request: SearchRequest, client: object | None) -> RepositorySearchTask:
        """Run ``request`` against the open repository (the session's search task)."""
        s = self._session
        if s.queries is None:
            raise RuntimeError("open query spectra first")
        task = RepositorySearchTask(s, request, client)
        s.search_task, self.hit_spectra = task, task.spectra
        self.summary_event = None
        s._begin_search(request, LoadedFile(self.repository.path, task.library))
        return s.runner.submit(task)

    @property
    def hits(self) -> HitTable | None:
        """The last repository search's hits in repository indexes (None: none ran)."""
        s = self._session
        if self.hit_spectra is None or s.hits_library is not self.hit_spectra.library:
            return None
        return self.hit_spectra.repository_hits(s.hits).sorted()

    def summary(self, by: str = "file"):
        """Per query, the files (``by="file"``) or datasets holding its hits (a DataFrame).

        ``Repository.summary`` of the last repository search's hits; None before one.
        """
        hits = self.hits
        if hits is None:
            return None
        return self.hit_spectra.repository.summary(hits, self._session.hits_queries, by=by)

    def hits_frame(self):
        """The last repository search's hits with each spectrum's file, dataset, position."""
        hits = self.hits
        if hits is None:
            return None
        return self.hit_spectra.repository.hits_frame(hits, self._session.hits_queries)

    def export_summary(self, path: str | Path, by: str = "file") -> Path:
        """Write :meth:`summary` to CSV or XLSX (by suffix), atomically."""
        frame = self.summary(by)
        if frame is None:
            raise RuntimeError("no repository search to summarise")
        return write_frame(frame, path)


#: Table files a summary (or a repository's hits) is written to.
FRAME_SUFFIXES = (".csv", ".tsv", ".xlsx")


def write_frame(frame, path: str | Path, format: str | None = None) -> Path:
    """Write a ``pandas.DataFrame`` to ``.csv``, ``.tsv`` or ``.xlsx`` (needs openpyxl),
    atomically; ``format`` (``"csv"``, ``"tsv"``, ``"xlsx"``) overrides the suffix.

    Raises
    ------
    ValueError
        Another format, or XLSX without openpyxl (one line, naming the file).
    """
    path = Path(path)
    suffix = f".{format}" if format else path.suffix.lower()
    if suffix not in FRAME_SUFFIXES:
        raise ValueError(f"{path}: write this table as CSV, TSV or XLSX, not {suffix or '?'}")
    if suffix == ".xlsx":
        try:
            import openpyxl  # noqa: F401
        except ImportError:
            raise ValueError(f"{path}: XLSX needs openpyxl (pip install openpyxl)") from None
    with atomic_path(path) as tmp:
        if suffix != ".xlsx":
            frame.to_csv(tmp, index=False, sep="\t" if suffix == ".tsv" else ",")
        else:
            frame.to_excel(tmp, index=False, engine="openpyxl", sheet_name="summary")
    return path
