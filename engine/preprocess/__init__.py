"""Peak filters: small pure functions over a library's CSR arrays.

Each filter takes a :class:`~engine.library.SpectrumLibrary` and returns a new
one (via :meth:`SpectrumLibrary.with_peaks`); none loops over spectra in
Python.  Spectra are never dropped, so indexes stay stable: a spectrum that
loses all its peaks keeps zero peaks, and scores against it are 0.  Peaks stay
sorted by m/z.

A :class:`Pipeline` chains filters by name; :func:`preset` gives the named
pipelines ``"none"`` (the default: peaks as in the file), ``"gnps"`` and
``"msas"``.  :attr:`SearchParameters.preprocess <engine.SearchParameters>` holds
either a preset name or a pipeline spec in JSON (:func:`pipeline_spec`), read
with :func:`pipeline_from_spec`.
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
