"""SYNTHETIC repositories for benchmarks and tests only: real spectra, jittered.

Each generated spectrum is a copy of a real spectrum (e.g. MassBank in
``../shared/data``) drawn at random, with every fragment m/z moved by Gaussian
noise (``mz_jitter`` Da), the precursor m/z moved likewise (``precursor_jitter``
Da) and every intensity multiplied by ``exp(N(0, intensity_noise))``; it keeps
the id, name and InChIKey of the spectrum it copies.  Such a
repository has real peak-count, m/z and precursor distributions at any size,
but it is not data: the manifest says ``"synthetic": true``, every shard
manifest too, ``simms repo info`` and every search of it say SYNTHETIC, hit
tables carry a ``synthetic`` column, and a warning is logged.  Real-data
correctness is shown on real files.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Iterator

import numpy as np

from engine.io import load_library
from engine.library import SpectrumLibrary
from engine.repository.build import file_entry, map_tasks
from engine.repository.repository import DEFAULT_SHARD_SPECTRA, Repository

__all__ = ["add_synthetic", "build_synthetic", "synthetic_libraries"]

log = logging.getLogger(__name__)


def synthetic_libraries(
    base: SpectrumLibrary,
    n_spectra: int,
    *,
    chunk_spectra: int = 200_000,
    seed: int = 0,
    first: int = 0,
    mz_jitter: float = 0.002,
    precursor_jitter: float = 0.002,
    intensity_noise: float = 0.1,
    files_per_dataset: int = 10,
) -> Iterator[tuple[SpectrumLibrary, str, str]]:
    """Generated ``(library, file name, dataset)`` chunks of ``n_spectra`` in all.

    Parameters
    ----------
    base : SpectrumLibrary
        Real spectra to copy.
    n_spectra : int
        Spectra to generate.
    chunk_spectra : int
        Spectra per chunk (one virtual file each); bounds the memory used.
    seed : int
        Seed of this generator's own random stream (no global seeding).
    first : int
        Number of the first spectrum (virtual file names continue from here,
        so an append to a synthetic repository gets new names).
    mz_jitter, precursor_jitter : float
        Standard deviations, Da, of the fragment and precursor m/z noise.
    intensity_noise : float
        Standard deviation of the log-normal intensity factor.
    files_per_dataset : int
        Virtual files per virtual dataset.
    """
    if len(base) == 0:
        raise ValueError("synthetic spectra need a base library with spectra")
    base = _stripped(base)
    done = 0
    while done < n_spectra:
        n = min(chunk_spectra, n_spectra - done)
        rng = np.random.default_rng([seed, first + done])  # a chunk's spectra: its own stream
        library = _jittered(base, rng, n, mz_jitter, precursor_jitter, intensity_noise)
        dataset = (first + done) // max(chunk_spectra * files_per_dataset, 1)
        yield library, f"synthetic-{first + done:012d}.mgf", f"synthetic-{dataset:04d}"
        done += n


def _jittered(
    base: SpectrumLibrary,
    rng: np.random.Generator,
    n: int,
    mz_jitter: float,
    precursor_jitter: float,
    intensity_noise: float,
) -> SpectrumLibrary:
    picked = rng.integers(0, len(base), size=n)
    copy = base.subset(picked)
    counts = copy.peak_counts
    owner = np.repeat(np.arange(n, dtype=np.int64), counts)
    mz = np.maximum(copy.mz + rng.normal(0.0, mz_jitter, copy.n_peaks), 1e-3)
    order = _sorted_within(mz, owner, copy.offsets)
    intensity = copy.intensity * np.exp(rng.normal(0.0, intensity_noise, copy.n_peaks))
    precursor = copy.precursor_mz + rng.normal(0.0, precursor_jitter, n)
    return SpectrumLibrary(
        mz=mz[order],
        intensity=intensity[order],
        offsets=copy.offsets,
        precursor_mz=np.where(precursor > 0, precursor, copy.precursor_mz),
        charge=copy.charge,
        ion_mode=copy.ion_mode,
        metadata=copy.metadata,  # the id, name and InChIKey of the real spectrum copied
    )


def _sorted_within(mz: np.ndarray, owner: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Peak order that sorts ``mz`` within each spectrum (jitter swaps few neighbours)."""
    order = np.arange(len(mz), dtype=np.int64)
    falls = np.flatnonzero((np.diff(mz) < 0) & (owner[1:] == owner[:-1]))
    for s in np.unique(owner[falls]):
        a, b = offsets[s], offsets[s + 1]
        order[a:b] = a + np.argsort(mz[a:b], kind="stable")
    return order


def _stripped(base: SpectrumLibrary) -> SpectrumLibrary:
    """``base`` with only what generated spectra keep: peaks, precursor, ion mode, 3 columns."""
    return SpectrumLibrary(
        mz=base.mz, intensity=base.intensity, offsets=base.offsets,
        precursor_mz=base.precursor_mz, charge=base.charge, ion_mode=base.polarity(),
        metadata={c: base.metadata[c] for c in ("id", "name", "inchikey")},
    )  # fmt: skip


def _base(base: SpectrumLibrary | str | os.PathLike) -> SpectrumLibrary:
    return base if isinstance(base, SpectrumLibrary) else load_library(base)


def build_synthetic(
    path: str | os.PathLike,
    base: SpectrumLibrary | str | os.PathLike,
    n_spectra: int,
    *,
    shard_spectra: int = DEFAULT_SHARD_SPECTRA,
    seed: int = 0,
    processes: int = 1,
    compact: bool = False,
    on_message: Callable[[str], None] | None = None,
    **jitter,
) -> Repository:
    """A new SYNTHETIC repository at ``path`` of ``n_spectra`` copies of ``base``'s spectra.

    ``base`` is a library or a spectrum file (e.g. ``massbank_ms2.mgf.gz``);
    ``jitter`` takes the keywords of :func:`synthetic_libraries`; ``processes``
    generate and write in parallel; ``compact`` then rewrites the shards into
    disjoint precursor ranges (:meth:`Repository.compact`).
    """
    base = _base(base)
    repo = Repository.create(
        path, shard_spectra=shard_spectra, synthetic=True,
        description=f"SYNTHETIC: jittered copies of {_name(base)} (benchmarks and tests only)",
    )  # fmt: skip
    add_synthetic(
        repo, base, n_spectra, seed=seed, processes=processes, on_message=on_message, **jitter
    )
    if compact:
        repo.compact(processes=processes, on_message=on_message)
    return repo


def add_synthetic(
    repo: Repository,
    base: SpectrumLibrary | str | os.PathLike,
    n_spectra: int,
    *,
    seed: int = 0,
    processes: int = 1,
    chunk_spectra: int = 200_000,
    on_message: Callable[[str], None] | None = None,
    **jitter,
) -> list[str]:
    """Append ``n_spectra`` generated spectra to a SYNTHETIC repository; the new shards.

    With ``processes > 1`` the chunks are split into that many runs, each
    generated and written by a process of its own (the spectra are the same:
    each chunk has its own random stream).
    """
    if not repo.synthetic:
        raise ValueError(f"{repo.path}: synthetic spectra go only into a synthetic repository")
    base = _stripped(_base(base))
    message = (
        f"SYNTHETIC: generating {n_spectra:,} jittered copies of {_name(base)} "
        f"into {repo.path} (benchmarks and tests only)"
    )
    log.warning(message)
    if on_message is not None:
        on_message(message)
    if processes <= 1:
        chunks = synthetic_libraries(
            base, n_spectra, seed=seed, first=len(repo), chunk_spectra=chunk_spectra, **jitter
        )
        return repo.add_libraries(chunks, on_message=on_message)
    starts = np.arange(0, n_spectra, chunk_spectra)
    runs = [r for r in np.array_split(np.arange(len(starts)), processes) if len(r)]
    shard_spectra = repo.manifest["shard_spectra"]
    tasks, number = [], repo.manifest["next_shard"]
    for run in runs:
        first, stop = int(starts[run[0]]), min(int(starts[run[-1]]) + chunk_spectra, n_spectra)
        file_id = len(repo.manifest["files"]) + int(run[0])
        tasks.append((str(repo.path), number, base, stop - first, len(repo) + first, file_id,
                      seed, chunk_spectra, jitter))  # fmt: skip
        number += -(-(stop - first) // shard_spectra) + 3  # at most this many shards a run
    files: list[dict] = []
    written: list[dict] = []
    try:
        for run_files, run_written in map_tasks(_write_run, tasks, processes):
            files.extend(run_files)
            written.extend(run_written)
    except BaseException:
        for summary in written:
            shutil.rmtree(repo.path / "shards" / str(summary["name"]), ignore_errors=True)
        raise
    repo.append_written(files, written)
    return [str(s["name"]) for s in written]


def _write_run(path, number, base, n, first, file_id, seed, chunk_spectra, jitter):
    """One process's run of chunks: generated, written as shards; its files and shards."""
    repo = Repository(path)
    writer = repo.writer(number)
    files = []
    chunks = synthetic_libraries(
        base, n, seed=seed, first=first, chunk_spectra=chunk_spectra, **jitter
    )
    try:
        for k, (library, name, dataset) in enumerate(chunks):
            files.append(file_entry(library, file_id + k, name, dataset))
            writer.add(library, file_id + k)
        return files, writer.close()
    except BaseException:
        for summary in writer.written:
            shutil.rmtree(repo.path / "shards" / str(summary["name"]), ignore_errors=True)
        raise


def _name(base: SpectrumLibrary) -> str:
    return os.path.basename(base.source.path) if base.source is not None else "a library"
