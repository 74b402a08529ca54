"""The molecular network drawn with pyqtgraph: nodes coloured by component, clickable."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PyQt6 import QtCore, QtWidgets

from engine import SpectrumNetwork
from simms_gui._qt.network_labels import NodeLabels

__all__ = ["NetworkPlot", "component_colours"]

#: Colours of components (cycled); single spectra are grey.
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
    "#17becf", "#bcbd22", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
)  # fmt: skip
SINGLE = "#b0b0b0"
#: A click this close to a node (pixels) picks it; else the nearest edge this close.
NODE_PICK_PX = 9.0
EDGE_PICK_PX = 6.0


def component_colours(component: np.ndarray, size: np.ndarray) -> list[str]:
    """Per node, its component's colour (grey for a spectrum alone)."""
    return [
        SINGLE if s < 2 else PALETTE[(c - 1) % len(PALETTE)]
        for c, s in zip(component, size, strict=True)
    ]


class NetworkPlot(QtWidgets.QWidget):
    """A network plot; click a node or an edge.

    Signals
    -------
    nodeClicked(int)
        The node (spectrum index) clicked.
    edgeClicked(int)
        The edge (row of ``network.edges``) clicked.
    """

    nodeClicked = QtCore.pyqtSignal(int)  # noqa: N815
    edgeClicked = QtCore.pyqtSignal(int)  # noqa: N815

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setBackground("w")
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.graphics)
        self.plot_item = self.graphics.addPlot()
        self.plot_item.hideAxis("left")
        self.plot_item.hideAxis("bottom")
        self.plot_item.hideButtons()
        self.plot_item.setMenuEnabled(False)
        self.plot_item.setAspectLocked(True)
        self.graph_item = pg.GraphItem()
        self.plot_item.addItem(self.graph_item)
        self.highlight = pg.ScatterPlotItem(
            size=16, pen=pg.mkPen("#000000", width=2.5), brush=pg.mkBrush(0, 0, 0, 0)
        )
        self.highlight.setZValue(10)
        self.plot_item.addItem(self.highlight)
        self.edge_highlight = pg.PlotDataItem(pen=pg.mkPen("#000000", width=4))
        self.edge_highlight.setZValue(9)
        self.plot_item.addItem(self.edge_highlight)
        self.network: SpectrumNetwork | None = None
        self.positions = np.zeros((0, 2))
        #: Names of the nodes' library hits that pass the label floor.
        self.labels = NodeLabels(self.plot_item)
        self.graphics.scene().sigMouseClicked.connect(self._on_mouse_clicked)

    def set_network(self, net: SpectrumNetwork, positions: np.ndarray) -> None:
        """Draw ``net`` with nodes at ``positions`` (shape ``(n_nodes, 2)``)."""
        self.network = net
        self.positions = np.asarray(positions, dtype=np.float64)
        colours = component_colours(net.component, net.component_size)
        widths = 0.6 + 3.0 * np.clip((net.score - 0.5) / 0.5, 0, 1)
        pens = np.array(
            [(120, 120, 120, 200, w) for w in widths],
            dtype=[("red", np.ubyte), ("green", np.ubyte), ("blue", np.ubyte),
                   ("alpha", np.ubyte), ("width", float)],
        )  # fmt: skip
        self.graph_item.setData(
            pos=self.positions,
            adj=net.edges.astype(int) if len(net.edges) else None,
            pen=pens if len(net.edges) else None,
            size=np.where(net.component_size > 1, 11, 7),
            symbolBrush=[pg.mkBrush(c) for c in colours],
            symbolPen=pg.mkPen("#ffffff", width=0.8),
            pxMode=True,
        )  # fmt: skip
        self.select_node(None)
        self.labels.show(net, self.positions)
        padding = 0.1 if self.labels.items else 0.05  # room for the labels at the edges
        self.plot_item.getViewBox().autoRange(padding=padding, items=[self.graph_item])

    def clear(self) -> None:
        """Show nothing."""
        self.network = None
        self.positions = np.zeros((0, 2))
        self.graph_item.setData(pos=np.zeros((0, 2)))
        self.labels.clear()
        self.select_node(None)

    def select_node(self, node: int | None) -> None:
        """Ring ``node`` (None: no ring); also clears an edge highlight."""
        if node is None or self.network is None:
            self.highlight.setData([], [])
        else:
            x, y = self.positions[node]
            self.highlight.setData([x], [y])
        self.edge_highlight.setData([], [])

    def select_edge(self, edge: int) -> None:
        """Draw edge ``edge`` thick."""
        a, b = self.network.edges[edge]
        self.highlight.setData([], [])
        self.edge_highlight.setData(self.positions[[a, b], 0], self.positions[[a, b], 1])

    # -- picking --------------------------------------------------------------------
    def node_scene_pos(self, node: int) -> QtCore.QPointF:
        """Where node ``node`` is drawn, in scene coordinates."""
        x, y = self.positions[node]
        return self.plot_item.getViewBox().mapViewToScene(QtCore.QPointF(x, y))

    def edge_scene_pos(self, edge: int) -> QtCore.QPointF:
        """The middle of edge ``edge``, in scene coordinates."""
        a, b = self.network.edges[edge]
        x, y = (self.positions[a] + self.positions[b]) / 2
        return self.plot_item.getViewBox().mapViewToScene(QtCore.QPointF(x, y))

    def pick(self, scene_pos: QtCore.QPointF) -> tuple[str, int] | None:
        """``("node", i)`` or ``("edge", e)`` under ``scene_pos``, or None."""
        if self.network is None or not len(self.positions):
            return None
        vb = self.plot_item.getViewBox()
        if not vb.sceneBoundingRect().contains(scene_pos):
            return None
        # pixel distances: map every node to the scene (views may be zoomed anisotropically)
        view = vb.mapSceneToView(scene_pos)
        px, py = vb.viewPixelSize()
        pts = (self.positions - (view.x(), view.y())) / (px, py)
        d_node = np.hypot(pts[:, 0], pts[:, 1])
        nearest = int(np.argmin(d_node))
        if d_node[nearest] <= NODE_PICK_PX:
            return "node", nearest
        if not len(self.network.edges):
            return None
        a, b = pts[self.network.edges[:, 0]], pts[self.network.edges[:, 1]]
        ab = b - a
        t = np.clip(-(a * ab).sum(1) / np.maximum((ab * ab).sum(1), 1e-12), 0, 1)
        closest = a + t[:, None] * ab
        d_edge = np.hypot(closest[:, 0], closest[:, 1])
        edge = int(np.argmin(d_edge))
        return ("edge", edge) if d_edge[edge] <= EDGE_PICK_PX else None

    def _on_mouse_clicked(self, event) -> None:
        if event.button() != QtCore.Qt.MouseButton.LeftButton:
            return
        picked = self.pick(event.scenePos())
        if picked is None:
            return
        kind, index = picked
        if kind == "node":
            self.select_node(index)
            self.nodeClicked.emit(index)
        else:
            self.select_edge(index)
            self.edgeClicked.emit(index)

    def export_image(self, path) -> None:
        """Write the plot to PNG or SVG."""
        from pyqtgraph.exporters import ImageExporter, SVGExporter

        exporter = (SVGExporter if str(path).lower().endswith(".svg") else ImageExporter)(
            self.plot_item
        )
        exporter.export(str(path))
