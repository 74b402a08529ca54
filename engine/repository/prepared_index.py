"""The CPU peak indexes of open searches, stored beside a shard's prepared spectra.

A CPU search without a precursor window builds a peak index for each library
block it searches (:func:`~engine.kernels.peak_index.library_peak_index`): at
10⁷ spectra on two cores, 8 s of a cold open query, again in every process that
opens the shards.  ``simms repo prepare --open-index`` (``Repository.prepare(...,
open_index=True)``) stores them, for the blocks of a search with the prepared
mode's batch size and top N, in ``<prepared folder>/open_index/``::

    index.json  starts.npy  mz.npy  spectrum.npy  weight.npy
    [loss_starts.npy  loss.npy  loss_spectrum.npy  loss_weight.npy]   modified cosine

A search opening the shard finds them among its prepared spectra's derived
structures (memory-mapped, read as used) and builds none.  They are the arrays
the search would build, bit for bit (tested); a missing, damaged or stale one
(``index.json`` names a hash of the index code) is ignored with a warning for a
damaged one, and the search builds its indexes in memory.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.backends import PreparedSpectra
from engine.backends.base import score_kind
from engine.backends.cpu import CpuBackend, peak_index_key
from engine.kernels.peak_index import PeakIndex, library_peak_index
from engine.kernels.spectrum_set import MODIFIED_COSINE
from engine.params import SearchParameters
from engine.version import __version__

__all__ = ["FOLDER", "index_block", "seed_open_index", "source_fingerprint", "store_open_index"]

log = logging.getLogger(__name__)

FOLDER = "open_index"
MANIFEST = "index.json"
FORMAT = "simms-open-index"
_PARTS = {"mz": np.float32, "spectrum": np.int32, "weight": np.float32}
_LOSS_PARTS = {"loss": np.float32, "loss_spectrum": np.int32, "loss_weight": np.float32}
#: The modules whose code decides what an index holds and which blocks a search asks for.
_INDEX_MODULES = ("engine.kernels.peak_index", "engine.kernels.sorting", "engine.backends.cpu")


def source_fingerprint(modules: Sequence[str]) -> str:
    """A hash of ``modules``' source (the version where there is none: a frozen build)."""
    digest = hashlib.sha256()
    for name in modules:
        path = Path(getattr(importlib.import_module(name), "__file__", None) or "")
        digest.update(name.encode())
        digest.update(path.read_bytes() if path.is_file() else __version__.encode())
    return digest.hexdigest()[:16]


@functools.cache
def _code() -> str:
    return source_fingerprint(_INDEX_MODULES)


def index_block(params: SearchParameters) -> int:
    """Library spectra per block of a CPU search with ``params`` (its batch size, top N)."""
    return CpuBackend().block_shape(params.batch_size, params.top_n)[1]


def _bounds(n: int, block: int) -> list[tuple[int, int]]:
    return [(l0, min(l0 + block, n)) for l0 in range(0, n, block)]


def _opened(folder: Path, prepared: PreparedSpectra) -> tuple[dict, dict[str, np.ndarray]]:
    """The stored indexes' manifest and arrays, checked against ``prepared``;
    ``ValueError`` or ``OSError`` saying what is wrong."""
    manifest = json.loads((folder / MANIFEST).read_text())
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValueError("not an open-search index")
    if manifest.get("code") != _code():
        raise ValueError("made by other index code")
    kind, block = int(manifest["kind"]), int(manifest["block"])
    names = [*_PARTS, "starts"] + ([*_LOSS_PARTS, "loss_starts"] if kind == MODIFIED_COSINE else [])
    arrays = {}
    for name in names:
        try:  # copy-on-write maps: writable arrays, the kernels' one signature
            arrays[name] = np.asarray(np.load(folder / f"{name}.npy", mmap_mode="c"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{name}.npy is not a readable array ({exc})") from None
    edges = [l0 for l0, _ in _bounds(len(prepared), block)] + [len(prepared)]
    if not np.array_equal(arrays["starts"], prepared.offsets[edges]):
        raise ValueError("its blocks do not match the prepared spectra")
    for prefix, parts in (("", _PARTS), ("loss_", _LOSS_PARTS)):
        if prefix and kind != MODIFIED_COSINE:
            continue
        starts = arrays[f"{prefix}starts"]
        if starts.shape != (len(edges),) or starts[0] != 0 or np.any(np.diff(starts) < 0):
            raise ValueError(f"{prefix}starts are not a block partition")
        for name, dtype in parts.items():
            if arrays[name].dtype != dtype or arrays[name].shape != (int(starts[-1]),):
                raise ValueError(f"{name} does not match its starts")
    return manifest, arrays


def _stored(folder: Path, prepared: PreparedSpectra) -> tuple[dict, dict] | None:
    """:func:`_opened`, or None (with a warning naming the reason when an index is there)."""
    if not (folder / MANIFEST).is_file():
        return None
    try:
        return _opened(folder, prepared)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("%s: stored open-search index not used, built again (%s)", folder, exc)
        return None


def store_open_index(
    prepared_folder: Path, prepared: PreparedSpectra, params: SearchParameters
) -> Path:
    """Build and store the open-search indexes of a stored preparation (kept if stored).

    Parameters
    ----------
    prepared_folder : Path
        The stored preparation's folder; the indexes go in its ``open_index``.
    prepared : PreparedSpectra
        The stored preparation, read (:func:`~engine.repository.prepared.load_prepared`).
    params : SearchParameters
        Their score kind, batch size and top N decide the indexes' blocks.

    Returns
    -------
    Path
        The indexes' folder.
    """
    folder, spectra = prepared_folder / FOLDER, prepared
    kind, block = score_kind(params), index_block(params)
    stored = _stored(folder, spectra)
    if stored is not None and (stored[0]["kind"], stored[0]["block"]) == (kind, block):
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{FOLDER}.", suffix=".part", dir=prepared_folder))
    try:
        parts: dict[str, list[np.ndarray]] = {name: [] for name in [*_PARTS, *_LOSS_PARTS]}
        for l0, l1 in _bounds(len(spectra), block):
            index = library_peak_index(spectra.spectrum_set, l0, l1, kind)
            for name in parts:
                parts[name].append(getattr(index, name))
        for prefix, names in (("", _PARTS), ("loss_", _LOSS_PARTS)):
            if prefix and kind != MODIFIED_COSINE:
                continue
            sizes = [0] + [len(a) for a in parts[next(iter(names))]]
            np.save(tmp / f"{prefix}starts.npy", np.cumsum(sizes, dtype=np.int64))
            for name, dtype in names.items():
                joined = np.concatenate(parts[name]) if parts[name] else np.empty(0)
                np.save(tmp / f"{name}.npy", np.ascontiguousarray(joined, dtype=dtype))
                parts[name] = []  # freed as written
        manifest = {"format": FORMAT, "code": _code(), "kind": int(kind), "block": int(block)}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
        try:
            os.replace(tmp, folder)
        except OSError:  # another process stored it first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def seed_open_index(prepared_folder: Path, prepared: PreparedSpectra) -> bool:
    """Give ``prepared`` the stored open-search indexes of its preparation's folder.

    Returns
    -------
    bool
        Whether usable indexes were there (a damaged one is said in a warning).
    """
    stored = _stored(prepared_folder / FOLDER, prepared)
    if stored is None:
        return False
    manifest, arrays = stored
    kind = int(manifest["kind"])
    starts = arrays["starts"]
    no_loss = (np.empty(0, np.float32), np.empty(0, np.int32), np.empty(0, np.float32))
    for b, (l0, l1) in enumerate(_bounds(len(prepared), int(manifest["block"]))):
        a, c = int(starts[b]), int(starts[b + 1])
        loss = no_loss
        if kind == MODIFIED_COSINE:
            la, lc = int(arrays["loss_starts"][b]), int(arrays["loss_starts"][b + 1])
            loss = tuple(arrays[name][la:lc] for name in _LOSS_PARTS)
        index = PeakIndex(*(arrays[name][a:c] for name in _PARTS), *loss, kind)
        prepared.derived(peak_index_key(l0, l1, kind), lambda index=index: index)
    return True
