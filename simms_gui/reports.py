"""Import reports in words (headless)."""

from __future__ import annotations

__all__ = ["profile_warning", "report_counts", "report_text"]


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
