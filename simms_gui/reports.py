"""Import reports in words (headless)."""

from __future__ import annotations

__all__ = ["report_counts", "report_text"]


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
