"""The search's progress: a bar and a line of words under the Search button.

It tells a search that waits for numba to compile the kernels (the first run on
a machine) from one under way, ignores reports that arrive after the end, and
keeps what a stopped search kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from PyQt6.QtCore import QTimer
from PyQt6.QtWidgets import QLabel, QProgressBar, QVBoxLayout, QWidget

from engine import SearchProgress
from engine.warmup import warming_up
from simms_gui._qt.progress_text import count as _count
from simms_gui._qt.progress_text import duration as _duration

__all__ = ["COMPILING_NOTE", "SearchProgressView"]

#: Shown while a search waits for the kernels to compile (the first start on a machine).
COMPILING_NOTE = (
    "Preparing the search kernels (first run only): numba compiles them once, about a "
    "minute on 2 cores; later starts load them from its cache in about a second."
)


class SearchProgressView(QWidget):
    """Progress bar and words of the running (or last) search.

    Parameters
    ----------
    is_dask : callable
        True when the search runs on a Dask cluster (its slow start is the
        connection, not the kernels).
    """

    def __init__(self, is_dask: Callable[[], bool], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._is_dask = is_dask
        self.bar = QProgressBar(minimum=0, maximum=1000)
        self.bar.setTextVisible(True)
        self.bar.setFormat("idle")
        self.label = QLabel("")
        self.label.setWordWrap(True)
        self.label.setStyleSheet("color: palette(mid);")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.bar)
        layout.addWidget(self.label)
        self._running = False
        self._last_progress: SearchProgress | None = None
        # a search with no progress after a few seconds is compiling kernels for its settings
        self._slow_start = QTimer(self, singleShot=True, interval=3000)
        self._slow_start.timeout.connect(self._still_starting)

    def set_running(self, running: bool) -> None:
        """A search starts (says so, or that the kernels compile) or ends."""
        self._running = running
        if running:
            self._last_progress = None
            self.bar.setValue(0)
            if warming_up():
                self.bar.setFormat("preparing the search kernels (first run only)…")
                self.label.setText(COMPILING_NOTE)
            else:
                self.bar.setFormat("starting…")
                self.label.setText("")
                self._slow_start.start()

    def _still_starting(self) -> None:
        if self._running and self._last_progress is None and not self._is_dask():
            self.bar.setFormat("preparing the search…")
            self.label.setText(
                "Indexing the library's peaks and, on the first run only, compiling the "
                "search kernels for these settings."
            )

    def show_progress(self, progress: SearchProgress) -> None:
        """Show pairs done, rate and time left (ignored once the search has ended)."""
        if not self._running:
            return  # a report queued before the end must not undo "stopped"
        self._last_progress = progress
        self.bar.setValue(int(1000 * progress.fraction))
        self.bar.setFormat(f"{100 * progress.fraction:.0f} %")
        left = progress.seconds_left
        left_text = "" if math.isinf(left) else f" · {_duration(left)} left"
        self.label.setText(
            f"{_count(progress.pairs_done)} / {_count(progress.pairs_total)} pairs · "
            f"{_count(progress.pairs_per_second)} pairs/s{left_text} · {progress.hits:,} hits"
        )

    def show_done(self, text: str, hits: int | None = None, state: str = "") -> None:
        """Final state of the progress bar; a stopped search says what it kept."""
        self._running = False
        self.bar.setFormat(text)
        # an ended search leaves no chunk edge inside its words ("stopped · 11█ hits"):
        # full when done, empty otherwise (the line below says how far it got)
        self.bar.setValue(self.bar.maximum() if state == "done" else self.bar.minimum())
        last = self._last_progress
        if state == "stopped" and hits is not None:
            done = (
                ""
                if last is None
                else (
                    f" after {_count(last.pairs_done)} of {_count(last.pairs_total)} pairs "
                    f"({100 * last.fraction:.0f} %)"
                )
            )
            self.label.setText(f"Stopped{done}: {hits:,} hits kept.")
        elif state == "done" and hits is not None and last is not None:
            self.label.setText(f"{_count(last.pairs_total)} pairs · {hits:,} hits")
