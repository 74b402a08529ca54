"""Answers a chemist can defend, in the window: q-values, tie order and flags, every
query's status, mzTab-M and GNPS exports, and network labels past the label floor."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import engine
from engine.analyses.networking import LABEL_FLOOR
from engine.search import query_status
from simms_gui._qt.hit_export import HIT_FORMATS
from simms_gui._qt.hits_controller import hits_filter
from simms_gui._qt.results_model import COLUMNS
from simms_gui.resources import demo_library_path, demo_queries_path

COL = {c.key: k for k, c in enumerate(COLUMNS)}
ACIDS = ("Citraconic acid", "Itaconic acid", "Mesaconic acid")  # all C5H6O4, [M-H]- 129.0188


@pytest.fixture(scope="module")
def demo():
    queries = engine.load_library(demo_queries_path())
    library = engine.load_library(demo_library_path())
    return queries, library


def _search(qtbot, window, queries, library, params, qpath="q.mgf", lpath="lib.mgf"):
    s = window.session
    s.add_library(lpath, library)
    s.set_queries(qpath, queries)
    with qtbot.waitSignal(window.searchFinished, timeout=180_000):
        assert window.searches.start(params, "cpu") is not None
    return s


def _shown(model, key):
    """Column ``key`` of the table as shown, keyed by (query, library) index."""
    q = model.column("query_index")
    lib = model.column("library_index")
    return dict(zip(zip(q.tolist(), lib.tolist(), strict=True), model.column(key), strict=True))


def test_fdr_control_is_off_by_default_and_sets_the_parameters(qtbot):
    from simms_gui._qt.search_panel import SearchPanel

    panel = SearchPanel(persist_settings=False)
    qtbot.addWidget(panel)
    labels = [
        panel.form.itemAt(r, panel.form.ItemRole.LabelRole) for r in range(panel.form.rowCount())
    ]
    assert "FDR (q ≤)" in [w.widget().text() for w in labels if w is not None]
    assert panel.parameters().fdr is None and not panel.fdr.limit.isEnabled()
    panel.fdr.check.setChecked(True)
    assert panel.parameters().fdr == 0.05
    panel.fdr.limit.setValue(0.01)
    assert panel.parameters() == engine.SearchParameters(fdr=0.01)
    # a mode picked keeps the FDR; parameters shown come back as they were
    panel.mode.setCurrentIndex(panel.mode.findData("analog"))
    panel.mode.activated.emit(panel.mode.currentIndex())
    assert panel.parameters() == engine.SearchParameters(mode="analog", fdr=0.01)
    panel.set_parameters(engine.SearchParameters())
    assert panel.parameters().fdr is None and not panel.fdr.check.isChecked()
    panel.set_parameters(engine.SearchParameters(fdr=0.2, decoys="fragments"))
    assert panel.parameters().fdr == 0.2 and panel.parameters().decoys == "fragments"


@pytest.mark.slow
def test_fdr_search_shows_q_values_queries_sheet_and_exports(qtbot, window, demo, tmp_path):
    queries, library = demo
    params = engine.SearchParameters(fdr=0.05)
    s = _search(qtbot, window, queries, library, params)
    model = window.results.model
    # the reference: the engine's own FDR search, independent of the window
    ref = engine.search(queries, library, params, backend="cpu").to_pandas()
    assert model.rowCount() == len(ref) > 0
    assert "top 10, q ≤ 0.05)" in window.log_view.toPlainText()
    shown = _shown(model, "q_value")
    expected = dict(
        zip(zip(ref.query_index, ref.library_index, strict=True), ref.q_value, strict=True)
    )
    assert shown.keys() == expected.keys()
    np.testing.assert_allclose([shown[k] for k in expected], list(expected.values()), atol=1e-12)
    assert (ref.q_value <= 0.05).all() and ref.q_value.notna().all()
    assert model.headerData(COL["q_value"], _horizontal()) == "q-value"
    text = model.data(model.index(0, COL["q_value"]))
    assert text == format(model.column("q_value")[0], ".4f")
    window.results.select_row(0)
    qtbot.waitUntil(lambda: bool(window.pair_view.details.row), timeout=10_000)
    assert "q-value" in window.pair_view.details.toPlainText()
    listed = s.hit_list()
    np.testing.assert_allclose(
        np.sort(listed["q_value"].astype(float)), np.sort(ref.q_value.to_numpy())
    )
    # a tie between spectra of one compound is no doubt: not flagged (Flecainide here)
    one_compound = (listed["tied"] > 1) & (listed["tied_compounds"] == "")
    assert one_compound.any() and not any("tied" in f for f in listed["flags"][one_compound])

    # every query in the Query status sheet, statuses as the engine decides them
    sheet = window.query_status
    assert window.tabs.tabText(window.tabs.indexOf(sheet)) == "Query status"
    assert sheet.model.rowCount() == len(queries)
    has = np.isin(np.arange(len(queries)), ref.query_index)
    status = query_status(queries, library, params, has)
    assert sheet.model.columns["status"].tolist() == status.tolist()
    counts = np.bincount(ref.query_index, minlength=len(queries))
    np.testing.assert_array_equal(sheet.model.columns["hits"], counts)
    best = ref.groupby("query_index").score.max()
    np.testing.assert_allclose(sheet.model.columns["best_score"][best.index], best.to_numpy())
    assert "queries at q ≤ 0.05" in sheet.summary.text()
    assert (status != "hits").any()  # some queries lose their hits to the FDR: listed anyway
    # double-click a query: its hits alone in the results
    row = int(np.flatnonzero(has)[0])
    sheet.queryActivated.emit(row)
    assert window.results.model.query_filter == row
    assert set(window.results.model.column("query_index").tolist()) == {row}
    window.results.clear_query_filter()

    # exports: mzTab-M and the GNPS TSV offered, written with the q-values
    offered = hits_filter()
    assert "mzTab-M" in offered and "GNPS" in offered
    mztab = pytest.importorskip("pyteomics.mztab")
    out = window.hits.export_hits(tmp_path / "hits.mztab", "all")
    table = mztab.MzTab(str(out))
    sme = table.small_molecule_evidence_table
    assert len(sme) == len(ref)
    assert len(table.small_molecule_feature_table) == len(queries)
    gnps_filter = next(text for fmt, text, _ in HIT_FORMATS if fmt == "gnps")
    from PyQt6.QtWidgets import QFileDialog

    target = tmp_path / "gnps_hits"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), gnps_filter))
        out = window.hits.export_hits(None, "all")
    assert out.name == "gnps_hits.tsv"
    frame = pd.read_csv(out, sep="\t")
    assert len(frame) == len(ref) and "Compound_Name" in frame and "SimMS_QValue" in frame
    got = dict(zip(zip(frame.SimMS_QueryIndex, frame.SimMS_LibraryIndex, strict=True),
                   frame.SimMS_QValue, strict=True))  # fmt: skip
    np.testing.assert_allclose([got[k] for k in expected], list(expected.values()), atol=1e-9)


@pytest.mark.slow
def test_tied_best_hits_in_tie_order_with_flags_in_table_pane_and_sheet(
    qtbot, window, massbank_library
):
    lib = massbank_library
    names = lib.metadata["name"]
    itaconic = int(np.flatnonzero(names == "Itaconic acid")[0])
    near = np.flatnonzero(np.abs(lib.precursor_mz - lib.precursor_mz[itaconic]) < 0.5)
    query, library = lib.subset([itaconic]), lib.subset(near)
    params = engine.SearchParameters(mode="identity", top_n=10)
    _search(qtbot, window, query, library, params)
    model = window.results.model
    shown = [str(v) for v in model.column("library_name")[:3]]
    # the reference: the engine's hits in canonical (library-position) order tie 3 acids
    plain = engine.search(query, library, params, backend="cpu")
    tied = plain.score >= plain.score.max() - 1e-9
    assert sorted(names_of(library, plain.library_index[tied])) == list(ACIDS)
    assert names_of(library, plain.library_index[tied]) != list(ACIDS)  # library order differs
    assert tuple(shown) == ACIDS  # order_ties: same matched peaks, so by compound name
    flags = [model.data(model.index(r, COL["flags"])) for r in range(model.rowCount())]
    assert flags[:3] == ["tied ×3; few peaks"] * 3
    assert all("tied" not in f for f in flags[3:])
    tip = model.data(model.index(0, COL["flags"]), _tooltip())
    assert "Itaconic acid; Mesaconic acid" in tip
    window.results.select_row(1)  # itaconic acid itself
    qtbot.waitUntil(lambda: window.pair_view.details.row.get("library_name") == ACIDS[1])
    pane = window.pair_view.details.toPlainText()
    assert "tied with 2 other compounds at the best score: Citraconic acid; Mesaconic acid" in pane
    assert "only 1 matched peak" in pane
    # the best hit per query (table toggle, "best" export): the tie order's first
    assert names_of(library, plain.best_per_query().library_index) != [ACIDS[0]]
    window.results.best_check.setChecked(True)
    assert [str(v) for v in model.column("library_name")] == [ACIDS[0]]
    assert model.column("flags").tolist() == ["tied ×3; few peaks"]
    window.results.best_check.setChecked(False)
    assert names_of(library, window.session.select_hits("best").library_index) == [ACIDS[0]]
    sheet = window.query_status.model
    assert sheet.columns["tied"].tolist() == [3]
    assert sheet.columns["best_library_name"].tolist() == [ACIDS[0]]
    window.results.select_row(2)
    window.hits.show_query(0)  # a query picked in the query list: its best hit, in tie order
    assert window.results.model.row_of(window.results.current_row())["library_name"] == ACIDS[0]
    assert "tied with 2 other compounds" in sheet.columns["flags"][0]

    # an isomer the library cannot tell apart (triamcinolone acetonide / dexamethasone acetate)
    a = int(np.flatnonzero(lib.metadata["id"] == "MSBNK-Athens_Univ-AU282606")[0])
    close = lib.subset(np.flatnonzero(np.abs(lib.precursor_mz - lib.precursor_mz[a]) < 0.05))
    _search(qtbot, window, lib.subset([a]), close, params, "q2.mgf", "lib2.mgf")
    check = engine.analyses.qc.IsomerCheck(close, backend="cpu")
    best = window.results.model.row_of(0)
    expected = check(np.array([best["library_index"]]))[0]
    assert expected and best["isomers"] == expected
    assert "isomers" in best["flags"]
    window.results.select_row(0)
    qtbot.waitUntil(lambda: "isomers in library" in window.pair_view.details.toPlainText())
    assert f"isomers in library: {expected}" in window.pair_view.details.toPlainText()


@pytest.mark.slow
def test_network_labels_only_library_hits_past_the_floor(qtbot, window, demo):
    queries, library = demo
    s = window.session
    s.add_library("lib.mgf", library)
    s.set_queries("q.mgf", queries)
    tab = window.network_tab
    tab.label_library.setChecked(True)
    with qtbot.waitSignal(tab.networkShown, timeout=180_000):
        tab.request_from_controls()
    plot = tab.plot
    # the reference: each query's best hit by a plain identity search, at the GNPS floor
    ref = engine.search(queries, library, engine.SearchParameters(top_n=1), backend="cpu")
    score_floor, matches_floor = LABEL_FLOOR
    passing = (ref.score >= score_floor) & (ref.matches >= matches_floor)
    expected = dict(zip(ref.query_index[passing].tolist(),
                        names_of(library, ref.library_index[passing]), strict=True))  # fmt: skip
    assert 0 < len(expected) < len(queries)  # some best hits are below the floor: unlabelled
    assert plot.labels.nodes.tolist() == sorted(expected)
    assert [item.toolTip() for item in plot.labels.items] == [expected[k] for k in sorted(expected)]
    x, y = plot.positions[plot.labels.nodes[0]]
    assert (plot.labels.items[0].pos().x(), plot.labels.items[0].pos().y()) == (x, y)
    # many lone spectra: only the surest are labelled (all spectra are alone here)
    assert (s.network.component_size == 1).all()
    from simms_gui._qt import network_labels

    score = dict(zip(ref.query_index.tolist(), ref.score.tolist(), strict=True))
    surest = sorted(sorted(expected, key=lambda k: (-score[k], k))[:5])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(network_labels, "MAX_SINGLE_LABELS", 5)
        assert network_labels.library_labels(s.network)[0].tolist() == surest
    # without the check box: no labels
    tab.label_library.setChecked(False)
    with qtbot.waitSignal(tab.networkShown, timeout=180_000):
        tab.request_from_controls()
    assert plot.labels.items == [] and not any(
        type(i).__name__ == "TextItem" for i in plot.plot_item.items
    )


def names_of(library, rows) -> list[str]:
    return [str(v) for v in library.metadata["name"][np.asarray(rows)]]


def _horizontal():
    from PyQt6.QtCore import Qt

    return Qt.Orientation.Horizontal


def _tooltip():
    from PyQt6.QtCore import Qt

    return Qt.ItemDataRole.ToolTipRole


@pytest.mark.slow
def test_q_values_survive_a_session_file(tmp_path):
    from simms_gui.session import Session
    from simms_gui.session_file import open_session, save_session

    s = Session()
    s.open(demo_library_path(), "library")
    s.open(demo_queries_path(), "queries")
    s.run_search(engine.SearchParameters(fdr=0.1), "cpu")
    ref = engine.search(s.queries.spectra, s.library, fdr=0.1, backend="cpu").to_pandas()
    saved = s.hit_list().to_pandas()
    assert saved.q_value.notna().all() and len(saved) == len(ref)
    path = save_session(s, tmp_path / "fdr.simms")
    again = Session()
    assert open_session(again, path) == []
    got = again.hit_list().to_pandas()
    key = ["query_index", "library_index"]
    merged = got.merge(ref[[*key, "q_value"]], on=key, suffixes=("", "_ref"))
    assert len(merged) == len(ref)
    np.testing.assert_array_equal(merged.q_value, merged.q_value_ref)
    # a search without FDR saves none
    s.run_search(engine.SearchParameters(), "cpu")
    path = save_session(s, tmp_path / "plain.simms")
    assert open_session(again, path) == [] and again.hit_list().to_pandas().q_value.isna().all()


@pytest.mark.slow
def test_headless_session_checks_isomers_like_the_window(massbank_library):
    from simms_gui.session import Session

    lib = massbank_library
    a = int(np.flatnonzero(lib.metadata["id"] == "MSBNK-Athens_Univ-AU282606")[0])
    close = lib.subset(np.flatnonzero(np.abs(lib.precursor_mz - lib.precursor_mz[a]) < 0.05))
    s = Session()
    s.add_library("close.mgf", close)
    s.set_queries("q.mgf", lib.subset([a]))
    s.run_search(engine.SearchParameters(), "cpu")
    listed = s.hit_list()
    best = listed.table.library_index[0]
    expected = engine.analyses.qc.IsomerCheck(close, backend="cpu")(np.array([best]))[0]
    assert expected and listed["isomers"][0] == expected and "isomers" in listed["flags"][0]
