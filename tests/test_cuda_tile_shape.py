"""The CUDA backend's tile shape follows the GPU's free memory (no GPU needed)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from engine.backends.cuda import TILE_PAIR_BYTES, TILE_SHAPES, default_tile_shape


def fake_cuda(free: float) -> SimpleNamespace:
    """Stands for numba's ``cuda`` module: a context that reports ``free`` bytes."""
    info = SimpleNamespace(get_memory_info=lambda: (free, free))
    return SimpleNamespace(current_context=lambda: info)


@pytest.mark.parametrize(
    ("free_gb", "shape"),
    [(80, (8192, 32768)), (40, (4096, 32768)), (20, (2048, 16384)), (1, (2048, 16384))],
)
def test_largest_shape_whose_buffers_fit_a_quarter_of_free_memory(free_gb, shape) -> None:
    depth = 3
    assert default_tile_shape(fake_cuda(free_gb * 1e9), depth) == shape
    rows, cols = shape
    if shape != TILE_SHAPES[-1]:
        assert rows * cols * TILE_PAIR_BYTES * depth <= free_gb * 1e9 / 4


def test_simulator_or_no_context_take_the_smallest_shape() -> None:
    assert default_tile_shape(fake_cuda(float("inf")), 3) == TILE_SHAPES[-1]

    def broken():
        raise RuntimeError("no context")

    assert default_tile_shape(SimpleNamespace(current_context=broken), 3) == TILE_SHAPES[-1]


def _planner(max_rows: int = 8192, max_cols: int = 32768):
    """The real tile planning of a CUDA backend's pipeline, its backend (settings as the
    backend's defaults) and the kernels' constants stood in for (no GPU)."""
    from engine.backends.cuda import CudaBackend
    from engine.backends.cuda_search import TilePipeline

    backend = SimpleNamespace(
        max_rows=max_rows, max_cols=max_cols, device_top=True,
        few_rows=CudaBackend.few_rows, reuse_segments=CudaBackend.reuse_segments,
        _k=SimpleNamespace(SORT_MAX=2048),
    )  # fmt: skip
    pipeline = TilePipeline(backend)
    pipeline.topn_kernels = lambda: SimpleNamespace(TILE_SEGMENTS_MAX=32768)
    return pipeline


@pytest.mark.parametrize(("rows", "across", "width"), [
    (1, True, 1_000_003), (1, False, 1_000_003), (16, True, 1_000_003), (17, True, 131072),
    (1000, True, 131072), (3000, True, 88064), (8192, True, 32768), (20000, True, 32768),
])  # fmt: skip
def test_few_query_rows_get_wider_tiles_of_the_same_pairs(rows, across, width) -> None:
    """One query against a repository shard: one launch; many rows: tiles whose library
    peaks the rows share (at most 64 segments); every column once."""
    from engine.backends.base import Batch
    from engine.params import SearchParameters

    n = 1_000_003
    batches = [Batch(0, rows, l0, min(l0 + 32768, n)) for l0 in range(0, n, 32768)]
    tiles = _planner().tiles(batches, SearchParameters(precursor_tolerance=None), across)
    assert max(t.l1 - t.l0 for t in tiles) == width
    assert max(t.q1 - t.q0 for t in tiles) == min(rows, 8192)
    covered = np.zeros((-(-rows // 8192), n), dtype=np.int64)
    for t in tiles:
        covered[t.q0 // 8192, t.l0 : t.l1] += 1
        assert [(a, b) for a, b, _ in t.segs] == sorted((a, b) for a, b, _ in t.segs)
    assert (covered == 1).all()


def test_a_tile_has_at_most_the_segments_one_selection_grid_takes() -> None:
    """One query against 10^8 columns: tiles of 32,768 segments of 2,048 columns."""
    from engine.backends.base import Batch
    from engine.params import SearchParameters

    n = 100_000_000
    batches = [Batch(0, 1, l0, min(l0 + (1 << 22), n)) for l0 in range(0, n, 1 << 22)]
    tiles = _planner().tiles(batches, SearchParameters(precursor_tolerance=None), True)
    assert max(len(t.segs) for t in tiles) == 32768
    assert sum(t.l1 - t.l0 for t in tiles) == n and len(tiles) == 2
