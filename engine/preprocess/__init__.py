"""Peak preprocessing: filters (:mod:`.filters`) and pipelines of them (:mod:`.pipeline`).

``SearchParameters(preprocess=...)`` takes a preset name (``"none"``, ``"gnps"``,
``"msas"``) or a pipeline spec in JSON; see :func:`pipeline_from_spec`.
"""

from engine.preprocess.filters import (
    keep_top_k,
    normalize_intensity,
    relative_intensity_threshold,
    remove_precursor_peaks,
    scale_intensity,
    select_mz_range,
    window_filter,
)
from engine.preprocess.pipeline import (
    FILTER_PARAMETERS,
    FILTERS,
    PRESETS,
    FilterParameter,
    Pipeline,
    Step,
    pipeline_from_spec,
    pipeline_spec,
    preset,
)

__all__ = [
    "FILTERS",
    "FILTER_PARAMETERS",
    "FilterParameter",
    "PRESETS",
    "Pipeline",
    "Step",
    "keep_top_k",
    "normalize_intensity",
    "pipeline_from_spec",
    "pipeline_spec",
    "preset",
    "relative_intensity_threshold",
    "remove_precursor_peaks",
    "scale_intensity",
    "select_mz_range",
    "window_filter",
]
