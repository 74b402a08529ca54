"""The big-component resolver of the greedy scores against the greedy walk, bit for bit.

``resolve_large`` finds the greedy matching of a cosine component, or of a
whole modified-cosine pair, by proposals or by a heap (both are checked here)
instead of sorting the candidates; the
walk here sorts them as matchms does (products descending, the later candidate
first on ties; the modified cosine's shifted candidates after the unshifted
ones) and sums what it takes in that order.  Matches and the sum's bits must be
the same, on real MassBank spectra and on synthetic ones made of ties.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.kernels.greedy_large import match_by_heap, match_by_proposals


def _resolve_large(*args):
    """Both exact matchings of a big component; they must agree bit for bit."""
    heap = match_by_heap(*args)
    assert match_by_proposals(*args) == heap
    return heap


def _walk(mzA, wA, i0, i1, mzB, wB, j0, j1, tol, shifts=(0.0,)):
    """The greedy walk over all candidates of peaks ``i0:i1`` × ``j0:j1`` (plain numpy)."""
    ii, jj, pp = [], [], []
    for shift in shifts:  # enumeration order: shift, then i-major, j-minor
        i, j = np.meshgrid(np.arange(i0, i1), np.arange(j0, j1), indexing="ij")
        i, j = i.ravel(), j.ravel()
        b = mzB[j] + shift
        cand = (b >= mzA[i] - tol) & (b <= mzA[i] + tol)
        ii.append(i[cand])
        jj.append(j[cand])
        pp.append(wA[i[cand]] * wB[j[cand]])
    i, j, prods = np.concatenate(ii), np.concatenate(jj), np.concatenate(pp)
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
        got = _resolve_large(mzA, wA, i0, i1, mzB, wB, j0, j1, tol, 0.0, 1)
        want = _walk(mzA, wA, i0, i1, mzB, wB, j0, j1, tol)
        assert got[1] == want[1]
        assert got[0] == want[0]  # the same products summed in the same order
    return len(comps)


def _check_modified(mzA, wA, mzB, wB, tol, shift):
    got = _resolve_large(mzA, wA, 0, len(mzA), mzB, wB, 0, len(mzB), tol, shift, 2)
    want = _walk(mzA, wA, 0, len(mzA), mzB, wB, 0, len(mzB), tol, (0.0, shift))
    assert got[1] == want[1]
    assert got[0] == want[0]


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


@pytest.mark.slow
def test_modified_pairs_equal_the_walk(massbank_library):
    lib = massbank_library
    counts = np.diff(lib.offsets)
    longest = np.argsort(counts, kind="stable")[::-1][:5]
    w = lib.intensity.astype(np.float64)
    for a in longest:
        for b in longest:
            sa = slice(lib.offsets[a], lib.offsets[a + 1])
            sb = slice(lib.offsets[b], lib.offsets[b + 1])
            shift = float(lib.precursor_mz[a] - lib.precursor_mz[b])
            for s in (shift, 14.01565, 0.15):  # 0.15: the two windows overlap at tol 0.1
                _check_modified(lib.mz[sa], w[sa], lib.mz[sb], w[sb], 0.1, s)


@pytest.mark.parametrize("seed", range(4))
def test_modified_pairs_made_of_ties_equal_the_walk(seed):
    rng = np.random.default_rng(100 + seed)
    for _ in range(10):
        na, nb = rng.integers(5, 120, 2)
        mzA = np.sort(np.round(rng.uniform(300, 306, na), 2))
        mzB = np.sort(np.round(rng.uniform(300, 306, nb), 2))
        wA = rng.choice([1.0, 2.0, 4.0], na)
        wB = rng.choice([1.0, 0.5, 2.0], nb)
        tol = float(rng.choice([0.05, 0.2, 1.0]))
        shift = float(rng.choice([tol * 1.5, 2.0, -3.0, 0.3]))  # 1.5 tol: windows overlap
        _check_modified(mzA, wA, mzB, wB, tol, shift)


@pytest.mark.parametrize("seed", range(4))
def test_products_tied_only_by_rounding_equal_the_walk(seed):
    # weights a few ulps apart: distinct, but many of their products round alike,
    # where the walk orders by the later candidate and not by the larger weight
    rng = np.random.default_rng(200 + seed)
    for _ in range(10):
        na, nb = rng.integers(20, 150, 2)
        mzA = np.sort(rng.uniform(300, 300.5, na))
        mzB = np.sort(rng.uniform(300, 300.5, nb))
        wA = rng.uniform(1, 3, na) * (1 + rng.integers(0, 4, na) * 2.0**-52)
        wB = 1.7 * (1 + rng.integers(0, 6, nb) * 2.0**-52)
        tol = float(rng.choice([0.05, 0.5]))
        _check(mzA, wA, mzB, wB, tol, least=2)
        _check_modified(mzA, wA, mzB, wB, tol, float(rng.choice([tol * 1.5, 0.2])))


def test_profile_spectra_of_30000_peaks_take_little_time():
    # two profile-mode (not centroided) spectra: one component of ~10^9 candidates,
    # resolved without enumerating them; checked against the walk on a 300-peak slice
    step = 1.7e-5
    mz = 100.0 + np.arange(30_000) * step
    w = 1000 * (1.2 + np.sin(np.arange(30_000) / 50.0))
    score, matches = match_by_heap(mz, w, 0, len(mz), mz + step / 3, w[::-1].copy(), 0,
                                   len(mz), 0.1, 0.0, 1)  # fmt: skip
    assert matches == len(mz)
    _check(mz[:300], w[:300], mz[:300] + step / 3, w[:300][::-1].copy(), 0.1)
