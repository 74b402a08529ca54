"""How the CUDA backend cuts batches into tiles (one kernel launch each)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.backends.base import Batch

__all__ = ["Tile", "flagged_pairs", "plan_tiles", "split_rows"]


@dataclass
class Tile:
    """Query rows ``q0:q1`` × library columns ``l0:l1`` scored in one launch.

    ``segs`` are the column pieces ``(l0, l1, batch number)`` (each at most
    ``SORT_MAX`` wide, within one batch) that the selection handles separately.
    """

    q0: int
    q1: int
    l0: int
    l1: int
    segs: list[tuple[int, int, int]]

    @property
    def batches(self) -> list[int]:
        """Batch numbers of the tile, ascending, without repeats."""
        return sorted({b for _, _, b in self.segs})

    def batch_of(self, col: np.ndarray) -> np.ndarray:
        """Batch number of each absolute library column ``col`` of the tile."""
        starts = np.array([a for a, _, _ in self.segs[1:]], dtype=np.int64)
        seg_batch = np.array([b for _, _, b in self.segs], dtype=np.int64)
        return seg_batch[np.searchsorted(starts, col, side="right")]


def plan_tiles(batches: list[Batch], max_rows: int, max_cols: int, seg: int) -> list[Tile]:
    """Cut batches into column pieces of at most ``seg`` and pack neighbours into tiles.

    Consecutive pieces with the same query rows and adjacent columns (the
    library blocks of one query block) share a tile of up to ``max_cols``
    columns, so one launch covers several batches.
    """
    tiles: list[Tile] = []
    for b, batch in enumerate(batches):
        for q0 in range(batch.q_start, batch.q_stop, max_rows):
            q1 = min(q0 + max_rows, batch.q_stop)
            for l0 in range(batch.l_start, batch.l_stop, seg):
                l1 = min(l0 + seg, batch.l_stop)
                last = tiles[-1] if tiles else None
                if (
                    last is not None
                    and (last.q0, last.q1) == (q0, q1)
                    and last.l1 == l0
                    and l1 - last.l0 <= max_cols
                ):
                    last.l1 = l1
                    last.segs.append((l0, l1, b))
                else:
                    tiles.append(Tile(q0, q1, l0, l1, [(l0, l1, b)]))
    return tiles


def split_rows(tile: Tile, col: np.ndarray) -> list[tuple[int, np.ndarray | slice]]:
    """Rows of a tile's hit arrays per batch: ``[(batch, rows)]`` (stable)."""
    if len(tile.batches) == 1:
        return [(tile.batches[0], slice(None))]
    labels = tile.batch_of(col)
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], tile.batches + [tile.batches[-1] + 1])
    return [(b, order[bounds[i] : bounds[i + 1]]) for i, b in enumerate(tile.batches)]


def flagged_pairs(tile: Tile, slot, n_ovf: int) -> tuple[np.ndarray, np.ndarray]:
    """Absolute ``(query, library)`` indexes of a tile's flagged pairs."""
    s = slot.stream
    if n_ovf <= slot.ovf_cap:
        r = slot.ovf_r[:n_ovf].copy_to_host(stream=s)
        c = slot.ovf_c[:n_ovf].copy_to_host(stream=s)
        s.synchronize()
    else:  # more than the list holds: find them in the match matrix
        mat = slot.out_m.copy_to_host(stream=s)
        s.synchronize()
        r, c = np.nonzero(mat[: tile.q1 - tile.q0, : tile.l1 - tile.l0] < 0)
    return r.astype(np.int64) + tile.q0, c.astype(np.int64) + tile.l0
