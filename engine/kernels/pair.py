"""Scores of one pair of spectra, and peak weights, equal to matchms.

All scores equal matchms 0.33 ``CosineGreedy`` / ``ModifiedCosineGreedy``
(within float rounding of the final sum, identical match counts).  The first
spectrum plays matchms' ``reference`` (first argument of ``pair``), the second
the ``query``; this fixes the enumeration order that decides exact ties and the
sign of the modified-cosine shift.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.kernels.greedy import cosine_core, modified_core, weights_and_norms
from engine.kernels.spectrum_set import new_scratch

__all__ = [
    "check_score_parameters",
    "cosine_greedy_pair",
    "modified_cosine_pair",
    "prepare_weights",
]


def _peaks(mz: np.ndarray, intensity: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    mz = np.ascontiguousarray(mz, dtype=np.float64)
    intensity = np.ascontiguousarray(intensity, dtype=np.float64)
    if mz.ndim != 1 or intensity.ndim != 1:
        raise ValueError(f"{name}: m/z and intensity must be one-dimensional")
    if mz.shape != intensity.shape:
        raise ValueError(
            f"{name}: m/z and intensity differ in length ({mz.shape[0]} != {intensity.shape[0]})"
        )
    if mz.size > 1 and not np.all(mz[1:] >= mz[:-1]):
        raise ValueError(f"{name}: m/z must be sorted ascending")
    if not (np.all(np.isfinite(mz)) and np.all(np.isfinite(intensity))):
        raise ValueError(f"{name}: m/z and intensity must be finite")
    return mz, intensity


def check_score_parameters(tolerance: float, mz_power: float, intensity_power: float) -> None:
    """Raise ``ValueError`` for a negative or non-finite tolerance or a non-finite power."""
    if not np.isfinite(tolerance) or tolerance < 0:
        raise ValueError(f"tolerance must be finite and >= 0, got {tolerance!r}")
    if not (np.isfinite(mz_power) and np.isfinite(intensity_power)):
        raise ValueError("mz_power and intensity_power must be finite")


def prepare_weights(
    mz: np.ndarray,
    intensity: np.ndarray,
    offsets: np.ndarray,
    mz_power: float = 0.0,
    intensity_power: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Peak weights and spectrum norms of a CSR spectrum set, as matchms computes them.

    Parameters
    ----------
    mz, intensity : ndarray of float64, shape (n_peaks,)
        Peak m/z (sorted within each spectrum) and intensity.
    offsets : ndarray of int64, shape (n_spectra + 1,)
        Spectrum ``s`` owns peaks ``offsets[s]:offsets[s + 1]``.
    mz_power, intensity_power : float
        Exponents of the weight ``(mz ** mz_power) * (intensity ** intensity_power)``.

    Returns
    -------
    w : ndarray of float64, shape (n_peaks,)
        Peak weights, bitwise equal to matchms' ``collect_peak_pairs`` factors.
    norm : ndarray of float64, shape (n_spectra,)
        ``sqrt(sum(w ** 2))`` per spectrum (0 for a spectrum without peaks).
    """
    mz = np.ascontiguousarray(mz, dtype=np.float64)
    intensity = np.ascontiguousarray(intensity, dtype=np.float64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if mz.shape != intensity.shape or mz.ndim != 1:
        raise ValueError("mz and intensity must be 1-D arrays of equal length")
    if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0 or offsets[-1] != mz.size:
        raise ValueError("offsets must be 1-D, start at 0 and end at len(mz)")
    check_score_parameters(0.0, mz_power, intensity_power)
    return weights_and_norms(mz, intensity, offsets, float(mz_power), float(intensity_power))


@njit(cache=True)
def _pair_kernel(mzA, wA, nA, pA, mzB, wB, nB, pB, tol, modified):  # pragma: no cover
    na = mzA.shape[0]
    nb = mzB.shape[0]
    sp, si, sj, ua, ub = new_scratch(max(na, nb))
    if modified:
        raw, nm = modified_core(mzA, wA, 0, na, pA, mzB, wB, 0, nb, pB, tol, sp, si, sj, ua, ub)
    else:
        raw, nm = cosine_core(mzA, wA, 0, na, mzB, wB, 0, nb, tol, sp, si, sj, ua, ub)
    if nm == 0:
        return 0.0, 0
    return raw / (nA * nB), nm


def _pair(mz1, int1, p1, mz2, int2, p2, tolerance, mz_power, intensity_power, modified):
    check_score_parameters(tolerance, mz_power, intensity_power)
    mz1, int1 = _peaks(mz1, int1, "spectrum 1")
    mz2, int2 = _peaks(mz2, int2, "spectrum 2")
    w1, n1 = weights_and_norms(
        mz1, int1, np.array([0, mz1.size], dtype=np.int64), float(mz_power), float(intensity_power)
    )
    w2, n2 = weights_and_norms(
        mz2, int2, np.array([0, mz2.size], dtype=np.int64), float(mz_power), float(intensity_power)
    )
    s, m = _pair_kernel(
        mz1, w1, n1[0], float(p1), mz2, w2, n2[0], float(p2), float(tolerance), modified
    )
    return float(s), int(m)


def cosine_greedy_pair(
    mz1: np.ndarray,
    int1: np.ndarray,
    mz2: np.ndarray,
    int2: np.ndarray,
    *,
    tolerance: float = 0.1,
    mz_power: float = 0.0,
    intensity_power: float = 1.0,
) -> tuple[float, int]:
    """Greedy cosine of two spectra, equal to matchms ``CosineGreedy().pair(s1, s2)``.

    Parameters
    ----------
    mz1, int1 : array_like of float
        Peaks of the first spectrum (matchms ``reference``), m/z sorted ascending.
    mz2, int2 : array_like of float
        Peaks of the second spectrum (matchms ``query``), m/z sorted ascending.
    tolerance : float, optional
        Peaks match when ``|mz1 - mz2| <= tolerance`` (Da), evaluated as matchms does.
    mz_power, intensity_power : float, optional
        Weight exponents: ``w = mz ** mz_power * intensity ** intensity_power``.

    Returns
    -------
    score : float
        Sum of the greedily taken products over ``||w1|| * ||w2||``.
    matches : int
        Number of matched peak pairs.

    Raises
    ------
    ValueError
        If the arrays are not 1-D, differ in length, are unsorted or not finite.
    """
    return _pair(mz1, int1, np.nan, mz2, int2, np.nan, tolerance, mz_power, intensity_power, False)


def modified_cosine_pair(
    mz1: np.ndarray,
    int1: np.ndarray,
    precursor_mz1: float,
    mz2: np.ndarray,
    int2: np.ndarray,
    precursor_mz2: float,
    *,
    tolerance: float = 0.1,
    mz_power: float = 0.0,
    intensity_power: float = 1.0,
) -> tuple[float, int]:
    """Greedy modified cosine, equal to matchms ``ModifiedCosineGreedy().pair(s1, s2)``.

    Candidates are the zero-shift matches followed by the matches after adding
    ``shift = precursor_mz1 - precursor_mz2`` to the m/z of spectrum 2; when
    ``|shift| <= tolerance`` it is the plain greedy cosine.

    Parameters
    ----------
    mz1, int1 : array_like of float
        Peaks of the first spectrum (matchms ``reference``), m/z sorted ascending.
    precursor_mz1 : float
        Precursor m/z of the first spectrum.
    mz2, int2 : array_like of float
        Peaks of the second spectrum (matchms ``query``), m/z sorted ascending.
    precursor_mz2 : float
        Precursor m/z of the second spectrum.
    tolerance : float, optional
        Peak m/z tolerance in Da.
    mz_power, intensity_power : float, optional
        Weight exponents.

    Returns
    -------
    score : float
        Modified cosine score.
    matches : int
        Number of matched peak pairs.

    Raises
    ------
    ValueError
        On malformed peaks, or a precursor m/z that is not a finite positive
        number (matchms refuses those too).
    """
    for name, p in (("precursor_mz1", precursor_mz1), ("precursor_mz2", precursor_mz2)):
        if not (np.isfinite(p) and p > 0):
            raise ValueError(f"{name} must be a finite positive number, got {p!r}")
    return _pair(
        mz1,
        int1,
        precursor_mz1,
        mz2,
        int2,
        precursor_mz2,
        tolerance,
        mz_power,
        intensity_power,
        True,
    )
