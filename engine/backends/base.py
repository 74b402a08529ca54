"""What every backend shares: spectra as the kernels read them, a batch, the interface."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TypeVar

import numpy as np

from engine.hits import HitTable
from engine.kernels import (
    ENTROPY,
    SearchOptions,
    SpectrumSet,
    clean_spectra,
    entropy_weights,
    float32_tolerance,
    prepare_weights,
)
from engine.kernels.spectrum_set import read_only
from engine.library import SpectrumLibrary, spectra_peaks
from engine.memo import derived, nbytes
from engine.params import SearchParameters
from engine.preprocess import pipeline_from_spec

__all__ = [
    "ENTROPY_PRECURSOR_REMOVAL",
    "Backend",
    "Batch",
    "PreparedSpectra",
    "preparation_key",
    "score_kind",
    "score_tolerance",
    "search_options",
]

T = TypeVar("T")

#: Entropy search removes peaks above the precursor m/z minus this (Da), as Flash does.
ENTROPY_PRECURSOR_REMOVAL = 1.6


@dataclass(frozen=True, eq=False)
class PreparedSpectra:
    """Spectra reduced to what the kernels read: CSR peaks, weights, norms, precursors.

    Attributes
    ----------
    mz : ndarray of float64
    weight : ndarray of float64
        ``mz**mz_power * intensity**intensity_power`` per peak.
    offsets : ndarray of int64
    norm : ndarray of float64
        Euclidean norm of each spectrum's weights.
    precursor_mz : ndarray of float64
    mz_power, intensity_power : float
        The powers the weights were made with.
    index : ndarray of int64 or None
        Original index of each spectrum when the set was reordered (None: ``0..n-1``);
        kernels rank equal scores by it.
    polarity : ndarray of int8 or None
        Ion mode of each spectrum (+1, -1, 0 unknown; None: all unknown).
    preparation : tuple or None
        :func:`preparation_key` of the parameters :meth:`for_search` prepared the
        set with (None: made otherwise).
    """

    mz: np.ndarray
    weight: np.ndarray
    offsets: np.ndarray
    norm: np.ndarray
    precursor_mz: np.ndarray
    mz_power: float
    intensity_power: float
    index: np.ndarray | None = None
    polarity: np.ndarray | None = None
    preparation: tuple | None = None

    @classmethod
    def from_library(
        cls, library: SpectrumLibrary, *, mz_power: float = 0.0, intensity_power: float = 1.0
    ) -> PreparedSpectra:
        """Compute weights and norms of ``library``'s peaks."""
        weight, norm = prepare_weights(
            library.mz, library.intensity, library.offsets, mz_power, intensity_power
        )
        return cls(
            mz=np.ascontiguousarray(library.mz, dtype=np.float64),
            weight=weight,
            offsets=np.ascontiguousarray(library.offsets, dtype=np.int64),
            norm=norm,
            precursor_mz=np.ascontiguousarray(library.precursor_mz, dtype=np.float64),
            mz_power=mz_power,
            intensity_power=intensity_power,
            polarity=library.polarity(),
        )

    @classmethod
    def for_entropy(
        cls, library: SpectrumLibrary, *, tolerance: float = 0.02, weighted: bool = True
    ) -> PreparedSpectra:
        """Peaks cleaned as Flash entropy search cleans them, (entropy-)weighted.

        ms_entropy's ``clean_spectrum_for_search``: peaks above the precursor
        m/z - 1.6 Da removed, peaks within ``max(0.05, 2 * tolerance)`` Da
        merged, 1 % noise removed, intensities summing to 1; then ms_entropy's
        entropy weights when ``weighted``.  The norm is 1 (0 for a spectrum left
        without peaks, which never matches).
        """
        mz, intensity, offsets = clean_spectra(
            library.mz, library.intensity, library.offsets,
            library.precursor_mz - ENTROPY_PRECURSOR_REMOVAL,
            min_difference=max(0.05, 2.0 * tolerance),
        )  # fmt: skip
        weight = entropy_weights(intensity, offsets) if weighted else intensity
        return cls(
            mz=mz,
            weight=weight,
            offsets=offsets,
            norm=(np.diff(offsets) > 0).astype(np.float64),
            precursor_mz=np.ascontiguousarray(library.precursor_mz, dtype=np.float64),
            mz_power=0.0,
            intensity_power=1.0,
            polarity=library.polarity(),
        )

    @classmethod
    def for_search(
        cls, library: SpectrumLibrary | PreparedSpectra, params: SearchParameters
    ) -> PreparedSpectra:
        """``library`` preprocessed and weighted as ``params`` ask (one per search side).

        Built once per library object and preparation (see :func:`preparation_key`)
        and reused by later searches, which then also reuse everything derived
        from it (precursor order, pruning indexes, GPU copies).  Spectra this
        method prepared before for the same preparation are returned as they are
        (a caller may keep them without the library's raw peaks).

        Raises
        ------
        ValueError
            ``library`` is a prepared set made for other parameters.
        """
        key = preparation_key(params)
        if isinstance(library, PreparedSpectra):
            if library.preparation != key:
                raise ValueError(
                    f"spectra prepared for {library.preparation} cannot be searched with {key}"
                )
            return library
        budget = 2 * (library.mz.nbytes + library.intensity.nbytes) + (1 << 20)
        return derived(
            library,
            key,
            lambda: replace(cls._prepare(library, params), preparation=key),
            budget=budget,
        )

    @classmethod
    def _prepare(cls, library: SpectrumLibrary, params: SearchParameters) -> PreparedSpectra:
        library = pipeline_from_spec(params.preprocess)(library)
        if params.entropy:
            return cls.for_entropy(
                library, tolerance=params.tolerance, weighted=params.score == "entropy"
            )
        return cls.from_library(
            library, mz_power=params.mz_power, intensity_power=params.intensity_power
        )

    def derived(self, key: Hashable, build: Callable[[], T]) -> T:
        """A structure built once from these spectra (precursor order, pruning index)."""
        return derived(self, key, build, budget=3 * nbytes(self) + (1 << 20))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def spectrum_set(self) -> SpectrumSet:
        """The arrays the kernels read, as one tuple of read-only views (one signature)."""
        arrays = (self.mz, self.weight, self.offsets, self.norm, self.precursor_mz, self.ranks,
                  self.polarities)  # fmt: skip
        return SpectrumSet(*(read_only(a) for a in arrays))

    @cached_property
    def ranks(self) -> np.ndarray:
        """Original index of each spectrum (``index``, or ``0..n-1``)."""
        if self.index is not None:
            return self.index
        return np.arange(len(self), dtype=np.int64)

    @cached_property
    def polarities(self) -> np.ndarray:
        """Ion mode of each spectrum (``polarity``, or all unknown)."""
        if self.polarity is not None:
            return np.ascontiguousarray(self.polarity, dtype=np.int8)
        return np.zeros(len(self), dtype=np.int8)

    def reordered(self, order: np.ndarray) -> PreparedSpectra:
        """The same spectra in the order ``order`` (a permutation)."""
        offsets, take = spectra_peaks(self.offsets, order)
        return replace(
            self, mz=self.mz[take], weight=self.weight[take], offsets=offsets,
            norm=self.norm[order], precursor_mz=self.precursor_mz[order],
            index=self.ranks[order], polarity=self.polarities[order],
        )  # fmt: skip

    def with_index(self, index: np.ndarray) -> PreparedSpectra:
        """The same spectra, ranked on ties by ``index`` (e.g. global library indexes)."""
        return replace(self, index=np.ascontiguousarray(index, dtype=np.int64))


def preparation_key(params: SearchParameters) -> tuple:
    """What :meth:`PreparedSpectra.for_search` depends on in ``params``."""
    if params.entropy:
        return ("entropy", params.preprocess, params.score, max(0.05, 2.0 * params.tolerance))
    return ("weights", params.preprocess, params.mz_power, params.intensity_power)


def search_options(params: SearchParameters) -> SearchOptions:
    """The kernels' options tuple of ``params`` (built once per batch run)."""
    return SearchOptions(
        tolerance=score_tolerance(params),
        kind=score_kind(params),
        precursor_tolerance=float(params.precursor_tolerance or 0.0),
        ppm=params.precursor_unit == "ppm",
        min_matches=max(1, int(params.min_matches)),
        threshold=float(params.threshold),
        top_n=int(params.top_n),
        same_polarity=bool(params.match_ion_mode),
    )


def score_kind(params: SearchParameters) -> int:
    """The kernels' score kind of ``params.score``."""
    return ENTROPY if params.entropy else int(params.modified)


def score_tolerance(params: SearchParameters) -> float:
    """The fragment tolerance as the kernels compare it (float32 for entropy, as ms_entropy)."""
    if params.entropy:
        return float32_tolerance(params.tolerance)
    return float(params.tolerance)


@dataclass(frozen=True)
class Batch:
    """One block of work: queries ``[q_start, q_stop)`` × library ``[l_start, l_stop)``."""

    q_start: int
    q_stop: int
    l_start: int
    l_stop: int

    @property
    def pairs(self) -> int:
        """Number of spectrum pairs in the batch."""
        return (self.q_stop - self.q_start) * (self.l_stop - self.l_start)


class Backend(ABC):
    """Where batches are scored.

    Subclasses implement :meth:`score_batch` and :meth:`dense`; a backend that can
    overlap transfers and compute overrides :meth:`run_batches`.
    """

    #: Short name: ``"cpu"`` or ``"cuda"``.
    name: str = ""

    @property
    @abstractmethod
    def device(self) -> str:
        """The device in words, e.g. ``"CPU, 2 threads"`` or ``"NVIDIA H100 80GB HBM3"``."""

    @abstractmethod
    def score_batch(
        self,
        queries: PreparedSpectra,
        library: PreparedSpectra,
        batch: Batch,
        params: SearchParameters,
    ) -> HitTable:
        """Hits of one batch: matches >= max(1, min_matches), score >= threshold,
        each query's ``top_n`` best when ``top_n > 0``.  Indexes refer to
        ``queries`` and ``library`` as given."""

    @abstractmethod
    def dense(
        self, queries: PreparedSpectra, library: PreparedSpectra, params: SearchParameters
    ) -> tuple[np.ndarray, np.ndarray]:
        """Full ``(scores, matches)`` matrices of a small block (heatmaps)."""

    #: Pairs a batch costs even when it scores none (launch, transfer, merge): a
    #: precursor-windowed search groups queries into blocks wasting at most about this.
    block_overhead_pairs: int = 1 << 16

    def block_shape(self, batch_size: int, top_n: int = 0) -> tuple[int, int]:
        """Queries and library spectra per batch for a requested ``batch_size``.

        ``top_n`` is the search's (0: every hit is kept, so a batch's hits are
        bounded only by its size).  Square ``batch_size`` × ``batch_size`` batches
        by default.
        """
        return batch_size, batch_size

    def memory_free(self) -> float:
        """Free bytes of this backend's device for resident libraries (inf: the host's)."""
        return math.inf

    def make_resident(  # noqa: B027 - optional hook
        self, library: PreparedSpectra, batches: Iterable[Batch], params: SearchParameters
    ) -> None:
        """Build what every search of ``library`` reuses on this device (nothing here).

        A backend that keeps a library on its device (the GPU copy, the device
        peak indexes of ``batches``' tiles) does that work here, once, so that
        callers who time tasks (the Dask cost model) do not count it as the cost
        of scoring pairs.  A search that finds this work undone does it as it goes.
        """

    def run_batches(
        self,
        queries: PreparedSpectra,
        library: PreparedSpectra,
        batches: Iterable[Batch],
        params: SearchParameters,
        across_batches: bool = False,
    ) -> Iterator[tuple[Batch, HitTable]]:
        """Score batches in order, yielding each with its hits.

        The caller may stop iterating at any time (cancellation).  With
        ``across_batches`` the caller merges the hits of all batches per query
        (top-N of their union), so a backend may report a query's hits with any
        of its batches, e.g. only its final top-N with the last one.
        """
        for batch in batches:
            yield batch, self.score_batch(queries, library, batch, params)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release device resources (resident libraries, streams)."""
