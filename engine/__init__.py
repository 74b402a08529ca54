"""SimMS engine: headless core of SimMS desktop.

Read spectral libraries, preprocess peaks, and search them with the exact greedy
cosine of matchms ``CosineGreedy`` on the CPU (numba) or an NVIDIA GPU (numba
CUDA).  Never imports Qt: the desktop application, the ``simms`` command line
and Python scripts all use this same API.
"""

from engine.analyses import (
    AnalysisCancelled,
    ClusterParameters,
    ClusterResult,
    LibraryQC,
    RunOptions,
    SpectrumNetwork,
    cluster_spectra,
    deduplicate,
    library_qc,
    network,
    search_clusters,
)
from engine.api import score_matrix, search, search_job
from engine.backends import Backend, available_backends, get_backend, gpu_status
from engine.collection import combine_libraries, filter_library
from engine.export.reader import read_hits_frame as read_hits
from engine.hits import HitTable
from engine.io import LoadCancelled, load_library, read_library
from engine.kernels import cosine_greedy_pair, entropy_similarity_pair, modified_cosine_pair
from engine.library import LibrarySource, SpectrumLibrary
from engine.params import MODES, SearchParameters
from engine.report import ImportIssue, ImportReport, SpectrumFileError
from engine.repository import Repository
from engine.search import CancelToken, SearchJob, SearchProgress
from engine.spectrum import Spectrum
from engine.version import __version__
from engine.warmup import warm_up

__all__ = [
    "AnalysisCancelled",
    "Backend",
    "CancelToken",
    "ClusterParameters",
    "ClusterResult",
    "HitTable",
    "ImportIssue",
    "ImportReport",
    "LibraryQC",
    "LibrarySource",
    "LoadCancelled",
    "Repository",
    "RunOptions",
    "SearchJob",
    "SearchParameters",
    "SearchProgress",
    "Spectrum",
    "SpectrumFileError",
    "SpectrumLibrary",
    "SpectrumNetwork",
    "__version__",
    "cluster_spectra",
    "combine_libraries",
    "deduplicate",
    "filter_library",
    "available_backends",
    "cosine_greedy_pair",
    "entropy_similarity_pair",
    "get_backend",
    "gpu_status",
    "library_qc",
    "load_library",
    "modified_cosine_pair",
    "MODES",
    "network",
    "read_hits",
    "read_library",
    "score_matrix",
    "search",
    "search_clusters",
    "search_job",
    "warm_up",
]
