"""The molecular network of a session's spectra: request, state and result (headless).

A mixin of :class:`~simms_gui.session.Session`: ``session.request_network()``
asks for a network (the window runs it on a worker, listening to
``"network_requested"``); ``session.run_network()`` builds one here, for scripts.
Events: ``"network_requested"``, ``"network_started"``, ``"network_cancel_requested"``,
``"network_finished"``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine import (
    CancelToken,
    SearchParameters,
    SearchProgress,
    SpectrumLibrary,
    SpectrumNetwork,
    network,
)
from engine.analyses.networking import NetworkSettings, network_parameters

__all__ = ["NetworkRequest", "NetworkSessionMixin"]


@dataclass(frozen=True)
class NetworkRequest:
    """A network asked for: of which spectra, scored how, linked how.

    Attributes
    ----------
    source : {"queries", "library"}
        The session's query spectra or its active library.
    params : SearchParameters
        Score settings (:func:`engine.analyses.networking.network_parameters`).
    settings : NetworkSettings
        Top-K, link limit, link method, component size limit.
    label_with_library : bool
        Label nodes with their best hit in the active library (queries only).
    backend : str
    """

    source: str = "queries"
    params: SearchParameters = None  # type: ignore[assignment]
    settings: NetworkSettings = NetworkSettings()
    label_with_library: bool = False
    backend: str = "auto"

    def __post_init__(self) -> None:
        if self.source not in ("queries", "library"):
            raise ValueError(f"source must be 'queries' or 'library', not {self.source!r}")
        if self.params is None:
            object.__setattr__(self, "params", network_parameters())


class NetworkSessionMixin:
    """Network state of a :class:`~simms_gui.session.Session` (see the module docstring).

    Attributes
    ----------
    network : SpectrumNetwork or None
        The last network built.
    network_request : NetworkRequest or None
        The network asked for and not yet started (or the one running).
    network_state : {"idle", "running"}
    network_cancelled : bool
    network_error : str or None
    """

    def _init_network(self) -> None:
        self.network: SpectrumNetwork | None = None
        self.network_request: NetworkRequest | None = None
        self.network_state = "idle"
        self.network_cancelled = False
        self.network_error: str | None = None

    def network_inputs(self, request: NetworkRequest) -> tuple[SpectrumLibrary, object]:
        """The spectra a request networks, and the library that labels them (or None)."""
        spectra = self.queries.spectra if request.source == "queries" and self.queries else None
        if request.source == "library":
            spectra = self.library
        if spectra is None:
            raise RuntimeError(f"open {request.source} first")
        label = self.library if request.label_with_library and request.source == "queries" else None
        if request.label_with_library and label is None:
            raise RuntimeError("open a library to label the network's spectra with")
        return spectra, label

    def request_network(self, request: NetworkRequest | None = None) -> NetworkRequest:
        """Ask for a network (the window's listener of ``"network_requested"`` builds it).

        Raises
        ------
        RuntimeError
            A network is being built, or its spectra are not loaded.
        """
        if self.network_state == "running":
            raise RuntimeError("a network is already being built")
        request = request or NetworkRequest()
        self.network_inputs(request)  # fail here, not in the worker
        self.network_request = request
        self._emit("network_requested")
        return request

    def cancel_network(self) -> None:
        """Ask the network being built to stop (``"network_cancel_requested"``)."""
        if self.network_state == "running":
            self._emit("network_cancel_requested")

    def begin_network(self) -> None:
        """The requested network starts being built."""
        self.network_state = "running"
        self.network_cancelled, self.network_error = False, None
        self._emit("network_started")

    def finish_network(
        self, net: SpectrumNetwork | None, *, cancelled: bool = False, error: str | None = None
    ) -> None:
        """The network build ended: ``net`` (None when cancelled or failed)."""
        if net is not None:
            self.network = net
        self.network_state = "idle"
        self.network_cancelled, self.network_error = cancelled, error
        self._emit("network_finished")

    def run_network(
        self,
        request: NetworkRequest | None = None,
        *,
        on_progress: Callable[[SearchProgress], None] | None = None,
        cancel_token: CancelToken | None = None,
        cpu_threads: int | None = None,
    ) -> SpectrumNetwork | None:
        """Build the network here, in this thread (scripts; the window uses a worker).

        Returns the network, or None when ``cancel_token`` stopped it.
        """
        from engine import AnalysisCancelled

        request = request or self.network_request or NetworkRequest()
        spectra, label = self.network_inputs(request)
        self.network_request = request
        self.begin_network()
        s = request.settings
        try:
            net = network(
                spectra, request.params, top_n=s.top_n, max_links=s.max_links,
                link_method=s.link_method, max_component_size=s.max_component_size,
                library=label, backend=request.backend, on_progress=on_progress,
                cancel_token=cancel_token, cpu_threads=cpu_threads,
            )  # fmt: skip
        except AnalysisCancelled:
            self.finish_network(None, cancelled=True)
            return None
        except Exception as exc:
            self.finish_network(None, error=f"{type(exc).__name__}: {exc}")
            raise
        self.finish_network(net)
        return net
