"""The CUDA backend's tile shape follows the GPU's free memory (no GPU needed)."""

from __future__ import annotations

from types import SimpleNamespace

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
