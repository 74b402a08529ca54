"""Pipelines compiled into one fused pass over the peaks (:mod:`engine.kernels.peak_filters`).

:func:`compile_plan` turns a pipeline's steps into a :class:`FusedPlan`: runs of
steps the kernel knows become one kernel segment (step codes and float
parameters); a step it does not know (``scale_intensity(method="log")``:
numpy's ``log1p`` may round differently from the C library's, so the filter
itself runs) stays a call of its filter.  Steps whose parameters the filter
would refuse, or that the plan cannot hold exactly, make :func:`compile_plan`
return None, and the pipeline runs step by step, as the filters do (raising
their errors).  The fused result equals the step-by-step one bit for bit.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from engine.kernels.peak_filters import (
    KEEP_TOP_K,
    MZ_RANGE,
    NORMALIZE,
    PRECURSOR,
    RELATIVE,
    SQRT,
    WINDOW,
    filter_peaks,
)
from engine.library import SpectrumLibrary

__all__ = ["FusedPlan", "KernelSegment", "compile_plan", "fusable", "run_plan"]

#: Larger counts mean "every peak" (and stay exact as float64 plan parameters).
_MAX_COUNT = 2**53


@dataclass(frozen=True)
class KernelSegment:
    """Steps applied by one call of the fused kernel: codes and ``(p0, p1)`` parameters."""

    codes: tuple[int, ...]
    params: tuple[tuple[float, float], ...]


#: A plan segment: fused steps, or a filter applied as it is (a library in, a library out).
Segment = KernelSegment | Callable[[SpectrumLibrary], SpectrumLibrary]


@dataclass(frozen=True)
class FusedPlan:
    """A pipeline as kernel segments and filter calls, applied in order by :func:`run_plan`."""

    segments: tuple[Segment, ...]


class _NotFusable(Exception):
    """The step runs only as its filter does (bad or unusual parameters)."""


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise _NotFusable
    number = float(value)
    if math.isnan(number):
        raise _NotFusable
    return number


def _count(value: object) -> int:
    """A whole number >= 0, as ``keep_top_k`` takes ``k`` (``rank < k``)."""
    number = _number(value)
    if not isinstance(value, Integral) and not number.is_integer():
        raise _NotFusable
    if number < 0:
        raise _NotFusable
    return min(int(value), _MAX_COUNT)


def _window_count(value: object) -> int:
    """``window_filter``'s ``int(k)`` after its ``k >= 0`` check."""
    number = _number(value)
    if number < 0 or math.isinf(number):
        raise _NotFusable
    return min(int(value), _MAX_COUNT)


def _codes(name: str, p: Mapping[str, object]) -> list[tuple[int, float, float]] | None:
    """Kernel steps of one filter (``[]``: it changes nothing; None: run the filter itself)."""
    if name == "centroid":
        return None  # ms_entropy's centroiding kernel, a segment of its own
    if name == "select_mz_range":
        lo, hi = _number(p["min_mz"]), _number(p["max_mz"])
        if lo > hi:
            raise _NotFusable
        return [(MZ_RANGE, lo, hi)]
    if name == "remove_precursor_peaks":
        tolerance = _number(p["tolerance"])
        if tolerance < 0:
            raise _NotFusable
        return [(PRECURSOR, tolerance, 0.0)]
    if name == "relative_intensity_threshold":
        fraction = _number(p["min_relative"])
        if not 0 <= fraction <= 1:
            raise _NotFusable
        return [(RELATIVE, fraction, 0.0)]
    if name == "keep_top_k":
        return [(KEEP_TOP_K, float(_count(p["k"])), 0.0)]
    if name == "window_filter":
        window = _number(p["window"])
        if window < 0:
            raise _NotFusable
        return [(WINDOW, float(_window_count(p["k"])), window)]
    if name == "scale_intensity":
        method = p["method"]
        if method == "none":
            return []
        if method == "sqrt":
            return [(SQRT, 0.0, 0.0)]
        if method == "log":
            return None
        raise _NotFusable
    if name == "normalize_intensity":
        return [(NORMALIZE, 0.0, 0.0)]
    raise _NotFusable


@functools.cache
def _defaults(function: Callable) -> tuple[dict[str, object], frozenset[str]]:
    """Keyword defaults of a filter and the names of all its parameters (after the library)."""
    parameters = list(inspect.signature(function).parameters.values())[1:]
    defaults = {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}
    return defaults, frozenset(p.name for p in parameters)


def compile_plan(
    steps: Sequence, filters: Mapping[str, Callable[..., SpectrumLibrary]]
) -> FusedPlan | None:
    """The fused plan of a pipeline's steps, or None where it must run step by step.

    Parameters
    ----------
    steps : sequence of Step
        Each with ``name`` (a key of ``filters``) and ``params`` (keywords).
    filters : mapping of str to callable
        The filters by name (:data:`engine.preprocess.FILTERS`).

    Returns
    -------
    FusedPlan or None
        None when a step names an unknown filter or parameter, lacks a required
        one, or has values its filter would refuse (the step-by-step path then
        raises the filter's error).
    """
    segments: list[Segment] = []
    run: list[tuple[int, float, float]] = []
    try:
        for step in steps:
            function = filters.get(step.name)
            if function is None:
                return None
            defaults, known = _defaults(function)
            if not set(step.params) <= known:
                return None
            values = {**defaults, **step.params}
            if set(values) != known:
                return None
            codes = _codes(step.name, values)
            if codes is None:
                if run:
                    segments.append(_segment(run))
                    run = []
                segments.append(functools.partial(function, **step.params))
            else:
                run.extend(codes)
    except _NotFusable:
        return None
    if run:
        segments.append(_segment(run))
    return FusedPlan(tuple(segments))


def _segment(run: list[tuple[int, float, float]]) -> KernelSegment:
    return KernelSegment(tuple(c for c, _, _ in run), tuple((a, b) for _, a, b in run))


def fusable(lib: SpectrumLibrary) -> bool:
    """Whether the fused kernel reproduces the filters on ``lib``: float64 peaks, int64 offsets.

    Readers always build such libraries; peaks of other types (a library made
    by hand) keep their type through the filters, so they go step by step.
    """
    return (
        lib.mz.dtype == np.float64
        and lib.intensity.dtype == np.float64
        and lib.offsets.dtype == np.int64
    )


def run_plan(plan: FusedPlan, lib: SpectrumLibrary) -> SpectrumLibrary:
    """Apply a plan of :func:`compile_plan` to a library.

    Parameters
    ----------
    plan : FusedPlan
    lib : SpectrumLibrary

    Returns
    -------
    SpectrumLibrary
        The same spectra (metadata, precursors, order) with filtered peaks;
        ``lib`` itself when the plan is empty.
    """
    for segment in plan.segments:
        if isinstance(segment, KernelSegment):
            mz, intensity, offsets = filter_peaks(
                lib.mz,
                lib.intensity,
                lib.offsets,
                lib.precursor_mz,
                np.array(segment.codes, dtype=np.int64),
                np.array(segment.params, dtype=np.float64).reshape(-1, 2),
            )
            lib = lib.with_peaks(mz, intensity, offsets)
        else:
            lib = segment(lib)
    return lib
