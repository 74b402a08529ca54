"""Dialog: the preprocessing pipeline, step by step, with each step's parameters.

Steps are filters of ``engine.preprocess.FILTERS``; each parameter gets an
editor of its type (``engine.preprocess.FILTER_PARAMETERS``): a spin box for
numbers, a combo box for a choice.  The result is an ``engine.preprocess.Pipeline``
that the search panel stores as a spec (``pipeline_spec``).
"""

from __future__ import annotations

import math

from PyQt6.QtCore import pyqtSignal
from PyQt6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engine.preprocess import (
    FILTER_PARAMETERS,
    FILTERS,
    PRESETS,
    FilterParameter,
    Pipeline,
    Step,
    pipeline_from_spec,
    pipeline_spec,
    preset,
)
from simms_gui.filter_words import (
    CHOICE_WORDS,
    PARAMETER_WORDS,
    STEP_WORDS,
    ParameterWords,
    pipeline_words,
)
from simms_gui.pipelines import BIG, matching_preset, pipeline_summary

__all__ = ["PreprocessDialog"]


class _StepRow(QFrame):
    """One step: its number and filter, an editor per parameter, move/remove buttons."""

    changed = pyqtSignal()
    moveRequested = pyqtSignal(int)  # noqa: N815 - -1 up, +1 down
    removeRequested = pyqtSignal()  # noqa: N815

    def __init__(self, step: Step, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.name = step.name
        self.params: dict[str, object] = dict(step.params)
        self.editors: dict[str, QWidget] = {}
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 3, 6, 3)
        self.label = QLabel(STEP_WORDS.get(step.name, step.name))
        self.label.setMinimumWidth(250)
        self.label.setWordWrap(True)  # long step names wrap, never cut off
        doc = (FILTERS[step.name].__doc__ or "").strip().splitlines()[0]
        self.label.setToolTip(f"{doc}\n(engine filter {step.name})")
        layout.addWidget(self.label)
        for spec in FILTER_PARAMETERS[step.name]:
            words = PARAMETER_WORDS.get((step.name, spec.name), ParameterWords(spec.name))
            caption = QLabel(words.label)
            caption.setToolTip(words.tip)
            layout.addWidget(caption)
            editor = self._editor(spec, self.params.get(spec.name, spec.default), words)
            editor.setToolTip(editor.toolTip() or words.tip)
            self.editors[spec.name] = editor
            layout.addWidget(editor)
        layout.addStretch(1)
        self.up_button = self._tool("↑", "Move this step up", lambda: self.moveRequested.emit(-1))
        self.down_button = self._tool(
            "↓", "Move this step down", lambda: self.moveRequested.emit(1)
        )
        self.remove_button = self._tool("✕", "Remove this step", self.removeRequested.emit)
        for button in (self.up_button, self.down_button, self.remove_button):
            layout.addWidget(button)

    def _tool(self, text: str, tip: str, slot) -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.setToolTip(tip)
        button.setAutoRaise(True)
        button.clicked.connect(lambda _checked=False: slot())
        return button

    def _editor(self, spec: FilterParameter, value: object, words: ParameterWords) -> QWidget:
        if spec.kind is str:
            combo = QComboBox()
            for choice in spec.choices:
                combo.addItem(CHOICE_WORDS.get(choice, choice), choice)
            combo.setCurrentIndex(max(0, combo.findData(str(value))))
            combo.currentIndexChanged.connect(
                lambda _i, n=spec.name, c=combo: self._set(n, c.currentData())
            )
            return combo
        lo = spec.minimum if spec.minimum is not None else -BIG
        hi = spec.maximum if spec.maximum is not None else BIG
        if spec.kind is int:
            box = QSpinBox(minimum=int(lo), maximum=int(min(hi, 1_000_000)))
            box.setSuffix(words.unit)
            box.setValue(int(value))
            box.valueChanged.connect(lambda v, n=spec.name: self._set(n, int(v)))
            return box
        scale = words.scale
        small = hi * scale <= 1
        box = QDoubleSpinBox(decimals=4 if small else 3, minimum=lo * scale, maximum=hi * scale)
        box.setSingleStep(0.01 if small else 1.0)
        box.setSuffix(words.unit)
        unbounded = isinstance(spec.default, float) and math.isinf(spec.default)
        if unbounded:
            box.setToolTip(f"{words.label}: at {hi:g} (the maximum) there is no bound")
        box.setValue(min(float(value), hi) * scale)
        box.valueChanged.connect(
            lambda v, n=spec.name, u=unbounded, k=scale: self._set_number(n, v / k, u)
        )
        return box

    def _set_number(self, name: str, value: float, unbounded: bool) -> None:
        editor = self.editors[name]
        if unbounded and value >= editor.maximum():
            self.params.pop(name, None)  # the filter's own default: no bound
            self.changed.emit()
        else:
            self._set(name, float(value))

    def _set(self, name: str, value: object) -> None:
        self.params[name] = value
        self.changed.emit()

    def step(self) -> Step:
        """The step as edited."""
        return Step(self.name, dict(self.params))


class PreprocessDialog(QDialog):
    """Edit a preprocessing pipeline: steps, their order and their parameters.

    Parameters
    ----------
    pipeline : Pipeline
        The pipeline shown first.
    preset_name : str, optional
        The preset "Reset to preset" offers first (default: the one ``pipeline``
        equals, else ``gnps``).
    """

    def __init__(
        self, pipeline: Pipeline, preset_name: str | None = None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Preprocessing pipeline")
        self.setMinimumWidth(720)
        self.rows: list[_StepRow] = []

        intro = QLabel(
            "Filters applied in order to the queries and the library before scoring "
            "(and to the spectra of the mirror plot)."
        )
        intro.setWordWrap(True)
        self.rows_widget = QWidget()
        self.rows_layout = QVBoxLayout(self.rows_widget)
        self.rows_layout.setContentsMargins(0, 0, 0, 0)
        self.rows_layout.setSpacing(3)
        self.empty_label = QLabel("No steps: peaks are used as read from the files.")
        self.empty_label.setStyleSheet("color: palette(mid);")
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.rows_widget)
        scroll.setMinimumHeight(220)

        self.add_combo = QComboBox()
        for name in FILTERS:
            self.add_combo.addItem(STEP_WORDS.get(name, name), name)
        self.add_button = QPushButton("Add step")
        self.add_button.setToolTip("Append the chosen filter with its default parameters")
        self.add_button.clicked.connect(lambda: self.add_step(self.add_combo.currentData()))
        self.preset_combo = QComboBox()
        for name in PRESETS:
            self.preset_combo.addItem(name, name)
        start = preset_name or matching_preset(pipeline) or "gnps"
        self.preset_combo.setCurrentIndex(max(0, self.preset_combo.findData(start)))
        self.reset_button = QPushButton("Reset to preset")
        self.reset_button.setToolTip("Replace the steps by those of the chosen preset")
        self.reset_button.clicked.connect(
            lambda: self.reset_to_preset(self.preset_combo.currentData())
        )
        tools = QHBoxLayout()
        tools.addWidget(self.add_combo)
        tools.addWidget(self.add_button)
        tools.addStretch(1)
        tools.addWidget(self.preset_combo)
        tools.addWidget(self.reset_button)

        self.summary_label = QLabel()
        self.summary_label.setWordWrap(True)
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #c0392b;")
        self.error_label.hide()
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(scroll, 1)
        layout.addLayout(tools)
        layout.addWidget(self.summary_label)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)
        self.set_steps(pipeline.steps)

    # -- steps ------------------------------------------------------------------------
    def set_steps(self, steps) -> None:
        """Show ``steps`` (replacing those shown)."""
        for row in self.rows:
            row.setParent(None)
            row.deleteLater()
        self.rows = []
        self.empty_label.setParent(None)
        while self.rows_layout.count():
            self.rows_layout.takeAt(0)
        for step in steps:
            row = _StepRow(step)
            row.changed.connect(self._update)
            row.moveRequested.connect(
                lambda delta, r=row: self.move_step(self.rows.index(r), delta)
            )
            row.removeRequested.connect(lambda r=row: self.remove_step(self.rows.index(r)))
            self.rows.append(row)
            self.rows_layout.addWidget(row)
        if not self.rows:
            self.rows_layout.addWidget(self.empty_label)
        self.rows_layout.addStretch(1)
        self._update()

    def steps(self) -> tuple[Step, ...]:
        """The steps as edited."""
        return tuple(row.step() for row in self.rows)

    def add_step(self, name: str) -> None:
        """Append filter ``name`` with its default parameters."""
        params = {
            p.name: p.default
            for p in FILTER_PARAMETERS[name]
            if not (isinstance(p.default, float) and math.isinf(p.default))
        }
        self.set_steps((*self.steps(), Step(name, params)))

    def remove_step(self, index: int) -> None:
        """Remove step ``index``."""
        steps = list(self.steps())
        del steps[index]
        self.set_steps(steps)

    def move_step(self, index: int, delta: int) -> None:
        """Move step ``index`` by ``delta`` places (clipped to the ends)."""
        steps = list(self.steps())
        target = min(max(index + delta, 0), len(steps) - 1)
        steps.insert(target, steps.pop(index))
        self.set_steps(steps)

    def reset_to_preset(self, name: str) -> None:
        """Show the steps of preset ``name``."""
        self.set_steps(preset(name).steps)

    # -- result -----------------------------------------------------------------------
    def pipeline(self) -> Pipeline:
        """The pipeline as edited (checked: raises ValueError when a value is not allowed)."""
        return pipeline_from_spec(pipeline_spec(Pipeline(self.steps(), "custom")))

    def _update(self) -> None:
        for k, row in enumerate(self.rows):
            row.label.setText(f"{k + 1}. {STEP_WORDS.get(row.name, row.name)}")
            row.up_button.setEnabled(k > 0)
            row.down_button.setEnabled(k < len(self.rows) - 1)
        pipeline = Pipeline(self.steps())
        same = matching_preset(pipeline)
        note = f"  (= preset {same})" if same else ""
        words = pipeline_words(pipeline)
        self.summary_label.setText(f"{words[:1].upper()}{words[1:]}{note}")
        self.summary_label.setToolTip(pipeline_summary(pipeline))
        try:
            self.pipeline()
        except ValueError as exc:
            self.error_label.setText(str(exc))
            self.error_label.show()
            self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(False)
        else:
            self.error_label.hide()
            self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(True)

    def accept(self) -> None:  # noqa: D102 - QDialog API
        try:
            self.pipeline()
        except ValueError as exc:
            self.error_label.setText(str(exc))
            self.error_label.show()
            return
        super().accept()
