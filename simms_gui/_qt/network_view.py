"""The Network tab: build a molecular network on a worker, click nodes and edges.

Clicking a node selects its spectrum (in the query list when the network is of
the queries) and describes it; clicking an edge shows the pair's mirror plot
below, scored as the network scored it.
"""

from __future__ import annotations

import time

from PyQt6.QtCore import QObject, Qt, pyqtSignal
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

from engine import AnalysisCancelled, CancelToken, SearchProgress
from engine.analyses.networking import NetworkSettings, network_parameters
from engine.backends import interactive_threads
from simms_gui._qt.network_plot import NetworkPlot
from simms_gui._qt.spectrum_view import PairView
from simms_gui._qt.worker import BackgroundTask
from simms_gui.network_layout import network_layout
from simms_gui.network_session import NetworkRequest
from simms_gui.pairs import compute_pair, pair_row
from simms_gui.session import Session

__all__ = ["NetworkTab"]


class _Relay(QObject):
    """Carries progress from the worker thread to the GUI thread (queued signal)."""

    progress = pyqtSignal(object)


class NetworkTab(QWidget):
    """Controls, the network plot and the mirror plot of a clicked edge.

    Parameters
    ----------
    session : Session
        The model: requests arrive as ``"network_requested"`` events.
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
        self.task: BackgroundTask | None = None
        self._token: CancelToken | None = None
        self._relay = _Relay()
        self._relay.progress.connect(self._show_progress)
        self._last_progress = 0.0
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
        session.connect(self._on_session_event)

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
        self.stop_button.clicked.connect(self.session.cancel_network)

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

    def _on_session_event(self, event: str) -> None:
        if event == "network_requested":
            self._start(self.session.network_request)
        elif event == "network_cancel_requested" and self._token is not None:
            self._token.cancel()
            self.info.setText("Stopping…")

    def _start(self, request: NetworkRequest) -> None:
        session = self.session
        spectra, label = session.network_inputs(request)
        token = self._token = CancelToken()
        session.begin_network()
        self.build_button.setEnabled(False)
        self.stop_button.setEnabled(True)
        self.progress.setValue(0)
        self.progress.show()
        self.info.setText(f"Scoring every pair of {len(spectra):,} {request.source} spectra…")
        s = request.settings

        def build():
            from engine import network

            net = network(
                spectra, request.params, top_n=s.top_n, max_links=s.max_links,
                link_method=s.link_method, max_component_size=s.max_component_size,
                library=label, backend=request.backend, on_progress=self._relay_progress,
                cancel_token=token, cpu_threads=interactive_threads(),
            )  # fmt: skip
            return net, network_layout(net)

        self.task = BackgroundTask(build, self._built, self._failed).start()

    def _relay_progress(self, p: SearchProgress) -> None:  # worker thread
        now = time.monotonic()
        if now - self._last_progress >= 0.1 or p.fraction >= 1.0:
            self._last_progress = now
            self._relay.progress.emit(SearchProgress(**p.__dict__))

    def _show_progress(self, p: SearchProgress) -> None:
        self.progress.setValue(int(1000 * p.fraction))

    def _ended(self) -> None:
        self.build_button.setEnabled(True)
        self.stop_button.setEnabled(False)
        self.progress.hide()
        self._token = None

    def _built(self, result) -> None:
        net, positions = result
        self._ended()
        self.positions = positions
        self.session.finish_network(net)
        self.show_network()

    def _failed(self, exc: BaseException) -> None:
        self._ended()
        if isinstance(exc, AnalysisCancelled):
            self.info.setText("Network stopped; nothing kept.")
            self.session.finish_network(None, cancelled=True)
        else:
            self.info.setText(f"Network failed: {type(exc).__name__}: {exc}")
            self.session.finish_network(None, error=f"{type(exc).__name__}: {exc}")

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

    def select_node(self, node: int) -> None:
        """Select spectrum ``node``: ring it, describe it, select it in the query list."""
        net = self.session.network
        if net is None:
            return
        self.selected_node, self.selected_edge = node, None
        self.plot.select_node(node)
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
        net = self.session.network
        if net is None:
            return
        self.selected_edge, self.selected_node = edge, None
        self.plot.select_edge(edge)
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
