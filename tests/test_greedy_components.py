"""The big-component resolver of the greedy cosine against the greedy walk, bit for bit.

``_resolve_large`` finds the greedy matching of a component by proposals instead
of sorting its candidates; the walk here sorts them as matchms does (products
descending, the later candidate first on ties) and sums what it takes in that
order.  Matches and the sum's bits must be the same, on real MassBank
components and on synthetic ones made of ties.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.kernels.greedy import _resolve_large


def _walk(mzA, wA, i0, i1, mzB, wB, j0, j1, tol):
    """The greedy walk over all candidates of peaks ``i0:i1`` × ``j0:j1`` (plain numpy)."""
    i, j = np.meshgrid(np.arange(i0, i1), np.arange(j0, j1), indexing="ij")
    i, j = i.ravel(), j.ravel()  # enumeration order: i-major, j-minor
    cand = (mzB[j] >= mzA[i] - tol) & (mzB[j] <= mzA[i] + tol)
    i, j = i[cand], j[cand]
    prods = wA[i] * wB[j]
    order = np.argsort(prods, kind="mergesort")[::-1]
    used_a, used_b = set(), set()
    score, nm = 0.0, 0
    for k in order:
        if i[k] not in used_a and j[k] not in used_b:
            used_a.add(i[k])
            used_b.add(j[k])
            score += prods[k]
            nm += 1
    return score, nm


def _components(mzA, mzB, tol, least):
    """``(i0, i1, j0, j1)`` of the components with more than ``least`` candidates."""
    out, i, lo = [], 0, 0
    while i < len(mzA):
        while lo < len(mzB) and mzB[lo] < mzA[i] - tol:
            lo += 1
        if lo == len(mzB):
            break
        if mzB[lo] > mzA[i] + tol:
            i += 1
            continue
        hi = np.searchsorted(mzB, mzA[i] + tol, side="right")
        k, cnt, lo_k = i + 1, hi - lo, lo
        while k < len(mzA):
            lo_k = max(lo_k, int(np.searchsorted(mzB, mzA[k] - tol, side="left")))
            if lo_k >= hi:
                break
            hi = max(hi, int(np.searchsorted(mzB, mzA[k] + tol, side="right")))
            cnt += hi - lo_k
            k += 1
        if cnt > least:
            out.append((i, k, lo, hi))
        i, lo = k, lo_k
    return out


def _check(mzA, wA, mzB, wB, tol, least=64):
    comps = _components(mzA, mzB, tol, least)
    for i0, i1, j0, j1 in comps:
        got = _resolve_large(mzA, wA, i0, i1, mzB, wB, j0, j1, tol, 0)
        want = _walk(mzA, wA, i0, i1, mzB, wB, j0, j1, tol)
        assert got[1] == want[1]
        assert got[0] == want[0]  # the same products summed in the same order
    return len(comps)


def test_real_big_components_equal_the_walk(massbank_library):
    lib = massbank_library
    counts = np.diff(lib.offsets)
    longest = np.argsort(counts, kind="stable")[::-1][:12]
    w = lib.intensity.astype(np.float64)
    checked = 0
    for a in longest[:6]:
        for b in longest:
            sa = slice(lib.offsets[a], lib.offsets[a + 1])
            sb = slice(lib.offsets[b], lib.offsets[b + 1])
            for tol in (0.1, 0.5):
                checked += _check(lib.mz[sa], w[sa], lib.mz[sb], w[sb], tol)
    assert checked > 50


@pytest.mark.parametrize("seed", range(6))
def test_components_made_of_ties_equal_the_walk(seed):
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(8):
        na, nb = rng.integers(30, 160, 2)
        mzA = np.sort(np.round(rng.uniform(300, 303, na), 2))  # duplicate m/z
        mzB = np.sort(np.round(rng.uniform(300, 303, nb), 2))
        wA = rng.choice([1.0, 2.0, 4.0], na)  # equal products everywhere
        wB = rng.choice([1.0, 0.5, 2.0], nb)
        if seed % 2:
            wA[rng.random(na) < 0.2] = 0.0  # zero products are matches too
        checked += _check(mzA, wA, mzB, wB, float(rng.choice([0.05, 0.2, 1.0])), least=2)
    assert checked > 0
