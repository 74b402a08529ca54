"""Peak filters: small pure functions over a library's CSR arrays.

Each filter takes a :class:`~engine.library.SpectrumLibrary` and returns a new
one (via :meth:`SpectrumLibrary.with_peaks`); none loops over spectra in
Python.  Spectra are never dropped, so indexes stay stable: a spectrum that
loses all its peaks keeps zero peaks, and scores against it are 0.  Peaks stay
sorted by m/z.
"""

from __future__ import annotations

import numba
import numpy as np

from engine.kernels.entropy import clean_spectra
from engine.kernels.peak_window import window_scan
from engine.library import SpectrumLibrary

__all__ = [
    "centroid",
    "keep_top_k",
    "normalize_intensity",
    "relative_intensity_threshold",
    "remove_precursor_peaks",
    "scale_intensity",
    "select_mz_range",
    "window_filter",
]


# -- helpers ----------------------------------------------------------------------------
def _segments(lib: SpectrumLibrary) -> np.ndarray:
    """Spectrum index of every peak."""
    return np.repeat(np.arange(len(lib), dtype=np.int64), lib.peak_counts)


def _keep(lib: SpectrumLibrary, mask: np.ndarray) -> SpectrumLibrary:
    """Keep the peaks where ``mask`` is True."""
    if mask.all():
        return lib
    kept = np.bincount(_segments(lib)[mask], minlength=len(lib))
    offsets = np.zeros(len(lib) + 1, dtype=np.int64)
    np.cumsum(kept, out=offsets[1:])
    return lib.with_peaks(lib.mz[mask], lib.intensity[mask], offsets)


def _spectrum_max(lib: SpectrumLibrary) -> np.ndarray:
    """Largest intensity of each spectrum (0 for spectra without peaks)."""
    out = np.zeros(len(lib), dtype=np.float64)
    counts = lib.peak_counts
    nonempty = counts > 0
    if nonempty.any():
        out[nonempty] = np.maximum.reduceat(lib.intensity, lib.offsets[:-1][nonempty])
    return out


# -- filters ----------------------------------------------------------------------------
def select_mz_range(
    lib: SpectrumLibrary, min_mz: float = 0.0, max_mz: float = np.inf
) -> SpectrumLibrary:
    """Keep peaks with ``min_mz <= m/z <= max_mz``.

    Parameters
    ----------
    lib : SpectrumLibrary
        Input library.
    min_mz, max_mz : float
        Inclusive m/z bounds.

    Returns
    -------
    SpectrumLibrary
    """
    if min_mz > max_mz:
        raise ValueError(f"min_mz ({min_mz}) must not exceed max_mz ({max_mz})")
    return _keep(lib, (lib.mz >= min_mz) & (lib.mz <= max_mz))


def remove_precursor_peaks(lib: SpectrumLibrary, tolerance: float = 17.0) -> SpectrumLibrary:
    """Remove peaks with ``|m/z - precursor m/z| <= tolerance``.

    Parameters
    ----------
    lib : SpectrumLibrary
        Input library.
    tolerance : float, default 17.0
        Half-width of the removed window, in Da.  Spectra with unknown (NaN)
        precursor m/z are left as they are.

    Returns
    -------
    SpectrumLibrary
    """
    if tolerance < 0:
        raise ValueError("tolerance must be >= 0")
    precursor = lib.precursor_mz[_segments(lib)]
    near = np.abs(lib.mz - precursor) <= tolerance  # False where precursor is NaN
    return _keep(lib, ~near)


def relative_intensity_threshold(
    lib: SpectrumLibrary, min_relative: float = 0.01
) -> SpectrumLibrary:
    """Drop peaks below ``min_relative`` times their spectrum's largest intensity.

    Parameters
    ----------
    lib : SpectrumLibrary
        Input library.
    min_relative : float, default 0.01
        Fraction of the base peak; peaks with ``intensity >= min_relative * max``
        are kept.

    Returns
    -------
    SpectrumLibrary
    """
    if not 0 <= min_relative <= 1:
        raise ValueError("min_relative must be in [0, 1]")
    threshold = (_spectrum_max(lib) * min_relative)[_segments(lib)]
    return _keep(lib, lib.intensity >= threshold)


def keep_top_k(lib: SpectrumLibrary, k: int) -> SpectrumLibrary:
    """Keep each spectrum's ``k`` most intense peaks (output stays m/z-sorted).

    Parameters
    ----------
    lib : SpectrumLibrary
        Input library.
    k : int
        Peaks kept per spectrum (>= 0).  Ties in intensity go to the lower m/z
        (then to the earlier peak), so the result is deterministic.

    Returns
    -------
    SpectrumLibrary
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    seg = _segments(lib)
    order = np.lexsort((np.arange(lib.n_peaks), lib.mz, -lib.intensity, seg))
    rank = np.arange(lib.n_peaks) - lib.offsets[seg[order]]
    mask = np.zeros(lib.n_peaks, dtype=bool)
    mask[order[rank < k]] = True
    return _keep(lib, mask)


@numba.njit(cache=True)
def _window_mask(mz, intensity, offsets, k, window):  # pragma: no cover - numba
    keep = np.ones(mz.shape[0], dtype=np.bool_)
    for s in range(offsets.shape[0] - 1):
        start = offsets[s]
        window_scan(mz, intensity, start, offsets[s + 1] - start, k, window, keep[start:])
    return keep


def window_filter(lib: SpectrumLibrary, k: int = 6, window: float = 50.0) -> SpectrumLibrary:
    """GNPS window filter: keep a peak if it is among the ``k`` most intense within ``±window`` Da.

    Parameters
    ----------
    lib : SpectrumLibrary
        Input library.
    k : int, default 6
        Peaks allowed above a kept peak in its window, exclusive: a peak is kept
        when fewer than ``k`` peaks of its window are more intense (equal
        intensities: the lower m/z counts as more intense).
    window : float, default 50.0
        Half-width of the window around each peak, in Da.

    Returns
    -------
    SpectrumLibrary
    """
    if k < 0 or window < 0:
        raise ValueError("k and window must be >= 0")
    mask = _window_mask(lib.mz, lib.intensity, lib.offsets, int(k), float(window))
    return _keep(lib, mask)


def scale_intensity(lib: SpectrumLibrary, method: str = "sqrt") -> SpectrumLibrary:
    """Transform intensities.

    Parameters
    ----------
    lib : SpectrumLibrary
        Input library.
    method : {"sqrt", "log", "none"}, default "sqrt"
        ``sqrt``: square root; ``log``: ``log1p`` (natural log of 1 + intensity,
        which stays > 0 for every positive intensity); ``none``: unchanged.

    Returns
    -------
    SpectrumLibrary
    """
    if method == "none":
        return lib
    if method == "sqrt":
        intensity = np.sqrt(lib.intensity)
    elif method == "log":
        intensity = np.log1p(lib.intensity)
    else:
        raise ValueError(f"method must be 'sqrt', 'log' or 'none', not {method!r}")
    return lib.with_peaks(lib.mz, intensity, lib.offsets)


def normalize_intensity(lib: SpectrumLibrary) -> SpectrumLibrary:
    """Scale each spectrum so its largest intensity is 1 (as matchms ``normalize_intensities``).

    Cosine scores do not change; this makes intensities comparable in plots
    and in thresholds applied afterwards.

    Parameters
    ----------
    lib : SpectrumLibrary
        Input library.

    Returns
    -------
    SpectrumLibrary
    """
    maxima = _spectrum_max(lib)[_segments(lib)]
    return lib.with_peaks(lib.mz, lib.intensity / maxima, lib.offsets)


def centroid(lib: SpectrumLibrary, width: float = 0.05) -> SpectrumLibrary:
    """Merge the points of profile-mode (not centroided) spectra into centroids.

    The most intense peak absorbs every peak within ``width`` Da and takes their
    summed intensity at their intensity-weighted m/z; repeated until no two
    peaks are closer than ``width``.  This is ms_entropy's centroiding (its
    ``clean_spectrum`` with no noise cut; m/z rounded to float32 as there, under
    0.00004 Da up to m/z 1000).  Off by default: centroided spectra stay as in
    the file, so their scores equal matchms' and ms_entropy's.

    Parameters
    ----------
    lib : SpectrumLibrary
        Input library.
    width : float, default 0.05
        Peaks this close (Da) are one peak; ms_entropy's default.

    Returns
    -------
    SpectrumLibrary
        Intensities in the file's units (each spectrum's total is kept).
    """
    if not width >= 0:
        raise ValueError(f"width must be >= 0, not {width!r}")
    mz, share, offsets = clean_spectra(
        lib.mz, lib.intensity, lib.offsets, noise=0.0, min_difference=float(width)
    )
    totals = np.zeros(len(lib), dtype=np.float64)
    counts = lib.peak_counts
    nonempty = counts > 0
    if nonempty.any():
        totals[nonempty] = np.add.reduceat(lib.intensity, lib.offsets[:-1][nonempty])
    segments = np.repeat(np.arange(len(lib), dtype=np.int64), np.diff(offsets))
    return lib.with_peaks(mz, share * totals[segments], offsets)
