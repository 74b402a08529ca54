"""``viewer.cluster``: clusters through the headless session; the window logs them."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import simms_gui
from simms_gui.model import ClusterTask, Session


def test_viewer_cluster_equals_the_engine_and_the_window_logs_it(qtbot, data_dir):
    viewer = simms_gui.Viewer(show=False)
    qtbot.addWidget(viewer.window)
    try:
        queries = viewer.open_queries(data_dir / "pesticides.mgf")
        task = viewer.cluster(threshold=0.7, backend="cpu")  # returns at once: a task
        assert isinstance(task, ClusterTask)
        result = task.wait(timeout=120)
        assert task.done and task.state == "done" and task.progress == 1.0
        want = engine.cluster_spectra(queries, threshold=0.7, backend="cpu")
        assert np.array_equal(result.labels, want.labels)
        assert np.array_equal(result.representatives, want.representatives)
        assert viewer.session.clusters is result
        assert f"Clustered: {want.summary()}" in viewer.window.log_view.toPlainText()
    finally:
        viewer.close()


def test_session_clusters_a_library_without_qt(data_dir):
    session = Session()
    events = []
    session.events.clusters.connect(events.append)
    with pytest.raises(RuntimeError, match="open a library"):
        session.run_cluster("library")
    session.open(data_dir / "pesticides.mgf", "library")
    params = engine.ClusterParameters(linkage="single", threshold=0.7)
    result = session.run_cluster("library", params, "cpu")
    assert events == [result]
    assert result.params.linkage == "single" and len(result) == len(session.library)
