"""Headless model of a SimMS session: libraries, queries, parameters and hits.

No Qt here (napari's ``components`` vs ``_qt``): the window observes a
:class:`Session` and scripts can use one without a display.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine import HitTable, SearchParameters, SpectrumLibrary, load_library
from engine.export import hit_columns, write_hits

__all__ = ["HitList", "LoadedFile", "Session", "SUPPORTED_SUFFIXES", "is_spectrum_file"]

#: File name endings the readers understand.
SUPPORTED_SUFFIXES = (".mgf", ".msp", ".mzml", ".mgf.gz", ".msp.gz", ".mzml.gz")


def is_spectrum_file(path: str | Path) -> bool:
    """True when ``path`` has a spectrum-file suffix (case-insensitive)."""
    name = Path(path).name.lower()
    return name.endswith(SUPPORTED_SUFFIXES)


@dataclass
class LoadedFile:
    """A spectrum file loaded into the session.

    Attributes
    ----------
    path : Path
        The file.
    spectra : SpectrumLibrary
        Its spectra (``.report`` says what was skipped or repaired).
    """

    path: Path
    spectra: SpectrumLibrary

    @property
    def name(self) -> str:
        """File name without folders."""
        return self.path.name

    @property
    def report(self):
        """The engine's import report (or None)."""
        return self.spectra.report


class HitList:
    """Hits of a search as user-facing columns (``engine.export.hit_columns``).

    Parameters
    ----------
    table : HitTable
        The hits.
    queries, library : SpectrumLibrary
        The spectra the hit indexes refer to.

    Attributes
    ----------
    table : HitTable
    columns : dict of str to ndarray
    """

    def __init__(
        self, table: HitTable, queries: SpectrumLibrary | None, library: SpectrumLibrary | None
    ) -> None:
        self.table = table
        if queries is None or library is None:
            self.columns: dict[str, np.ndarray] = dict(table.to_dict())
        else:
            self.columns = hit_columns(table, queries, library)

    def __len__(self) -> int:
        return len(self.table)

    def __repr__(self) -> str:
        return f"<HitList of {len(self)} hits>"

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def to_pandas(self):
        """The columns as a :class:`pandas.DataFrame` (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(self.columns)


@dataclass
class Session:
    """Everything the user has loaded and searched.

    Attributes
    ----------
    libraries : list of LoadedFile
        Loaded libraries; ``active`` picks the one searched.
    active : int
        Index of the searched library (-1 when none).
    queries : LoadedFile or None
        The query spectra.
    params : SearchParameters
        Parameters of the last search (or the defaults).
    hits : HitTable
        Hits of the last search (partial while it runs or when cancelled).
    backend, device : str
        Where the last search ran.
    """

    libraries: list[LoadedFile] = field(default_factory=list)
    active: int = -1
    queries: LoadedFile | None = None
    params: SearchParameters = field(default_factory=SearchParameters)
    hits: HitTable = field(default_factory=HitTable.empty)
    backend: str = ""
    device: str = ""
    #: Hits belong to these spectra (they may differ from the loaded ones after a reload).
    hits_queries: SpectrumLibrary | None = None
    hits_library: SpectrumLibrary | None = None
    listeners: list[Callable[[str], None]] = field(default_factory=list, repr=False)

    # -- events -----------------------------------------------------------------------
    def _emit(self, what: str) -> None:
        for listener in list(self.listeners):
            listener(what)

    # -- loading ----------------------------------------------------------------------
    @staticmethod
    def read(path: str | Path) -> SpectrumLibrary:
        """Read a spectrum file (raises ``engine.SpectrumFileError`` when unusable)."""
        return load_library(Path(path))

    @property
    def library(self) -> SpectrumLibrary | None:
        """The active library's spectra."""
        if 0 <= self.active < len(self.libraries):
            return self.libraries[self.active].spectra
        return None

    @property
    def library_file(self) -> LoadedFile | None:
        """The active library file."""
        if 0 <= self.active < len(self.libraries):
            return self.libraries[self.active]
        return None

    def add_library(self, path: str | Path, spectra: SpectrumLibrary) -> LoadedFile:
        """Add a loaded library (replacing one of the same path) and make it active."""
        path = Path(path)
        entry = LoadedFile(path, spectra)
        for k, old in enumerate(self.libraries):
            if old.path == path:
                self.libraries[k] = entry
                self.active = k
                break
        else:
            self.libraries.append(entry)
            self.active = len(self.libraries) - 1
        self._emit("libraries")
        return entry

    def remove_library(self, index: int) -> None:
        """Forget library ``index``."""
        del self.libraries[index]
        self.active = min(self.active, len(self.libraries) - 1)
        self._emit("libraries")

    def set_active(self, index: int) -> None:
        """Search library ``index`` from now on."""
        if not 0 <= index < len(self.libraries):
            raise IndexError(f"no library {index}")
        self.active = index
        self._emit("active")

    def set_queries(self, path: str | Path, spectra: SpectrumLibrary) -> LoadedFile:
        """Use ``spectra`` (read from ``path``) as the queries."""
        self.queries = LoadedFile(Path(path), spectra)
        self._emit("queries")
        return self.queries

    # -- hits -------------------------------------------------------------------------
    def start_hits(self, params: SearchParameters, backend: str, device: str) -> None:
        """Reset the hits for a new search of the current queries and library."""
        self.params = params
        self.backend, self.device = backend, device
        self.hits = HitTable.empty()
        self.hits_queries = self.queries.spectra if self.queries else None
        self.hits_library = self.library
        self._emit("hits")

    def set_hits(self, hits: HitTable) -> None:
        """Replace the hits (canonical order)."""
        self.hits = hits
        self._emit("hits")

    def hit_list(self, hits: HitTable | None = None) -> HitList:
        """``hits`` (default: all current hits) as a :class:`HitList`."""
        return HitList(self.hits if hits is None else hits, self.hits_queries, self.hits_library)

    def export(self, path: str | Path, hits: HitTable | None = None) -> Path:
        """Write ``hits`` (default: all) with provenance via ``engine.export.write_hits``."""
        if self.hits_queries is None or self.hits_library is None:
            raise RuntimeError("no search has been run yet")
        return write_hits(
            path,
            self.hits if hits is None else hits,
            self.hits_queries,
            self.hits_library,
            self.params,
            backend=self.backend,
            device=self.device,
        )
