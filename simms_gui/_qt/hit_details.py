"""The hit-detail pane: what a chemist judges one hit by, with the data's attribution."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping

from PyQt6.QtWidgets import QTextBrowser, QWidget

from simms_gui.answers import flag_lines

__all__ = ["DETAIL_FIELDS", "HitDetails"]

#: (hit column, label, number format) shown in the pane, in order.
DETAIL_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("library_name", "Compound", ""),
    ("library_id", "Library record", ""),
    ("query_name", "Query", ""),
    ("query_id", "Query ID", ""),
    ("score", "Score", ".4f"),
    ("q_value", "q-value", ".4f"),
    ("reverse_score", "Reverse score", ".4f"),
    ("matches", "Matched peaks", "d"),
    ("library_explained", "Explained (library)", ".0%"),
    ("query_precursor_mz", "Query m/z", ".4f"),
    ("library_precursor_mz", "Hit m/z", ".4f"),
    ("precursor_mz_delta", "Δ m/z (Da)", "+.4f"),
    ("precursor_ppm", "Δ m/z (ppm)", "+.1f"),
    ("library_adduct", "Adduct", ""),
    ("library_formula", "Formula", ""),
    ("library_smiles", "SMILES", ""),
    ("library_inchikey", "InChIKey", ""),
    ("library_ion_mode", "Ion mode (hit)", ""),
    ("query_ion_mode", "Ion mode (query)", ""),
    ("library_instrument_type", "Instrument type", ""),
    ("library_instrument", "Instrument", ""),
    ("library_collision_energy", "Collision energy", ""),
    ("library_fragmentation_mode", "Fragmentation", ""),
    ("library_retention_time", "Retention time", ""),
    ("library_splash", "SPLASH", ""),
    ("library_license", "Licence", ""),
    ("library_authors", "Authors", ""),
)


def detail_html(row: Mapping[str, object]) -> str:
    """The pane's HTML for one hit row (fields missing from ``row`` are left out),
    under its ambiguity warnings (:func:`simms_gui.answers.flag_lines`)."""
    lines = []
    row = dict(row)
    if "precursor_mz_delta" in row and "query_precursor_mz" in row:
        query_mz = float(row["query_precursor_mz"])
        row["precursor_ppm"] = (
            float(row["precursor_mz_delta"]) / query_mz * 1e6 if query_mz else math.nan
        )
    for key, label, fmt in DETAIL_FIELDS:
        if key not in row:
            continue
        value = row[key]
        if fmt:
            number = float(value)
            text = "" if math.isnan(number) else format(int(number) if fmt == "d" else number, fmt)
        else:
            text = str(value)
        if text:
            lines.append(
                f"<tr><th align='left' valign='top'>{label}</th><td>{html.escape(text)}</td></tr>"
            )
    warnings = "".join(
        f"<p style='color:#b35900; margin:0'>⚠ {html.escape(line)}</p>" for line in flag_lines(row)
    )
    return warnings + "<table cellspacing='2' width='100%'>" + "".join(lines) + "</table>"


class HitDetails(QTextBrowser):
    """Read-only pane listing the selected hit's metadata, licence and authors."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenExternalLinks(False)
        self.setPlaceholderText("Select a hit to see its compound, evidence and attribution")
        self.row: dict[str, object] = {}

    def show_row(self, row: Mapping[str, object]) -> None:
        """Show one hit (a row of the hit columns)."""
        self.row = dict(row)
        self.setHtml(detail_html(row))

    def clear_row(self) -> None:
        """Show nothing."""
        self.row = {}
        self.clear()
