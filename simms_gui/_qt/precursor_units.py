"""The precursor window's number follows its unit: switching Da ↔ ppm never keeps the number.

``0.02 Da`` switched to ppm must not become ``0.02 ppm``: each unit remembers its
own last number (first time: :data:`PRECURSOR_DEFAULTS`, identity search's).
"""

from __future__ import annotations

from PyQt6.QtWidgets import QDoubleSpinBox

__all__ = ["PRECURSOR_DEFAULTS", "PrecursorUnits"]

#: The window a unit starts with when the user first switches to it.
PRECURSOR_DEFAULTS = {"Da": 0.01, "ppm": 10.0}


class PrecursorUnits:
    """Keeps a precursor-tolerance spin box's number, suffix and step in its unit.

    Parameters
    ----------
    box : QDoubleSpinBox
        The precursor tolerance editor.
    """

    def __init__(self, box: QDoubleSpinBox) -> None:
        self.box = box
        #: Unit of the number now in the box.
        self.unit = "Da"
        self.values = dict(PRECURSOR_DEFAULTS)

    def switch(self, unit: str) -> None:
        """Show ``unit`` ("Da", "ppm"; "off" keeps the box as it is)."""
        if unit in PRECURSOR_DEFAULTS and unit != self.unit:
            self.values[self.unit] = self.box.value()
            self.box.setValue(self.values[unit])
            self.unit = unit
        self.box.setSuffix(f" {self.unit}")
        self.box.setSingleStep(1.0 if self.unit == "ppm" else 0.005)
