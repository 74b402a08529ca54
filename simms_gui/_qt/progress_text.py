"""Numbers of a search's progress in words: pair counts and durations."""

from __future__ import annotations

__all__ = ["count", "duration"]


def count(n: float) -> str:
    """``n`` with a k/M/G suffix (``"1.2 M"``)."""
    n = float(n)
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f}"


def duration(seconds: float) -> str:
    """``seconds`` as ``"42 s"``, ``"3 min 05 s"`` or ``"2 h 07 min"``."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min {seconds % 60:02.0f} s"
    return f"{seconds // 3600:.0f} h {seconds % 3600 // 60:02.0f} min"
