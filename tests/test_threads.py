"""Searches from several threads at once on numba's workqueue layer (no libgomp, no TBB).

workqueue aborts the process when two threads launch parallel kernels together;
the engine must serialise them there instead (the window's worker, the warm-up
thread and a notebook do run searches together).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import threading
    import numpy as np
    import engine
    from engine.kernels.threads import threadsafe_layer
    from engine.warmup import warm_up_in_background

    assert not threadsafe_layer(), "expected numba's workqueue layer"
    lib = engine.load_library("resources/demo_library.mgf")
    queries = engine.load_library("resources/demo_queries.mgf")
    settings = [
        engine.SearchParameters(top_n=5),
        engine.SearchParameters(mode="custom", top_n=5),
        engine.SearchParameters(mode="analog", top_n=5),
    ]
    alone = [engine.search(queries, lib, p, backend="cpu") for p in settings]
    together = [None] * len(settings)

    def run(k):
        together[k] = engine.search(queries, lib, settings[k], backend="cpu")

    warm_up = warm_up_in_background()
    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(settings))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    warm_up.join()
    for a, b in zip(alone, together):
        assert len(a) > 0
        np.testing.assert_array_equal(a.query_index, b.query_index)
        np.testing.assert_array_equal(a.library_index, b.library_index)
        np.testing.assert_array_equal(a.score, b.score)
    print("OK", [len(a) for a in alone])
    """
)


def run_script(script: str, **env: str) -> subprocess.CompletedProcess:
    """``script`` in a new interpreter from the project root, with ``env`` added."""
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_concurrent_searches_on_the_workqueue_layer_take_turns_instead_of_aborting():
    run = run_script(SCRIPT, NUMBA_THREADING_LAYER="workqueue")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("OK"), run.stdout + run.stderr


EXIT_SCRIPT = textwrap.dedent(
    """
    import atexit
    import threading

    seen = {}
    # registered before engine.warmup's own handler, so it runs after it (LIFO)
    atexit.register(lambda: print("warm-up alive at exit:", seen["thread"].is_alive(), flush=True))

    from engine.warmup import warm_up_in_background

    seen["thread"] = warm_up_in_background()
    print("started", flush=True)
    """
)


@pytest.mark.slow
def test_a_process_that_ends_during_the_warm_up_waits_for_its_kernel(tmp_path):
    # A fresh numba cache: the warm-up is inside numba's compiler when the script
    # ends.  A daemon thread left compiling while the interpreter finalises can
    # segfault the process (the frozen app's smoke test did, losing its output).
    run = run_script(EXIT_SCRIPT, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.split() == "started warm-up alive at exit: False".split(), run.stdout


def test_warm_up_stops_between_kernels_when_asked():
    from engine.warmup import warm_up

    asked = []

    def stop():
        asked.append(True)
        return True

    warm_up(stop=stop)  # asked before the first kernel: nothing compiled or run
    assert asked == [True]


def test_the_compiling_note_ends_when_a_search_has_its_kernels(monkeypatch):
    """The window's "compiling" note (``warming_up()``) ends once any search has readied
    its kernels, even while the background warm-up is still busy with its own."""
    import importlib
    import threading

    from engine import warmup

    prepare = importlib.import_module("engine.search.prepare")

    busy = threading.Event()
    thread = threading.Thread(target=busy.wait, daemon=True)
    thread.start()
    monkeypatch.setattr(warmup, "_thread", thread)
    monkeypatch.setattr(warmup, "_first_ready", threading.Event())
    monkeypatch.setattr(prepare, "_listeners", [warmup._first_ready.set])
    try:
        assert warmup.warming_up()
        prepare.prepare_kernels(("a test search", object()), lambda tiny: None, lambda _: None)
        assert not warmup.warming_up()
    finally:
        busy.set()


def test_a_search_waits_for_the_warm_up_preparing_its_kernels_and_counts_the_wait():
    """Two threads preparing the same kernels: the tiny search runs once (its own
    nested prepare returns at once), the second thread waits for it and counts the
    wait as compiling; when the first fails, the second prepares them itself."""
    import importlib
    import threading
    import time

    prepare = importlib.import_module("engine.search.prepare")
    key = ("a test search", object())
    runs, started, release = [], threading.Event(), threading.Event()

    def tiny_search(tiny):  # the warm-up's tiny search: its job prepares again
        runs.append(threading.current_thread().name)
        assert prepare.prepare_kernels(key, tiny_search, lambda _: None) == 0.0
        started.set()
        release.wait(10)

    warm_up = threading.Thread(
        target=prepare.prepare_kernels, args=(key, tiny_search, lambda _: None), name="warm-up"
    )
    warm_up.start()
    assert started.wait(10)
    threading.Timer(0.5, release.set).start()
    said = []
    waited = prepare.prepare_kernels(key, tiny_search, said.append)
    warm_up.join(10)
    assert runs == ["warm-up"]
    assert waited >= 0.4
    assert prepare.prepare_kernels(key, tiny_search, said.append) == 0.0  # ready now

    other, runs, started, release = ("another search", object()), [], threading.Event(), None

    def failing(tiny):
        runs.append(threading.current_thread().name)
        if threading.current_thread().name == "warm-up":
            started.set()
            time.sleep(0.3)
            raise RuntimeError("the warm-up failed")

    def warm_up_fails():
        with pytest.raises(RuntimeError):
            prepare.prepare_kernels(other, failing, lambda _: None)

    failed = threading.Thread(target=warm_up_fails, name="warm-up")
    failed.start()
    assert started.wait(10)
    assert prepare.prepare_kernels(other, failing, lambda _: None) >= 0.2
    failed.join(10)
    assert runs == ["warm-up", threading.current_thread().name]


def test_compile_ahead_runs_a_job_once_per_environment(monkeypatch, tmp_path):
    """A job that ran leaves a marker: later runs start no child for it."""
    import importlib

    ahead = importlib.import_module("engine.search.compile_ahead")
    monkeypatch.setenv("SIMMS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(ahead, "JOBS", {"noop": "gc:collect"})
    assert not ahead.compile_ahead("noop")  # the test suite sets SIMMS_NO_COMPILE_AHEAD
    monkeypatch.delenv("SIMMS_NO_COMPILE_AHEAD")
    ahead._run("noop")  # what the child does
    assert ahead._marker("noop").exists()
    assert not ahead.compile_ahead("noop")  # done before: no child
    with pytest.raises(ValueError, match="unknown compile job"):
        ahead.compile_ahead("no such job")
