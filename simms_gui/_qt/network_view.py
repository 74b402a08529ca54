"""The Network tab: ask the session for a molecular network, click nodes and edges.

Clicking a node selects its spectrum (in the query list when the network is of
the queries) and describes it; clicking an edge shows the pair's mirror plot
below, scored as the network scored it.
"""

from __future__ import annotations

from PyQt6.QtCore import Qt, pyqtSignal
from PyQt6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from engine.analyses.networking import NetworkSettings, network_parameters
from simms_gui._qt.desk import on_main_thread
from simms_gui._qt.network_plot import NetworkPlot
from simms_gui._qt.spectrum_view import PairView
from simms_gui.model import NetworkRequest, Session
from simms_gui.model.events import NetworkFinished
from simms_gui.network_layout import network_layout
from simms_gui.pairs import compute_pair, pair_row

__all__ = ["NetworkTab"]


class NetworkTab(QWidget):
    """Controls, the network plot and the mirror plot of a clicked edge.

    Parameters
    ----------
    session : Session
        The model: the tab shows its ``network_started`` and ``network_finished``.
    query_list : QueryList, optional
        Where a clicked query node is selected.

    Signals
    -------
    nodeSelected(int)
        A node was clicked (its spectrum index).
    networkShown()
        A new network is drawn.
    """

    nodeSelected = pyqtSignal(int)  # noqa: N815
    networkShown = pyqtSignal()  # noqa: N815

    def __init__(self, session: Session, query_list=None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.query_list = query_list
        self.plot = NetworkPlot()
        self.pair_view = PairView()
        self.positions = None
        self.selected_node: int | None = None
        self.selected_edge: int | None = None
        self._build_controls()
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.plot)
        splitter.addWidget(self.pair_view)
        splitter.setSizes([560, 340])
        splitter.setCollapsible(1, False)  # the mirror plot keeps its minimum height
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(self.bar)
        layout.addWidget(self.info)
        layout.addWidget(splitter, 1)
        self.plot.nodeClicked.connect(self.select_node)
        self.plot.edgeClicked.connect(self.show_edge)
        session.events.network_started.connect(self.on_started)
        session.events.network_finished.connect(self.on_finished)

    def _build_controls(self) -> None:
        self.source = QComboBox()
        self.source.addItems(["queries", "library"])
        self.threshold = QDoubleSpinBox(decimals=2, minimum=0.0, maximum=1.0, singleStep=0.05)
        self.threshold.setValue(0.7)
        self.min_matches = QSpinBox(minimum=0, maximum=1000, value=6)
        self.top_n = QSpinBox(minimum=0, maximum=1000, value=10)
        self.link_method = QComboBox()
        self.link_method.addItems(["single", "mutual"])
        self.max_size = QSpinBox(minimum=0, maximum=100000, value=100)
        self.max_size.setToolTip("Largest component; larger ones lose their weakest edges (0: off)")
        self.label_library = QCheckBox("Label with library hits")
        self.build_button = QPushButton("Build network")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setEnabled(False)
        self.progress = QProgressBar(maximum=1000)
        self.progress.setMaximumWidth(160)
        self.progress.hide()
        self.info = QLabel(
            "Modified cosine network (GNPS settings). Click a node to select its spectrum, "
            "an edge for its mirror plot."
        )
        self.info.setWordWrap(True)
        self.info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # two rows, so the tab (and the window) still fit a 1366-pixel-wide screen
        first, second = QHBoxLayout(), QHBoxLayout()
        for row, text, widget in (
            (first, "Spectra", self.source), (first, "Score ≥", self.threshold),
            (first, "Matched peaks ≥", self.min_matches), (first, "Top K", self.top_n),
            (second, "Links", self.link_method), (second, "Max component", self.max_size),
        ):  # fmt: skip
            row.addWidget(QLabel(text))
            row.addWidget(widget)
        first.addStretch(1)
        second.addWidget(self.label_library)
        second.addStretch(1)
        second.addWidget(self.progress)
        second.addWidget(self.build_button)
        second.addWidget(self.stop_button)
        bar = QVBoxLayout()
        bar.addLayout(first)
        bar.addLayout(second)
        self.bar = bar
        self.build_button.clicked.connect(self.request_from_controls)
        self.stop_button.clicked.connect(self.stop)

    # -- requests -------------------------------------------------------------------
    def request_from_controls(self) -> None:
        """Ask the session for a network with the controls' settings."""
        top_n = self.top_n.value()
        request = NetworkRequest(
            source=self.source.currentText(),
            params=network_parameters(
                threshold=self.threshold.value(), min_matches=self.min_matches.value()
            ),
            settings=NetworkSettings(
                top_n=top_n,
                max_links=top_n,
                link_method=self.link_method.currentText(),
                max_component_size=self.max_size.value(),
            ),  # fmt: skip
            label_with_library=self.label_library.isChecked(),
        )
        try:
            self.session.request_network(request)
        except RuntimeError as exc:
            self.info.setText(str(exc))

    @on_main_thread
    def on_started(self, request: NetworkRequest) -> None:
        """A network is being built (from the controls or a script)."""
        task = self.session.network_task
        spectra = task.spectra if task is not None else ()
        self.build_button.setEnabled(False)
        self.stop_button.setEnabled(True)
        self.progress.setValue(0)
        self.progress.show()
        self.info.setText(f"Scoring every pair of {len(spectra):,} {request.source} spectra…")
        if task is not None:
            task.progressed.connect(self._show_progress)

    @on_main_thread
    def _show_progress(self, fraction: float) -> None:
        self.progress.setValue(int(1000 * fraction))

    def stop(self) -> None:
        """Stop the network being built."""
        if self.session.network_state == "running":
            self.session.cancel_network()
            self.info.setText("Stopping…")

    @on_main_thread
    def on_finished(self, event: NetworkFinished) -> None:
        """The build ended: draw the network, or say why there is none."""
        self.build_button.setEnabled(True)
        self.stop_button.setEnabled(False)
        self.progress.hide()
        if event.cancelled:
            self.info.setText("Network stopped; nothing kept.")
        elif event.error:
            self.info.setText(f"Network failed: {event.error}")
        else:
            self.positions = event.positions
            self.show_network()

    # -- showing ----------------------------------------------------------------------
    def show_network(self) -> None:
        """Draw the session's network (laid out here if it came without positions)."""
        net = self.session.network
        if net is None:
            self.plot.clear()
            return
        if self.positions is None or len(self.positions) != len(net):
            self.positions = network_layout(net)
        self.plot.set_network(net, self.positions)
        self.pair_view.clear()
        self.selected_node = self.selected_edge = None
        sizes = net.component_size
        components = len(set(net.component[sizes > 1].tolist()))
        rule = (
            f"{net.params.score_label} ≥ {net.params.threshold:g}, "
            f"≥ {net.params.min_matches} matched peaks"
        )
        if net.n_edges == 0:  # say why the picture is only dots, and what to try
            self.info.setText(
                f"{len(net):,} spectra and no edge: no pair reaches {rule}. Lower Score or "
                "Matched peaks, or choose Spectra: library (related compounds are rare "
                "among a few unrelated queries)."
            )
        else:
            self.info.setText(
                f"{len(net):,} spectra, {net.n_edges:,} edges ({rule}), {components} "
                f"components of 2 or more, {net.removed_edges} edges removed by the size "
                "limit. Click a node or an edge."
            )
        self.networkShown.emit()

    def _pick(self, node: int | None = None, edge: int | None = None):
        """Ring ``node`` or ``edge`` on the network shown; the network (None: none shown)."""
        net = self.session.network
        if net is not None:
            self.selected_node, self.selected_edge = node, edge
            if node is not None:
                self.plot.select_node(node)
            else:
                self.plot.select_edge(edge)
        return net

    def select_node(self, node: int) -> None:
        """Select spectrum ``node``: ring it, describe it, select it in the query list."""
        net = self._pick(node=node)
        if net is None:
            return
        columns = net.node_columns()
        text = (
            f"Spectrum {node}: {columns['spectrum_id'][node]} — {columns['name'][node] or '?'}, "
            f"precursor m/z {columns['precursor_mz'][node]:.4f}, component "
            f"{columns['component'][node]} ({columns['component_size'][node]} spectra), "
            f"{columns['degree'][node]} edges"
        )
        if "library_name" in columns and columns["library_index"][node] >= 0:
            text += (
                f"; best library hit {columns['library_name'][node]} "
                f"({columns['library_score'][node]:.3f})"
            )
        self.info.setText(text)
        request = self.session.network_request
        queries = self.session.queries
        if (
            self.query_list is not None and request is not None and request.source == "queries"
            and queries is not None and queries.spectra is net.spectra
        ):  # fmt: skip
            self.query_list.select_rows([node])
            shown = self.query_list.proxy.mapFromSource(self.query_list.model.index(node, 0))
            if shown.isValid():
                self.query_list.table.scrollTo(shown)
        self.nodeSelected.emit(node)

    def show_edge(self, edge: int) -> None:
        """Mirror plot of edge ``edge``'s two spectra, matched as the network scored them."""
        net = self._pick(edge=edge)
        if net is None:
            return
        a, b = (int(i) for i in net.edges[edge])
        pair = compute_pair(net.spectra, a, net.spectra, b, net.params)
        request = self.session.network_request
        side = "library" if request is not None and request.source == "library" else "query"
        title = f"edge {a}–{b}: {pair.query_name} – {pair.library_name}"
        row = pair_row(net.spectra, a, net.spectra, b, net.params, pair)
        sides = (f"{side} {a}", f"{side} {b}")
        self.pair_view.show_pair(pair, net.params, title=title, sides=sides, row=row)
        self.info.setText(
            f"Edge {a}–{b}: {net.params.score_label} {net.score[edge]:.4f}, "
            f"{net.matches[edge]} matched peaks, Δ precursor m/z "
            f"{net.precursor_mz_delta()[edge]:+.4f}"
        )
