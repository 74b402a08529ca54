"""One task runner for all of a session's work, and the task every analysis is.

A :class:`Task` is a piece of work with :meth:`~Task.wait`, :meth:`~Task.cancel`
and a progress fraction (:attr:`Task.progressed`).  A :class:`TaskRunner`
runs tasks: in the calling thread (``workers=0``, scripts and tests: the task
is done when :meth:`TaskRunner.submit` returns) or in a thread pool (the
window: ``submit`` returns at once).  A task changes the session and the
session announces the change (:mod:`simms_gui.model.events`); whoever shows it
listens, nobody reports back.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from engine import AnalysisCancelled, CancelToken, LoadCancelled
from simms_gui.model.signal import Signal

__all__ = ["CallTask", "Task", "TaskFailed", "TaskRunner"]

#: Progress is announced at most this often (seconds), and always at 0 and 1.
PROGRESS_INTERVAL = 0.1


class TaskFailed(RuntimeError):
    """A task raised: the message names the task and the reason."""


class Task:
    """Work a :class:`TaskRunner` runs; subclasses define :meth:`run`.

    Attributes
    ----------
    name : str
        What the task does, in a few words ("search", "network", "read x.mgf").
    state : {"pending", "running", "done", "cancelled", "failed"}
    progress : float
        0 to 1.
    result : object
        What :meth:`run` returned (None until done).
    error : str or None
        Why it failed, one line.
    exception : BaseException or None
        The exception it raised.

    Signals
    -------
    progressed(float)
        The fraction done (throttled to about ten a second).
    finished(Task)
        The task ended (done, cancelled or failed).
    """

    progressed = Signal(float)
    finished = Signal(object)

    def __init__(self, name: str, token: CancelToken | None = None) -> None:
        self.name = name
        self.state = "pending"
        self.progress = 0.0
        self.result: Any = None
        self.error: str | None = None
        self.exception: BaseException | None = None
        self.token = token or CancelToken()
        self._ended = threading.Event()  # set after the finished listeners ran
        self._settled = False  # ended: done, cancelled or failed
        self._last_report = 0.0
        self._pump: Callable[[], None] | None = None

    # -- what a subclass defines --------------------------------------------------------
    def run(self) -> Any:
        """Do the work (in the runner's thread); raise to fail."""
        raise NotImplementedError

    def failed_text(self, exc: BaseException) -> str:
        """The one-line reason shown for ``exc`` (default ``"Type: message"``)."""
        return f"{type(exc).__name__}: {exc}"

    # -- what callers use ---------------------------------------------------------------
    @property
    def done(self) -> bool:
        """True once the task has ended (done, cancelled or failed)."""
        return self._settled

    @property
    def cancelled(self) -> bool:
        """True when the task was stopped."""
        return self.state == "cancelled"

    def cancel(self) -> None:
        """Ask the task to stop (thread-safe); what it found so far may be kept."""
        self.token.cancel()

    def settle(self, state: str) -> None:
        """Set the state this run ends in (``"done"``, ``"cancelled"``, ``"failed"``)
        before the task announces its end from inside :meth:`run`: listeners of that
        announcement read the final state, not ``"running"``."""
        self.state = state

    def report(self, fraction: float) -> None:
        """Announce progress (called by :meth:`run`; throttled)."""
        now = time.monotonic()
        self.progress = float(fraction)
        if fraction >= 1.0 or fraction <= 0.0 or now - self._last_report >= PROGRESS_INTERVAL:
            self._last_report = now
            self.progressed.emit(self.progress)

    def wait(self, timeout: float | None = None, *, reraise: bool = False) -> Any:
        """Block until the task ends; its result.

        Under the window the runner's ``pump`` keeps the window's events flowing
        while this waits (and delivers what the task announced before returning).

        Raises
        ------
        TimeoutError
            Still running after ``timeout`` seconds.
        TaskFailed
            The task failed (the message says why); with ``reraise`` its own exception.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        pump = self._pump
        while not self._ended.is_set():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(f"{self.name} still running after {timeout} s")
            step = 0.02 if pump is not None else left
            self._ended.wait(step if left is None or step is None else min(step, left))
            if pump is not None:
                pump()
        if pump is not None:
            pump()
        if self.state == "failed" and reraise:
            raise self.exception
        if self.state == "failed":
            raise TaskFailed(f"{self.name} failed: {self.error}") from self.exception
        return self.result

    # -- what the runner calls ----------------------------------------------------------
    def _execute(self) -> None:
        self.state = "running"
        try:
            self.result = self.run()
            if self.state == "running":  # not settled by the run itself
                self.state = "cancelled" if self.token.cancelled else "done"
        except (AnalysisCancelled, LoadCancelled) as exc:
            self.state, self.exception = "cancelled", exc
        except Exception as exc:  # noqa: BLE001 - reported through state and error
            self.state, self.exception, self.error = "failed", exc, self.failed_text(exc)
            if not getattr(exc, "expected", False):
                traceback.print_exception(exc)
        finally:
            self._settled = True
            # listeners first: a waiter returns only once what they queued for the
            # window (e.g. an error box) is there for its last pump to deliver
            try:
                self.finished.emit(self)
            finally:
                self._ended.set()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} {self.state} {100 * self.progress:.0f} %>"


class CallTask(Task):
    """``function()`` as a task (closing a connection, a small computation)."""

    def __init__(self, name: str, function: Callable[[], Any]) -> None:
        super().__init__(name)
        self.function = function

    def run(self) -> Any:
        return self.function()


class TaskRunner:
    """Runs a session's tasks: here (``workers=0``) or in a pool of threads.

    Parameters
    ----------
    workers : int
        Threads of the pool; 0 runs each task in the calling thread.
    pump : callable, optional
        Called while :meth:`Task.wait` waits (the window: process its events).
    cpu_threads : int, optional
        Threads a task's engine call may use (the window leaves a core to the GUI).

    Signals
    -------
    started(Task), ended(Task)
    """

    started = Signal(object)
    ended = Signal(object)

    def __init__(
        self,
        workers: int = 0,
        pump: Callable[[], None] | None = None,
        cpu_threads: int | None = None,
    ) -> None:
        self.workers = workers
        self.pump = pump
        self.cpu_threads = cpu_threads
        self.tasks: set[Task] = set()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(workers, "simms-task") if workers > 0 else None

    @property
    def threaded(self) -> bool:
        """True when tasks run in a pool (submit returns before they end)."""
        return self._pool is not None

    def submit(self, task: Task) -> Task:
        """Run ``task`` (here, or in the pool); returns it."""
        task._pump = self.pump
        with self._lock:
            self.tasks.add(task)
        self.started.emit(task)
        if self._pool is None:
            self._run(task)
        else:
            self._pool.submit(self._run, task)
        return task

    def _run(self, task: Task) -> None:
        try:
            task._execute()
        finally:
            with self._lock:
                self.tasks.discard(task)
            self.ended.emit(task)

    def shutdown(self, timeout: float = 30.0) -> None:
        """Stop every task and wait for them (the window closes)."""
        with self._lock:
            running = list(self.tasks)
        for task in running:
            task.cancel()
        deadline = time.monotonic() + timeout
        for task in running:
            task._ended.wait(max(0.0, deadline - time.monotonic()))
