"""The search form's "FDR (q ≤)" control: off, or keep hits up to a q-value."""

from __future__ import annotations

from PyQt6.QtCore import pyqtSignal
from PyQt6.QtWidgets import QCheckBox, QDoubleSpinBox, QHBoxLayout, QWidget

__all__ = ["DEFAULT_FDR", "FDR_TIP", "FdrControl"]

#: The q-value limit offered when the control is turned on.
DEFAULT_FDR = 0.05
FDR_TIP = (
    "Estimate a q-value (false discovery rate) for every hit and keep the hits with "
    "q ≤ this value (1 keeps all, with their q-values). The estimate counts each "
    "query's best hit of another compound as a decoy (SearchParameters.decoys)."
)


class FdrControl(QWidget):
    """A check box (FDR on or off) and the q-value limit.

    Signals
    -------
    changed()
        The check box or the limit changed.
    """

    changed = pyqtSignal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.check = QCheckBox("On")
        self.check.setToolTip(FDR_TIP)
        self.limit = QDoubleSpinBox(decimals=3, minimum=0.001, maximum=1.0, singleStep=0.01)
        self.limit.setValue(DEFAULT_FDR)
        self.limit.setToolTip(FDR_TIP)
        self.limit.setEnabled(False)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.check)
        layout.addWidget(self.limit, 1)
        self.check.toggled.connect(self.limit.setEnabled)
        self.check.toggled.connect(lambda _on: self.changed.emit())
        self.limit.valueChanged.connect(lambda _v: self.changed.emit())

    def value(self) -> float | None:
        """The ``fdr`` of :class:`~engine.SearchParameters`: the limit, or None when off."""
        return float(self.limit.value()) if self.check.isChecked() else None

    def set_value(self, fdr: float | None) -> None:
        """Show ``fdr`` (None: off; the limit shown stays)."""
        if fdr is not None:
            self.limit.setValue(float(fdr))
        self.check.setChecked(fdr is not None)
