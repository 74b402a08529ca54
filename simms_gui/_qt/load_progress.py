"""The progress dialog of a file being read in the background, with Cancel."""

from __future__ import annotations

from PyQt6.QtCore import QTimer, pyqtSignal
from PyQt6.QtWidgets import QProgressDialog, QWidget

from simms_gui.model.files import LoadProgress

__all__ = ["LoadProgressDialog"]

#: Steps of the progress bar (the fraction of the file's bytes read).
STEPS = 1000


class LoadProgressDialog(QProgressDialog):
    """Shows how much of ``name`` is read (after half a second); Cancel stops the reader.

    The reader runs in a worker thread and writes :class:`LoadProgress`; a timer
    on the GUI thread reads it, so no signal crosses threads.
    """

    finished_loading = pyqtSignal()
    #: The fraction of the file read, every tenth of a second.
    progressed = pyqtSignal(float)

    def __init__(self, parent: QWidget, name: str, progress: LoadProgress) -> None:
        super().__init__(f"Reading {name}…", "Cancel", 0, STEPS, parent)
        self.setWindowTitle("Opening a spectrum file")
        self.setMinimumDuration(500)
        self.setAutoClose(False)
        self.setAutoReset(False)
        self.progress = progress
        self.canceled.connect(self._cancel)
        self._timer = QTimer(self, interval=100, timeout=self._poll)
        self._timer.start()

    def _poll(self) -> None:
        if not self.progress.cancelled:
            self.setValue(int(STEPS * self.progress.fraction))
            self.progressed.emit(self.progress.fraction)

    def _cancel(self) -> None:
        self.progress.cancel()
        self.setLabelText(self.labelText().replace("Reading", "Stopping"))

    def finish(self) -> None:
        """The read ended (loaded, failed or cancelled): close for good."""
        self._timer.stop()
        self.canceled.disconnect(self._cancel)  # closing a progress dialog emits canceled
        self.close()
        self.deleteLater()
        self.finished_loading.emit()
