"""Pipelines of peak filters: named presets and a JSON spec, validated against signatures.

A :class:`Pipeline` chains filters by name; :func:`preset` gives the named
pipelines ``"none"`` (the default: peaks as in the file), ``"gnps"`` and
``"msas"``.  :attr:`SearchParameters.preprocess <engine.SearchParameters>` holds
either a preset name or a pipeline spec in JSON (:func:`pipeline_spec`), read
with :func:`pipeline_from_spec`.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from engine.library import SpectrumLibrary
from engine.preprocess import filters
from engine.preprocess.fused import compile_plan, fusable, run_plan

__all__ = [
    "FILTERS",
    "FILTER_PARAMETERS",
    "PRESETS",
    "FilterParameter",
    "Pipeline",
    "Step",
    "pipeline_from_spec",
    "pipeline_spec",
    "preset",
]


_FILTER_NAMES = (
    "select_mz_range", "remove_precursor_peaks", "relative_intensity_threshold", "keep_top_k",
    "window_filter", "scale_intensity", "normalize_intensity", "centroid",
)  # fmt: skip
#: Filters a :class:`Pipeline` can name (the functions of :mod:`engine.preprocess.filters`).
FILTERS: Mapping[str, Callable[..., SpectrumLibrary]] = MappingProxyType(
    {name: getattr(filters, name) for name in _FILTER_NAMES}
)


#: Libraries with fewer peaks go through the filters one after the other (numpy, ~0.3 s a
#: million peaks): the fused pass is faster but its first call compiles ~8 s of kernels.
FUSED_FROM_PEAKS = 1 << 20


@dataclass(frozen=True)
class Step:
    """One filter of a pipeline: its name in :data:`FILTERS` and keyword parameters."""

    name: str
    params: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name not in FILTERS:
            raise ValueError(f"unknown filter {self.name!r}; known: {', '.join(FILTERS)}")


@dataclass(frozen=True)
class Pipeline:
    """A sequence of filters applied in order.

    Calling a pipeline runs its filters as one fused parallel pass over the
    peaks (:mod:`engine.preprocess.fused`), with the same result, bit for bit,
    as :meth:`reference` (the filters one after the other), which it runs
    instead on libraries of fewer than :data:`FUSED_FROM_PEAKS` peaks.

    Parameters
    ----------
    steps : tuple of Step
        Filters and their parameters.
    name : str, default "custom"
        Label for provenance (exports, reports).

    Examples
    --------
    >>> pipe = Pipeline((Step("remove_precursor_peaks", {"tolerance": 17.0}),
    ...                  Step("scale_intensity", {"method": "sqrt"})))
    >>> processed = pipe(library)  # doctest: +SKIP
    """

    steps: tuple[Step, ...] = ()
    name: str = "custom"

    def __call__(self, lib: SpectrumLibrary) -> SpectrumLibrary:
        plan = compile_plan(self.steps, FILTERS)
        if plan is None or not fusable(lib) or lib.n_peaks < FUSED_FROM_PEAKS:
            return self.reference(lib)
        return run_plan(plan, lib)

    def reference(self, lib: SpectrumLibrary) -> SpectrumLibrary:
        """The filters one after the other: the reference the fused pass equals.

        Calling the pipeline falls back to this where a step's parameters, or
        the library's array types, are not ones the fused pass takes.

        ``lib`` (a SpectrumLibrary) goes through each step in turn; the last
        step's SpectrumLibrary is returned.
        """
        for step in self.steps:
            lib = FILTERS[step.name](lib, **step.params)
        return lib

    def to_dict(self) -> dict:
        """JSON-ready description (for provenance)."""
        return {"name": self.name, "steps": [[s.name, dict(s.params)] for s in self.steps]}

    @classmethod
    def from_dict(cls, data: Mapping) -> Pipeline:
        """Inverse of :meth:`to_dict`."""
        return cls(tuple(Step(n, dict(p)) for n, p in data["steps"]), data.get("name", "custom"))


_PRESETS: dict[str, tuple[Step, ...]] = {
    "none": (),
    "gnps": (
        Step("remove_precursor_peaks", {"tolerance": 17.0}),
        Step("window_filter", {"k": 6, "window": 50.0}),
        Step("scale_intensity", {"method": "sqrt"}),
        Step("normalize_intensity"),
    ),
    "msas": (
        Step("select_mz_range", {"min_mz": 10.0, "max_mz": 1000.0}),
        Step("relative_intensity_threshold", {"min_relative": 0.01}),
        Step("keep_top_k", {"k": 100}),
        Step("scale_intensity", {"method": "sqrt"}),
        Step("normalize_intensity"),
    ),
}

#: Names of the preprocessing presets, ``none`` (peaks as in the file) first.
PRESETS: tuple[str, ...] = tuple(_PRESETS)


def preset(name: str) -> Pipeline:
    """A named pipeline.

    Parameters
    ----------
    name : {"none", "gnps", "msas"}
        - ``"none"``: identity, peaks as in the file (the default everywhere).
        - ``"gnps"``: GNPS-like, as GNPS library search describes its peak
          filtering: remove peaks within 17 Da of the precursor, window filter
          (keep peaks in the top 6 within ±50 Da), square-root intensities, max
          normalised.  It is our reading of GNPS, not checked against GNPS code.
        - ``"msas"``: MSAS-style pipeline, parameters chosen by SimMS (not
          taken verbatim from the MSAS paper): m/z 10–1000, drop peaks under 1%
          of the base peak, top 100 peaks, square-root intensities, max
          normalised.

    Returns
    -------
    Pipeline
    """
    presets = _PRESETS
    if name not in presets:
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(presets)}")
    return Pipeline(presets[name], name)


# -- pipeline specs ------------------------------------------------------------------------
@dataclass(frozen=True)
class FilterParameter:
    """One keyword parameter of a filter, as pipeline specs and editors see it.

    Attributes
    ----------
    name : str
        Keyword of the filter function.
    kind : type
        ``float``, ``int`` or ``str``.
    default : object
        The filter's default (for ``keep_top_k``'s required ``k``: the value a
        new step starts with).
    minimum, maximum : float or None
        Allowed range (inclusive); None: unbounded.
    choices : tuple of str
        Allowed values of a ``str`` parameter.
    """

    name: str
    kind: type
    default: object
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()


#: Parameters of every filter of :data:`FILTERS`, in signature order.
FILTER_PARAMETERS: Mapping[str, tuple[FilterParameter, ...]] = MappingProxyType(
    {
        "select_mz_range": (
            FilterParameter("min_mz", float, 0.0, 0.0),
            FilterParameter("max_mz", float, math.inf, 0.0),
        ),
        "remove_precursor_peaks": (FilterParameter("tolerance", float, 17.0, 0.0),),
        "relative_intensity_threshold": (FilterParameter("min_relative", float, 0.01, 0.0, 1.0),),
        "keep_top_k": (FilterParameter("k", int, 100, 0),),
        "window_filter": (
            FilterParameter("k", int, 6, 0),
            FilterParameter("window", float, 50.0, 0.0),
        ),
        "scale_intensity": (
            FilterParameter("method", str, "sqrt", choices=("sqrt", "log", "none")),
        ),
        "normalize_intensity": (),
        "centroid": (FilterParameter("width", float, 0.05, 0.0),),
    }
)


def _check_value(where: str, spec: FilterParameter, value: object) -> object:
    """``value`` as ``spec.kind``, or a ValueError that names the step and parameter."""
    name = f"{where}: {spec.name}"
    if spec.kind is str:
        if not isinstance(value, str) or value not in spec.choices:
            raise ValueError(f"{name} must be one of {', '.join(spec.choices)}, not {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        what = "an integer" if spec.kind is int else "a number"
        raise ValueError(f"{name} must be {what}, not {value!r}")
    if spec.kind is int:
        if isinstance(value, float) and not value.is_integer():
            raise ValueError(f"{name} must be an integer, not {value!r}")
        value = int(value)
    else:
        value = float(value)
        if math.isnan(value):
            raise ValueError(f"{name} must be a number, not NaN")
    if spec.minimum is not None and value < spec.minimum:
        raise ValueError(f"{name} must be >= {spec.minimum:g}, not {value!r}")
    if spec.maximum is not None and value > spec.maximum:
        raise ValueError(f"{name} must be <= {spec.maximum:g}, not {value!r}")
    return value


def _checked_step(number: int, item: object) -> Step:
    """Step ``number`` (1-based) of a spec: ``[name, {params}]``, ``[name]`` or ``name``."""
    if isinstance(item, str):
        item = [item]
    if not isinstance(item, list | tuple) or not 1 <= len(item) <= 2:
        raise ValueError(
            f"preprocessing step {number} must be [filter name, {{parameters}}], not {item!r}"
        )
    name = item[0]
    params = item[1] if len(item) == 2 else {}
    if not isinstance(name, str) or name not in FILTERS:
        raise ValueError(
            f"preprocessing step {number}: unknown filter {name!r}; known: {', '.join(FILTERS)}"
        )
    where = f"preprocessing step {number} ({name})"
    if not isinstance(params, Mapping):
        raise ValueError(f"{where}: parameters must be a JSON object, not {params!r}")
    known = {p.name: p for p in FILTER_PARAMETERS[name]}
    checked = {}
    for key, value in params.items():
        if key not in known:
            takes = ", ".join(known) or "no parameters"
            raise ValueError(f"{where}: unknown parameter {key!r}; {name} takes {takes}")
        checked[key] = _check_value(where, known[key], value)
    signature = inspect.signature(FILTERS[name])
    for key, p in list(signature.parameters.items())[1:]:
        if p.default is inspect.Parameter.empty and key not in checked:
            raise ValueError(f"{where}: parameter {key!r} is required")
    if name == "select_mz_range":
        lo = checked.get("min_mz", known["min_mz"].default)
        hi = checked.get("max_mz", known["max_mz"].default)
        if lo > hi:
            raise ValueError(f"{where}: min_mz ({lo:g}) must not exceed max_mz ({hi:g})")
    return Step(name, checked)


def pipeline_from_spec(spec: str) -> Pipeline:
    """The pipeline a :attr:`SearchParameters.preprocess` value names.

    Parameters
    ----------
    spec : str
        A preset name (``"none"``, ``"gnps"``, ``"msas"``), or a pipeline in JSON
        as :func:`pipeline_spec` writes it: ``{"name": "custom", "steps":
        [["remove_precursor_peaks", {"tolerance": 17.0}], ["normalize_intensity", {}]]}``
        (a bare list of steps is accepted too; a step may be just its filter name).
        Filter names are those of :data:`FILTERS`; parameters are checked
        against :data:`FILTER_PARAMETERS` (names, types and ranges).

    Returns
    -------
    Pipeline

    Raises
    ------
    ValueError
        Unknown preset, invalid JSON, or a bad step or parameter; the message
        names the step and the parameter.
    """
    if not isinstance(spec, str):
        raise ValueError(f"preprocessing must be a preset name or a JSON spec, not {spec!r}")
    text = spec.strip()
    if not text.startswith(("{", "[")):
        if text in _PRESETS:
            return preset(text)
        raise ValueError(
            f"unknown preprocessing {spec!r}: give a preset ({', '.join(_PRESETS)}) "
            "or a JSON pipeline spec"
        )
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"preprocessing spec is not valid JSON ({exc})") from None
    if isinstance(data, list):
        data = {"steps": data}
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise ValueError('a preprocessing spec needs a list of "steps"')
    unknown = set(data) - {"name", "steps"}
    if unknown:
        raise ValueError(f"preprocessing spec: unknown keys {', '.join(sorted(unknown))}")
    name = data.get("name", "custom")
    if not isinstance(name, str) or not name:
        raise ValueError(f"preprocessing spec: name must be a non-empty string, not {name!r}")
    steps = tuple(_checked_step(n, item) for n, item in enumerate(data["steps"], 1))
    return Pipeline(steps, name)


def pipeline_spec(pipeline: Pipeline) -> str:
    """The :attr:`SearchParameters.preprocess` value of ``pipeline``.

    The preset's name when ``pipeline`` is an unchanged preset, else
    :meth:`Pipeline.to_dict` as one line of JSON (sorted keys, compact), which
    :func:`pipeline_from_spec` reads back to an equal pipeline.
    """
    if pipeline.name in _PRESETS and tuple(pipeline.steps) == _PRESETS[pipeline.name]:
        return pipeline.name
    return json.dumps(pipeline.to_dict(), sort_keys=True, separators=(",", ":"))
