"""Calls from worker threads run on the GUI thread (``simms_gui._qt.main_thread``).

The model's tasks emit from worker threads; a listener that touches widgets must
run on the GUI thread, in the order the events were sent, without the worker ever
taking one of Qt's locks.
"""

from __future__ import annotations

import threading

from PyQt6.QtCore import QThread
from PyQt6.QtWidgets import QApplication, QPushButton

from simms_gui._qt.main_thread import main_thread_calls, on_main_thread


def _in_worker(target, n_threads: int = 1) -> list[threading.Thread]:
    threads = [threading.Thread(target=target, daemon=True) for _ in range(n_threads)]
    for t in threads:
        t.start()
    return threads


def test_worker_calls_run_on_the_gui_thread_in_order(qtbot):
    main_thread_calls()  # made on the GUI thread, as the window's desk does
    seen: list[tuple[int, bool]] = []

    @on_main_thread
    def note(k: int) -> int:
        seen.append((k, QThread.currentThread() is QApplication.instance().thread()))
        return k * 2

    futures = []
    _in_worker(lambda: futures.extend(note(k) for k in range(500)))[0].join()
    qtbot.waitUntil(lambda: len(seen) == 500, timeout=10_000)
    assert seen == [(k, True) for k in range(500)]
    assert [f.result(timeout=1) for f in futures] == [2 * k for k in range(500)]


def test_on_the_gui_thread_the_call_runs_at_once_and_extra_arguments_are_dropped(qtbot):
    seen = []
    listener = on_main_thread(lambda value: seen.append(value))
    assert listener(3, "ignored", "too").result(timeout=0) is None
    assert seen == [3]


def test_a_failing_call_is_reported_and_the_next_ones_still_run(qtbot):
    main_thread_calls()
    seen = []

    @on_main_thread
    def maybe_fail(k: int) -> None:
        if k == 1:
            raise ValueError("listener failed")
        seen.append(k)

    with qtbot.capture_exceptions() as raised:
        _in_worker(lambda: [maybe_fail(k) for k in range(3)])[0].join()
        qtbot.waitUntil(lambda: seen == [0, 2], timeout=10_000)
    assert [str(e[1]) for e in raised] == ["listener failed"]


def test_workers_calling_while_the_gui_destroys_connected_widgets_never_hang(qtbot):
    """The shape of a hang seen once with superqt's ``ensure_main_thread``: the GUI
    thread destroying objects with Python-connected signals while tasks emit."""
    main_thread_calls()
    count = [0]
    stop = threading.Event()

    @on_main_thread
    def bump() -> None:
        count[0] += 1

    def emit_until_stopped() -> None:
        while not stop.wait(0.0002):  # a steady stream, not an unbounded queue
            bump()

    threads = _in_worker(emit_until_stopped, n_threads=3)
    try:
        for _ in range(40):
            buttons = [QPushButton() for _ in range(25)]
            for b in buttons:
                b.clicked.connect(bump)
                b.destroyed.connect(lambda *_: None)
            for b in buttons:
                b.setParent(None)
                b.deleteLater()
            del buttons
            QApplication.processEvents()
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)
    assert not any(t.is_alive() for t in threads)
    qtbot.waitUntil(lambda: count[0] > 0, timeout=10_000)
