"""Background work on superqt workers: the streaming search, and one-shot tasks.

The search follows napari: a superqt ``GeneratorWorker`` runs the engine's
search job (local or Dask, made by :func:`engine.search_job`) in Qt's thread
pool and yields each final hit chunk with its display columns, so the GUI
thread only appends rows.  Progress (throttled to ~10 per second) and notices
are emitted from the worker thread and arrive queued on the GUI thread.

With the ``"dask"`` backend the worker first gets a client from a
:class:`~simms_gui.dask_connection.DaskConnection` (connecting off the GUI
thread when needed).
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from PyQt6.QtCore import QObject, QThreadPool, pyqtSignal
from superqt.utils import FunctionWorker, GeneratorWorker, create_worker

from engine import HitTable, SearchParameters, SearchProgress, SpectrumLibrary, search_job
from engine.analyses.qc import IsomerCheck, isomer_parameters
from engine.backends import interactive_threads
from engine.distributed import ClusterError, describe
from simms_gui.answers import display_columns

__all__ = ["BackgroundTask", "SearchController"]

_PROGRESS_INTERVAL = 0.1
#: Threads of Qt's pool the workers run in: a file read that blocks (a slow disk, a
#: FIFO) must never hold back a search, and the pool's default is one per core.
POOL_THREADS = 16


def _start(worker: FunctionWorker | GeneratorWorker) -> None:
    pool = QThreadPool.globalInstance()
    if pool.maxThreadCount() < POOL_THREADS:
        pool.setMaxThreadCount(POOL_THREADS)
    worker.start()


class SearchController(QObject):
    """One search on a superqt ``GeneratorWorker``; its signals arrive on the GUI thread.

    Signals
    -------
    chunk(object, object)
        A :class:`~engine.HitTable` chunk (tied best hits in ``order_ties``'s order)
        and its display columns (dict: q-values, ambiguity flags).
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
        parent: QObject | None = None,
        *,
        dask_client: Callable[[], object] | None = None,
    ) -> None:
        super().__init__(parent)
        self.queries, self.library, self.params = queries, library, params
        self.backend = backend
        self.dask_client = dask_client
        self.job = None  # SearchJob or DaskSearchJob, made in the worker thread
        self.isomers: IsomerCheck | None = None  # the isomer check of the hits' library
        self.running = False
        self.cancelled = False
        self.error: str | None = None
        self._cancel_requested = False
        self._last_progress = 0.0
        self._ended = threading.Event()
        self.worker: GeneratorWorker = create_worker(
            self._chunks, _start_thread=False, _ignore_errors=True
        )
        self.worker.yielded.connect(self._on_chunk)
        self.worker.errored.connect(self._on_error)
        self.worker.finished.connect(self._on_finished)

    @property
    def backend_device(self) -> tuple[str, str]:
        """``(name, device)`` of the backend the job runs on ("" before it starts)."""
        if self.job is None:
            return "", ""
        return self.job.backend.name, self.job.backend.device

    def start(self) -> None:
        """Start the worker in Qt's thread pool."""
        self.running = True
        _start(self.worker)

    def cancel(self) -> None:
        """Ask the job to stop; hits found so far are kept (thread-safe)."""
        self._cancel_requested = True
        if self.job is not None:
            self.job.cancel()

    def wait(self, msecs: int = 10000) -> bool:
        """Block until the worker's generator has ended (used when closing the window)."""
        return not self.running or self._ended.wait(msecs / 1000)

    # -- the worker thread ------------------------------------------------------------
    def _chunks(self) -> Iterator[tuple[HitTable, dict]]:
        try:
            self.job = self._make_job()
            if self._cancel_requested:
                self.job.cancel()
            q_values = getattr(self.job, "q_values", None)  # with fdr: the q-value estimate
            self.isomers = IsomerCheck(  # in the search's own score: no kernels to compile
                self.library, isomer_parameters(self.params), backend=_local(self.backend)
            )
            for hits in self.job:
                yield display_columns(
                    hits, self.queries, self.library, self.params, q_values, self.isomers
                )
            self.progress.emit(SearchProgress(**self.job.progress.__dict__))
            self.cancelled = self.job.cancelled
        except Exception as exc:  # noqa: BLE001 - reported here: superqt drops RuntimeErrors
            self._on_error(exc)  # (ClusterLostError is one) without ever emitting finished
        finally:
            self._ended.set()

    def _make_job(self):
        client = None
        if self.backend == "dask":
            if self.dask_client is None:
                raise ValueError("the dask backend needs a Dask client")
            client = self.dask_client()
            try:
                self.message.emit(f"Connected: {describe(client)}")
            except Exception:  # noqa: BLE001 - the description is only a notice
                pass
        return search_job(
            self.queries, self.library, self.params, client=client,
            backend="auto" if client is not None else self.backend,
            cpu_threads=interactive_threads(),  # a core stays with the GUI thread
            on_progress=self._on_progress, on_message=self.message.emit,
        )  # fmt: skip

    def _on_progress(self, progress: SearchProgress) -> None:
        now = time.monotonic()
        if now - self._last_progress >= _PROGRESS_INTERVAL or progress.fraction >= 1.0:
            self._last_progress = now
            self.progress.emit(SearchProgress(**progress.__dict__))

    # -- signals, on the GUI thread -----------------------------------------------------
    def _on_chunk(self, item: tuple[HitTable, dict]) -> None:
        self.chunk.emit(*item)

    def _on_error(self, exc: BaseException) -> None:
        if isinstance(exc, ClusterError):  # one line, fit for a status bar
            self.error = str(exc)
        else:  # shown to the user, never swallowed
            traceback.print_exception(exc)
            self.error = f"{type(exc).__name__}: {exc}"
        self.cancelled = False
        self.failed.emit(self.error)

    def _on_finished(self) -> None:
        self.running = False
        self.finished.emit(self.cancelled)


def _local(backend: str) -> str:
    """The backend of checks run here beside a search: a Dask search's are local."""
    return "auto" if backend == "dask" else backend


@dataclass(frozen=True)
class _Done:
    result: object
    error: Exception | None


class BackgroundTask:
    """``function()`` on a superqt ``FunctionWorker``; ``on_done``/``on_error`` on the GUI thread.

    Attributes
    ----------
    worker : superqt.utils.FunctionWorker
        Its ``finished`` signal comes after the result (or the error).
    """

    def __init__(
        self,
        function: Callable[[], object],
        on_done: Callable[[object], None],
        on_error: Callable[[BaseException], None],
    ) -> None:
        self._ended = threading.Event()

        def run() -> object:
            # an error travels as a value: superqt drops a RuntimeError a worker raises
            try:
                return _Done(function(), None)
            except Exception as exc:  # noqa: BLE001 - handed to on_error
                return _Done(None, exc)
            finally:
                self._ended.set()

        def settle(done: _Done) -> None:
            if done.error is None:
                on_done(done.result)
            else:
                on_error(done.error)

        self.worker: FunctionWorker = create_worker(run, _start_thread=False, _ignore_errors=True)
        self.worker.returned.connect(settle)

    def start(self) -> BackgroundTask:
        """Start the worker in Qt's thread pool; returns self."""
        _start(self.worker)
        return self

    def is_finished(self) -> bool:
        """True once ``function`` has returned or raised."""
        return self._ended.is_set()

    def wait(self, msecs: int = 30000) -> bool:
        """Block until ``function`` has returned or raised (at once when it has)."""
        return self._ended.wait(msecs / 1000)
