"""Where a search's shards come from: the library's identity, its file, the workers' stores."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from engine.distributed import shards
from engine.io.cache import cache_path
from engine.library import SpectrumLibrary
from engine.memo import derived

__all__ = ["file_fingerprint", "library_file", "library_fingerprint", "resident_workers"]

#: (path, mtime, size) -> the fingerprint of the library that file holds.
_FILE_FINGERPRINTS: dict[tuple, str] = {}


def library_fingerprint(library: SpectrumLibrary) -> str:
    """The library's content hash (:func:`.shards.library_fingerprint`), once per library object.

    Libraries are immutable, so a second search of the same object hashes nothing
    (0.7 GB of peaks of a 1.5 M-spectrum library take seconds to hash).
    """
    return derived(
        library, "dask_fingerprint",
        lambda: shards.library_fingerprint({k: getattr(library, k) for k in shards.PEAK_FIELDS}),
        budget=1 << 10,
    )  # fmt: skip


def file_fingerprint(path: Path) -> str | None:
    """The fingerprint of the library an ``.npz`` file holds (once per file version);
    None when it cannot be read."""
    try:
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        if key not in _FILE_FINGERPRINTS:
            with np.load(path, allow_pickle=False) as data:
                _FILE_FINGERPRINTS[key] = shards.library_fingerprint(data)
        return _FILE_FINGERPRINTS[key]
    except Exception:  # noqa: BLE001 - any problem means: do not use the file
        return None


def library_file(
    library: SpectrumLibrary,
    given: str | Path | None,
    fingerprint: str,
    say: Callable[[str], None],
) -> str | None:
    """A library file the workers may read instead of receiving the shards' spectra.

    ``given`` (an ``.npz`` the caller says the workers can read), else the library's
    cache entry; only when it holds exactly ``library`` (same fingerprint).
    """
    candidates = []
    if given is not None:
        candidates.append(Path(given))
    elif library.source is not None and library.source.sha256:
        candidates.append(cache_path(library.source.sha256))
    for path in candidates:
        path = path.resolve()
        if file_fingerprint(path) == fingerprint:
            return str(path)
        if given is not None:
            say(f"{path} does not hold this library; sending the shards' spectra instead")
    return None


def resident_workers(answers: dict[str, object]) -> dict[str, set[str]]:
    """Shard token -> the workers that hold that shard.

    ``answers`` are the workers' :func:`.shards.resident_tokens` (worker -> its
    list of tokens; anything else, such as an error, counts as none).
    """
    found: dict[str, set[str]] = {}
    for worker, tokens in answers.items():
        if isinstance(tokens, list):
            for token in tokens:
                found.setdefault(token, set()).add(worker)
    return found
