"""Row chunks of the GPU's dense matrices: whole, in order, none over the slot size."""

from __future__ import annotations

import pytest

from engine.backends.cuda_dense import row_chunks


@pytest.mark.parametrize(
    ("n_rows", "rows"),
    [(16384, 2730), (54390, 1000), (10, 3), (1, 5), (5, 5), (300, 100), (16384, 16384), (0, 4)],
)
def test_chunks_cover_the_rows_once_within_the_slot(n_rows: int, rows: int) -> None:
    chunks = row_chunks(n_rows, rows)
    assert sum(n for _, n in chunks) == n_rows
    assert all(0 < n <= rows for _, n in chunks)
    assert all(a + n == b for (a, n), (b, _) in zip(chunks, chunks[1:], strict=False))
    assert not chunks or chunks[0][0] == 0


def test_the_last_chunk_is_small_so_little_trails_the_gpu() -> None:
    chunks = row_chunks(16384, 2730)
    assert chunks[-1][1] <= 128
    assert [n for _, n in chunks[:5]] == [2730] * 5  # full chunks first
