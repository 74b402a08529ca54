"""Search panel: parameters, backend, Search/Stop and progress."""

from __future__ import annotations

from PyQt6.QtCore import QSize, Qt, pyqtSignal
from PyQt6.QtGui import QStandardItemModel
from PyQt6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine import SearchParameters, SearchProgress
from engine.preprocess import Pipeline, pipeline_from_spec, pipeline_spec
from simms_gui._qt.backend_choice import (
    DASK_ADDRESS_TIP,
    dask_available,
    detected_backends,
    gpu_reason,
)
from simms_gui._qt.fdr_control import FdrControl
from simms_gui._qt.precursor_units import PrecursorUnits
from simms_gui._qt.preprocess_dialog import PreprocessDialog
from simms_gui._qt.search_progress import COMPILING_NOTE, SearchProgressView
from simms_gui._qt.settings import load_json, save_json
from simms_gui.pipelines import matching_preset, pipeline_summary

__all__ = [
    "COMPILING_NOTE",
    "SearchPanel",
    "preset_names",
    "detected_backends",
    "dask_available",
]


_SCORES = (
    ("entropy", "Entropy similarity"),
    ("unweighted_entropy", "Entropy similarity (unweighted)"),
    ("cosine", "Cosine (greedy)"),
    ("modified_cosine", "Modified cosine"),
)
_MODES = (
    ("identity", "Identity: which compound is it?"),
    ("analog", "Analog: related compounds (precursor shift)"),
    ("custom", "Custom"),
)
_PRECURSOR_UNITS = (("off", "Off"), ("Da", "Da"), ("ppm", "ppm"))
SETTINGS_KEY = "search/parameters"


def preset_names() -> tuple[str, ...]:
    """Preprocessing presets of ``engine.preprocess`` (``none`` first)."""
    try:
        from engine import preprocess
    except ImportError:
        return ("none", "gnps", "msas")
    names = getattr(preprocess, "PRESETS", None) or getattr(preprocess, "PRESET_NAMES", None)
    names = tuple(names) if names else ("none", "gnps", "msas")
    return ("none", *[n for n in names if n != "none"])


class SearchPanel(QWidget):
    """Widgets for the :class:`~engine.SearchParameters` and the search controls.

    Signals
    -------
    searchRequested()
    stopRequested()
    """

    searchRequested = pyqtSignal()  # noqa: N815
    stopRequested = pyqtSignal()  # noqa: N815

    def __init__(self, parent: QWidget | None = None, *, persist_settings: bool = True) -> None:
        super().__init__(parent)
        self.mode = QComboBox()
        for key, text in _MODES:
            self.mode.addItem(text, key)
        self.mode.setToolTip(
            "Identity: spectral entropy, precursor within 0.01 Da, same ion mode (the settings "
            "that identify the most compounds with the fewest wrong answers on MassBank).\n"
            "Analog: modified cosine with a precursor shift up to the window, GNPS-style "
            "peaks, >= 6 matched peaks, score >= 0.7.\nCustom: every setting as you set it."
        )
        self.match_ion_mode = QCheckBox("Same ion mode only")
        self.match_ion_mode.setToolTip(
            "Skip library spectra of the opposite ion mode (from the file's ion mode, else "
            "the adduct or charge sign; spectra of unknown mode match either)"
        )
        self.tolerance = QDoubleSpinBox(decimals=4, minimum=0.0001, maximum=5.0, singleStep=0.005)
        self.tolerance.setSuffix(" Da")
        self.tolerance.setToolTip("Fragment peak m/z tolerance")
        self.score = QComboBox()
        for key, text in _SCORES:
            self.score.addItem(text, key)
        self.precursor_unit = QComboBox()
        for key, text in _PRECURSOR_UNITS:
            self.precursor_unit.addItem(text, key)
        self.precursor_tolerance = QDoubleSpinBox(decimals=4, minimum=0.0001, maximum=1e5)
        self.precursor_tolerance.setToolTip("Only library spectra within this precursor window")
        self.precursor_tolerance.setValue(0.02)
        self._precursor_units = PrecursorUnits(self.precursor_tolerance)
        self._hidden: dict[str, object] = {}
        self.min_matches = QSpinBox(minimum=0, maximum=1000)
        self.min_matches.setToolTip("A hit needs at least this many matched peaks")
        self.threshold = QDoubleSpinBox(decimals=3, minimum=0.0, maximum=1.0, singleStep=0.05)
        self.threshold.setToolTip("A hit needs at least this score")
        self.top_n = QSpinBox(minimum=0, maximum=100000)
        self.top_n.setSpecialValueText("all")
        self.top_n.setToolTip("Keep each query's N best hits (0: all)")
        self.fdr = FdrControl()
        self.preprocess = QComboBox()
        for name in preset_names():
            self.preprocess.addItem(name, name)
            self.preprocess.setItemData(
                self.preprocess.count() - 1,
                pipeline_summary(pipeline_from_spec(name)),
                Qt.ItemDataRole.ToolTipRole,
            )
        self.preprocess.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.preprocess.setMinimumContentsLength(8)
        self._custom_spec: str | None = None
        self.preprocess_edit = QPushButton("Edit…")
        self.preprocess_edit.setToolTip(
            "Edit the preprocessing steps and their parameters (the result is the 'custom' entry)"
        )
        self.preprocess_dialog: PreprocessDialog | None = None
        self.backend = QComboBox()
        self._fill_backends()
        self.dask_address = QLineEdit()
        self.dask_address.setPlaceholderText("tcp://HOST:8786")
        self.dask_address.setToolTip(DASK_ADDRESS_TIP)
        self.dask_address.setClearButtonEnabled(True)

        precursor = QHBoxLayout()
        precursor.setContentsMargins(0, 0, 0, 0)
        precursor.addWidget(self.precursor_unit)
        precursor.addWidget(self.precursor_tolerance, 1)

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow("Mode", self.mode)
        form.addRow("Score", self.score)
        form.addRow("Tolerance", self.tolerance)
        form.addRow("Precursor", precursor)
        form.addRow("", self.match_ion_mode)
        form.addRow("Min. matches", self.min_matches)
        form.addRow("Threshold", self.threshold)
        form.addRow("Top N", self.top_n)
        form.addRow("FDR (q ≤)", self.fdr)
        preprocessing = QHBoxLayout()
        preprocessing.setContentsMargins(0, 0, 0, 0)
        preprocessing.addWidget(self.preprocess, 1)
        preprocessing.addWidget(self.preprocess_edit)
        form.addRow("Preprocessing", preprocessing)
        form.addRow("Backend", self.backend)
        form.addRow("Cluster", self.dask_address)
        self.form = form

        self.search_button = QPushButton("Search")
        self.search_button.setDefault(True)
        self.search_button.setToolTip("Search the queries against the active library (Ctrl+R)")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setEnabled(False)
        self.stop_button.setToolTip("Stop the search; hits found so far are kept (Esc)")
        buttons = QHBoxLayout()
        buttons.addWidget(self.search_button, 2)
        buttons.addWidget(self.stop_button, 1)

        self.progress_view = SearchProgressView(lambda: self.backend_name() == "dask")
        self.progress_bar = self.progress_view.bar
        self.progress_label = self.progress_view.label

        # the form scrolls when the panel is short (a 768-pixel screen); Search, Stop
        # and the progress stay in view below it
        form_widget = QWidget()
        form_widget.setLayout(form)
        self.form_scroll = _FormScroll()
        self.form_scroll.setWidget(form_widget)
        self.form_scroll.setWidgetResizable(True)
        self.form_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.form_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.form_scroll, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.progress_view)

        self.mode.activated.connect(self._mode_chosen)
        self.precursor_unit.currentIndexChanged.connect(self._precursor_unit_changed)
        self.preprocess.currentIndexChanged.connect(self._preprocess_changed)
        self.preprocess_edit.clicked.connect(lambda: self.edit_preprocessing())
        self.backend.currentIndexChanged.connect(self._backend_changed)
        self.search_button.clicked.connect(self.searchRequested)
        self.stop_button.clicked.connect(self.stopRequested)
        self.set_parameters(SearchParameters())
        self._backend_changed()
        #: Restore and save the user's last parameters (False for scripted windows).
        self.persist_settings = persist_settings
        #: What restoring the settings changed, for the window to say ("" if nothing).
        self.settings_note = ""
        if persist_settings:
            self.load_settings()

    # -- parameters -------------------------------------------------------------------
    def _fill_backends(self) -> None:
        found = detected_backends()
        self.backend.addItem("Auto (GPU if available)", "auto")
        self.backend.addItem(f"CPU — {found.get('cpu', 'CPU')}", "cpu")
        if "cuda" in found:
            self.backend.addItem(f"GPU — {found['cuda']}", "cuda")
        else:
            self.backend.addItem("GPU — not available", "cuda")
            model = self.backend.model()
            if isinstance(model, QStandardItemModel):
                item = model.item(2)
                item.setEnabled(False)
                item.setToolTip(f"{gpu_reason()}; searches run on the CPU")
        self.backend.setItemData(
            0, "CUDA when a usable GPU is present, else the CPU", Qt.ItemDataRole.ToolTipRole
        )
        self.backend.addItem("Dask cluster…", "dask")
        index = self.backend.count() - 1
        if dask_available():
            tip = "Run on a Dask cluster (each worker on its GPU when it has one): " + (
                "give its address below, or local:N for N worker processes here"
            )
        else:
            tip = "Dask is not installed: pip install 'simms-desktop[dask]'"
            model = self.backend.model()
            if isinstance(model, QStandardItemModel):
                model.item(index).setEnabled(False)
        self.backend.setItemData(index, tip, Qt.ItemDataRole.ToolTipRole)

    def _backend_changed(self) -> None:
        dask = self.backend_name() == "dask"
        self.form.setRowVisible(self.dask_address, dask)
        self.dask_address.setEnabled(dask)

    def _mode_chosen(self) -> None:
        """A mode picked by the user: show its preset (top N and backend stay)."""
        self.set_parameters(
            SearchParameters(
                mode=self.mode.currentData(), top_n=self.top_n.value(), fdr=self.fdr.value()
            )
        )

    def _precursor_unit_changed(self) -> None:
        unit = self.precursor_unit.currentData()
        self.precursor_tolerance.setEnabled(unit != "off")
        self._precursor_units.switch(unit)

    def parameters(self, **overrides) -> SearchParameters:
        """The parameters shown, with ``overrides`` applied (``SearchParameters``)."""
        unit = self.precursor_unit.currentData()
        values: dict[str, object] = {
            "mode": self.mode.currentData(),
            "match_ion_mode": self.match_ion_mode.isChecked(),
            "tolerance": self.tolerance.value(),
            "score": self.score.currentData(),
            "precursor_tolerance": None if unit == "off" else self.precursor_tolerance.value(),
            "precursor_unit": "Da" if unit == "off" else unit,
            "min_matches": self.min_matches.value(),
            "threshold": self.threshold.value(),
            "top_n": self.top_n.value(),
            "fdr": self.fdr.value(),
            "preprocess": self.preprocess.currentData(),
        }
        return SearchParameters.from_dict({**self._hidden, **values, **overrides})

    def set_parameters(self, params: SearchParameters) -> None:
        """Show ``params`` in the widgets (fields without a widget are remembered)."""
        _select(self.mode, params.mode)
        self.match_ion_mode.setChecked(params.match_ion_mode)
        self.tolerance.setValue(params.tolerance)
        _select(self.score, params.score)
        if params.precursor_tolerance is None:
            _select(self.precursor_unit, "off")
        else:
            _select(self.precursor_unit, params.precursor_unit)
            self.precursor_tolerance.setValue(params.precursor_tolerance)
            self._precursor_units.unit = params.precursor_unit
        self.min_matches.setValue(params.min_matches)
        self.threshold.setValue(params.threshold)
        self.top_n.setValue(params.top_n)
        self.fdr.set_value(params.fdr)
        self.set_preprocess(params.preprocess)
        d = params.to_dict()
        self._hidden = {k: d[k] for k in ("mz_power", "intensity_power", "batch_size", "decoys")}
        self._precursor_unit_changed()

    # -- preprocessing ----------------------------------------------------------------
    def set_preprocess(self, spec: str | Pipeline) -> None:
        """Show preprocessing ``spec`` (a preset name, a JSON spec or a Pipeline).

        A pipeline with exactly a preset's steps selects the preset; any other
        becomes the "custom" entry.  Raises ValueError for an invalid spec.
        """
        pipeline = spec if isinstance(spec, Pipeline) else pipeline_from_spec(spec)
        name = matching_preset(pipeline)
        if name is not None and self.preprocess.findData(name) >= 0:
            _select(self.preprocess, name)
            return
        self._set_custom(pipeline_spec(pipeline))
        _select(self.preprocess, self._custom_spec)

    def _set_custom(self, spec: str) -> None:
        """Make ``spec`` the "custom" entry (one at most)."""
        pipeline = pipeline_from_spec(spec)
        text = f"custom: {pipeline_summary(pipeline)}"
        index = self.preprocess.findData(self._custom_spec) if self._custom_spec else -1
        if index < 0:
            self.preprocess.addItem(text, spec)
            index = self.preprocess.count() - 1
        else:
            self.preprocess.setItemText(index, text)
            self.preprocess.setItemData(index, spec)
        self.preprocess.setItemData(index, text, Qt.ItemDataRole.ToolTipRole)
        self._custom_spec = spec
        self._preprocess_changed()

    def custom_preprocess(self) -> str | None:
        """The spec of the "custom" entry (None when there is none)."""
        return self._custom_spec

    def preprocess_summary(self) -> str:
        """The text of the chosen preprocessing (``custom: a(1) → b`` for a custom one)."""
        return self.preprocess.currentText()

    def _preprocess_changed(self) -> None:
        spec = self.preprocess.currentData()
        try:
            summary = pipeline_summary(pipeline_from_spec(spec)) if spec else ""
        except ValueError:
            summary = ""
        self.preprocess.setToolTip(
            f"Peak preprocessing applied to queries and library: {summary}"
            if summary
            else "Peak preprocessing applied to queries and library"
        )

    def edit_preprocessing(self) -> PreprocessDialog:
        """Open the pipeline editor on the chosen preprocessing; OK applies it.

        The dialog is window-modal and returns at once (it is also kept as
        ``preprocess_dialog``).
        """
        spec = self.preprocess.currentData() or "none"
        pipeline = pipeline_from_spec(spec)
        dialog = PreprocessDialog(pipeline, matching_preset(pipeline), self)
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.accepted.connect(lambda d=dialog: self._dialog_accepted(d))
        dialog.finished.connect(lambda _result, d=dialog: d.deleteLater())
        self.preprocess_dialog = dialog
        dialog.open()
        return dialog

    def _dialog_accepted(self, dialog: PreprocessDialog) -> None:
        self.set_preprocess(dialog.pipeline())
        if self.preprocess_dialog is dialog:
            self.preprocess_dialog = None
        self.save_settings()

    # -- backend ----------------------------------------------------------------------
    def backend_name(self) -> str:
        """``"auto"``, ``"cpu"``, ``"cuda"`` or ``"dask"``."""
        return self.backend.currentData() or "auto"

    def dask_address_text(self) -> str:
        """The Dask scheduler address typed (stripped; ``local:N`` for a local cluster)."""
        return self.dask_address.text().strip()

    def set_dask_address(self, address: str) -> None:
        """Show ``address`` in the Dask address field."""
        self.dask_address.setText(str(address).strip())

    def set_backend(self, name: str) -> None:
        """Choose the backend by name (a disabled GPU entry falls back to auto)."""
        index = self.backend.findData(name)
        model = self.backend.model()
        if index < 0 or (
            isinstance(model, QStandardItemModel) and not model.item(index).isEnabled()
        ):
            index = 0
        self.backend.setCurrentIndex(index)

    # -- settings ---------------------------------------------------------------------
    def load_settings(self) -> None:
        """Restore the last parameters and backend from QSettings."""
        data = load_json(SETTINGS_KEY)
        if not isinstance(data, dict):
            return
        custom = data.get("custom_preprocess")
        if isinstance(custom, str):
            try:
                pipeline = pipeline_from_spec(custom)
            except ValueError:
                pipeline = None
            if pipeline is not None and matching_preset(pipeline) is None:
                self._set_custom(pipeline_spec(pipeline))
        self.set_dask_address(str(data.get("dask_address", "") or ""))
        saved = data.get("params", {})
        if isinstance(saved, dict) and "mode" not in saved:
            # saved before search modes existed: the former defaults (no precursor
            # window, either ion mode) were rarely a choice, so start identity-safe
            saved = {"mode": "identity", "top_n": saved.get("top_n", SearchParameters().top_n)}
            self.settings_note = (
                "Search settings from an earlier version were replaced by identity mode "
                "(entropy, precursor 0.01 Da, same ion mode); choose Custom for the former ones"
            )
        try:
            self.set_parameters(SearchParameters.from_dict(saved))
        except (TypeError, ValueError):
            return
        self.set_backend(str(data.get("backend", "auto")))

    def save_settings(self) -> None:
        """Store the parameters and backend in QSettings (if this panel persists)."""
        if not self.persist_settings:
            return
        save_json(
            SETTINGS_KEY,
            {
                "params": self.parameters().to_dict(),
                "backend": self.backend_name(),
                "dask_address": self.dask_address_text(),
                "custom_preprocess": self._custom_spec,
            },
        )

    def preferred_height(self) -> int:
        """Height showing the whole form, the buttons and the progress without scrolling."""
        extra = self.sizeHint().height() - self.form_scroll.sizeHint().height()
        return self.form_scroll.widget().sizeHint().height() + max(extra, 0) + 12

    # -- running state ----------------------------------------------------------------
    def set_running(self, running: bool) -> None:
        """Enable Stop while a search runs, Search otherwise."""
        self.search_button.setEnabled(not running)
        self.stop_button.setEnabled(running)
        self.progress_view.set_running(running)

    def show_progress(self, progress: SearchProgress) -> None:
        """Show pairs done, rate and time left (ignored once the search has ended)."""
        self.progress_view.show_progress(progress)

    def show_done(self, text: str, hits: int | None = None, state: str = "") -> None:
        """Final state of the progress bar; a stopped search says what it kept."""
        self.progress_view.show_done(text, hits, state)


def _select(combo: QComboBox, data: object) -> None:
    index = combo.findData(data)
    if index >= 0:
        combo.setCurrentIndex(index)


class _FormScroll(QScrollArea):
    """Scrolls the form up and down only: never narrower than the form and its scroll bar.

    With the horizontal scroll bar off, a narrower area would cut the fields'
    right edge (a 400-pixel dock at 1366 x 768); the dock widens instead.
    """

    def minimumSizeHint(self) -> QSize:  # noqa: N802  (Qt naming)
        hint = super().minimumSizeHint()
        form = self.widget()
        if form is None:
            return hint
        bar = self.verticalScrollBar().sizeHint().width()
        width = form.minimumSizeHint().width() + bar + 2 * self.frameWidth()
        return QSize(max(hint.width(), width), hint.height())
