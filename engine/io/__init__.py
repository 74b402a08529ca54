"""Spectrum file readers, import report and library cache.

Formats: MGF, MSP (and MSL), mzML, mzXML, GNPS and MoNA library JSON; plain or gzip.

Public entry points: :func:`read_library` (read a file) and :func:`load_library`
(read through the on-disk cache).
"""

from engine.io.cache import default_cache_dir, load_library
from engine.io.reader import LoadCancelled, read_library
from engine.report import ImportIssue, ImportReport, SpectrumFileError

__all__ = [
    "ImportIssue",
    "ImportReport",
    "LoadCancelled",
    "SpectrumFileError",
    "default_cache_dir",
    "load_library",
    "read_library",
]
