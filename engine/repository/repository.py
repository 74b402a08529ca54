"""A repository of spectra from many files, stored as memory-mappable shards.

Layout of a repository folder::

    repository.json        the manifest: files, shards (with counts and ranges)
    shards/000000/         one shard: .npy arrays + shard.json (see engine.repository.store)
    shards/000001/ ...

Each spectrum keeps its source file (path, dataset, sha256) and its position in it.
The manifest is replaced atomically at the end of each :meth:`Repository.add`;
shards written by an add that did not finish are removed by the next add.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from engine.atomic import atomic_path
from engine.io import read_library
from engine.library import SpectrumLibrary
from engine.repository.build import (
    ShardWriter,
    file_entry,
    map_tasks,
    merge_plan,
    merge_range,
    read_issues,
    shard_described,
)
from engine.repository.store import TEXT_COLUMNS, Shard

__all__ = ["DEFAULT_SHARD_SPECTRA", "Repository"]

log = logging.getLogger(__name__)

MANIFEST = "repository.json"
FORMAT = "simms-repository"
VERSION = 1
#: Spectra per shard unless told otherwise.
DEFAULT_SHARD_SPECTRA = 500_000
STORAGE = {
    "mz": "float32",
    "intensity": "uint16 codes scaled per spectrum: intensity = code * scale (float32)",
    "order": "each shard one ion mode, sorted by precursor m/z (NaN last)",
}


class Repository:
    """An on-disk repository of spectra (``engine.Repository``).

    Build it once from many files, append files later, search it shard by
    shard; it is never held whole in memory.  Scores are computed from the
    stored peaks: float32 m/z and per-spectrum scaled uint16 intensities.

    Examples
    --------
    >>> repo = Repository.build("runs.simmsrepo", ["a.mgf", "b.mzML"])  # doctest: +SKIP
    >>> repo.add(["c.mgf"], dataset="2024")                            # doctest: +SKIP
    >>> hits = repo.search(queries, mode="identity").run()              # doctest: +SKIP
    >>> repo.summary(hits)                                              # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike) -> None:
        """Open the repository at ``path`` (one-line ``ValueError`` when it is none)."""
        self.path = Path(path)
        manifest_path = self.path / MANIFEST
        try:
            manifest = json.loads(manifest_path.read_text())
        except FileNotFoundError:
            raise ValueError(f"{self.path}: not a repository (no {MANIFEST})") from None
        except (OSError, ValueError) as exc:
            raise ValueError(f"{manifest_path}: unreadable repository manifest ({exc})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ValueError(f"{manifest_path}: not a repository manifest")
        if manifest.get("version") != VERSION:
            raise ValueError(f"{manifest_path}: repository version {manifest.get('version')}")
        self.manifest = manifest
        self._shards: list[Shard] | None = None

    # -- making ------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        path: str | os.PathLike,
        *,
        shard_spectra: int = DEFAULT_SHARD_SPECTRA,
        synthetic: bool = False,
        description: str = "",
    ) -> Repository:
        """An empty repository at ``path`` (a new or empty folder).

        Parameters
        ----------
        shard_spectra : int
            Spectra per shard; also the bound of the build buffer per ion mode.
        synthetic : bool
            The spectra are generated (benchmarks and tests only): every output
            says so.
        description : str
            Free text kept in the manifest.
        """
        path = Path(path)
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise ValueError(f"{path}: exists and is not an empty folder")
        if int(shard_spectra) < 1:
            raise ValueError(f"shard_spectra must be >= 1, not {shard_spectra}")
        (path / "shards").mkdir(parents=True, exist_ok=True)
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "synthetic": bool(synthetic),
            "description": description,
            "shard_spectra": int(shard_spectra),
            "storage": STORAGE,
            "next_shard": 0,
            "files": [],
            "shards": [],
        }
        _write_manifest(path, manifest)
        if synthetic:
            log.warning("SYNTHETIC repository created at %s (benchmarks and tests only)", path)
        return cls(path)

    @classmethod
    def build(
        cls,
        path: str | os.PathLike,
        files: Sequence[str | os.PathLike],
        *,
        dataset: str | None = None,
        shard_spectra: int = DEFAULT_SHARD_SPECTRA,
        on_message: Callable[[str], None] | None = None,
    ) -> Repository:
        """Create a repository at ``path`` from spectrum ``files`` (see :meth:`add`)."""
        repo = cls.create(path, shard_spectra=shard_spectra)
        repo.add(files, dataset=dataset, on_message=on_message)
        return repo

    def add(
        self,
        files: Sequence[str | os.PathLike],
        *,
        dataset: str | None = None,
        on_message: Callable[[str], None] | None = None,
    ) -> list[str]:
        """Append spectrum files (MGF, MSP, mzML, mzXML, JSON; gz), read one at a time.

        Parameters
        ----------
        files : sequence of path-like
        dataset : str, optional
            Dataset name of these files (default: each file's folder name).
        on_message : callable, optional
            One line per file read and per shard written.

        Returns
        -------
        list of str
            Names of the shards written.

        Raises
        ------
        SpectrumFileError
            A file that cannot be read (nothing of this add is kept).
        ValueError
            A file whose content is already in the repository.
        """

        def libraries():
            for path in files:
                library = read_library(path)
                name = dataset if dataset is not None else Path(path).resolve().parent.name
                if on_message is not None:
                    on_message(f"{path}: {len(library):,} spectra ({name})" + read_issues(library))
                yield library, str(path), name

        return self.add_libraries(libraries(), on_message=on_message)

    def add_libraries(
        self,
        libraries: Iterable[tuple[SpectrumLibrary, str, str]],
        *,
        on_message: Callable[[str], None] | None = None,
    ) -> list[str]:
        """Append ``(library, file name, dataset)`` items (read files, or generated chunks).

        The libraries are consumed one at a time; at most a shard's worth of
        spectra per ion mode is buffered.  The manifest is replaced once all are
        written.
        """
        self._remove_unlisted()
        known = {f["sha256"]: f["path"] for f in self.manifest["files"] if f.get("sha256")}
        files: list[dict] = []
        writer = self.writer(on_message=on_message)
        try:
            for library, name, dataset in libraries:
                entry = file_entry(library, len(self.manifest["files"]) + len(files), name, dataset)
                if entry["sha256"] and entry["sha256"] in known:
                    raise ValueError(
                        f"{name}: already in the repository (as {known[entry['sha256']]})"
                    )
                known[entry["sha256"]] = name
                files.append(entry)
                writer.add(library, entry["id"])
            written = writer.close()
        except BaseException:
            self._remove(writer.written)
            raise
        self.append_written(files, written)
        return [str(s["name"]) for s in written]

    def writer(self, first_shard: int | None = None, *, on_message=None) -> ShardWriter:
        """A :class:`~engine.repository.build.ShardWriter` into this repository's shard folder.

        Shards it writes count only once :meth:`append_written` records them.
        """
        return ShardWriter(
            self.path / "shards", self.manifest["shard_spectra"],
            self.manifest["next_shard"] if first_shard is None else first_shard,
            synthetic=self.synthetic, on_message=on_message,
        )  # fmt: skip

    def append_written(
        self, files: list[dict], shards: list[dict], *, replace: bool = False
    ) -> None:
        """Record written shards (and the files their spectra come from) in the manifest.

        Parameters
        ----------
        files : list of dict
            New file entries (:func:`~engine.repository.build.file_entry`), ids
            continuing the repository's.
        shards : list of dict
            Summaries of the new shards, in repository order.
        replace : bool
            The new shards replace all old ones (compaction); their folders go.
        """
        manifest = json.loads(json.dumps(self.manifest))
        old = self.shards if replace else []
        if [f["id"] for f in files] != list(
            range(len(manifest["files"]), len(manifest["files"]) + len(files))
        ):
            raise ValueError("file ids must continue the repository's")
        for summary in shards:
            Shard.open(self.path / "shards" / str(summary["name"]))  # written and whole
        manifest["files"].extend(files)
        manifest["shards"] = [*([] if replace else manifest["shards"]), *shards]
        numbers = [int(s["name"]) for s in shards] + [manifest["next_shard"] - 1]
        manifest["next_shard"] = max(numbers) + 1
        _write_manifest(self.path, manifest)
        self.manifest = manifest
        self._shards = None
        for shard in old:
            shutil.rmtree(shard.folder, ignore_errors=True)

    def _remove(self, shards: list[dict]) -> None:
        for summary in shards:
            shutil.rmtree(self.path / "shards" / str(summary["name"]), ignore_errors=True)

    def compact(
        self, *, processes: int = 1, on_message: Callable[[str], None] | None = None
    ) -> list[str]:
        """Rewrite the shards so that each ion mode's shards hold disjoint precursor ranges.

        Shards written by separate adds (or separate buffers of one add) overlap
        in precursor m/z, so a query with a precursor window visits all of them;
        after this, it visits the one or two whose range its window meets.
        Memory stays about one shard per process; the disk needs room for a
        second copy while it runs.  Repository indexes change (the spectra are
        reordered).

        Parameters
        ----------
        processes : int
            Write this many new shards at once, each in a process of its own.

        Returns
        -------
        list of str
            Names of the new shards.
        """
        self._remove_unlisted()
        tasks = []
        number = self.manifest["next_shard"]
        for mode in ("positive", "negative", "unknown"):
            group = [s for s in self.shards if s.manifest["ion_mode"] == mode]
            for lo, hi, last in merge_plan(group, self.manifest["shard_spectra"]):
                tasks.append((str(self.path), number, [str(s.folder) for s in group], lo, hi, last))
                number += 1
        written: list[dict] = []
        try:
            for summaries in map_tasks(_merge_task, tasks, processes):
                written.extend(summaries)
                for summary in summaries if on_message is not None else ():
                    on_message(shard_described(summary))
        except BaseException:
            self._remove(written)
            raise
        self.append_written([], written, replace=True)
        return [str(s["name"]) for s in written]

    def _remove_unlisted(self) -> None:
        """Shard folders of an add that did not finish (not in the manifest) go."""
        listed = {s["name"] for s in self.manifest["shards"]}
        for entry in (self.path / "shards").iterdir():
            if entry.is_dir() and entry.name not in listed:
                shutil.rmtree(entry, ignore_errors=True)

    def prepare(self, params=None, *, processes=1, on_message=None, open_index=False, **overrides):
        """Store every shard's spectra prepared for a search; cold searches read them.

        ``params`` and keywords as :meth:`search` takes them (default identity mode,
        whose preparation entropy open searches share); ``open_index``: also the CPU
        peak indexes of open searches.  See :mod:`~.prepared` and :mod:`~.prepared_index`.
        Returns the stored preparations' folders (list of Path), in shard order.
        """
        from engine.api import parameters_with
        from engine.repository.prepared import prepare_shards

        params = parameters_with(params, overrides, "Repository.prepare")
        return prepare_shards(
            self.shards, params, processes=processes, on_message=on_message, open_index=open_index
        )

    # -- reading -----------------------------------------------------------------------
    @property
    def synthetic(self) -> bool:
        """Whether the spectra are generated (benchmarks and tests only)."""
        return bool(self.manifest.get("synthetic"))

    @property
    def shards(self) -> list[Shard]:
        """The shards in repository order (their ``start`` is the first repository index)."""
        if self._shards is None:
            shards, start = [], 0
            for summary in self.manifest["shards"]:
                shard = Shard.open(self.path / "shards" / summary["name"], start)
                if len(shard) != summary["spectra"]:
                    raise ValueError(f"{shard.folder}: spectra differ from the repository manifest")
                shards.append(shard)
                start += len(shard)
            self._shards = shards
        return self._shards

    def __len__(self) -> int:
        return sum(int(s["spectra"]) for s in self.manifest["shards"])

    @property
    def n_peaks(self) -> int:
        """Peaks stored."""
        return sum(int(s["peaks"]) for s in self.manifest["shards"])

    def __repr__(self) -> str:
        label = "SYNTHETIC " if self.synthetic else ""
        return (
            f"<{label}Repository {self.path.name!r}: {len(self):,} spectra in "
            f"{len(self.manifest['shards'])} shards from {len(self.manifest['files'])} files>"
        )

    def nbytes(self) -> int:
        """Bytes of the repository on disk."""
        return sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())

    def files(self):
        """The files as a ``pandas.DataFrame`` (id, path, dataset, sha256, format, spectra)."""
        import pandas as pd

        columns = ["id", "path", "dataset", "sha256", "format", "spectra", "skipped"]
        return pd.DataFrame(self.manifest["files"], columns=columns)

    def info(self, preparations: dict[str, int] | None = None) -> str:
        """What ``simms repo info`` prints (``preparations``: :meth:`preparations`, if known)."""
        shards, files = self.manifest["shards"], self.manifest["files"]
        modes: dict[str, int] = {}
        for s in shards:
            modes[s["ion_mode"]] = modes.get(s["ion_mode"], 0) + int(s["spectra"])
        lines = [
            ("SYNTHETIC repository (generated spectra, benchmarks and tests only): "
             if self.synthetic else "repository: ") + str(self.path),
            f"spectra: {len(self):,} ({', '.join(f'{m} {n:,}' for m, n in modes.items())})",
            f"peaks: {self.n_peaks:,} (m/z float32, intensity uint16 scaled per spectrum)",
            f"files: {len(files):,} in {len({f['dataset'] for f in files}):,} datasets",
            f"shards: {len(shards)} of up to {self.manifest['shard_spectra']:,} spectra",
            f"disk: {self.nbytes() / 1e6:,.1f} MB",
        ]  # fmt: skip
        from engine.repository.prepared import describe_preparation as words

        prepared = (self.preparations() if preparations is None else preparations).items()
        stored = [f"{n} of {len(shards)} shards for {words(k)}" for k, n in prepared]
        stored = stored or ["none (`simms repo prepare` speeds up cold searches)"]
        return "\n".join(lines + [f"prepared on disk: {line}" for line in stored])

    def preparations(self) -> dict[str, int]:
        """Shards with stored prepared spectra (:meth:`prepare`), per preparation."""
        from engine.repository.prepared import stored_preparations

        return stored_preparations(self.shards)

    def records(self, index: np.ndarray) -> dict[str, np.ndarray]:
        """Where repository spectra ``index`` come from: file, dataset, position, id, name.

        Returns
        -------
        dict of str to ndarray
            ``shard``, ``file_id``, ``file``, ``dataset``, ``file_index`` (position
            of the spectrum in its file), ``precursor_mz`` and the text columns.
        """
        index = np.asarray(index, dtype=np.int64)
        starts = np.array([s.start for s in self.shards] + [len(self)], dtype=np.int64)
        if len(index) and (index.min() < 0 or index.max() >= len(self)):
            raise IndexError(f"repository index out of range for {len(self)} spectra")
        shard_of = np.searchsorted(starts, index, side="right") - 1
        out: dict[str, np.ndarray] = {
            "shard": np.empty(len(index), dtype=object),
            "file_id": np.empty(len(index), dtype=np.int64),
            "file_index": np.empty(len(index), dtype=np.int64),
            "precursor_mz": np.empty(len(index), dtype=np.float64),
            **{c: np.empty(len(index), dtype=object) for c in TEXT_COLUMNS},
        }
        for k in np.unique(shard_of):
            rows = np.flatnonzero(shard_of == k)
            shard = self.shards[k]
            local = index[rows] - shard.start
            out["shard"][rows] = shard.name
            for name in ("file_id", "file_index", "precursor_mz"):
                out[name][rows] = shard.array(name)[local]
            for name in TEXT_COLUMNS:
                out[name][rows] = shard.text(name, local)
        files = self.manifest["files"]
        out["file"] = np.array([files[i]["path"] for i in out["file_id"]], dtype=object)
        out["dataset"] = np.array([files[i]["dataset"] for i in out["file_id"]], dtype=object)
        return out

    def library(self) -> SpectrumLibrary:
        """The whole repository as one in-memory library over its stored peaks.

        For small repositories and for checks (its index ``i`` is repository
        index ``i``); a large repository is searched with :meth:`search`.
        """
        parts = [s.library(metadata=True) for s in self.shards]
        if not parts:
            return SpectrumLibrary.from_peak_lists([], [])
        offsets = [np.asarray(parts[0].offsets)]
        for p in parts[1:]:
            offsets.append(np.asarray(p.offsets[1:]) + offsets[-1][-1])
        return SpectrumLibrary(
            mz=np.concatenate([p.mz for p in parts]),
            intensity=np.concatenate([p.intensity for p in parts]),
            offsets=np.concatenate(offsets),
            precursor_mz=np.concatenate([p.precursor_mz for p in parts]),
            charge=np.concatenate([p.charge for p in parts]),
            ion_mode=np.concatenate([p.ion_mode for p in parts]),
            metadata={c: np.concatenate([p.metadata[c] for p in parts]) for c in TEXT_COLUMNS},
        )

    # -- searching ---------------------------------------------------------------------
    def search(self, queries: SpectrumLibrary, params=None, **options):
        """A :class:`~engine.repository.search.RepositorySearchJob` of ``queries``.

        Keywords are those of the job (``backend``, ``client``, ``via``,
        ``on_shard``...) and fields of :class:`~engine.params.SearchParameters`
        (``mode="identity"``, ``top_n=5``...).  Iterate the job for final hits
        as shards finish, or call ``run()``.
        """
        from engine.repository.search import RepositorySearchJob

        return RepositorySearchJob(self, queries, params, **options)

    def hits_frame(self, hits, queries: SpectrumLibrary | None = None):
        """Hits (repository indexes) as a ``pandas.DataFrame`` with each spectrum's file."""
        from engine.repository.summary import hits_frame

        return hits_frame(self, hits, queries)

    def summary(self, hits, queries: SpectrumLibrary | None = None, *, by: str = "file"):
        """Per query, which files (``by="file"``) or datasets contain it: hits, best score."""
        from engine.repository.summary import summary

        return summary(self, hits, queries, by=by)


def _merge_task(path: str, number: int, folders: list[str], lo, hi, last) -> list[dict]:
    """Write one shard of a compaction (in a process of its own when there are several)."""
    repo = Repository(path)
    writer = repo.writer(number)
    merge_range(writer, [Shard.open(f) for f in folders], lo, hi, last)
    return writer.written


def _write_manifest(path: Path, manifest: dict) -> None:
    with atomic_path(path / MANIFEST, fsync=True) as tmp:
        tmp.write_text(json.dumps(manifest, indent=1))
