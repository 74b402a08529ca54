"""The preprocessing editor: steps and parameters, the custom entry, searches and settings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PyQt6.QtCore import Qt
from PyQt6.QtWidgets import QComboBox, QDialogButtonBox, QDoubleSpinBox, QSpinBox

import engine
from engine.preprocess import Pipeline, Step, pipeline_from_spec, pipeline_spec, preset

GNPS_TEXT = "remove_precursor_peaks(17) → window_filter(6, 50) → sqrt → normalize"


@pytest.fixture
def window(qtbot, boxes, pesticides):
    from simms_gui._qt.main_window import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    assert w.session.add_library(Path("pesticides.mgf"), pesticides)
    assert w.session.set_queries(Path("queries.mgf"), pesticides.subset(range(0, 76, 2)))
    yield w
    w.shutdown()


def assert_identical(got, expected):
    assert len(got) == len(expected) > 0
    for column in got.columns():
        np.testing.assert_array_equal(getattr(got, column), getattr(expected, column))


def test_summaries():
    from simms_gui.pipelines import matching_preset, pipeline_summary

    assert pipeline_summary(preset("gnps")) == GNPS_TEXT
    assert pipeline_summary(preset("none")) == "no preprocessing"
    assert pipeline_summary(preset("msas")) == (
        "select_mz_range(10, 1000) → relative_intensity_threshold(0.01) → keep_top_k(100) "
        "→ sqrt → normalize"
    )
    assert pipeline_summary(Pipeline((Step("select_mz_range", {"min_mz": 50}),))) == (
        "select_mz_range(50, ∞)"
    )
    assert matching_preset(Pipeline(preset("msas").steps)) == "msas"
    assert matching_preset(Pipeline(preset("msas").steps[1:])) is None


def test_editor_widgets_match_parameter_types(qtbot):
    from simms_gui._qt.preprocess_dialog import PreprocessDialog

    dialog = PreprocessDialog(preset("gnps"))
    qtbot.addWidget(dialog)
    assert [row.name for row in dialog.rows] == [s.name for s in preset("gnps").steps]
    editors = dialog.rows[1].editors
    assert isinstance(editors["k"], QSpinBox) and isinstance(editors["window"], QDoubleSpinBox)
    assert editors["k"].value() == 6 and editors["window"].value() == 50.0
    assert isinstance(dialog.rows[2].editors["method"], QComboBox)
    assert dialog.rows[2].editors["method"].currentData() == "sqrt"
    assert dialog.rows[2].editors["method"].currentText() == "square root"
    assert dialog.rows[3].editors == {}
    assert (
        GNPS_TEXT == dialog.summary_label.toolTip() and "preset gnps" in dialog.summary_label.text()
    )
    # a chemist's words and units, not function names
    assert dialog.rows[1].label.text() == "2. Keep the strongest peaks of each m/z window"
    assert editors["k"].suffix() == " peaks" and editors["window"].suffix() == " Da"
    assert dialog.rows[0].editors["tolerance"].suffix() == " Da"
    assert dialog.summary_label.text().startswith(
        "Remove peaks within 17 Da of the precursor → keep the 6 strongest peaks per ±50 Da"
    )
    for row in dialog.rows:
        assert "_" not in row.label.text()


def test_relative_intensity_shown_in_percent(qtbot):
    from simms_gui._qt.preprocess_dialog import PreprocessDialog

    dialog = PreprocessDialog(preset("msas"))
    qtbot.addWidget(dialog)
    box = dialog.rows[1].editors["min_relative"]
    assert box.suffix() == " % of base peak" and box.value() == 1.0  # stored as 0.01
    assert dialog.pipeline().steps == preset("msas").steps
    box.setValue(5.0)
    assert dialog.pipeline().steps[1].params == {"min_relative": 0.05}
    assert "drop peaks under 5 % of the base peak" in dialog.summary_label.text()
    assert [dialog.add_combo.itemText(i) for i in range(dialog.add_combo.count())][:2] == [
        "Keep an m/z range",
        "Remove peaks near the precursor",
    ]


def test_add_remove_reorder_and_reset(qtbot):
    from simms_gui._qt.preprocess_dialog import PreprocessDialog

    dialog = PreprocessDialog(preset("none"))
    qtbot.addWidget(dialog)
    assert dialog.rows == [] and dialog.pipeline().steps == ()
    dialog.add_combo.setCurrentIndex(dialog.add_combo.findData("keep_top_k"))
    qtbot.mouseClick(dialog.add_button, Qt.MouseButton.LeftButton)
    dialog.add_step("select_mz_range")
    dialog.add_step("normalize_intensity")
    assert [r.name for r in dialog.rows] == ["keep_top_k", "select_mz_range", "normalize_intensity"]
    assert dialog.steps()[0] == Step("keep_top_k", {"k": 100})
    assert dialog.steps()[1] == Step("select_mz_range", {"min_mz": 0.0})  # no upper bound
    qtbot.mouseClick(dialog.rows[1].up_button, Qt.MouseButton.LeftButton)
    assert [r.name for r in dialog.rows][:2] == ["select_mz_range", "keep_top_k"]
    assert not dialog.rows[0].up_button.isEnabled() and not dialog.rows[-1].down_button.isEnabled()
    dialog.rows[0].editors["max_mz"].setValue(800.0)
    dialog.rows[0].editors["min_mz"].setValue(900.0)
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert not ok.isEnabled() and "min_mz (900) must not exceed max_mz (800)" in (
        dialog.error_label.text()
    )
    dialog.rows[0].editors["max_mz"].setValue(dialog.rows[0].editors["max_mz"].maximum())
    assert ok.isEnabled() and "max_mz" not in dialog.rows[0].params
    qtbot.mouseClick(dialog.rows[2].remove_button, Qt.MouseButton.LeftButton)
    assert [r.name for r in dialog.rows] == ["select_mz_range", "keep_top_k"]
    dialog.preset_combo.setCurrentIndex(dialog.preset_combo.findData("msas"))
    qtbot.mouseClick(dialog.reset_button, Qt.MouseButton.LeftButton)
    assert dialog.pipeline().steps == preset("msas").steps


def test_edited_parameter_is_searched_and_shown(qtbot, window, pesticides):
    panel = window.search_panel
    panel.set_parameters(
        engine.SearchParameters(mode="custom", top_n=5, tolerance=0.02, preprocess="gnps")
    )
    assert panel.preprocess_summary() == "gnps"
    dialog = panel.edit_preprocessing()
    assert dialog.isVisible() and dialog.pipeline().steps == preset("gnps").steps
    dialog.rows[0].editors["tolerance"].setValue(5.0)
    dialog.rows[1].editors["k"].setValue(4)
    method = dialog.rows[2].editors["method"]
    method.setCurrentIndex(method.findData("log"))
    qtbot.mouseClick(
        dialog.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton
    )
    assert panel.preprocess_summary() == (
        "custom: remove_precursor_peaks(5) → window_filter(4, 50) → log → normalize"
    )
    assert "window_filter(4, 50)" in panel.preprocess.toolTip()
    spec = panel.parameters().preprocess
    pipeline = pipeline_from_spec(spec)
    assert pipeline.steps == (
        Step("remove_precursor_peaks", {"tolerance": 5.0}),
        Step("window_filter", {"k": 4, "window": 50.0}),
        Step("scale_intensity", {"method": "log"}),
        Step("normalize_intensity"),
    )

    with qtbot.waitSignal(window.searchFinished, timeout=60_000):
        qtbot.mouseClick(panel.search_button, Qt.MouseButton.LeftButton)
    s = window.session
    assert s.params.preprocess == spec
    expected = engine.search(s.queries.spectra, pesticides, s.params, backend="cpu")
    assert_identical(s.hits, expected)
    plain = engine.search(s.queries.spectra, pesticides, s.params, backend="cpu", preprocess="gnps")
    assert not (len(plain) == len(expected) and np.array_equal(plain.score, expected.score))

    # the mirror plot shows the peaks of the same pipeline
    window.results.select_row(0)
    q, h = int(s.hits.query_index[0]), int(s.hits.library_index[0])
    pair = window.pair_view.pair
    qmz, qint = pipeline(s.queries.spectra.subset([q])).peaks(0)
    lmz, lint = pipeline(pesticides.subset([h])).peaks(0)
    np.testing.assert_array_equal(pair.query_mz, qmz)
    np.testing.assert_array_equal(pair.query_intensity, qint)
    np.testing.assert_array_equal(pair.library_mz, lmz)
    np.testing.assert_array_equal(pair.library_intensity, lint)
    assert pair.matches.matches == int(s.hits.matches[0])

    # a dialog that ends on a preset's steps selects the preset
    dialog = panel.edit_preprocessing()
    dialog.preset_combo.setCurrentIndex(dialog.preset_combo.findData("msas"))
    dialog.reset_button.click()
    dialog.accept()
    assert panel.preprocess_summary() == "msas" and panel.parameters().preprocess == "msas"
    assert panel.custom_preprocess() == spec  # the custom entry stays available
    # cancel changes nothing
    dialog = panel.edit_preprocessing()
    dialog.add_step("keep_top_k")
    dialog.reject()
    assert panel.parameters().preprocess == "msas"


def test_custom_preprocessing_persists(qtbot, window):
    from simms_gui._qt.search_panel import SearchPanel

    panel = window.search_panel
    custom = Pipeline((Step("keep_top_k", {"k": 7}), Step("scale_intensity", {"method": "sqrt"})))
    panel.set_preprocess(custom)
    spec = pipeline_spec(custom)
    assert panel.parameters().preprocess == spec
    assert panel.preprocess_summary() == "custom: keep_top_k(7) → sqrt"
    panel.save_settings()
    again = SearchPanel()
    qtbot.addWidget(again)
    assert again.parameters().preprocess == spec
    assert again.preprocess_summary() == "custom: keep_top_k(7) → sqrt"
    # a preset chosen later keeps the custom entry in the list
    panel.set_preprocess("gnps")
    panel.save_settings()
    third = SearchPanel()
    qtbot.addWidget(third)
    assert third.parameters().preprocess == "gnps" and third.custom_preprocess() == spec
    texts = [third.preprocess.itemText(i) for i in range(third.preprocess.count())]
    assert texts == ["none", "gnps", "msas", "custom: keep_top_k(7) → sqrt"]
    # an invalid spec is refused
    with pytest.raises(ValueError, match="unknown filter"):
        panel.set_preprocess('[["nope"]]')
