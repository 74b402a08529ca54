"""Device functions of the CUDA kernels: the exact greedy cosine of one pair on chip.

The logic mirrors :mod:`engine.kernels.greedy` operation for operation (see
:mod:`engine.kernels.cuda_kernels`); a component too large for the per-thread
scratch of :data:`K` candidates is reported, never approximated.  Import through
:mod:`engine.backends.gpu` (the numpy compatibility shim comes first).
"""

from __future__ import annotations

import math

from numba import cuda

__all__ = [
    "K",
    "K3",
    "entropy_pair",
    "heavy_matched",
    "pair_score",
    "precursor_ok",
    "query_heavy_matched",
]

#: Candidates a component (or a modified-cosine pair) may have to be resolved on chip.
K = 32
#: Size of the float64 scratch: K sorted products, then the taken peaks of a
#: modified-cosine pair (2 × K).
K3 = 3 * K
#: Rounds of :func:`_greedy_rounds` before a big component is left to the host.
ROUNDS = 64
#: Candidates beyond which a component (or a modified-cosine pair) goes to the host
#: at once, bounded by its norms (O(peaks)): only profile-mode spectra have so many
#: (two of 30,000 points at 0.1 Da: ~10⁹), where one GPU thread would spend a minute
#: enumerating them.  The host's exact matching takes O(peaks log peaks).
DENSE_CANDIDATES = 1 << 20


@cuda.jit(device=True)
def _norm_bound(mzA, wA, i0, i1, mzB, wB, j0, j1):  # pragma: no cover - device code
    """``||wA[i0:i1]|| * ||wB[j0:j1]||``: bounds any one-to-one sum of their products."""
    sa = 0.0
    for i in range(i0, i1):
        sa += wA[i] * wA[i]
    sb = 0.0
    for j in range(j0, j1):
        sb += wB[j] * wB[j]
    return math.sqrt(sa) * math.sqrt(sb) * (1.0 + 1e-12)


@cuda.jit(device=True)
def _count_windows(mzA, a0, a1, mzB, b0, b1, tol, shift):  # pragma: no cover - device code
    """Number of candidates of ``find_matches(..., shift)``, in O(na + nb)."""
    lo = b0
    h = b0
    c = 0
    for i in range(a0, a1):
        a = mzA[i]
        low = a - tol
        high = a + tol
        while lo < b1 and mzB[lo] + shift < low:
            lo += 1
        if h < lo:
            h = lo
        while h < b1 and not mzB[h] + shift > high:
            h += 1
        c += h - lo
    return c


@cuda.jit(device=True)
def _insert_desc(sp, si, sj, t, p, i, j):  # pragma: no cover - device code
    pos = t
    while pos > 0 and sp[pos - 1] <= p:
        sp[pos] = sp[pos - 1]
        si[pos] = si[pos - 1]
        sj[pos] = sj[pos - 1]
        pos -= 1
    sp[pos] = p
    si[pos] = i
    sj[pos] = j


@cuda.jit(device=True)
def _greedy_rounds(mzA, wA, i0, i1, mzB, wB, j0, j1, tol, big, score):  # pragma: no cover
    """``score`` plus the greedy sum of one component, and its matches (-1: given up).

    The component is peaks ``i0:i1`` of ``A`` and ``j0:j1`` of ``B``; ``big`` is a
    scratch row ``(row best product, row best peak, column best product, column
    best peak, used A, used B)`` of at least ``i1 - i0`` and ``j1 - j0`` entries.
    No sort: with candidates ordered strictly by (product, enumeration number),
    the greedy matching is the one built by rounds that each take every
    *locally dominant* candidate (the best of its row and of its column among free
    peaks): the greedy walk would take each of them, and the best candidate left
    is always one, so each round takes at least one.  After :data:`ROUNDS` rounds
    it gives up (-1) and the caller flags the pair.  Products are added in the
    order the rounds take them, which may differ from the CPU's in the last bits.
    """
    rp, rj, cp, ci, ua, ub = big
    na = i1 - i0
    nb = j1 - j0
    for r in range(na):
        ua[r] = 0
    for r in range(nb):
        ub[r] = 0
    nm = 0
    for _ in range(ROUNDS):
        for r in range(nb):
            cp[r] = -1.0
            ci[r] = -1
        found = False
        jl = j0
        for ii in range(i0, i1):
            r = ii - i0
            rj[r] = -1
            if ua[r] != 0:
                continue
            a = mzA[ii]
            lw = a - tol
            hg = a + tol
            wa = wA[ii]
            best = -1.0
            for j in range(jl, j1):
                b = mzB[j]
                if b > hg:
                    break
                if b < lw:
                    jl = j + 1
                    continue
                c = j - j0
                if ub[c] != 0:
                    continue
                p = wa * wB[j]
                if p >= best:  # ties: the later candidate first, as the greedy walk
                    best = p
                    rj[r] = c
                if p >= cp[c]:
                    cp[c] = p
                    ci[c] = r
            rp[r] = best
            if rj[r] >= 0:
                found = True
        if not found:
            return score, nm
        for r in range(na):
            c = rj[r]
            if c >= 0 and ci[c] == r:
                ua[r] = 1
                ub[c] = 1
                score += rp[r]
                nm += 1
    return score, -1


@cuda.jit(device=True)
def _candidate_sum(mzA, wA, i0, i1, mzB, wB, j0, j1, tol):  # pragma: no cover
    """Sum of the candidate products of one component (an upper bound of its greedy sum)."""
    total = 0.0
    jl = j0
    for ii in range(i0, i1):
        x = mzA[ii]
        lw = x - tol
        hg = x + tol
        wa = wA[ii]
        for j in range(jl, j1):
            b = mzB[j]
            if b > hg:
                break
            if b < lw:
                jl = j + 1
            else:
                total += wa * wB[j]
    return total


@cuda.jit(device=True)
def _cosine(mzA, wA, a0, a1, mzB, wB, b0, b1, tol, sp, si, sj, ua, ub, big):  # pragma: no cover
    """Greedy numerator, matches, and the candidate-product sum of overflowing components.

    Components of more than :data:`K` candidates are resolved in the scratch row
    ``big`` (:func:`_greedy_rounds`) when their peaks fit it (``len(big[0])`` per
    side; a length of 1 turns this off).  Returns ``(score, matches,
    overflow_sum, overflowed)``; when ``overflowed`` the first two cover only the
    components resolved exactly.
    """
    score = 0.0
    nm = 0
    osum = 0.0
    oflag = False
    lo = b0
    i = a0
    while i < a1:
        a = mzA[i]
        low = a - tol
        while lo < b1 and mzB[lo] < low:
            lo += 1
        if lo == b1:
            break
        high = a + tol
        if mzB[lo] > high:
            i += 1
            continue
        hi = lo + 1
        while hi < b1 and mzB[hi] <= high:
            hi += 1
        ci0 = i
        cj0 = lo
        cnt = hi - lo
        k = i + 1
        lo_k = lo
        while k < a1:
            low_k = mzA[k] - tol
            while lo_k < b1 and mzB[lo_k] < low_k:
                lo_k += 1
            if lo_k >= hi:
                break
            high_k = mzA[k] + tol
            while hi < b1 and mzB[hi] <= high_k:
                hi += 1
            cnt += hi - lo_k
            k += 1
        if cnt == 1:
            score += wA[i] * wB[lo]
            nm += 1
        elif cnt == 2:
            if k - ci0 == 1:
                p0 = wA[i] * wB[lo]
                p1 = wA[i] * wB[lo + 1]
            else:
                p0 = wA[i] * wB[lo]
                p1 = wA[i + 1] * wB[hi - 1]
            score += p1 if p1 >= p0 else p0
            nm += 1
        elif cnt <= K:
            t = 0
            jl = cj0
            for ii in range(ci0, k):
                x = mzA[ii]
                lw = x - tol
                hg = x + tol
                wa = wA[ii]
                for j in range(jl, hi):
                    b = mzB[j]
                    if b > hg:
                        break
                    if b < lw:
                        jl = j + 1
                    else:
                        _insert_desc(sp, si, sj, t, wa * wB[j], ii - ci0, j - cj0)
                        t += 1
            na = k - ci0
            nb = hi - cj0
            for r in range(na):
                ua[r] = 0
            for r in range(nb):
                ub[r] = 0
            left = min(na, nb)
            for r in range(t):
                x_ = si[r]
                y_ = sj[r]
                if ua[x_] == 0 and ub[y_] == 0:
                    ua[x_] = 1
                    ub[y_] = 1
                    score += sp[r]
                    nm += 1
                    left -= 1
                    if left == 0:
                        break
        elif cnt > DENSE_CANDIDATES:  # profile-mode data: to the host, at once
            oflag = True
            osum += _norm_bound(mzA, wA, ci0, k, mzB, wB, cj0, hi)
        else:
            got = -1
            total = score
            if k - ci0 <= big[0].shape[0] and hi - cj0 <= big[0].shape[0]:
                total, got = _greedy_rounds(mzA, wA, ci0, k, mzB, wB, cj0, hi, tol, big, score)
            if got >= 0:
                score = total
                nm += got
            else:  # too big for the scratch: the sum of its candidate products bounds it
                oflag = True
                osum += _candidate_sum(mzA, wA, ci0, k, mzB, wB, cj0, hi, tol)
        i = k
        lo = lo_k
    return score, nm, osum, oflag


@cuda.jit(device=True)
def _count_shifted(mzA, wA, a0, a1, mzB, wB, b0, b1, tol, shift):  # pragma: no cover
    """Number of candidates of ``find_matches(..., shift)`` and the sum of their products."""
    lo = b0
    c = 0
    s = 0.0
    for i in range(a0, a1):
        a = mzA[i]
        low = a - tol
        high = a + tol
        wa = wA[i]
        for j in range(lo, b1):
            b = mzB[j] + shift
            if b > high:
                break
            if b < low:
                lo = j + 1
            else:
                c += 1
                s += wa * wB[j]
    return c, s


@cuda.jit(device=True)
def _modified(
    mzA, wA, a0, a1, pA, mzB, wB, b0, b1, pB, tol, sp, si, sj, ua, ub, big
):  # pragma: no cover
    """Modified cosine, same return convention as :func:`_cosine`."""
    shift = pA - pB
    if not (abs(shift) > tol):
        return _cosine(mzA, wA, a0, a1, mzB, wB, b0, b1, tol, sp, si, sj, ua, ub, big)
    cnt = _count_windows(mzA, a0, a1, mzB, b0, b1, tol, 0.0)
    cnt += _count_windows(mzA, a0, a1, mzB, b0, b1, tol, shift)
    if cnt == 0:
        return 0.0, 0, 0.0, False
    if cnt > DENSE_CANDIDATES:
        return 0.0, 0, _norm_bound(mzA, wA, a0, a1, mzB, wB, b0, b1), True
    if cnt > K:
        _, s0 = _count_shifted(mzA, wA, a0, a1, mzB, wB, b0, b1, tol, 0.0)
        _, s1 = _count_shifted(mzA, wA, a0, a1, mzB, wB, b0, b1, tol, shift)
        return 0.0, 0, s0 + s1, True
    t = 0
    for s_ in range(2):
        sh = 0.0 if s_ == 0 else shift
        lo = b0
        for i in range(a0, a1):
            a = mzA[i]
            low = a - tol
            high = a + tol
            wa = wA[i]
            for j in range(lo, b1):
                b = mzB[j] + sh
                if b > high:
                    break
                if b < low:
                    lo = j + 1
                else:
                    _insert_desc(sp, si, sj, t, wa * wB[j], i - a0, j - b0)
                    t += 1
    # used peaks: peak indexes may exceed K, so keep the taken ones in ua/ub-sized lists
    score = 0.0
    nm = 0
    for r in range(t):
        x_ = si[r]
        y_ = sj[r]
        free = True
        for u in range(nm):
            if sp[K + u] == x_ or sp[2 * K + u] == y_:
                free = False
                break
        if free:
            sp[K + nm] = x_
            sp[2 * K + nm] = y_
            score += sp[r]
            nm += 1
    return score, nm, 0.0, False


@cuda.jit(device=True)
def _has_partner(x, tol, mzB, b0, b1, shift):  # pragma: no cover
    """Whether some ``mzB[j] + shift`` lies in ``[x - tol, x + tol]`` (binary search)."""
    low = x - tol
    high = x + tol
    lo = b0
    hi = b1
    while lo < hi:
        mid = (lo + hi) // 2
        if mzB[mid] + shift < low:
            lo = mid + 1
        else:
            hi = mid
    return lo < b1 and mzB[lo] + shift <= high


@cuda.jit(device=True)
def heavy_matched(heavy, hcnt, l, tol, modified, shift, mzB, b0, b1):  # pragma: no cover
    """False only when no heavy peak of library spectrum ``l`` has a candidate partner."""
    n = hcnt[l]
    if n < 0:
        return True
    both = modified and abs(shift) > tol
    for h in range(n):
        x = heavy[l, h]
        if _has_partner(x, tol, mzB, b0, b1, 0.0):
            return True
        if both and _has_partner(x, tol, mzB, b0, b1, shift):
            return True
    return False


@cuda.jit(device=True)
def _has_partner_in_a(b, tol, mzA, a0, a1):  # pragma: no cover
    """Whether some ``mzA[i]`` has ``mzA[i] - tol <= b <= mzA[i] + tol``, evaluated
    exactly as the merge does (``fl(mzA[i] + tol)`` is nondecreasing in ``i``)."""
    lo = a0
    hi = a1
    while lo < hi:
        mid = (lo + hi) // 2
        if mzA[mid] + tol < b:
            lo = mid + 1
        else:
            hi = mid
    return lo < a1 and not (b < mzA[lo] - tol)


@cuda.jit(device=True)
def query_heavy_matched(qheavy, qhcnt, q, tol, modified, shift, mzA, a0, a1):  # pragma: no cover
    """False only when no heavy peak of query ``q`` has a candidate partner in ``mzA[a0:a1]``.

    A query peak ``y`` (spectrum ``B``) pairs with library peak ``a`` when
    ``y + shift`` lies in ``[a - tol, a + tol]`` (shift 0, and ``shift`` too for
    a modified cosine whose precursor difference exceeds the tolerance).
    """
    n = qhcnt[q]
    if n < 0:
        return True
    both = modified and abs(shift) > tol
    for h in range(n):
        y = qheavy[q, h]
        if _has_partner_in_a(y + 0.0, tol, mzA, a0, a1):
            return True
        if both and _has_partner_in_a(y + shift, tol, mzA, a0, a1):
            return True
    return False


@cuda.jit(device=True)
def precursor_ok(qp, lp, ptol, ppm):  # pragma: no cover
    if ptol <= 0.0:
        return True
    t = ptol * 1e-6 * qp if ppm else ptol
    return abs(qp - lp) <= t


@cuda.jit(device=True)
def _xlog2x(x):  # pragma: no cover
    return x * math.log2(x)


@cuda.jit(device=True)
def entropy_pair(mzA, pA, a0, a1, mzB, pB, b0, b1, tol):  # pragma: no cover
    """Entropy similarity and matches of query ``A`` and library ``B`` (as ``entropy_core``)."""
    a = a0
    b = b0
    total = 0.0
    nm = 0
    while a < a1 and b < b1:
        d = mzA[a] - mzB[b]
        if d < -tol:
            a += 1
        elif d > tol:
            b += 1
        else:
            x = pA[a]
            y = pB[b]
            total += (_xlog2x(x + y) - _xlog2x(x) - _xlog2x(y)) / 2.0
            nm += 1
            a += 1
            b += 1
    return min(max(total, 0.0), 1.0), nm


@cuda.jit(device=True)
def pair_score(
    mzL, wL, l0, l1, pL, mzQ, wQ, q0, q1, pQ, tol, modified, sp, si, sj, ua, ub, big
):  # pragma: no cover
    if modified:
        return _modified(mzL, wL, l0, l1, pL, mzQ, wQ, q0, q1, pQ, tol, sp, si, sj, ua, ub, big)
    return _cosine(mzL, wL, l0, l1, mzQ, wQ, q0, q1, tol, sp, si, sj, ua, ub, big)
