"""A shard's prepared spectra kept on disk: a cold search reads them instead of preparing.

Opening a shard for a search widens its peaks and prepares them as the search's
parameters ask (entropy: ms_entropy's cleaning and weights), about 40 s of 16
threads for 10⁸ spectra, again in every new process and on every Dask worker.
:meth:`Repository.prepare <engine.repository.Repository.prepare>` does it once
and stores the result beside each shard::

    shards/000000/prepared/<name>/   mz.npy  weight.npy  offsets.npy  norm.npy
                                     precursor_mz.npy  polarity.npy  prepared.json

``<name>`` is a hash of the preparation (:func:`~engine.backends.base.preparation_key`),
the engine's version, this store's version and the source of the modules that
prepare spectra (any change to them makes stored preparations stale: they are
then neither read nor counted, and :func:`store_prepared` replaces them).  Entropy
peaks and weights are float32 values (ms_entropy's arithmetic) and are stored as
float32 when every value round-trips exactly (checked when written); other
preparations as float64.  A
stored preparation is read only when its manifest names the same shard counts,
preparation and versions; anything else (a missing or damaged store) is prepared
in memory as before, with a warning for a damaged one.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from engine.backends import PreparedSpectra
from engine.backends.base import preparation_key
from engine.kernels.stored_peaks import widened
from engine.params import SearchParameters
from engine.repository.build import map_tasks
from engine.repository.prepared_index import seed_open_index, source_fingerprint, store_open_index
from engine.repository.store import Shard
from engine.version import __version__

__all__ = [
    "describe_preparation", "load_prepared", "prepare_shards", "prepared_folder",
    "stored_preparations", "store_prepared",
]  # fmt: skip

log = logging.getLogger(__name__)

FORMAT = "simms-prepared-shard"
#: Bump when what a preparation writes changes without the engine's version changing.
VERSION = 1
MANIFEST = "prepared.json"
_PEAK_ARRAYS = ("mz", "weight")
_SPECTRUM_ARRAYS = {
    "offsets": np.int64, "norm": np.float64, "precursor_mz": np.float64, "polarity": np.int8,
}  # fmt: skip


#: The modules whose code decides what a preparation holds.
_PREPARING_MODULES = (
    "engine.backends.base", "engine.kernels.entropy", "engine.kernels.pair",
    "engine.kernels.peak_filters", "engine.kernels.stored_peaks", "engine.preprocess.filters",
    "engine.preprocess.fused", "engine.preprocess.pipeline", "engine.repository.store",
)  # fmt: skip


@functools.cache
def _code_fingerprint() -> str:
    """A hash of the source that prepares spectra (the version where there is none: frozen)."""
    return source_fingerprint(_PREPARING_MODULES)


def _identity(params: SearchParameters) -> dict[str, object]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "engine": __version__,
        "code": _code_fingerprint(),
        "preparation": repr(preparation_key(params)),
    }


def prepared_folder(shard: Shard, params: SearchParameters) -> Path:
    """Where ``shard``'s spectra prepared for ``params`` are stored (present or not)."""
    text = json.dumps(_identity(params), sort_keys=True).encode()
    return shard.folder / "prepared" / hashlib.sha256(text).hexdigest()[:16]


def _exact_float32(values: np.ndarray) -> np.ndarray:
    """``values`` as float32 where that loses nothing, else as float64."""
    narrow = values.astype(np.float32)
    same = np.array_equal(narrow.astype(np.float64), values, equal_nan=True)
    return narrow if same else np.ascontiguousarray(values, dtype=np.float64)


def store_prepared(shard: Shard, params: SearchParameters, open_index: bool = False) -> Path:
    """Prepare ``shard`` for ``params`` and store the result (kept if already stored).

    Written under a temporary name and renamed into place, so a reader (or another
    process preparing the same shard) never sees half of it.  With ``open_index``,
    also the CPU peak indexes of open searches (:mod:`~.prepared_index`).

    Returns
    -------
    Path
        The folder of the stored preparation.
    """
    folder = prepared_folder(shard, params)
    if _usable(shard, params) is None:  # checked, not read whole
        _write_prepared(shard, params, folder)
    if open_index:
        store_open_index(folder, load_prepared(shard, params, seed=False), params)
    return folder


def _write_prepared(shard: Shard, params: SearchParameters, folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)  # a damaged one (said by _usable)
    prepared = PreparedSpectra.for_search(shard.library(), params)
    folder.parent.mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".part", dir=folder.parent))
    try:
        dtypes = {}
        for name in _PEAK_ARRAYS:
            stored = _exact_float32(getattr(prepared, name))
            dtypes[name] = stored.dtype.name
            np.save(tmp / f"{name}.npy", stored)
        for name, dtype in _SPECTRUM_ARRAYS.items():
            values = prepared.polarities if name == "polarity" else getattr(prepared, name)
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(values, dtype=dtype))
        manifest = {
            **_identity(params),
            "spectra": len(shard),
            "peaks": int(shard.manifest["peaks"]),
            "prepared_peaks": int(prepared.offsets[-1]),
            "mz_power": prepared.mz_power,
            "intensity_power": prepared.intensity_power,
            "dtypes": dtypes,
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
        try:
            os.replace(tmp, folder)
        except OSError:  # another process stored it first (a non-empty folder is kept)
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _remove_stale(folder, manifest["preparation"])


def _remove_stale(folder: Path, preparation: object) -> None:
    """Other stored copies of the same preparation (older code or versions) go."""
    for other in folder.parent.glob(f"*/{MANIFEST}"):
        if other.parent == folder:
            continue
        try:
            stale = json.loads(other.read_text()).get("preparation") == preparation
        except (OSError, ValueError, AttributeError):
            continue
        if stale:
            shutil.rmtree(other.parent, ignore_errors=True)


def _opened(shard: Shard, params: SearchParameters) -> tuple[dict, dict[str, np.ndarray]]:
    """The stored preparation's manifest and arrays (memory maps), checked against
    ``shard`` and ``params``; ``ValueError`` or ``OSError`` saying what is wrong."""
    folder = prepared_folder(shard, params)
    manifest = json.loads((folder / MANIFEST).read_text())
    expected = {**_identity(params), "spectra": len(shard), "peaks": shard.manifest["peaks"]}
    if not isinstance(manifest, dict) or any(manifest.get(k) != v for k, v in expected.items()):
        raise ValueError("made for another shard, preparation or version")
    return manifest, _stored_arrays(folder, len(shard), manifest)


def _stored_arrays(folder: Path, n: int, manifest: dict) -> dict[str, np.ndarray]:
    """A stored preparation's arrays (memory maps) of ``n`` spectra, their shapes checked
    against its ``manifest``; ``ValueError`` or ``OSError`` saying what is wrong."""
    arrays = {}
    for name in (*_PEAK_ARRAYS, *_SPECTRUM_ARRAYS):
        try:
            arrays[name] = np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{name}.npy is not a readable array ({exc})") from None
    offsets, peaks = arrays["offsets"], int(manifest["prepared_peaks"])
    if offsets.shape != (n + 1,) or offsets[0] != 0 or offsets[-1] != peaks:
        raise ValueError("offsets do not match the manifest")
    for name in _PEAK_ARRAYS:
        if arrays[name].shape != (peaks,):
            raise ValueError(f"{name} does not match the manifest")
    for name in ("norm", "precursor_mz", "polarity"):
        if arrays[name].shape != (n,):
            raise ValueError(f"{name} does not match the shard")
    return arrays


def _usable(shard: Shard, params: SearchParameters) -> tuple[dict, dict] | None:
    """:func:`_opened`, or None (with a warning naming the reason when a store is there)."""
    folder = prepared_folder(shard, params)
    if not (folder / MANIFEST).is_file():
        return None
    try:
        return _opened(shard, params)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("%s: stored preparation not used, prepared again (%s)", folder, exc)
        return None


def _float64(values: np.ndarray) -> np.ndarray:
    if values.dtype == np.float32:
        return widened(values)
    return np.array(values, dtype=np.float64)


def load_prepared(
    shard: Shard, params: SearchParameters, *, seed: bool = True
) -> PreparedSpectra | None:
    """``shard``'s stored spectra prepared for ``params``, or None where none are usable.

    With ``seed``, they come with their stored open-search indexes, if any.
    """
    opened = _usable(shard, params)
    if opened is None:
        return None
    manifest, arrays = opened
    prepared = PreparedSpectra(
        mz=_float64(arrays["mz"]),
        weight=_float64(arrays["weight"]),
        offsets=np.array(arrays["offsets"], dtype=np.int64),
        norm=np.array(arrays["norm"], dtype=np.float64),
        precursor_mz=np.array(arrays["precursor_mz"], dtype=np.float64),
        mz_power=float(manifest["mz_power"]),
        intensity_power=float(manifest["intensity_power"]),
        polarity=np.array(arrays["polarity"], dtype=np.int8),
        preparation=preparation_key(params),
    )
    if seed:
        seed_open_index(prepared_folder(shard, params), prepared)
    return prepared


def _prepare_task(
    folder: str, manifest: dict, start: int, params: SearchParameters, open_index: bool
) -> str:
    return str(store_prepared(Shard(Path(folder), manifest, start), params, open_index))


def prepare_shards(
    shards: Sequence[Shard],
    params: SearchParameters,
    *,
    processes: int = 1,
    on_message: Callable[[str], None] | None = None,
    open_index: bool = False,
) -> list[Path]:
    """Store every shard's spectra prepared for ``params`` (shards already stored are kept).

    Parameters
    ----------
    shards : sequence of Shard
    params : SearchParameters
        Searches with the same preparation (:func:`preparation_key`) read them.
    processes : int
        Shards prepared at once, each in a process of its own (each also uses
        numba's threads).
    on_message : callable, optional
        A line per shard stored.
    open_index : bool, default False
        Also store the CPU peak indexes of open searches (:mod:`~.prepared_index`):
        cold CPU open searches then build none; about 12 bytes a prepared peak (24
        for the modified cosine).

    Returns
    -------
    list of Path
        The stored preparations' folders, in shard order.
    """
    tasks = [(str(s.folder), s.manifest, s.start, params, open_index) for s in shards]
    folders = []
    for shard, folder in zip(shards, map_tasks(_prepare_task, tasks, processes), strict=True):
        folders.append(Path(folder))
        if on_message is not None:
            stored = "prepared spectra and open-search index" if open_index else "prepared spectra"
            on_message(f"shard {shard.name}: {stored} stored")
    return folders


def stored_preparations(shards: Sequence[Shard]) -> dict[str, int]:
    """Shards with a usable stored preparation, per preparation (this engine's versions only).

    Each store's manifest and its arrays' headers are read (memory maps, no peaks):
    a store of other code, or one whose arrays are missing or cut short, is not counted.
    """
    code = {k: v for k, v in _identity(SearchParameters()).items() if k != "preparation"}
    counts: dict[str, int] = {}
    for shard in shards:
        expected = {**code, "spectra": len(shard), "peaks": shard.manifest["peaks"]}
        for path in sorted((shard.folder / "prepared").glob(f"*/{MANIFEST}")):
            try:
                manifest = json.loads(path.read_text())
                if not isinstance(manifest, dict) or any(
                    manifest.get(k) != v for k, v in expected.items()
                ):
                    continue
                _stored_arrays(path.parent, len(shard), manifest)
            except (OSError, ValueError, KeyError, TypeError):
                continue
            key = str(manifest.get("preparation"))
            counts[key] = counts.get(key, 0) + 1
    return counts


def describe_preparation(key: str) -> str:
    """A preparation (a key of :func:`stored_preparations`) in words: the searches it serves."""
    try:
        kind, preprocess, *rest = ast.literal_eval(key)
        if preprocess == "none":
            pre = ""
        else:
            pre = f", {preprocess if len(preprocess) <= 24 else 'custom'} preprocessing"
        if kind == "entropy":
            score, window = rest
            tolerance = "up to 0.025" if window == 0.05 else f"{window / 2:g}"
            return (
                f"{score.replace('_', ' ')} similarity: identity and open searches, "
                f"tolerance {tolerance} Da{pre}"
            )
        mz_power, intensity_power = rest
        return (
            f"cosine and modified cosine: peaks weighted m/z^{mz_power:g} "
            f"x intensity^{intensity_power:g}{pre}"
        )
    except (ValueError, TypeError, SyntaxError, AttributeError):
        return key
