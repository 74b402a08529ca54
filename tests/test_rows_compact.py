"""Row buffers compacted by numpy (top-N rows) equal the compiled compaction (wide rows)."""

from __future__ import annotations

import numpy as np

from engine.kernels.rows import _compact_wide, compact_rows, row_buffers


def test_numpy_compaction_equals_the_kernel():
    rng = np.random.default_rng(5)
    row_l, row_s, row_m, counts = row_buffers(40, 10)
    row_l[:] = rng.integers(0, 10**6, row_l.shape)
    row_s[:] = rng.random(row_s.shape)
    row_m[:] = rng.integers(0, 50, row_m.shape)
    counts[:] = rng.integers(0, 11, 40)
    counts[3] = 0
    got = compact_rows(7, row_l, row_s, row_m, counts)
    want = _compact_wide(7, row_l, row_s, row_m, counts)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
