"""Handles of work a :class:`~simms_gui.viewer.Viewer` started: a search, a network."""

from __future__ import annotations

import time

from PyQt6.QtCore import QEventLoop, QTimer

from engine import HitTable, SearchParameters, SpectrumNetwork
from simms_gui.network_session import NetworkRequest
from simms_gui.session import Session

__all__ = ["NetworkHandle", "SearchHandle"]


class SearchHandle:
    """A search started by :meth:`Viewer.search`; it follows the viewer's session.

    Attributes
    ----------
    params : SearchParameters
        The parameters the search runs with.
    """

    def __init__(self, session: Session, params: SearchParameters, backend: str) -> None:
        self._session = session
        self.params = params
        self._backend = backend

    @property
    def done(self) -> bool:
        """True once the search has ended (finished, stopped or failed)."""
        return self._session.state == "idle"

    @property
    def cancelled(self) -> bool:
        """True when the search was stopped."""
        return self.done and self._session.cancelled

    @property
    def error(self) -> str | None:
        """The error message when the search failed."""
        return self._session.error if self.done else None

    @property
    def backend(self) -> str:
        """The backend asked for: ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"dask"``."""
        return self._backend

    @property
    def device(self) -> str:
        """Where the search ran (e.g. the Dask cluster and its workers; "" until it ends)."""
        return self._session.device

    @property
    def hits(self) -> HitTable:
        """Hits so far (all of them once :attr:`done`)."""
        return self._session.hits

    def cancel(self) -> None:
        """Stop the search after the batch in flight; hits found so far are kept."""
        self._session.cancel()

    def wait(self, timeout: float | None = None) -> HitTable:
        """Process Qt events until the search ends, then return its hits.

        Parameters
        ----------
        timeout : float, optional
            Seconds to wait at most.

        Returns
        -------
        HitTable

        Raises
        ------
        TimeoutError
            When the search is still running after ``timeout`` seconds.
        RuntimeError
            When the search failed.
        """
        _process_events_until(lambda: self.done, timeout, "search")
        if self.error:
            raise RuntimeError(f"search failed: {self.error}")
        return self.hits

    def __repr__(self) -> str:
        state = "done" if self.done else "running"
        return f"<SearchHandle {state}, {len(self.hits)} hits>"


def _process_events_until(done, timeout: float | None, what: str) -> None:
    """Run Qt's event loop until ``done()``; TimeoutError after ``timeout`` seconds."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not done():
        loop = QEventLoop()
        QTimer.singleShot(20, loop.quit)
        loop.exec()
        if deadline is not None and time.monotonic() > deadline and not done():
            raise TimeoutError(f"{what} still running after {timeout} s")


class NetworkHandle:
    """A molecular network being built by :meth:`Viewer.network`.

    Attributes
    ----------
    request : NetworkRequest
    """

    def __init__(self, session: Session, request: NetworkRequest) -> None:
        self._session = session
        self.request = request

    @property
    def done(self) -> bool:
        """True once the build has ended (finished, stopped or failed)."""
        return self._session.network_state == "idle"

    @property
    def cancelled(self) -> bool:
        """True when the build was stopped."""
        return self.done and self._session.network_cancelled

    @property
    def error(self) -> str | None:
        """The error message when the build failed."""
        return self._session.network_error if self.done else None

    @property
    def network(self) -> SpectrumNetwork | None:
        """The network, once built (None while running, or when stopped or failed)."""
        if not self.done or self.cancelled or self.error:
            return None
        return self._session.network

    def cancel(self) -> None:
        """Stop building; nothing is kept."""
        self._session.cancel_network()

    def wait(self, timeout: float | None = None) -> SpectrumNetwork | None:
        """Process Qt events until the build ends; the network (None when stopped).

        Raises
        ------
        TimeoutError
            Still building after ``timeout`` seconds.
        RuntimeError
            The build failed.
        """
        _process_events_until(lambda: self.done, timeout, "network")
        if self.error:
            raise RuntimeError(f"network failed: {self.error}")
        return self.network

    def __repr__(self) -> str:
        return f"<NetworkHandle {'done' if self.done else 'running'}: {self.network!r}>"
