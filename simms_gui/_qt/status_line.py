"""The status bar's slow-step line: what takes time now (kernels, files), never hidden.

Qt's temporary status messages are replaced by any status tip the mouse passes
over, and replace each other; a slow step's note lives in a permanent widget
beside them instead, so "Search done" and a "Reading…" note never overwrite
one another.
"""

from __future__ import annotations

from PyQt6.QtCore import QTimer
from PyQt6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QWidget

__all__ = ["SlowSteps"]


class SlowSteps(QWidget):
    """Notes of the slow steps under way, each with an optional progress fraction."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel("")
        self.bar = QProgressBar(minimum=0, maximum=1000)
        self.bar.setMaximumWidth(140)
        self.bar.setMaximumHeight(14)
        self.bar.setTextVisible(False)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 0, 6, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.bar)
        self.steps: dict[str, tuple[str, float | None]] = {}
        self._finals: dict[str, str] = {}
        # a child timer dies with the widget (a bare singleShot could outlive it)
        self._expiry = QTimer(self, singleShot=True, timeout=self._expire)
        self._refresh()

    def set_step(self, key: str, text: str, fraction: float | None = None) -> None:
        """Show step ``key`` as ``text`` (with a bar when ``fraction`` is given)."""
        self.steps[key] = (text, fraction)
        self._refresh()

    def clear_step(self, key: str, final: str = "", seconds: float = 8.0) -> None:
        """Step ``key`` ended; ``final`` is shown for ``seconds`` when given."""
        self.steps.pop(key, None)
        if final:
            self.steps[key] = (final, None)
            self._finals[key] = final
            self._expiry.start(int(seconds * 1000))
        self._refresh()

    def _expire(self) -> None:
        for key, final in self._finals.items():
            if self.steps.get(key, ("", None))[0] == final:
                del self.steps[key]
        self._finals.clear()
        self._refresh()

    def text(self) -> str:
        """What the line says now."""
        return self.label.text()

    def _refresh(self) -> None:
        texts = [text for text, _ in self.steps.values()]
        fractions = [f for _, f in self.steps.values() if f is not None]
        self.label.setText("  ·  ".join(texts))
        self.bar.setVisible(bool(fractions))
        if fractions:
            self.bar.setValue(int(1000 * min(fractions)))
        self.setVisible(bool(texts))
