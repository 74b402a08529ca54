"""What the kernels take: spectrum sets, search options and scratch buffers as tuples.

A :class:`SpectrumSet` is one CSR set of spectra (every array a kernel reads),
:class:`SearchOptions` the filters of a search, built once by the caller; both are
``NamedTuple``\\ s, which numba passes into ``@njit(parallel=True)`` kernels as
typed tuples, so a kernel takes two sets and one options tuple instead of a dozen
loose arrays.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba.core import types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from engine.kernels.jit import nopython_helper

__all__ = [
    "COSINE",
    "ENTROPY",
    "MODIFIED_COSINE",
    "SCRATCH_SIZE",
    "Scratch",
    "SearchOptions",
    "SpectrumSet",
    "checked_block",
    "longest_in_block",
    "longest_spectrum",
    "new_scratch",
    "pair_allowed",
    "precursor_ok",
    "read_only",
    "read_only_view",
    "spectrum_set",
]

#: Score kinds (``SearchOptions.kind``): greedy cosine, modified cosine, entropy similarity.
COSINE, MODIFIED_COSINE, ENTROPY = 0, 1, 2

#: Candidates a component may have to be resolved in the fixed scratch buffers.
SCRATCH_SIZE = 64


class SpectrumSet(NamedTuple):
    """Spectra in CSR form, as the kernels read them.

    Attributes
    ----------
    mz : ndarray of float64
        Peak m/z, sorted ascending within each spectrum.
    weight : ndarray of float64
        Peak weights (:func:`~engine.kernels.prepare_weights`).
    offsets : ndarray of int64 (int32 on the GPU)
        Spectrum ``s`` owns peaks ``offsets[s]:offsets[s + 1]``.
    norm : ndarray of float64
        Euclidean norm of each spectrum's weights.
    precursor_mz : ndarray of float64
        Precursor m/z of each spectrum (NaN when unknown).
    index : ndarray of int64, optional
        Original index of each spectrum (a set may be reordered, e.g. by
        precursor m/z); hits with equal scores are ranked by it, so a query's
        top-N is the same in any order.  None (the default) means ``0..n-1``;
        :func:`spectrum_set` fills it in.
    polarity : ndarray of int8, optional
        Ion mode of each spectrum: +1 positive, -1 negative, 0 unknown (matches
        either).  None means all unknown; :func:`spectrum_set` fills it in.
    """

    mz: np.ndarray
    weight: np.ndarray
    offsets: np.ndarray
    norm: np.ndarray
    precursor_mz: np.ndarray
    index: np.ndarray | None = None
    polarity: np.ndarray | None = None


class SearchOptions(NamedTuple):
    """The filters of a search, as the kernels read them.

    Attributes
    ----------
    tolerance : float
        Fragment m/z tolerance (Da).
    kind : int
        :data:`COSINE` (0), :data:`MODIFIED_COSINE` (1; ``True`` reads as 1) or
        :data:`ENTROPY` (2: spectral entropy similarity of cleaned peaks, whose
        ``weight`` are the (entropy-weighted) intensities summing to 1).
    precursor_tolerance : float
        Precursor window when > 0 (Da, or ppm of the query precursor with ``ppm``).
    ppm : bool
        ``precursor_tolerance`` is in ppm.
    min_matches : int
        Hits need at least this many matched peaks (at least 1).
    threshold : float
        Hits need at least this score.
    top_n : int
        Keep each query's ``top_n`` best hits (all when 0).
    same_polarity : bool
        Skip pairs of opposite ion modes (an unknown mode matches either).
    """

    tolerance: float = 0.1
    kind: int = COSINE
    precursor_tolerance: float = 0.0
    ppm: bool = False
    min_matches: int = 1
    threshold: float = 0.0
    top_n: int = 0
    same_polarity: bool = False


class Scratch(NamedTuple):
    """Per-thread buffers of the greedy cores (candidate products and indexes, used flags)."""

    products: np.ndarray
    first: np.ndarray
    second: np.ndarray
    used_a: np.ndarray
    used_b: np.ndarray


@nopython_helper
def new_scratch(longest):  # pragma: no cover - numba
    """Fresh :class:`Scratch` for spectra of up to ``longest`` peaks."""
    size = max(SCRATCH_SIZE, longest)
    return Scratch(
        np.empty(SCRATCH_SIZE, dtype=np.float64),
        np.empty(SCRATCH_SIZE, dtype=np.int64),
        np.empty(SCRATCH_SIZE, dtype=np.int64),
        np.empty(size, dtype=np.bool_),
        np.empty(size, dtype=np.bool_),
    )


@nopython_helper
def longest_spectrum(offsets, start, stop):  # pragma: no cover - numba
    """Most peaks of one spectrum among ``[start, stop)``."""
    m = 0
    for s in range(start, stop):
        d = offsets[s + 1] - offsets[s]
        if d > m:
            m = d
    return m


@nopython_helper
def longest_in_block(queries, library, q_start, q_stop, l_start, l_stop):  # pragma: no cover
    """Most peaks of one spectrum among queries ``[q_start, q_stop)`` and the library block."""
    return max(
        longest_spectrum(library.offsets, l_start, l_stop),
        longest_spectrum(queries.offsets, q_start, q_stop),
    )


@nopython_helper
def precursor_ok(query_precursor, library_precursor, options):  # pragma: no cover - numba
    """Whether a pair passes the precursor window of ``options`` (always, when it is off)."""
    if options.precursor_tolerance <= 0.0:
        return True
    t = options.precursor_tolerance
    if options.ppm:
        t = t * 1e-6 * query_precursor
    # NaN on either side makes the comparison False: skipped
    return abs(query_precursor - library_precursor) <= t


@nopython_helper
def pair_allowed(q, l, queries, library, options):  # pragma: no cover - numba
    """Whether query ``q`` and library spectrum ``l`` pass the precursor window and ion mode."""
    if options.same_polarity and queries.polarity[q] * library.polarity[l] < 0:
        return False
    return precursor_ok(queries.precursor_mz[q], library.precursor_mz[l], options)


def spectrum_set(
    mz: np.ndarray,
    weight: np.ndarray,
    offsets: np.ndarray,
    norm: np.ndarray,
    precursor_mz: np.ndarray,
    index: np.ndarray | None = None,
    polarity: np.ndarray | None = None,
    name: str = "spectra",
) -> SpectrumSet:
    """A checked, contiguous, read-only :class:`SpectrumSet` (float64, int64 offsets and index).

    Raises
    ------
    ValueError
        When the arrays do not form a CSR set (``name`` says which set).
    """
    mz = np.ascontiguousarray(mz, dtype=np.float64)
    weight = np.ascontiguousarray(weight, dtype=np.float64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    norm = np.ascontiguousarray(norm, dtype=np.float64)
    precursor_mz = np.ascontiguousarray(precursor_mz, dtype=np.float64)
    n = offsets.shape[0] - 1
    if mz.shape != weight.shape or mz.ndim != 1:
        raise ValueError(f"{name}: mz and w must be 1-D arrays of equal length")
    if offsets.ndim != 1 or n < 0 or offsets[0] != 0 or offsets[-1] != mz.shape[0]:
        raise ValueError(f"{name}: offsets must start at 0 and end at len(mz)")
    if norm.shape != (n,) or precursor_mz.shape != (n,):
        raise ValueError(f"{name}: norm and prec must have one value per spectrum")
    if index is None:
        index = np.arange(max(n, 0), dtype=np.int64)
    index = np.ascontiguousarray(index, dtype=np.int64)
    if index.shape != (n,):
        raise ValueError(f"{name}: index must have one value per spectrum")
    if polarity is None:
        polarity = np.zeros(max(n, 0), dtype=np.int8)
    polarity = np.ascontiguousarray(polarity, dtype=np.int8)
    if polarity.shape != (n,):
        raise ValueError(f"{name}: polarity must have one value per spectrum")
    arrays = (mz, weight, offsets, norm, precursor_mz, index, polarity)
    return SpectrumSet(*(read_only(a) for a in arrays))


def read_only(a: np.ndarray) -> np.ndarray:
    """``a``, or a read-only view of it.

    The kernels only read a set, and numba types a read-only array apart from a
    writable one: one kind only keeps each kernel to one compiled signature (a
    library's own arrays are read-only, prepared ones are not).
    """
    if not a.flags.writeable:
        return a
    view = a.view()
    view.flags.writeable = False
    return view


def checked_block(
    spectra: SpectrumSet, start: int, stop: int, name: str
) -> tuple[SpectrumSet, int, int]:
    """``spectra`` checked (:func:`spectrum_set`) with a checked range ``[start, stop)``."""
    spectra = spectrum_set(*spectra, name=name)
    n = spectra.offsets.shape[0] - 1
    start, stop = int(start), int(stop)
    if not 0 <= start <= stop <= n:
        raise ValueError(f"{name}: range [{start}, {stop}) outside [0, {n}]")
    return spectra, start, stop


@intrinsic
def read_only_view(typingctx, array):
    """In compiled code: ``array`` typed read-only (the same data, no copy).

    Arrays built inside a kernel are writable; passed where the kernels also pass
    a set's read-only arrays, they would compile the callee a second time.
    """
    if not isinstance(array, types.Array):
        return None
    sig = array.copy(readonly=True)(array)

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, signature.return_type, args[0])

    return sig, codegen
