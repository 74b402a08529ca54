"""Background work: the search job in a QThread, and small one-shot tasks.

The search follows napari/Orange3: a QObject worker moved to a QThread runs the
engine's :class:`~engine.SearchJob` generator and sends each final hit chunk
(already turned into display columns) through a queued signal, so the GUI
thread only appends rows.  Progress signals are throttled to ~10 per second.

With the ``"dask"`` backend the worker first gets a client from a
:class:`DaskConnection` (connecting, off the GUI thread, when needed) and runs
:class:`engine.distributed.DaskSearchJob`, which streams chunks the same way.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable

from PyQt6 import sip
from PyQt6.QtCore import QObject, QThread, pyqtSignal, pyqtSlot

from engine import SearchJob, SearchParameters, SearchProgress, SpectrumLibrary
from engine.backends import interactive_threads
from engine.distributed import ClusterError
from engine.export import hit_columns

__all__ = [
    "SearchWorker",
    "SearchController",
    "TaskRunner",
    "run_task",
]

_PROGRESS_INTERVAL = 0.1


class SearchWorker(QObject):
    """Runs one :class:`~engine.SearchJob` (lives in a worker thread).

    Signals
    -------
    chunk(object, object)
        A :class:`~engine.HitTable` chunk and its display columns (dict).
    progress(object)
        A copy of the :class:`~engine.SearchProgress`.
    message(str)
        Notices from the engine (e.g. a GPU fallback).
    failed(str)
        A readable error message; ``finished`` follows.
    finished(bool)
        The search ended; True when it was cancelled.
    """

    chunk = pyqtSignal(object, object)
    progress = pyqtSignal(object)
    message = pyqtSignal(str)
    failed = pyqtSignal(str)
    finished = pyqtSignal(bool)

    def __init__(
        self,
        queries: SpectrumLibrary,
        library: SpectrumLibrary,
        params: SearchParameters,
        backend: str,
        dask_client: Callable[[], object] | None = None,
    ) -> None:
        super().__init__()
        self.queries, self.library, self.params = queries, library, params
        self.backend_name = backend
        self.dask_client = dask_client
        self.job = None  # SearchJob or DaskSearchJob
        self._cancel_requested = False
        self._last_progress = 0.0

    def cancel(self) -> None:
        """Stop after the batch in flight (thread-safe, called from the GUI thread)."""
        self._cancel_requested = True
        if self.job is not None:
            self.job.cancel()

    def _on_progress(self, progress: SearchProgress) -> None:
        now = time.monotonic()
        if now - self._last_progress >= _PROGRESS_INTERVAL or progress.fraction >= 1.0:
            self._last_progress = now
            self.progress.emit(SearchProgress(**progress.__dict__))

    @pyqtSlot()
    def run(self) -> None:
        """Run the job to its end (or cancellation); always emits ``finished``."""
        cancelled = False
        try:
            self.job = self._make_job()
            if self._cancel_requested:
                self.job.cancel()
            for hits in self.job:
                self.chunk.emit(hits, hit_columns(hits, self.queries, self.library))
            self.progress.emit(SearchProgress(**self.job.progress.__dict__))
            cancelled = self.job.cancelled
        except ClusterError as exc:  # one line, fit for a status bar
            self.failed.emit(str(exc))
        except Exception as exc:  # shown to the user, never swallowed
            traceback.print_exc()
            self.failed.emit(f"{type(exc).__name__}: {exc}")
        finally:
            self.finished.emit(cancelled)

    def _make_job(self):
        progress = {"on_progress": self._on_progress, "on_message": self.message.emit}
        if self.backend_name != "dask":
            return SearchJob(
                self.queries,
                self.library,
                self.params,
                backend=self.backend_name,
                cpu_threads=interactive_threads(),  # a core stays with the GUI thread
                **progress,
            )
        from engine.distributed import DaskSearchJob, describe

        if self.dask_client is None:
            raise ValueError("the dask backend needs a Dask client")
        client = self.dask_client()
        try:
            self.message.emit(f"Connected: {describe(client)}")
        except Exception:  # noqa: BLE001 - the description is only a notice
            pass
        return DaskSearchJob(
            self.queries, self.library, self.params, client=client, backend="auto", **progress
        )


class SearchController(QObject):
    """Owns a :class:`SearchWorker` and its QThread for the length of one search.

    Signals are re-emitted on the GUI thread (queued connections).
    """

    chunk = pyqtSignal(object, object)
    progress = pyqtSignal(object)
    message = pyqtSignal(str)
    failed = pyqtSignal(str)
    finished = pyqtSignal(bool)

    def __init__(
        self,
        queries: SpectrumLibrary,
        library: SpectrumLibrary,
        params: SearchParameters,
        backend: str,
        parent: QObject | None = None,
        *,
        dask_client: Callable[[], object] | None = None,
    ) -> None:
        super().__init__(parent)
        self.params = params
        self.backend = backend
        self.thread = QThread()
        self.thread.setObjectName("simms-search")
        self.worker = SearchWorker(queries, library, params, backend, dask_client)
        self.worker.moveToThread(self.thread)
        self.thread.started.connect(self.worker.run)
        self.worker.chunk.connect(self.chunk)
        self.worker.progress.connect(self.progress)
        self.worker.message.connect(self.message)
        self.worker.failed.connect(self.failed)
        self.worker.finished.connect(self._on_finished)
        self.running = False
        self.cancelled = False
        self.error: str | None = None
        self.failed.connect(self._remember_error)

    def _remember_error(self, text: str) -> None:
        self.error = text

    @property
    def backend_device(self) -> tuple[str, str]:
        """``(name, device)`` of the backend the job runs on ("" before it starts)."""
        job = self.worker.job
        if job is None:
            return "", ""
        return job.backend.name, job.backend.device

    def start(self) -> None:
        """Start the worker thread."""
        self.running = True
        self.thread.start()

    def cancel(self) -> None:
        """Ask the job to stop; hits found so far are kept."""
        self.worker.cancel()

    def _on_finished(self, cancelled: bool) -> None:
        self.thread.quit()
        self.thread.wait()
        self.running = False
        self.cancelled = cancelled
        self.finished.emit(cancelled)

    def wait(self, msecs: int = 10000) -> bool:
        """Block until the thread ends (used when closing the window)."""
        return self.thread.wait(msecs)


class TaskRunner(QObject):
    """Run ``function()`` in a QThread; ``done``/``error`` arrive on the GUI thread."""

    done = pyqtSignal(object)
    error = pyqtSignal(object)

    def __init__(self, function: Callable[[], object], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._function = function
        self.thread = _FunctionThread(function)
        self.thread.result_ready.connect(self.done)
        self.thread.error_raised.connect(self.error)
        self.thread.finished.connect(self._cleanup)
        self._finished = False

    def start(self) -> TaskRunner:
        """Start the thread; returns self."""
        self.thread.start()
        return self

    def _cleanup(self) -> None:
        # ``finished`` is emitted just before the thread really ends: wait for that, so
        # the QThread is never destroyed while running.  Its Python owner (the window's
        # task set) releases it afterwards; no deleteLater, so no wrapper outlives its
        # C++ object (the old "wrapped C/C++ object has been deleted" on quit).
        self.thread.wait()
        self._finished = True

    def wait(self, msecs: int = 30000) -> bool:
        """Block until the thread ends (at once when it already has)."""
        if sip.isdeleted(self.thread):
            return True
        return self._finished or self.thread.wait(msecs)


class _FunctionThread(QThread):
    result_ready = pyqtSignal(object)
    error_raised = pyqtSignal(object)

    def __init__(self, function: Callable[[], object]) -> None:
        super().__init__()
        self._function = function

    def run(self) -> None:  # noqa: D401 - QThread API
        try:
            result = self._function()
        except Exception as exc:
            self.error_raised.emit(exc)
        else:
            self.result_ready.emit(result)


def run_task(
    function: Callable[[], object],
    on_done: Callable[[object], None],
    on_error: Callable[[BaseException], None],
    parent: QObject | None = None,
) -> TaskRunner:
    """Run ``function`` off the GUI thread and call back on the GUI thread."""
    runner = TaskRunner(function, parent)
    runner.done.connect(on_done)
    runner.error.connect(on_error)
    return runner.start()
