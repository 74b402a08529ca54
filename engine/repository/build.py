"""Writing shards from spectrum libraries, a bounded buffer at a time.

A :class:`ShardWriter` takes libraries one by one (a file as read, or a
synthetic chunk), stores each spectrum's peaks in their compact form at once
(float32 m/z, uint16 intensity codes; :mod:`.store`), and keeps at most about
``shard_spectra`` spectra per ion mode in memory: when a mode's buffer is
full, its spectra are sorted by precursor m/z and the first ``shard_spectra``
are written as a shard.  :meth:`ShardWriter.close` writes what is left.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.library import SpectrumLibrary, peak_ranges
from engine.repository.store import TEXT_COLUMNS, Shard, quantize_intensity, write_shard

__all__ = [
    "ShardWriter", "file_entry", "map_tasks", "merge_plan", "merge_range", "read_issues",
    "shard_described",
]  # fmt: skip

log = logging.getLogger(__name__)

_MODE_NAMES = {1: "positive", -1: "negative", 0: "unknown"}


@dataclass
class _Chunk:
    """Spectra of one ion mode from one library, in stored form."""

    mz: np.ndarray
    codes: np.ndarray
    counts: np.ndarray
    scale: np.ndarray
    precursor_mz: np.ndarray
    charge: np.ndarray
    file_id: np.ndarray
    file_index: np.ndarray
    text: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.counts)


@dataclass
class _Buffer:
    chunks: list[_Chunk] = field(default_factory=list)
    spectra: int = 0


def _take(chunk: _Chunk, order: np.ndarray) -> _Chunk:
    """The spectra of ``chunk`` at ``order``, peaks gathered."""
    offsets = np.zeros(len(chunk) + 1, dtype=np.int64)
    np.cumsum(chunk.counts, out=offsets[1:])
    counts = chunk.counts[order]
    starts = offsets[:-1][order]
    take = peak_ranges(starts, counts)
    return _Chunk(
        mz=chunk.mz[take],
        codes=chunk.codes[take],
        counts=counts,
        scale=chunk.scale[order],
        precursor_mz=chunk.precursor_mz[order],
        charge=chunk.charge[order],
        file_id=chunk.file_id[order],
        file_index=chunk.file_index[order],
        text={k: v[order] for k, v in chunk.text.items()},
    )


def _concat(chunks: list[_Chunk]) -> _Chunk:
    if len(chunks) == 1:
        return chunks[0]
    return _Chunk(
        **{
            name: np.concatenate([getattr(c, name) for c in chunks])
            for name in (
                "mz",
                "codes",
                "counts",
                "scale",
                "precursor_mz",
                "charge",
                "file_id",
                "file_index",
            )  # fmt: skip
        },
        text={k: np.concatenate([c.text[k] for c in chunks]) for k in TEXT_COLUMNS},
    )


class ShardWriter:
    """Turns libraries into sorted shards, holding at most a bounded buffer.

    Parameters
    ----------
    folder : Path
        The repository's ``shards`` folder.
    shard_spectra : int
        Spectra per shard (the last shard of each mode and add may hold fewer).
    first_shard : int
        Number of the first shard written (names are 6-digit numbers).
    synthetic : bool
        Mark every shard manifest as synthetic.
    on_message : callable, optional
        One line per shard written.
    """

    def __init__(
        self,
        folder: Path,
        shard_spectra: int,
        first_shard: int,
        *,
        synthetic: bool = False,
        on_message: Callable[[str], None] | None = None,
    ) -> None:
        if shard_spectra < 1:
            raise ValueError("shard_spectra must be >= 1")
        self.folder = Path(folder)
        self.shard_spectra = int(shard_spectra)
        self.next_shard = int(first_shard)
        self.synthetic = synthetic
        self.on_message = on_message
        self.buffers: dict[int, _Buffer] = {}
        self.written: list[dict[str, object]] = []

    def add(self, library: SpectrumLibrary, file_id: int) -> None:
        """Buffer ``library``'s spectra (as stored) and write the shards that fill up."""
        offsets = np.asarray(library.offsets, dtype=np.int64)
        codes, scale = quantize_intensity(np.asarray(library.intensity, np.float64), offsets)
        mz = np.asarray(library.mz, dtype=np.float32)
        polarity = library.polarity()  # what searches judge the ion mode by
        text = {c: np.asarray(library.metadata[c], dtype=object) for c in TEXT_COLUMNS}
        whole = _Chunk(
            mz=mz,
            codes=codes,
            counts=np.diff(offsets),
            scale=scale,
            precursor_mz=np.asarray(library.precursor_mz, dtype=np.float64),
            charge=np.asarray(library.charge, dtype=np.int16),
            file_id=np.full(len(library), file_id, dtype=np.int32),
            file_index=np.arange(len(library), dtype=np.int64),
            text=text,
        )
        for mode in (1, -1, 0):
            rows = np.flatnonzero(polarity == mode)
            if not len(rows):
                continue
            buffer = self.buffers.setdefault(mode, _Buffer())
            buffer.chunks.append(whole if len(rows) == len(library) else _take(whole, rows))
            buffer.spectra += len(rows)
            while buffer.spectra >= self.shard_spectra:
                self._flush(mode, final=False)

    def close(self) -> list[dict[str, object]]:
        """Write every buffered spectrum; the summaries of all shards written."""
        for mode in list(self.buffers):
            while self.buffers[mode].spectra:
                self._flush(mode, final=True)
        return self.written

    def _flush(self, mode: int, *, final: bool) -> None:
        buffer = self.buffers[mode]
        merged = _concat(buffer.chunks)
        order = np.argsort(merged.precursor_mz, kind="stable")  # NaN last
        n = min(self.shard_spectra, len(order))
        shard = _take(merged, order[:n])
        rest = order[n:]
        buffer.chunks = [_take(merged, rest)] if len(rest) else []
        buffer.spectra = len(rest)
        self.write(shard, mode)

    def write(self, chunk: _Chunk, mode: int) -> None:
        """Write ``chunk`` (one ion ``mode``, sorted by precursor) as the next shard."""
        offsets = np.zeros(len(chunk) + 1, dtype=np.int64)
        np.cumsum(chunk.counts, out=offsets[1:])
        name = f"{self.next_shard:06d}"
        self.next_shard += 1
        precursor = chunk.precursor_mz
        known = precursor[~np.isnan(precursor)]
        summary = {
            "name": name,
            "spectra": len(chunk),
            "peaks": int(offsets[-1]),
            "ion_mode": _MODE_NAMES[mode],
            "precursor_min": float(known.min()) if len(known) else None,
            "precursor_max": float(known.max()) if len(known) else None,
            "precursor_nan": int(len(precursor) - len(known)),
            "mz_min": float(chunk.mz.min()) if len(chunk.mz) else None,
            "mz_max": float(chunk.mz.max()) if len(chunk.mz) else None,
            "files": sorted({int(f) for f in np.unique(chunk.file_id)}),
            "synthetic": self.synthetic,
        }
        arrays = {
            "offsets": offsets,
            "precursor_mz": precursor,
            "charge": chunk.charge,
            "ion_mode": np.full(len(chunk), mode, dtype=np.int8),
            "scale": chunk.scale,
            "file_id": chunk.file_id,
            "file_index": chunk.file_index,
            "mz": chunk.mz,
            "intensity": chunk.codes,
        }
        write_shard(self.folder / name, arrays, chunk.text, summary)
        self.written.append(summary)
        label = "SYNTHETIC " if self.synthetic else ""
        message = (
            f"{label}shard {name}: {len(chunk):,} {_MODE_NAMES[mode]} spectra, "
            f"{int(offsets[-1]):,} peaks"
        )
        log.info(message)
        if self.on_message is not None:
            self.on_message(message)


def _slice(shard: Shard, a: int, z: int) -> _Chunk:
    """Spectra ``a:z`` of a stored shard, in stored form (read from its maps)."""
    offsets = np.asarray(shard.array("offsets")[a : z + 1])
    p0, p1 = int(offsets[0]), int(offsets[-1])
    rows = np.arange(a, z, dtype=np.int64)
    return _Chunk(
        mz=np.array(shard.array("mz")[p0:p1]),
        codes=np.array(shard.array("intensity")[p0:p1]),
        counts=np.diff(offsets),
        scale=np.array(shard.array("scale")[a:z]),
        precursor_mz=np.array(shard.array("precursor_mz")[a:z]),
        charge=np.array(shard.array("charge")[a:z]),
        file_id=np.array(shard.array("file_id")[a:z]),
        file_index=np.array(shard.array("file_index")[a:z]),
        text={c: shard.text(c, rows) for c in TEXT_COLUMNS},
    )


def file_entry(library: SpectrumLibrary, file_id: int, name: str, dataset: str) -> dict:
    """The manifest entry of a file (or generated chunk) read as ``library``."""
    source = library.source
    report = library.report
    return {
        "id": file_id,
        "path": name,
        "dataset": dataset,
        "sha256": source.sha256 if source is not None else "",
        "format": source.format if source is not None else "",
        "spectra": len(library),
        "skipped": len(getattr(report, "skipped", ()) or ()) if report is not None else 0,
    }


def merge_plan(
    shards: list[Shard], shard_spectra: int, sample_every: int = 64
) -> list[tuple[float, float, bool]]:
    """Precursor ranges ``(lo, hi, last)`` that split ``shards`` (one ion mode) evenly.

    The ranges are quantiles of every ``sample_every``-th precursor, so each
    holds about ``shard_spectra`` spectra; the last also takes the spectra
    without a precursor.
    """
    if not shards:
        return []
    total = sum(len(s) for s in shards)
    sample = np.concatenate([np.asarray(s.array("precursor_mz")[::sample_every]) for s in shards])
    sample = np.sort(sample[~np.isnan(sample)])
    n = max(1, -(-total // shard_spectra))
    edges = np.quantile(sample, np.arange(1, n) / n) if len(sample) and n > 1 else np.empty(0)
    bounds = [-np.inf, *np.unique(edges).tolist(), np.inf]
    return [(bounds[k], bounds[k + 1], k == len(bounds) - 2) for k in range(len(bounds) - 1)]


def merge_range(writer: ShardWriter, shards: list[Shard], lo: float, hi: float, last: bool) -> None:
    """Write the spectra of ``shards`` (one ion mode) with precursor in ``[lo, hi)`` as a shard.

    Each shard is sorted, so its part is one slice; equal precursors keep the
    shards' order.  ``last`` also takes the spectra without a precursor.
    """
    modes = {s.manifest["ion_mode"] for s in shards}
    if len(modes) != 1:
        raise ValueError(f"shards of several ion modes {sorted(modes)} cannot be merged")
    mode = {"positive": 1, "negative": -1}.get(modes.pop(), 0)
    pieces = []
    for shard in shards:
        precursor = shard.array("precursor_mz")
        a = int(np.searchsorted(precursor, lo, side="left"))
        z = len(precursor) if last else int(np.searchsorted(precursor, hi, side="left"))
        if z > a:
            pieces.append(_slice(shard, a, z))
    if pieces:
        merged = _concat(pieces)
        writer.write(_take(merged, np.argsort(merged.precursor_mz, kind="stable")), mode)


def map_tasks(function, tasks: list[tuple], processes: int):
    """``function(*task)`` of each task, in order: here, or in a pool of ``processes``."""
    if processes <= 1 or len(tasks) <= 1:
        for task in tasks:
            yield function(*task)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")  # no fork of a process with numba threads
    with ProcessPoolExecutor(min(processes, len(tasks)), mp_context=context) as pool:
        yield from pool.map(function, *zip(*tasks, strict=True))


def shard_described(summary: dict) -> str:
    """One line about a written shard (its manifest summary): spectra, ion mode, range."""
    lo, hi = summary["precursor_min"], summary["precursor_max"]
    reach = "no precursor m/z" if lo is None else f"precursor m/z {lo:.4f}-{hi:.4f}"
    return f"shard {summary['name']}: {summary['spectra']:,} {summary['ion_mode']} spectra, {reach}"


def read_issues(library: SpectrumLibrary) -> str:
    """``"; N records skipped, M repaired …"`` of a file read with issues, else ``""``."""
    report = library.report
    if report is None or not report.issues:
        return ""
    skipped, repaired = len(report.skipped), len(report.repaired)
    return (
        f"; {skipped} record{'s' * (skipped != 1)} skipped, {repaired} repaired"
        " (the file's import report lists them)"
    )
