"""The hit-detail pane: what a chemist judges one hit by, with the data's attribution."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping

from PyQt6.QtWidgets import QTextBrowser, QWidget

from simms_gui.model.answers import flag_lines

__all__ = ["DETAIL_FIELDS", "PPM_LIMIT_DA", "HitDetails"]

#: Beyond this precursor difference (Da) a hit's Δ is a mass shift (an analog's
#: other composition, e.g. -42.0106 for an acetyl), not a measurement error: it is
#: given in Da only, never as a meaningless ppm (-42 Da at m/z 507 is -82,842 ppm).
PPM_LIMIT_DA = 0.5

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
    ("library_dataset", "Dataset", ""),
    ("library_source_file", "File", ""),
    ("library_file_index", "Scan # in file", ""),
    ("library_repository_index", "Repository #", ""),
)


def detail_html(
    row: Mapping[str, object],
    *,
    stacked: bool = False,
    sides: tuple[str, str] = ("query", "library"),
) -> str:
    """The pane's HTML for one hit row (fields missing from ``row`` are left out),
    under its ambiguity warnings (:func:`simms_gui.model.answers.flag_lines`).

    Labels are never broken; ``stacked`` puts each value under its label (a
    narrow pane), so IDs and names get the pane's whole width.  ``sides``
    other than query and library (two queries of a network edge) name each
    spectrum's fields after it.
    """
    labels = {} if tuple(sides) == ("query", "library") else _side_labels(*sides)
    lines = []
    row = dict(row)
    if "precursor_mz_delta" in row and "query_precursor_mz" in row:
        query_mz, delta = float(row["query_precursor_mz"]), float(row["precursor_mz_delta"])
        if query_mz and abs(delta) <= PPM_LIMIT_DA:
            row["precursor_ppm"] = delta / query_mz * 1e6
    for key, label, fmt in DETAIL_FIELDS:
        if key not in row:
            continue
        label = labels.get(key, label)
        value = row[key]
        if fmt:
            number = float(value)
            text = "" if math.isnan(number) else format(int(number) if fmt == "d" else number, fmt)
        else:
            text = str(value)
        if not text:
            continue
        head = f"<th align='left' valign='top' style='white-space:nowrap'>{html.escape(label)}</th>"
        value = f"<td>{html.escape(text)}</td>"
        lines.append(f"<tr>{head}</tr><tr>{value}</tr>" if stacked else f"<tr>{head}{value}</tr>")
    warnings = "".join(
        f"<p style='color:#b35900; margin:0'>⚠ {html.escape(line)}</p>" for line in flag_lines(row)
    )
    return warnings + "<table cellspacing='2' width='100%'>" + "".join(lines) + "</table>"


def _side_labels(upper: str, lower: str) -> dict[str, str]:
    """Labels of the fields that belong to one spectrum, named after it."""
    return {
        "library_name": f"Compound ({lower})",
        "library_id": f"ID ({lower})",
        "query_name": f"Compound ({upper})",
        "query_id": f"ID ({upper})",
        "query_precursor_mz": f"m/z ({upper})",
        "library_precursor_mz": f"m/z ({lower})",
        "library_ion_mode": f"Ion mode ({lower})",
        "query_ion_mode": f"Ion mode ({upper})",
        "library_explained": f"Explained ({lower})",
    }


class HitDetails(QTextBrowser):
    """Read-only pane listing the selected hit's metadata, licence and authors."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenExternalLinks(False)
        self.setPlaceholderText("Select a hit to see its compound, evidence and attribution")
        self.row: dict[str, object] = {}
        self.sides: tuple[str, str] = ("query", "library")
        self._stacked = False

    def show_row(
        self, row: Mapping[str, object], *, sides: tuple[str, str] = ("query", "library")
    ) -> None:
        """Show one hit (a row of the hit columns); ``sides`` name its two spectra."""
        self.row, self.sides = dict(row), tuple(sides)
        self._stacked = self._narrow()
        self.setHtml(detail_html(row, stacked=self._stacked, sides=self.sides))

    def _narrow(self) -> bool:
        """Too narrow for labels beside values (an ID of 18 characters beside "Explained")."""
        return self.viewport().width() < 34 * self.fontMetrics().horizontalAdvance("0")

    def resizeEvent(self, event) -> None:  # noqa: N802  (Qt naming)
        super().resizeEvent(event)
        if self.row and self._narrow() != self._stacked:
            self.show_row(self.row, sides=self.sides)

    def clear_row(self) -> None:
        """Show nothing."""
        self.row = {}
        self.clear()
