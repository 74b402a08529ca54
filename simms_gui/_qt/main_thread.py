"""Run a function on the GUI thread, whichever thread calls it.

The model's tasks emit their events from worker threads; a listener that touches
widgets must run on the GUI thread.  superqt's ``ensure_main_thread`` makes a
``QObject`` in the worker for every call, moves it to the GUI thread and connects
it, holding the GIL while it takes Qt's object locks.  When the GUI thread at the
same moment destroys an object with a Python-connected signal (``~QObject`` holds
such a lock and waits for the GIL in PyQt's ``disconnectNotify``), both threads
wait for ever: a full test run once hung there.

Here a worker never calls Qt: it puts the call on a queue and writes one byte to a
socket pair; a ``QSocketNotifier`` made on the GUI thread wakes it, and it runs the
queued calls in order (the self-pipe wake-up of event loops).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import queue
import socket
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from PyQt6.QtCore import QCoreApplication, QObject, QSocketNotifier, QThread

__all__ = ["MainThreadCalls", "main_thread_calls", "on_main_thread"]


class MainThreadCalls(QObject):
    """The GUI thread's queue of calls from other threads (one per application).

    Make it on the GUI thread (:func:`main_thread_calls` does).
    """

    def __init__(self, app: QCoreApplication) -> None:
        super().__init__(app)
        self._calls: queue.SimpleQueue[tuple[Callable, tuple, dict, Future]] = queue.SimpleQueue()
        self._wake_in, self._wake_out = socket.socketpair()
        for end in (self._wake_in, self._wake_out):
            end.setblocking(False)
        self._notifier = QSocketNotifier(self._wake_in.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._run_queued)
        self.destroyed.connect(self._close_sockets)

    def _close_sockets(self) -> None:
        self._wake_in.close()
        self._wake_out.close()

    def call(self, function: Callable, args: tuple, kwargs: dict) -> Future:
        """Queue ``function(*args, **kwargs)`` for the GUI thread (any thread; no Qt call)."""
        future: Future = Future()
        self._calls.put((function, args, kwargs, future))
        with contextlib.suppress(BlockingIOError, OSError):  # full: a wake-up is pending
            self._wake_out.send(b"\0")
        return future

    def _run_queued(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            while self._wake_in.recv(4096):  # read the wake-ups first: none is lost
                pass
        while True:
            try:
                function, args, kwargs, future = self._calls.get_nowait()
            except queue.Empty:
                return
            try:
                future.set_result(function(*args, **kwargs))
            except Exception as exc:  # reported as a slot's error would be; the rest still run
                future.set_exception(exc)
                sys.excepthook(type(exc), exc, exc.__traceback__)


_made: dict[int, MainThreadCalls] = {}
_lock = threading.Lock()


def main_thread_calls() -> MainThreadCalls | None:
    """The application's :class:`MainThreadCalls`, made when called on the GUI thread.

    None when there is no application, or when it has none yet and this is not
    the GUI thread.
    """
    app = QCoreApplication.instance()
    if app is None:
        return None
    with _lock:
        calls = _made.get(id(app))
        if calls is None and QThread.currentThread() is app.thread():
            calls = _made[id(app)] = MainThreadCalls(app)
            calls.destroyed.connect(functools.partial(_made.pop, id(app), None))
    return calls


def _positional_limit(function: Callable) -> int | None:
    """How many positional arguments ``function`` takes (None: any number)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = [p.kind for p in parameters]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return None
    return sum(k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
               for k in kinds)  # fmt: skip


def on_main_thread(function: Callable) -> Callable:
    """``function`` run on the GUI thread whoever calls it.

    On the GUI thread it runs at once; from another thread it is queued and runs
    when the GUI thread's event loop next turns (in the order queued).  Either way
    the call returns a ``concurrent.futures.Future`` of its result.  Positional
    arguments past those ``function`` takes are dropped, as for a Qt slot (a
    listener may ignore what a signal carries).
    """
    limit = _positional_limit(function)

    @functools.wraps(function)
    def run_there(*args: Any, **kwargs: Any) -> Future:
        args = args if limit is None else args[:limit]
        app = QCoreApplication.instance()
        if app is None or QThread.currentThread() is app.thread():
            future: Future = Future()
            future.set_result(function(*args, **kwargs))
            return future
        calls = main_thread_calls()
        if calls is None:  # no GUI-thread queue yet: superqt's way, once
            from superqt.utils import ensure_main_thread

            return ensure_main_thread(function)(*args, **kwargs)
        return calls.call(function, args, kwargs)

    return run_there
