"""Spectrum files as the window sees them: which names to offer, how far a read has come.

No Qt here (the loading thread writes :class:`LoadProgress`, the window reads it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine import SpectrumLibrary

__all__ = ["SUPPORTED_SUFFIXES", "LoadProgress", "LoadedFile", "is_spectrum_file"]

#: File name endings the readers understand.
SUPPORTED_SUFFIXES = tuple(
    f"{stem}{gz}"
    for stem in (".mgf", ".msp", ".msl", ".mzml", ".mzxml", ".json")
    for gz in ("", ".gz")
)


def is_spectrum_file(path: str | Path) -> bool:
    """True when ``path`` has a spectrum-file suffix (case-insensitive)."""
    name = Path(path).name.lower()
    return name.endswith(SUPPORTED_SUFFIXES)


class LoadProgress:
    """How far a file load has come, written by the loading thread, read by the window.

    Plain attributes and an event, no Qt: the window polls :attr:`fraction` and
    calls :meth:`cancel`; the reader calls :meth:`update` and stops when told.
    """

    def __init__(self, on_update: Callable[[float], None] | None = None) -> None:
        self.done = 0
        self.total = 0
        self._cancelled = threading.Event()
        self.on_update = on_update

    def update(self, done: int, total: int) -> bool:
        """The reader's progress callback: False once :meth:`cancel` was called."""
        self.done, self.total = int(done), int(total)
        if self.on_update is not None:
            self.on_update(self.fraction)
        return not self._cancelled.is_set()

    def cancel(self) -> None:
        """Ask the reader to stop at its next report."""
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    @property
    def fraction(self) -> float:
        """Share of the file's bytes read, 0 to 1."""
        return min(1.0, self.done / self.total) if self.total > 0 else 0.0


@dataclass
class LoadedFile:
    """A spectrum file loaded into the session.

    Attributes
    ----------
    path : Path
        The file.
    spectra : SpectrumLibrary
        Its spectra (``.report`` says what was skipped or repaired).
    """

    path: Path
    spectra: SpectrumLibrary

    @property
    def name(self) -> str:
        """File name without folders."""
        return self.path.name

    @property
    def report(self):
        """The engine's import report (or None)."""
        return self.spectra.report
