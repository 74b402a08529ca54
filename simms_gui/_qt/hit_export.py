"""The hit export's file types: TSV, CSV, Parquet, mzTab-M and the GNPS-style TSV."""

from __future__ import annotations

from pathlib import Path

__all__ = ["HITS_FILTER", "HIT_FORMATS", "format_of"]

#: (format of ``engine.export.open_writer``, file-dialog filter, suffix), in the dialog's order.
HIT_FORMATS: tuple[tuple[str, str, str], ...] = (
    ("tsv", "Tab-separated (*.tsv)", ".tsv"),
    ("csv", "Comma-separated (*.csv)", ".csv"),
    ("parquet", "Parquet (*.parquet)", ".parquet"),
    ("mztab", "mzTab-M 2.0 (*.mztab)", ".mztab"),
    ("gnps", "GNPS library-search TSV (*.tsv)", ".tsv"),
)


#: The hit export dialog's filters (``hits_controller.hits_filter`` drops Parquet without pyarrow).
HITS_FILTER = ";;".join(text for _fmt, text, _suffix in HIT_FORMATS)


def format_of(path: str | Path, selected_filter: str = "") -> tuple[Path, str | None]:
    """The file and format a save dialog answered (``selected_filter`` its filter text).

    The filter decides (the GNPS TSV and the plain TSV share ``.tsv``), and a
    suffix the format needs is added; without a known filter the suffix decides
    (format None).
    """
    path = Path(path)
    for fmt, text, suffix in HIT_FORMATS:
        if selected_filter == text:
            if path.suffix.lower() != suffix:
                path = path.with_name(path.name + suffix)
            return path, fmt
    return path, None
