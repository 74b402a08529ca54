"""Which peaks a score matched: the pairs behind one greedy cosine or entropy score.

Plain numpy, deliberately independent of the numba kernels: it enumerates the
candidate pairs, orders them the way matchms does and takes them greedily.  It
is fast enough for one spectrum pair and doubles as a second implementation of
the score in tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PeakMatches", "entropy_matches", "greedy_matches"]


@dataclass(frozen=True)
class PeakMatches:
    """Matched peak pairs of one spectrum pair.

    Attributes
    ----------
    query_peak, library_peak : ndarray of int64
        Indexes of the matched peaks in each spectrum (sorted by query m/z).
    contribution : ndarray of float64
        Each pair's share of the score (they sum to ``score``).
    shifted : ndarray of bool
        True where a modified-cosine pair matched across the precursor shift.
    score : float
    """

    query_peak: np.ndarray
    library_peak: np.ndarray
    contribution: np.ndarray
    shifted: np.ndarray
    score: float

    @property
    def matches(self) -> int:
        """Number of matched pairs."""
        return len(self.query_peak)


def _candidates(mz1: np.ndarray, mz2: np.ndarray, tolerance: float, shift: float):
    """All (i, j) with ``mz1[i] - tol <= mz2[j] + shift <= mz1[i] + tol``, i-major
    (matchms ``find_matches``)."""
    shifted = mz2 + shift
    lo = np.searchsorted(shifted, mz1 - tolerance, side="left")
    hi = np.searchsorted(shifted, mz1 + tolerance, side="right")
    counts = hi - lo
    i = np.repeat(np.arange(len(mz1)), counts)
    j = np.repeat(lo - np.cumsum(np.r_[0, counts[:-1]]), counts) + np.arange(counts.sum())
    return i, j


def greedy_matches(
    mz1: np.ndarray,
    int1: np.ndarray,
    mz2: np.ndarray,
    int2: np.ndarray,
    *,
    tolerance: float = 0.1,
    mz_power: float = 0.0,
    intensity_power: float = 1.0,
    precursor_mz1: float | None = None,
    precursor_mz2: float | None = None,
) -> PeakMatches:
    """Greedy peak matching of two spectra, as matchms ``CosineGreedy`` does it.

    With both precursor m/z given, pairs shifted by their difference are also
    candidates (modified cosine, ``ModifiedCosineGreedy``).

    Parameters
    ----------
    mz1, int1, mz2, int2 : array_like
        Peaks of the query and the library spectrum, each sorted by m/z.
    tolerance, mz_power, intensity_power : float
        As in :class:`~engine.params.SearchParameters`.
    precursor_mz1, precursor_mz2 : float, optional
        Precursor m/z of both spectra, for the modified cosine.

    Returns
    -------
    PeakMatches
    """
    mz1, int1 = np.asarray(mz1, np.float64), np.asarray(int1, np.float64)
    mz2, int2 = np.asarray(mz2, np.float64), np.asarray(int2, np.float64)
    w1 = mz1**mz_power * int1**intensity_power
    w2 = mz2**mz_power * int2**intensity_power
    norm = np.sqrt(np.sum(w1**2)) * np.sqrt(np.sum(w2**2))
    # The library spectrum is matchms's reference (spectrum 1), as in
    # calculate_scores(references=library, queries=queries): candidates are
    # enumerated library-peak-major, which decides ties, and the modified-cosine
    # shift (library precursor - query precursor) is added to the query's m/z.
    lib, qry = _candidates(mz2, mz1, tolerance, 0.0)
    shifted = np.zeros(len(lib), dtype=bool)
    modified = precursor_mz1 is not None and precursor_mz2 is not None
    if modified and np.isfinite(precursor_mz1) and np.isfinite(precursor_mz2):
        shift = float(precursor_mz2) - float(precursor_mz1)
        s_lib, s_qry = _candidates(mz2, mz1, tolerance, shift)
        lib, qry = np.r_[lib, s_lib], np.r_[qry, s_qry]
        shifted = np.r_[shifted, np.ones(len(s_lib), dtype=bool)]
    product = w2[lib] * w1[qry]
    # stable ascending sort reversed: larger product first, later candidate first on ties
    order = np.argsort(product, kind="stable")[::-1]
    used_q = np.zeros(len(mz1), dtype=bool)
    used_l = np.zeros(len(mz2), dtype=bool)
    keep = []
    for k in order:
        if not used_q[qry[k]] and not used_l[lib[k]]:
            used_q[qry[k]] = used_l[lib[k]] = True
            keep.append(k)
    keep = np.array(sorted(keep, key=lambda k: (qry[k], lib[k])), dtype=np.int64)
    # a shifted candidate that also lies within the plain window is an ordinary match
    # to a reader (it happens when the precursors are within the tolerance)
    plain = np.abs(mz1[qry[keep]] - mz2[lib[keep]]) <= tolerance
    shifted[keep] &= ~plain
    contribution = product[keep] / norm if norm > 0 else np.zeros(len(keep))
    return PeakMatches(
        query_peak=qry[keep].astype(np.int64),
        library_peak=lib[keep].astype(np.int64),
        contribution=contribution,
        shifted=shifted[keep],
        score=float(contribution.sum()),
    )


def entropy_matches(
    mz1: np.ndarray,
    int1: np.ndarray,
    mz2: np.ndarray,
    int2: np.ndarray,
    *,
    tolerance: float = 0.02,
    weighted: bool = True,
    precursor_mz1: float | None = None,
    precursor_mz2: float | None = None,
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray], PeakMatches]:
    """The peaks an entropy-similarity search scored, and the pairs it matched.

    Both spectra are cleaned as the search cleans them (Flash entropy search's
    cleaning; peaks above the precursor m/z - 1.6 Da removed when it is given),
    entropy-weighted when ``weighted``, and matched by ms_entropy's two-pointer
    walk (spectrum 1 is the query).  Each pair's contribution is its entropy term.

    Returns
    -------
    (mz1, intensity1), (mz2, intensity2) : cleaned peaks (intensities sum to 1)
    matches : PeakMatches
    """
    from engine.kernels import clean_spectra, entropy_weights, float32_tolerance

    sides = []
    for mz, intensity, precursor in ((mz1, int1, precursor_mz1), (mz2, int2, precursor_mz2)):
        mz = np.asarray(mz, dtype=np.float64)
        limit = np.array([np.nan if precursor is None else float(precursor) - 1.6])
        cmz, cint, offsets = clean_spectra(
            mz, np.asarray(intensity, dtype=np.float64), np.array([0, mz.size]), limit,
            min_difference=max(0.05, 2 * tolerance),
        )  # fmt: skip
        weight = entropy_weights(cint, offsets) if weighted else cint
        sides.append((cmz, cint, weight))
    (m1, i1, w1), (m2, i2, w2) = sides
    tol = float32_tolerance(tolerance)
    a = b = 0
    pairs, terms = [], []
    while a < len(m1) and b < len(m2):
        d = m1[a] - m2[b]
        if d < -tol:
            a += 1
        elif d > tol:
            b += 1
        else:
            x, y = w1[a], w2[b]
            terms.append(((x + y) * np.log2(x + y) - x * np.log2(x) - y * np.log2(y)) / 2)
            pairs.append((a, b))
            a += 1
            b += 1
    q = np.array([p[0] for p in pairs], dtype=np.int64)
    lib = np.array([p[1] for p in pairs], dtype=np.int64)
    contribution = np.array(terms, dtype=np.float64)
    matches = PeakMatches(
        query_peak=q,
        library_peak=lib,
        contribution=contribution,
        shifted=np.zeros(len(q), dtype=bool),
        score=float(min(max(contribution.sum(), 0.0), 1.0)),
    )
    return (m1, i1), (m2, i2), matches
