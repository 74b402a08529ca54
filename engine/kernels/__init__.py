"""Exact greedy-cosine kernels on plain CSR arrays: numba on the CPU, numba-cuda device code.

Kernels take spectrum sets as one :class:`SpectrumSet` tuple and the filters as one
:class:`SearchOptions` tuple, and import nothing from the rest of the engine.
"""

from engine.kernels.block import search_block
from engine.kernels.dense import dense_block
from engine.kernels.entropy import (
    clean_spectra,
    entropy_similarity_pair,
    entropy_weights,
    float32_tolerance,
)
from engine.kernels.pair import cosine_greedy_pair, modified_cosine_pair, prepare_weights
from engine.kernels.peak_index import PeakIndex, library_peak_index
from engine.kernels.spectrum_set import (
    COSINE,
    ENTROPY,
    MODIFIED_COSINE,
    SearchOptions,
    SpectrumSet,
    spectrum_set,
)

__all__ = [
    "COSINE",
    "ENTROPY",
    "MODIFIED_COSINE",
    "PeakIndex",
    "SearchOptions",
    "SpectrumSet",
    "cosine_greedy_pair",
    "clean_spectra",
    "dense_block",
    "entropy_similarity_pair",
    "entropy_weights",
    "float32_tolerance",
    "library_peak_index",
    "modified_cosine_pair",
    "prepare_weights",
    "search_block",
    "spectrum_set",
]
