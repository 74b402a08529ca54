"""Preprocessing pipelines in words: one-line summaries, and which preset a pipeline is."""

from __future__ import annotations

import math

from engine.preprocess import FILTER_PARAMETERS, PRESETS, Pipeline, Step, preset

__all__ = ["BIG", "matching_preset", "pipeline_summary", "step_summary"]

#: Upper end of number editors whose parameter has no maximum (the maximum of an
#: editor whose default is infinite means "no bound": the parameter is left out).
BIG = 1e6


def _number(value: object) -> str:
    if isinstance(value, float) and math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def step_summary(step: Step) -> str:
    """A few characters for one step: ``window_filter(6, 50)``, ``sqrt``, ``normalize``."""
    if step.name == "normalize_intensity":
        return "normalize"
    if step.name == "scale_intensity":
        method = step.params.get("method", "sqrt")
        return "no scaling" if method == "none" else str(method)
    values = [_number(step.params.get(p.name, p.default)) for p in FILTER_PARAMETERS[step.name]]
    return f"{step.name}({', '.join(values)})"


def pipeline_summary(pipeline: Pipeline) -> str:
    """The steps in one line, ``a(1) → b → c``; ``no preprocessing`` when there are none."""
    return " → ".join(step_summary(s) for s in pipeline.steps) or "no preprocessing"


def matching_preset(pipeline: Pipeline) -> str | None:
    """The preset with exactly the steps of ``pipeline`` (None: a custom pipeline)."""
    for name in PRESETS:
        if preset(name).steps == tuple(pipeline.steps):
            return name
    return None
