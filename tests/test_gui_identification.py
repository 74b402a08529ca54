"""The window's search modes, evidence columns and hit-detail pane, offscreen with real spectra."""

from __future__ import annotations

import numpy as np

import engine
from engine.export import hit_columns
from simms_gui._qt.results_model import COLUMNS

COL = {c.key: k for k, c in enumerate(COLUMNS)}


def test_first_start_is_identity_mode_and_modes_fill_the_panel(window):
    panel = window.search_panel
    assert panel.parameters() == engine.SearchParameters()  # first start: identity defaults
    assert panel.mode.currentData() == "identity" and panel.match_ion_mode.isChecked()
    for mode in ("analog", "custom", "identity"):
        panel.mode.setCurrentIndex(panel.mode.findData(mode))
        panel.mode.activated.emit(panel.mode.currentIndex())
        assert panel.parameters() == engine.SearchParameters(mode=mode)
    # a changed field stays in the mode, and survives a settings round trip
    panel.match_ion_mode.setChecked(False)
    panel.tolerance.setValue(0.05)
    p = panel.parameters()
    assert p.mode == "identity" and not p.match_ion_mode and p.tolerance == 0.05
    panel.set_parameters(engine.SearchParameters(mode="custom"))
    panel.set_parameters(p)
    assert panel.parameters() == p


def test_identity_search_shows_evidence_and_the_hit_pane(qtbot, window, data_dir):
    queries = engine.load_library(data_dir / "massbank_ms2_queries.mgf.gz").subset(np.arange(12))
    library = engine.load_library(data_dir / "massbank_ms2.mgf.gz")
    s = window.session
    s.add_library(data_dir / "massbank_ms2.mgf.gz", library)
    s.set_queries(data_dir / "massbank_ms2_queries.mgf.gz", queries)
    params = engine.SearchParameters(top_n=5)
    with qtbot.waitSignal(window.searchFinished, timeout=180_000):
        assert window.searches.start(params, "cpu") is not None
    model = window.results.model
    assert model.rowCount() > 12
    expected = hit_columns(s.hits, queries, library, params)
    shown = model.column("reverse_score", visible=False)
    order = np.lexsort((model.column("library_index", visible=False),
                        model.column("query_index", visible=False)))  # fmt: skip
    exp_order = np.lexsort((expected["library_index"], expected["query_index"]))
    np.testing.assert_allclose(shown[order], expected["reverse_score"][exp_order], atol=1e-12)
    header = model.headerData(COL["reverse_score"], Qt_horizontal())
    assert header == "Reverse"
    # clicking a hit fills the detail pane with its record and attribution
    window.results.select_row(0)
    qtbot.waitUntil(lambda: bool(window.pair_view.details.row), timeout=10_000)
    text = window.pair_view.details.toPlainText()
    row = model.row_of(0)
    for key in ("library_name", "library_adduct", "library_inchikey", "library_license"):
        assert str(row[key]) and str(row[key]) in text, key
    assert "Reverse score" in text and "Licence" in text and "Authors" in text
    assert "entropy similarity" in window.pair_view.mirror.title_text.lower()


def Qt_horizontal():  # noqa: N802 - a small helper keeps the test readable
    from PyQt6.QtCore import Qt

    return Qt.Orientation.Horizontal


def test_viewer_search_takes_the_mode_and_reports_the_precursor_shift(qtbot, data_dir):
    import simms_gui

    viewer = simms_gui.Viewer(show=False)
    qtbot.addWidget(viewer.window)
    try:
        lib = viewer.open_library(data_dir / "pesticides.mgf")
        queries = viewer.open_queries(data_dir / "pesticides.mgf")
        handle = viewer.search(mode="analog", top_n=3, backend="cpu")
        assert handle.params == engine.SearchParameters(mode="analog", top_n=3)
        hits = handle.wait(timeout=180)
        assert viewer.window.search_panel.parameters().mode == "analog"
        expected = engine.search(queries, lib, mode="analog", top_n=3, backend="cpu")
        np.testing.assert_array_equal(hits.library_index, expected.library_index)
        np.testing.assert_allclose(hits.score, expected.score, atol=1e-12)
        table = viewer.hits.to_pandas()
        shift = (
            lib.precursor_mz[table["library_index"]] - queries.precursor_mz[table["query_index"]]
        )
        np.testing.assert_allclose(table["precursor_mz_delta"], shift)
        assert np.abs(shift).max() <= 100.0 and np.abs(shift).max() > 1.0  # analogs found
    finally:
        viewer.close()
