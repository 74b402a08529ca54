"""Library quality checks: near-duplicate entries, conflicting entries, de-duplication.

:func:`library_qc` scores every pair of library spectra whose precursors agree
(the engine's exact all-vs-all search) and sorts the near-identical pairs into
duplicates of one compound (grouped; :func:`deduplicate` keeps one per group)
and conflicts (different compounds with near-identical spectra).
"""

from engine.analyses.qc.ambiguity import IsomerCheck, complete_ties, isomer_parameters
from engine.analyses.qc.check import (
    PAIR_KINDS,
    QC_DEFAULTS,
    LibraryQC,
    compound_keys,
    deduplicate,
    duplicate_groups,
    library_qc,
)
from engine.analyses.qc.report import pairs_frame, write_qc_report

__all__ = [
    "PAIR_KINDS",
    "QC_DEFAULTS",
    "IsomerCheck",
    "LibraryQC",
    "complete_ties",
    "compound_keys",
    "deduplicate",
    "duplicate_groups",
    "isomer_parameters",
    "library_qc",
    "pairs_frame",
    "write_qc_report",
]
