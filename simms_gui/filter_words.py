"""Preprocessing steps in a chemist's words, with units (headless: no Qt).

The engine names filters and their keywords as functions (``window_filter``,
``min_relative``); the preprocessing editor shows these words instead, each
number with its unit: Da, % of the base peak, peaks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.preprocess import FILTER_PARAMETERS, Pipeline, Step

__all__ = ["CHOICE_WORDS", "PARAMETER_WORDS", "STEP_WORDS", "ParameterWords", "pipeline_words"]

#: What each filter does, as a step title.
STEP_WORDS: dict[str, str] = {
    "select_mz_range": "Keep an m/z range",
    "remove_precursor_peaks": "Remove peaks near the precursor",
    "relative_intensity_threshold": "Drop weak peaks",
    "keep_top_k": "Keep the strongest peaks",
    "window_filter": "Keep the strongest peaks of each m/z window",
    "scale_intensity": "Scale intensities",
    "normalize_intensity": "Normalise to the base peak (= 1)",
    "centroid": "Centroid profile-mode spectra",
}


@dataclass(frozen=True)
class ParameterWords:
    """How a filter parameter is shown: label before the box, unit after it, scale."""

    label: str
    unit: str = ""
    scale: float = 1.0  # shown value = stored value × scale
    tip: str = ""


#: Words and units of each (filter, parameter).
PARAMETER_WORDS: dict[tuple[str, str], ParameterWords] = {
    ("select_mz_range", "min_mz"): ParameterWords("from m/z", "", tip="Lowest fragment m/z kept"),
    ("select_mz_range", "max_mz"): ParameterWords(
        "to m/z", "", tip="Highest fragment m/z kept (at the maximum: no upper bound)"
    ),
    ("remove_precursor_peaks", "tolerance"): ParameterWords(
        "within", " Da", tip="Peaks this close to the precursor m/z are removed (GNPS: 17 Da)"
    ),
    ("relative_intensity_threshold", "min_relative"): ParameterWords(
        "below", " % of base peak", 100.0, "Peaks weaker than this share of the strongest go"
    ),
    ("keep_top_k", "k"): ParameterWords("keep", " peaks", tip="How many of the strongest peaks"),
    ("window_filter", "k"): ParameterWords("keep", " peaks", tip="Strongest peaks kept per window"),
    ("window_filter", "window"): ParameterWords(
        "per ±", " Da", tip="Half-width of the m/z window around each peak (GNPS: 50 Da)"
    ),
    ("centroid", "width"): ParameterWords(
        "merge within", " Da", tip="Points this close become one peak (ms_entropy: 0.05 Da)"
    ),
    ("scale_intensity", "method"): ParameterWords(
        "by", tip="Square root or log damp dominant peaks; none keeps intensities"
    ),
}

#: Words of the choices of text parameters.
CHOICE_WORDS: dict[str, str] = {"sqrt": "square root", "log": "logarithm", "none": "none"}


def _number(value: float, unit: str) -> str:
    if isinstance(value, float) and math.isinf(value):
        return "∞"
    return f"{value:g}{unit}"


def step_words(step: Step) -> str:
    """One step in words: ``keep the 6 strongest peaks per ±50 Da``."""
    values = {p.name: step.params.get(p.name, p.default) for p in FILTER_PARAMETERS[step.name]}
    match step.name:
        case "select_mz_range":
            return f"keep m/z {values['min_mz']:g}–{_number(values['max_mz'], '')}"
        case "remove_precursor_peaks":
            return f"remove peaks within {values['tolerance']:g} Da of the precursor"
        case "relative_intensity_threshold":
            return f"drop peaks under {100 * values['min_relative']:g} % of the base peak"
        case "keep_top_k":
            return f"keep the {values['k']} strongest peaks"
        case "window_filter":
            return f"keep the {values['k']} strongest peaks per ±{values['window']:g} Da"
        case "scale_intensity":
            method = values["method"]
            return (
                "intensities unscaled"
                if method == "none"
                else f"{CHOICE_WORDS[method]} intensities"
            )
        case "normalize_intensity":
            return "normalise to the base peak"
        case "centroid":
            return f"centroid points within {values['width']:g} Da"
    return step.name


def pipeline_words(pipeline: Pipeline) -> str:
    """The steps in words, ``a → b → c``; ``peaks as in the files`` when there are none."""
    return " → ".join(step_words(s) for s in pipeline.steps) or "peaks as in the files"
