"""One pass that checks a library's peaks before any kernel trusts them.

Serial on purpose: it runs whenever a library or cache entry is loaded, also in
processes forked from one that already ran parallel kernels, where GNU OpenMP
(numba's usual threading layer) is not fork-safe.  One pass over 43 M peaks
takes well under a second anyway.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["MZ_INVALID", "INTENSITY_INVALID", "UNSORTED", "peak_problems"]

#: Bits of :func:`peak_problems`' result.
MZ_INVALID, INTENSITY_INVALID, UNSORTED = 1, 2, 4


def peak_problems(mz: np.ndarray, intensity: np.ndarray, offsets: np.ndarray) -> int:
    """Which of the peak rules a CSR peak set breaks, as bits (0: none).

    ``MZ_INVALID``: an m/z that is not finite and >= 0; ``INTENSITY_INVALID``: an
    intensity that is not finite and > 0; ``UNSORTED``: m/z going down within a
    spectrum.  ``offsets`` must already run from 0 to ``len(mz)`` without falling.
    """
    return int(_problems(mz, intensity, offsets))


@njit(cache=True, nogil=True)
def _problems(mz, intensity, offsets):  # pragma: no cover - numba
    found = 0
    for s in range(len(offsets) - 1):
        for p in range(offsets[s], offsets[s + 1]):
            m = mz[p]
            if not (np.isfinite(m) and m >= 0.0):
                found |= 1
            v = intensity[p]
            if not (np.isfinite(v) and v > 0.0):
                found |= 2
            if p > offsets[s] and m < mz[p - 1]:
                found |= 4
    return found
