"""Import reports in words (headless)."""

from __future__ import annotations

import numpy as np

from engine.search import query_status, status_summary

__all__ = ["profile_warning", "query_summary", "report_counts", "report_text"]


def report_counts(report) -> tuple[int, int]:
    """``(skipped, repaired)`` records of an import report (0, 0 when None)."""
    if report is None:
        return 0, 0
    return len(getattr(report, "skipped", [])), len(getattr(report, "repaired", []))


def report_text(report) -> str:
    """The full import report as text."""
    if report is None:
        return "No import report."
    return str(report)


def profile_warning(report) -> str:
    """A line on the spectra that look like profile-mode data ("" when none)."""
    flagged = len(getattr(report, "not_centroided", None) or [])
    if not flagged:
        return ""
    return (
        f"{flagged:,} spectra look like profile-mode data (not centroided): scores stay exact, "
        "but centroid them first (Preprocessing: centroid). The report names them."
    )


def query_summary(queries, library, params, hits) -> str:
    """Every query of a search accounted for: ``"40 queries: 36 with hits, 4 ..."``."""
    has = np.zeros(len(queries), dtype=bool)
    has[hits.query_index] = True
    return (
        f"{len(queries):,} queries: {status_summary(query_status(queries, library, params, has))}"
    )
