"""Clustering a session's spectra (headless; a mixin of :class:`~simms_gui.session.Session`).

``session.run_cluster()`` clusters the query spectra or the active library with
:func:`engine.cluster_spectra`, keeps the result as ``session.clusters`` and
announces it as ``"clusters"``.
"""

from __future__ import annotations

from engine import ClusterParameters, ClusterResult, cluster_spectra

__all__ = ["ClusterSessionMixin"]


class ClusterSessionMixin:
    """Relies on the session's ``queries``, ``library_file``, ``clusters`` and ``_emit``."""

    def run_cluster(
        self,
        which: str = "queries",
        params: ClusterParameters | None = None,
        backend: str = "auto",
        **options,
    ) -> ClusterResult:
        """Cluster the queries (or the active ``"library"``) here, in this thread.

        ``options`` go to :func:`engine.cluster_spectra` (``consensus``,
        ``cancel_token``, ``on_progress``); the result is kept as :attr:`clusters`
        and announced as ``"clusters"``.
        """
        if which not in ("queries", "library"):
            raise ValueError(f"which must be 'queries' or 'library', not {which!r}")
        loaded = self.queries if which == "queries" else self.library_file
        if loaded is None:
            raise RuntimeError(f"open {'query spectra' if which == 'queries' else 'a library'}")
        self.clusters = cluster_spectra(loaded.spectra, params, backend=backend, **options)
        self._emit("clusters")
        return self.clusters
