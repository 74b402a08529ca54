"""The exact greedy matching of one large component, in O(n log n) instead of O(candidates).

A component of the greedy cosine (or a whole modified-cosine pair) may hold
millions of candidates: two profile-mode spectra of 30,000 peaks 1.7e-5 Da
apart have ~10⁹ candidate pairs at a 0.1 Da tolerance.  Enumerating them, let
alone sorting them as matchms does, takes minutes.  Two facts make it
unnecessary:

* each peak's candidates are a window of consecutive peaks of the other
  spectrum (one window per pass: unshifted, and shifted by the precursor
  difference for the modified cosine);
* a candidate's product ``wA[i] * wB[j]`` is, for a fixed ``i``, a
  non-decreasing function of ``wB[j]`` (rounding included), so the best free
  partner of peak ``i`` in a window is found from the window's largest free
  weight by a range-maximum query over a segment tree of the ``B`` weights.

The greedy walk takes candidates in descending order of the key (product, pass,
A peak, B peak) -- the later enumerated first on equal products, as matchms
reverses a stable ascending sort -- skipping those with a used peak.  Here every
free ``A`` peak keeps its best candidate among the free ``B`` peaks in a heap
ordered by that key.  The top of the heap is the walk's next candidate unless
its ``B`` peak was taken since it was computed (``B`` peaks only ever leave);
then the ``A`` peak's best is recomputed and pushed again.  Each (A, B) pair
goes stale at most once, so the work is bounded by the candidates, and on real
and profile spectra it is a few heap operations per peak.  The taken products
come out in the walk's order, so their sum is the walk's bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "PROPOSALS_PER_PEAK",
    "candidate_windows",
    "count_candidates",
    "match_by_heap",
    "match_by_proposals",
    "resolve_large",
]

#: Components with up to this many candidates per peak are matched by proposals
#: (MassBank's long pairs: 2x faster than the heap); denser ones by the heap.
PROPOSALS_PER_PEAK = 16
#: Weights this far below a window's largest cannot give the same rounded product.
_TIE_SPAN = 1.0 - 2.0**-50
_SMALLEST_NORMAL = 2.2250738585072014e-308


@njit(cache=True, nogil=True, inline="always")
def _next_window(a, mzB, lo, h, j1, tol, shift):  # pragma: no cover
    """The window ``[lo, h)`` of the A peak at m/z ``a``, moved up from the previous one:
    ``mzB[j] + shift`` within ``a ± tol`` with the float comparisons of matchms
    ``find_matches`` (windows of sorted peaks only move up)."""
    low = a - tol
    high = a + tol
    while lo < j1 and mzB[lo] + shift < low:
        lo += 1
    if h < lo:
        h = lo
    while h < j1 and not mzB[h] + shift > high:
        h += 1
    return lo, h


@njit(cache=True, nogil=True)
def candidate_windows(mzA, i0, i1, mzB, j0, j1, tol, shift, lo_out, hi_out):  # pragma: no cover
    """Each A peak's candidates ``j`` in ``lo_out[r]:hi_out[r]`` (see :func:`_next_window`)."""
    lo = j0
    h = j0
    for r in range(i1 - i0):
        lo, h = _next_window(mzA[i0 + r], mzB, lo, h, j1, tol, shift)
        lo_out[r] = lo
        hi_out[r] = h


@njit(cache=True, nogil=True)
def count_candidates(mzA, a0, a1, mzB, b0, b1, tol, shift):  # pragma: no cover
    """Number of candidates of ``A[a0:a1]`` × ``B[b0:b1]`` at ``shift``, in O(na + nb)."""
    lo = b0
    h = b0
    c = 0
    for i in range(a0, a1):
        lo, h = _next_window(mzA[i], mzB, lo, h, b1, tol, shift)
        c += h - lo
    return c


@njit(cache=True, nogil=True, inline="always")
def _range_max(tree, size, a, b):  # pragma: no cover
    """Largest free weight of ``B`` peaks ``a:b`` (``-inf`` when none is free)."""
    best = -np.inf
    left = a + size
    right = b + size
    while left < right:
        if left & 1:
            best = max(best, tree[left])
            left += 1
        if right & 1:
            right -= 1
            best = max(best, tree[right])
        left >>= 1
        right >>= 1
    return best


@njit(cache=True, nogil=True)
def _rightmost_at_least(tree, size, a, b, floor, lefts, rights):  # pragma: no cover
    """Last ``B`` peak of ``a:b`` whose free weight is ``>= floor``, or -1."""
    nl = 0
    nr = 0
    left = a + size
    right = b + size
    while left < right:
        if left & 1:
            lefts[nl] = left
            nl += 1
            left += 1
        if right & 1:
            right -= 1
            rights[nr] = right
            nr += 1
        left >>= 1
        right >>= 1
    # the covering nodes from right to left: rights as found, then lefts reversed
    for k in range(nr + nl):
        node = rights[k] if k < nr else lefts[nl - 1 - (k - nr)]
        if tree[node] >= floor:
            while node < size:
                node = 2 * node + 1 if tree[2 * node + 1] >= floor else 2 * node
            return node - size
    return -1


@njit(cache=True, nogil=True)
def _best_in_window(tree, size, a, b, wa, wB, j0, lefts, rights):  # pragma: no cover
    """``(product, c)`` of the best free candidate of an A peak of weight ``wa`` among
    ``B`` peaks ``a:b``: the largest product, the last such peak on ties; c = -1 if none."""
    top = _range_max(tree, size, a, b)
    if top == -np.inf:
        return -1.0, -1
    best = wa * top
    floor = top * _TIE_SPAN if best >= _SMALLEST_NORMAL else 0.0
    while True:  # ends: the peak holding ``top`` qualifies
        c = _rightmost_at_least(tree, size, a, b, floor, lefts, rights)
        if wa * wB[j0 + c] == best:
            return best, c
        b = c


@njit(cache=True, nogil=True, inline="always")
def _above(hp, hs, hr, hc, x, y):  # pragma: no cover
    """Whether heap entry ``x`` comes before ``y`` in the walk's order."""
    if hp[x] != hp[y]:
        return hp[x] > hp[y]
    if hs[x] != hs[y]:
        return hs[x] > hs[y]
    if hr[x] != hr[y]:
        return hr[x] > hr[y]
    return hc[x] > hc[y]


@njit(cache=True, nogil=True, inline="always")
def _swap(hp, hs, hr, hc, x, y):  # pragma: no cover
    """Exchange heap entries ``x`` and ``y``."""
    hp[x], hp[y] = hp[y], hp[x]
    hs[x], hs[y] = hs[y], hs[x]
    hr[x], hr[y] = hr[y], hr[x]
    hc[x], hc[y] = hc[y], hc[x]


@njit(cache=True, nogil=True)
def _push(hp, hs, hr, hc, n, p, s, r, c):  # pragma: no cover
    """Add entry ``(p, s, r, c)`` to the heap of ``n`` entries; returns the new size."""
    hp[n] = p
    hs[n] = s
    hr[n] = r
    hc[n] = c
    k = n
    while k > 0:
        parent = (k - 1) >> 1
        if not _above(hp, hs, hr, hc, k, parent):
            break
        _swap(hp, hs, hr, hc, k, parent)
        k = parent
    return n + 1


@njit(cache=True, nogil=True)
def _drop_top(hp, hs, hr, hc, n):  # pragma: no cover
    """Remove the top of the heap of ``n`` entries; returns the new size."""
    n -= 1
    hp[0], hs[0], hr[0], hc[0] = hp[n], hs[n], hr[n], hc[n]
    k = 0
    while True:
        first = 2 * k + 1
        if first >= n:
            break
        child = first
        if first + 1 < n and _above(hp, hs, hr, hc, first + 1, first):
            child = first + 1
        if not _above(hp, hs, hr, hc, child, k):
            break
        _swap(hp, hs, hr, hc, k, child)
        k = child
    return n


@njit(cache=True, nogil=True)
def resolve_large(
    mzA, wA, i0, i1, mzB, wB, j0, j1, tol, shift, passes, candidates
):  # pragma: no cover
    """Exact greedy of peaks ``i0:i1`` of ``A`` against ``j0:j1`` of ``B``:
    ``(sum of the taken products, matches)``.

    ``passes`` 1: the candidates of ``find_matches`` (a cosine component); 2: those
    with shift 0 followed by those with ``shift`` (the modified cosine, where a
    pair of peaks may be a candidate twice).  ``candidates`` is their number:
    components of a few candidates per peak (centroided spectra) are matched by
    proposals (:func:`match_by_proposals`, about one pass over the candidates),
    denser ones by the heap (:func:`match_by_heap`, O(peaks log peaks)).  Both
    give the walk's matching and sum, bit for bit.
    """
    if candidates <= PROPOSALS_PER_PEAK * ((i1 - i0) + (j1 - j0)):
        return match_by_proposals(mzA, wA, i0, i1, mzB, wB, j0, j1, tol, shift, passes)
    return match_by_heap(mzA, wA, i0, i1, mzB, wB, j0, j1, tol, shift, passes)


@njit(cache=True, nogil=True)
def match_by_proposals(mzA, wA, i0, i1, mzB, wB, j0, j1, tol, shift, passes):  # pragma: no cover
    """:func:`resolve_large` by proposals, without sorting the candidates.

    Candidates are strictly ordered by (product, pass, A peak, B peak), the later
    first on equal products as matchms enumerates them, and under such an order
    the greedy matching is the unique stable matching in which both peaks of a
    pair prefer the larger key.  It is found by proposals (Gale-Shapley, peaks of
    ``A`` proposing): peak ``a`` takes the best ``B`` peak in its windows whose
    current partner it beats; the partner it displaces proposes again.  Each
    proposal scans its windows, so the cost is about the number of candidates
    when they are a few per peak, and grows with their square where every window
    holds thousands (profile spectra: :func:`match_by_heap`).  The taken products
    are summed in descending order, the greedy walk's.
    """
    na = i1 - i0
    nb = j1 - j0
    lo = np.empty((passes, na), dtype=np.int64)
    hi = np.empty((passes, na), dtype=np.int64)
    for s in range(passes):
        candidate_windows(mzA, i0, i1, mzB, j0, j1, tol, 0.0 if s == 0 else shift, lo[s], hi[s])
    held_p = np.full(nb, -1.0)  # the offer each B peak holds (products are >= 0)
    held_s = np.zeros(nb, dtype=np.int64)
    held_a = np.full(nb, -1, dtype=np.int64)
    for r in range(na):
        cur = r
        while cur >= 0:
            wa = wA[i0 + cur]
            best = -1
            best_p = -1.0
            best_s = 0
            for s in range(passes):
                for j in range(lo[s, cur], hi[s, cur]):
                    p = wa * wB[j]
                    c = j - j0
                    hp = held_p[c]
                    # beats the held offer: larger (product, pass, A peak)
                    if p > hp or (
                        p == hp and (s > held_s[c] or (s == held_s[c] and cur > held_a[c]))
                    ):
                        if p >= best_p:  # the later (pass, B peak) on ties
                            best_p = p
                            best = c
                            best_s = s
            if best < 0:
                break
            displaced = held_a[best]
            held_a[best] = cur
            held_p[best] = best_p
            held_s[best] = best_s
            cur = displaced
    prods = np.empty(nb, dtype=np.float64)
    nm = 0
    for c in range(nb):
        if held_a[c] >= 0:
            prods[nm] = held_p[c]
            nm += 1
    # the walk's order: descending (equal products sum alike in any order)
    prods = np.sort(prods[:nm])
    score = 0.0
    for r in range(nm - 1, -1, -1):
        score += prods[r]
    return score, nm


@njit(cache=True, nogil=True)
def match_by_heap(mzA, wA, i0, i1, mzB, wB, j0, j1, tol, shift, passes):  # pragma: no cover
    """:func:`resolve_large` by a heap of each free A peak's best free candidate (the
    module notes): O(peaks log peaks) however many candidates each window holds."""
    na = i1 - i0
    nb = j1 - j0
    if na <= 0 or nb <= 0:
        return 0.0, 0
    lo = np.empty((passes, na), dtype=np.int64)
    hi = np.empty((passes, na), dtype=np.int64)
    for s in range(passes):
        candidate_windows(mzA, i0, i1, mzB, j0, j1, tol, 0.0 if s == 0 else shift, lo[s], hi[s])
    size = 1
    while size < nb:
        size *= 2
    tree = np.full(2 * size, -np.inf)  # leaves: weights of free B peaks, -inf once taken
    for c in range(nb):
        tree[size + c] = wB[j0 + c]
    for k in range(size - 1, 0, -1):
        tree[k] = max(tree[2 * k], tree[2 * k + 1])
    lefts = np.empty(64, dtype=np.int64)
    rights = np.empty(64, dtype=np.int64)
    hp = np.empty(na, dtype=np.float64)
    hs = np.empty(na, dtype=np.int64)
    hr = np.empty(na, dtype=np.int64)
    hc = np.empty(na, dtype=np.int64)
    n = np.int64(0)  # not the literal 0: callees would compile for it too
    for r in range(na):
        p, s, c = _best_of_peak(tree, size, lo, hi, r, wA[i0 + r], wB, j0, lefts, rights)
        if c >= 0:
            n = _push(hp, hs, hr, hc, n, p, s, r, c)
    score = 0.0
    nm = 0
    while n > 0:
        r = hr[0]
        c = hc[0]
        if tree[size + c] == -np.inf:  # taken since: this A peak's best is another now
            n = _drop_top(hp, hs, hr, hc, n)
            p, s, c = _best_of_peak(tree, size, lo, hi, r, wA[i0 + r], wB, j0, lefts, rights)
            if c >= 0:
                n = _push(hp, hs, hr, hc, n, p, s, r, c)
            continue
        score += hp[0]
        nm += 1
        n = _drop_top(hp, hs, hr, hc, n)
        node = size + c
        tree[node] = -np.inf
        node >>= 1
        while node >= 1:
            tree[node] = max(tree[2 * node], tree[2 * node + 1])
            node >>= 1
    return score, nm


@njit(cache=True, nogil=True)
def _best_of_peak(tree, size, lo, hi, r, wa, wB, j0, lefts, rights):  # pragma: no cover
    """``(product, pass, c)`` of A peak ``r``'s best free candidate over all passes."""
    best_p = -1.0
    best_s = 0
    best_c = -1
    for s in range(lo.shape[0]):
        a = lo[s, r] - j0
        b = hi[s, r] - j0
        if a >= b:
            continue
        p, c = _best_in_window(tree, size, a, b, wa, wB, j0, lefts, rights)
        if c >= 0 and p >= best_p:  # the later pass on equal products
            best_p = p
            best_s = s
            best_c = c
    return best_p, best_s, best_c
