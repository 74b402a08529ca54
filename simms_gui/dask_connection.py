"""The Dask client a window keeps between searches (headless, thread-safe)."""

from __future__ import annotations

import re
import threading

from engine import distributed

__all__ = [
    "DASK_CONNECT_TIMEOUT",
    "DASK_LOCAL_WORKERS",
    "DaskConnection",
    "normalize_dask_address",
]

#: Seconds to keep trying to reach a Dask scheduler before the search fails.
DASK_CONNECT_TIMEOUT = 5.0
#: Workers of a bare ``local`` address.
DASK_LOCAL_WORKERS = 2
_LOCAL = re.compile(r"local(?::(\d+))?", re.IGNORECASE)


def normalize_dask_address(address: str) -> str:
    """``tcp://HOST:PORT`` (``tcp://`` implied) or ``local:N``; ValueError when empty."""
    text = str(address).strip()
    if not text:
        raise ValueError("no Dask scheduler address given (tcp://HOST:8786, or local:N)")
    local = _LOCAL.fullmatch(text)
    if local:
        n = int(local.group(1) or DASK_LOCAL_WORKERS)
        if n < 1:
            raise ValueError("local:N needs at least one worker")
        return f"local:{n}"
    return text if "://" in text else "tcp://" + text


class DaskConnection:
    """The Dask client a window keeps between searches, for one address at a time.

    :meth:`client` connects (or starts ``local:N`` workers) on first use and
    reuses the client while the address stays the same; another address closes
    the old client first.  :meth:`close` closes it (and a local cluster started
    here).  Thread-safe: searches call :meth:`client` from their worker thread.
    """

    def __init__(self, timeout: float | None = None) -> None:
        self.timeout = timeout
        self._lock = threading.Lock()
        self._client = None
        self._address: str | None = None

    @property
    def address(self) -> str | None:
        """Normalized address of the open client (None when none is open)."""
        return self._address

    def client(self, address: str):
        """A running client of ``address`` (blocks while connecting).

        Raises
        ------
        engine.distributed.ClusterError
            Dask is missing or the scheduler cannot be reached in time.
        ValueError
            ``address`` is empty or malformed.
        """
        address = normalize_dask_address(address)
        with self._lock:
            client = self._client
            if client is not None and self._address == address:
                if getattr(client, "status", "running") == "running":
                    return client
            self._close_locked()
            timeout = DASK_CONNECT_TIMEOUT if self.timeout is None else self.timeout
            if address.startswith("local:"):
                client = distributed.local_cluster(int(address.split(":")[1]))
            else:
                client = distributed.connect(address, timeout=timeout)
            self._client, self._address = client, address
            return client

    def close(self) -> None:
        """Close the client (and the local cluster it started); nothing when none is open."""
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        client, self._client, self._address = self._client, None, None
        if client is not None:
            try:
                distributed.shutdown(client)
            except Exception:  # noqa: BLE001 - a cluster that is gone needs no closing
                pass
