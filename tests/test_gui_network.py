"""The Network tab driven through the Viewer: clicks on nodes and edges, cancel, headless model."""

from __future__ import annotations

import numpy as np
import pytest
from PyQt6 import QtCore

import engine
import simms_gui
from simms_gui.model import NetworkRequest
from simms_gui.session import Session

SCORE = {"preprocess": "none", "tolerance": 0.1, "threshold": 0.7, "min_matches": 6}


@pytest.fixture
def viewer(qtbot):
    v = simms_gui.Viewer(show=True)
    v.window.resize(1400, 1000)
    qtbot.addWidget(v.window)
    yield v
    v.close()


def _click(qtbot, plot, scene_pos) -> None:
    pos = plot.graphics.mapFromScene(scene_pos)
    qtbot.mouseClick(plot.graphics.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=pos)


def _pixels(plot, point) -> np.ndarray:
    p = plot.graphics.mapFromScene(point)
    return np.array([p.x(), p.y()], dtype=float)


def test_network_tab_clicks_select_spectra_and_show_mirror_plots(viewer, qtbot, data_dir):
    queries = viewer.open_queries(data_dir / "pesticides.mgf")
    handle = viewer.network(top_n=5, link_method="mutual", max_component_size=10, **SCORE)
    net = handle.wait(timeout=120)
    assert handle.done and not handle.cancelled and net is not None
    expected = engine.network(
        queries, top_n=5, max_links=5, link_method="mutual", max_component_size=10, **SCORE
    )
    np.testing.assert_array_equal(net.edges, expected.edges)
    assert net.n_edges > 10
    tab = viewer.window.network_tab
    assert viewer.window.tabs.currentWidget() is tab
    plot = tab.plot
    qtbot.waitUntil(lambda: plot.graphics.isVisible())
    QtCore.QCoreApplication.processEvents()

    # a real click on a node in a component: it is ringed, described and selected
    node = int(net.edges[0, 0])
    _click(qtbot, plot, plot.node_scene_pos(node))
    assert tab.selected_node == node
    assert viewer.window.query_list.selected_rows() == [node]
    assert queries.ids[node] in tab.info.text()

    # a real click on the middle of an edge (one far from every node and other edge)
    nodes_px = np.array([_pixels(plot, plot.node_scene_pos(i)) for i in range(len(net))])

    def clearance(e: int) -> float:
        mid = _pixels(plot, plot.edge_scene_pos(e))
        near = np.min(np.hypot(*(nodes_px - mid).T))
        for other, (a, b) in enumerate(net.edges):
            if other != e:  # distance from the midpoint to the other edge's segment
                p, q = nodes_px[a], nodes_px[b]
                t = np.clip(np.dot(mid - p, q - p) / max(np.dot(q - p, q - p), 1e-12), 0, 1)
                near = min(near, float(np.hypot(*(mid - (p + t * (q - p))))))
        return near

    clearances = [clearance(e) for e in range(net.n_edges)]
    edge = int(np.argmax(clearances))
    assert clearances[edge] > 12
    _click(qtbot, plot, plot.edge_scene_pos(edge))
    assert tab.selected_edge == edge
    mirror = tab.pair_view.mirror
    # the mirror plot's own peak matching agrees with the network's exact score
    assert mirror.matches.matches == net.matches[edge]
    assert mirror.matches.score == pytest.approx(net.score[edge], abs=1e-6)
    a, b = net.edges[edge]
    assert f"edge {a}–{b}" in mirror.title_text
    assert f"{net.score[edge]:.4f}" in tab.info.text()

    # a click on empty space changes nothing
    corner = plot.plot_item.getViewBox().sceneBoundingRect().topLeft() + QtCore.QPointF(2, 2)
    if plot.pick(corner) is None:
        _click(qtbot, plot, corner)
        assert tab.selected_edge == edge


def test_network_cancel_keeps_nothing(viewer, data_dir):
    viewer.open_queries(data_dir / "pesticides.mgf")
    handle = viewer.network(**SCORE)
    handle.cancel()  # before the worker's first batch
    assert handle.wait(timeout=120) is None
    assert handle.cancelled and viewer.session.network is None
    tab = viewer.window.network_tab
    assert "stopped" in tab.info.text().lower()
    assert tab.build_button.isEnabled() and not tab.stop_button.isEnabled()
    with pytest.raises(RuntimeError, match="library"):
        viewer.network(spectra="library")


def test_session_builds_networks_without_qt(data_dir):
    session = Session()
    session.open(data_dir / "pesticides.mgf", "queries")
    events = []
    session.events.network_started.connect(lambda r: events.append(("started", r)))
    session.events.network_finished.connect(lambda e: events.append(("finished", e.network)))
    from engine.analyses.networking import network_parameters

    net = session.run_network(NetworkRequest(params=network_parameters(**SCORE), backend="cpu"))
    assert [what for what, _ in events] == ["started", "finished"] and events[1][1] is net
    expected = engine.network(session.queries.spectra, **SCORE)
    np.testing.assert_array_equal(net.edges, expected.edges)
    assert session.network is net and session.network_state == "idle"


@pytest.mark.slow
def test_network_of_the_demo(qtbot):
    """The demo as a new user meets it: its 40 queries, then its library, from the controls."""
    v = simms_gui.Viewer(show=True, demo=True)
    v.window.resize(1400, 1000)
    qtbot.addWidget(v.window)
    tab = v.window.network_tab
    v.window.tabs.setCurrentWidget(tab)
    try:
        # the demo's 40 queries are unrelated compounds: every node drawn, no edge, and why
        qtbot.mouseClick(tab.build_button, QtCore.Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: tab.build_button.isEnabled(), timeout=120_000)
        net = v.session.network
        assert net is not None and len(net) == len(v.session.queries.spectra) == 40
        assert net.n_edges == 0 and "no edge" in tab.info.text()
        assert len(tab.plot.positions) == 40

        # the demo library (3,000 spectra) at the same GNPS settings: a real network
        tab.source.setCurrentText("library")
        qtbot.mouseClick(tab.build_button, QtCore.Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: tab.build_button.isEnabled(), timeout=300_000)
        net = v.session.network
        assert len(net) == 3000 and net.n_edges > 100
        expected = engine.network(v.session.library, backend="cpu")
        np.testing.assert_array_equal(net.edges, expected.edges)
        QtCore.QCoreApplication.processEvents()
        # click the middle of the edge whose midpoint lies farthest from every node
        plot = tab.plot
        nodes_px = np.array([_pixels(plot, plot.node_scene_pos(i)) for i in range(len(net))])
        mids = np.array([_pixels(plot, plot.edge_scene_pos(e)) for e in range(net.n_edges)])
        near = np.min(np.hypot(*(nodes_px[None, :, :] - mids[:, None, :]).transpose(2, 0, 1)), 1)
        edge = int(np.argmax(near))
        _click(qtbot, plot, plot.edge_scene_pos(edge))
        if tab.selected_edge != edge:  # another edge crosses there: that one is shown
            assert tab.selected_edge is not None
            edge = tab.selected_edge
        mirror = tab.pair_view.mirror
        assert mirror.matches.score == pytest.approx(net.score[edge], abs=1e-6)
        assert mirror.matches.matches == net.matches[edge]
    finally:
        v.close()
