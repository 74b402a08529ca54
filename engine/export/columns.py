"""The columns users see for a hit, and the provenance lines of a hit list."""

from __future__ import annotations

import datetime as _dt
import platform
from collections.abc import Mapping

from engine.library import SpectrumLibrary
from engine.params import SearchParameters
from engine.search.annotate import HIT_COLUMNS, ION_MODE_NAMES, METADATA_KEYS, hit_columns
from engine.version import __version__

__all__ = [
    "HIT_COLUMNS",
    "ION_MODE_NAMES",
    "METADATA_KEYS",
    "MZ_COLUMNS",
    "hit_columns",
    "provenance_lines",
]


def provenance_lines(
    queries: SpectrumLibrary,
    library: SpectrumLibrary,
    params: SearchParameters,
    *,
    backend: str = "",
    device: str = "",
    extra: Mapping[str, object] | None = None,
) -> list[str]:
    """``# key: value`` lines that say how a hit list was made."""

    def describe(lib: SpectrumLibrary) -> str:
        if lib.source is None:
            return f"{len(lib)} spectra (in memory)"
        return f"{lib.source.path} (sha256 {lib.source.sha256}, {len(lib)} spectra)"

    items: dict[str, object] = {
        "software": f"SimMS desktop {__version__}",
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "queries": describe(queries),
        "library": describe(library),
        "parameters": " ".join(f"{k}={v}" for k, v in params.to_dict().items()),
        "backend": f"{backend} ({device})" if device else backend,
        "python": platform.python_version(),
        **(extra or {}),
    }
    return [f"# {k}: {v}" for k, v in items.items()]


#: Columns rounded to 8 decimals on output (m/z values and their differences).
MZ_COLUMNS = ("query_precursor_mz", "library_precursor_mz", "precursor_mz_delta")
