"""Paths of the resources bundled with the application (demo data, screenshots).

Resources live in the top-level ``resources`` package and are found with
:mod:`importlib.resources`, so they work from a source checkout, a wheel and a
frozen build alike.
"""

from __future__ import annotations

from importlib import resources as _resources
from pathlib import Path

__all__ = ["demo_library_path", "demo_queries_path", "resource_path"]


def resource_path(name: str) -> Path | None:
    """Filesystem path of the bundled resource ``name``, or None when it is absent.

    Parameters
    ----------
    name : str
        File name inside the ``resources`` package, e.g. ``"demo_library.mgf"``.

    Returns
    -------
    pathlib.Path or None
    """
    try:
        root = _resources.files("resources")
    except ModuleNotFoundError:
        return None
    entry = root.joinpath(name)
    if not entry.is_file():
        return None
    return Path(str(entry))


def demo_library_path() -> Path | None:
    """The bundled demo library (3,000 MassBank spectra), or None when not installed."""
    return resource_path("demo_library.mgf")


def demo_queries_path() -> Path | None:
    """The bundled demo queries (40 MassBank spectra), or None when not installed."""
    return resource_path("demo_queries.mgf")
