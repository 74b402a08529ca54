"""The desktop's headless model: typed events, one task runner, every analysis a task.

The same four analyses (search, network, clustering, heatmap) run from a script
(a :class:`Session` without Qt, tasks in the calling thread) and from the
window (the same session class, tasks in its runner's thread pool), and give
the engine's own answers on real spectra.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import engine
from simms_gui.model import (
    ClusterTask,
    HeatmapTask,
    NetworkRequest,
    NetworkTask,
    SearchTask,
    Session,
    Signal,
    TaskRunner,
)
from simms_gui.model.events import FilesChanged, HitsChanged
from simms_gui.model.requests import selection_request

PARAMS = engine.SearchParameters(mode="custom", top_n=3)
CLUSTER = engine.ClusterParameters(threshold=0.7)


def test_a_signal_checks_what_it_carries_and_its_name():
    class Events:
        files = Signal(FilesChanged)

    events, seen = Events(), []
    events.files.connect(seen.append)
    with pytest.raises(TypeError, match="carries FilesChanged, not str"):
        events.files.emit("libraries")  # a string event is refused where it is sent
    with pytest.raises(TypeError, match="1 value"):
        events.files.emit()
    with pytest.raises(AttributeError):
        events.file  # noqa: B018 - a misspelt event fails at once, never goes unheard
    event = FilesChanged(("a.mgf",), 0)
    events.files.emit(event)
    assert seen == [event]
    events.files.disconnect(seen.append)
    events.files.emit(event)
    assert seen == [event]


def test_bound_listeners_are_held_weakly():
    class Events:
        changed = Signal(int)

    class Listener:
        def __init__(self):
            self.seen = []

        def on(self, value):
            self.seen.append(value)

    events, listener = Events(), Listener()
    events.changed.connect(listener.on)
    events.changed.emit(1)
    assert listener.seen == [1] and len(events.changed) == 1
    del listener  # a closed window's controller is not kept alive by the session
    events.changed.emit(2)
    assert len(events.changed) == 0


def reference(session: Session) -> dict[str, object]:
    queries, library = session.queries.spectra, session.library
    return {
        "search": engine.search(queries, library, PARAMS, backend="cpu"),
        "cluster": engine.cluster_spectra(queries, CLUSTER, backend="cpu"),
        "network": engine.network(queries, backend="cpu"),
        "heatmap": engine.score_matrix(queries.subset([0, 1, 2]), queries.subset([0, 1, 2]))[0],
    }


def run_all(session: Session) -> dict[str, object]:
    """The four analyses asked of a session, as tasks; their results once waited for."""
    tasks = {
        "search": session.search(PARAMS, "cpu"),
    }
    tasks["search"].wait(timeout=120)
    tasks["cluster"] = session.cluster("queries", CLUSTER, "cpu")
    tasks["network"] = session.request_network(NetworkRequest(backend="cpu"))
    request = selection_request(session.queries.spectra, [0, 1, 2])
    tasks["heatmap"] = session.heatmap(request, engine.SearchParameters(), "cpu")
    kinds = {"search": SearchTask, "cluster": ClusterTask, "network": NetworkTask}
    kinds["heatmap"] = HeatmapTask
    for name, task in tasks.items():
        assert isinstance(task, kinds[name])
    return {name: task.wait(timeout=120) for name, task in tasks.items()}


def check(results: dict[str, object], want: dict[str, object]) -> None:
    hits, expected = results["search"], want["search"]
    assert len(hits) == len(expected) > 0
    np.testing.assert_array_equal(hits.library_index, expected.library_index)
    np.testing.assert_array_equal(hits.score, expected.score)
    np.testing.assert_array_equal(results["cluster"].labels, want["cluster"].labels)
    np.testing.assert_array_equal(results["network"].edges, want["network"].edges)
    np.testing.assert_array_equal(results["heatmap"], want["heatmap"])


@pytest.mark.slow
def test_a_script_runs_every_analysis_in_its_own_thread(data_dir):
    session = Session()  # no Qt: the runner runs each task here, before submit returns
    assert not session.runner.threaded
    session.open(data_dir / "pesticides.mgf", "library")
    session.open(data_dir / "pesticides.mgf", "queries")
    threads = set()
    session.runner.ended.connect(lambda task: threads.add(threading.current_thread()))
    hits = []
    session.events.hits.connect(hits.append)
    check(run_all(session), reference(session))
    assert threads == {threading.main_thread()}
    # one reset, then the streamed chunks; no table columns made without a window
    assert hits[0].replace and not any(e.replace for e in hits[1:])
    assert all(isinstance(e, HitsChanged) and e.columns is None for e in hits)
    assert sum(len(e.hits) for e in hits) == len(session.hits)
    assert session.clusters is not None and session.network is not None


@pytest.mark.slow
def test_the_window_runs_them_through_the_same_runner(qtbot, data_dir):
    from simms_gui._qt.main_window import MainWindow

    session = Session()
    window = MainWindow(session, persist_settings=False)
    qtbot.addWidget(window)
    try:
        assert session.runner.threaded and session.display
        session.open(data_dir / "pesticides.mgf", "library")
        session.open(data_dir / "pesticides.mgf", "queries")
        threads, names = set(), []
        session.runner.ended.connect(lambda task: threads.add(threading.current_thread()))
        session.runner.started.connect(lambda task: names.append(type(task).__name__))
        with qtbot.waitSignal(window.heatmapReady, timeout=120_000):
            check(run_all(session), reference(session))
        assert names == ["SearchTask", "ClusterTask", "NetworkTask", "HeatmapTask"]
        assert threading.main_thread() not in threads
        # the window shows each: the table, the log, the network tab, the heatmap
        assert window.results.model.rowCount() == len(session.hits)
        assert "Clustered: " in window.log_view.toPlainText()
        assert window.network_tab.plot is not None and "47 edges" in window.network_tab.info.text()
        assert window.heatmap_panel.request is not None
    finally:
        window.shutdown()


def test_viewer_cluster_returns_a_task_at_once(qtbot, data_dir, monkeypatch):
    import simms_gui
    import simms_gui.model.analyses as analyses

    release = threading.Event()
    real = analyses.cluster_spectra

    def held(*args, **kwargs):
        release.wait(60)  # the clustering cannot end before the call has returned
        return real(*args, **kwargs)

    monkeypatch.setattr(analyses, "cluster_spectra", held)
    viewer = simms_gui.Viewer(show=False)
    qtbot.addWidget(viewer.window)
    try:
        queries = viewer.open_queries(data_dir / "pesticides.mgf")
        task = viewer.cluster(threshold=0.7, backend="cpu")
        assert isinstance(task, ClusterTask) and not task.done  # the event loop is free
        release.set()
        result = task.wait(timeout=120)
        want = engine.cluster_spectra(queries, threshold=0.7, backend="cpu")
        np.testing.assert_array_equal(result.labels, want.labels)
        assert viewer.session.clusters is result
    finally:
        release.set()
        viewer.close()


def test_a_failed_task_says_why(data_dir):
    session = Session(TaskRunner(2))
    with pytest.raises(RuntimeError, match="open a library and queries"):
        session.search()
    task = session.load(data_dir / "no-such-file.mgf", "library")
    with pytest.raises(RuntimeError, match="no-such-file.mgf"):
        task.wait(timeout=30)
    assert task.state == "failed" and "no-such-file.mgf" in task.error
    assert session.libraries == []


def test_a_waiter_returns_after_the_finished_listeners_ran():
    """``wait()`` returns only once ``finished``'s listeners ran (what they queue for
    the window, e.g. an error box, is then there for its last pump): with the task
    marked ended before them, a loaded machine let the waiter return first."""
    from simms_gui.model import CallTask

    runner = TaskRunner(1)
    heard = []

    def slow_listener(task) -> None:
        assert task.done  # ended for its listeners already
        time.sleep(0.2)
        heard.append(task.state)

    for function in (lambda: 1, lambda: 1 / 0):
        task = CallTask("sum", function)
        task.finished.connect(slow_listener)
        runner.submit(task)
        try:
            task.wait(timeout=30)
        except Exception:  # noqa: BLE001 - the failing one
            pass
        assert heard and heard[-1] == task.state
    assert heard == ["done", "failed"]


def test_the_window_times_the_search_without_its_wait_for_numba(qtbot, data_dir, monkeypatch):
    """A first run's compile is said apart ("and N s compiling"), not in the search's time."""
    import importlib
    import time

    from simms_gui._qt.main_window import MainWindow

    def slow_prepare(key, run_tiny, say):  # kernels ready after a wait, as on a first run
        started = time.perf_counter()
        time.sleep(1.5)
        return time.perf_counter() - started

    job_module = importlib.import_module("engine.search.job")
    monkeypatch.setattr(job_module, "prepare_kernels", slow_prepare)
    session = Session()
    window = MainWindow(session, persist_settings=False)
    qtbot.addWidget(window)
    try:
        session.open(data_dir / "pesticides.mgf", "library")
        session.open(data_dir / "pesticides.mgf", "queries")
        finished = []
        session.events.search_finished.connect(finished.append)
        with qtbot.waitSignal(window.searchFinished, timeout=120_000):
            session.search(PARAMS, "cpu")
        event = finished[-1]
        assert event.compile_seconds >= 1.5
        assert event.search_seconds == pytest.approx(event.seconds - event.compile_seconds)
        done = [
            line for line in window.log_view.toPlainText().splitlines() if "Search done" in line
        ]
        assert done and f"hits in {event.search_seconds:.1f} s" in done[-1]
        assert f"(and {event.compile_seconds:.0f} s compiling kernels, first run only)" in done[-1]
    finally:
        window.shutdown()


def test_a_search_is_settled_when_its_end_is_announced(data_dir):
    """Listeners of ``search_finished`` read the task's final state, not "running"."""
    session = Session()
    session.open(data_dir / "pesticides.mgf", "library")
    session.open(data_dir / "pesticides.mgf", "queries")
    seen = []
    session.events.search_finished.connect(
        lambda event: seen.append((event.outcome, session.search_task.state))
    )
    task = session.search(PARAMS, "cpu")
    task.wait()
    assert seen == [("done", "done")]
    assert task.state == "done" and not task.cancelled
