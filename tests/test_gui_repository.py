"""The window's repository search: a SYNTHETIC repository of real MassBank spectra.

The session (without Qt), the window and the Viewer search an on-disk
repository, locally and on a local Dask cluster whose address is typed in;
their hits must equal ``Repository.search`` run directly, their summaries
``Repository.summary``, and the hit spectra the repository's stored spectra
(``Repository.library()``, read by the engine's own shard reader).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PyQt6.QtCore import Qt

import engine
from engine.io.mgf_writer import write_mgf
from engine.repository.synthetic import build_synthetic
from simms_gui.model import Session

PARAMS = engine.SearchParameters(top_n=5)


@pytest.fixture(scope="module")
def repo(tmp_path_factory, massbank_queries):
    """3,000 jittered copies of the 1,000 real MassBank query spectra: 8 files, 3 datasets,
    compacted (each ion mode's shards hold disjoint precursor ranges)."""
    path = tmp_path_factory.mktemp("gui-repo") / "massbank-synthetic"
    return build_synthetic(
        path, massbank_queries, 3000, shard_spectra=500, chunk_spectra=400,
        files_per_dataset=3, seed=1, compact=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def query_file(tmp_path_factory, massbank_queries):
    """20 real MassBank spectra as an MGF file."""
    path = tmp_path_factory.mktemp("gui-queries") / "queries.mgf"
    write_mgf(massbank_queries.subset(np.arange(0, 1000, 50)), path)
    return path


def same_hits(got: engine.HitTable, expected: engine.HitTable) -> None:
    assert len(got) == len(expected) > 0
    for column in engine.HitTable.columns():
        np.testing.assert_array_equal(getattr(got, column), getattr(expected, column), column)


def expected_of(repo, queries, params=PARAMS, **options):
    hits = repo.search(queries, params, backend="cpu", **options).run()
    return hits, repo.summary(hits, queries), repo.summary(hits, queries, by="dataset")


@pytest.mark.slow
def test_session_searches_a_repository_without_qt(repo, query_file, tmp_path, monkeypatch):
    from simms_gui.model import repository

    monkeypatch.setattr(repository, "ANNOUNCE_INTERVAL", 0.0)  # every shard announced
    s = Session()
    seen, progress = [], []
    s.events.repository_summary.connect(seen.append)
    s.events.repository_progress.connect(progress.append)
    opened = []
    s.events.repository.connect(opened.append)
    s.open(query_file, "queries")
    assert s.repositories.open(repo.path).path == repo.path
    assert opened[0].synthetic and opened[0].spectra == 3000 and opened[0].files == 8
    assert opened[0].info.startswith("SYNTHETIC repository")
    task = s.search(PARAMS, backend="cpu")
    assert task.state == "done" and s.state == "idle" and not s.stale
    queries = s.queries.spectra
    hits, by_file, by_dataset = expected_of(repo, queries)
    same_hits(s.repositories.hits, hits)
    # the final summary event and the session's summary are the engine's own
    assert seen[-1].final and seen[-1].synthetic
    pd.testing.assert_frame_equal(seen[-1].files, by_file)
    pd.testing.assert_frame_equal(seen[-1].datasets, by_dataset)
    pd.testing.assert_frame_equal(s.repositories.summary("file"), by_file)
    # the summaries announced as shards finished: the final one's rows of their queries
    early = [e for e in seen if not e.final]
    assert early and len(early[0].files) < len(by_file)
    for event in early:
        for got, final in ((event.files, by_file), (event.datasets, by_dataset)):
            mine = final[final["query_index"].isin(got["query_index"])].reset_index(drop=True)
            pd.testing.assert_frame_equal(got, mine)
    assert set(by_file["file"]) <= set(repo.files()["path"]) and len(set(by_file["file"])) > 1
    last = progress[-1]
    assert last.shards_done == last.shards_total > 1 and last.first_hits_seconds is not None
    # each hit spectrum is the repository's stored spectrum, with its file and position
    stored = repo.library()
    frame = s.repositories.hits_frame()
    spectra = s.repositories.hit_spectra
    for k in range(len(spectra.index)):
        mz, intensity = s.hits_library.peaks(k)
        mz0, int0 = stored.peaks(int(spectra.index[k]))
        np.testing.assert_array_equal(mz, mz0)
        np.testing.assert_array_equal(intensity, int0)
    rows = s.hits.library_index
    meta = s.hits_library.metadata
    assert list(meta["library_file"][rows]) == list(frame["file"])  # both in canonical order
    assert list(meta["dataset"][rows]) == list(frame["dataset"])
    assert list(meta["file_index"][rows]) == [str(i) for i in frame["file_index"]]
    # the hits as chemists read them: same scores, names and ids as the repository's
    table = s.hit_list().to_pandas()
    np.testing.assert_array_equal(table["score"], hits.score)
    assert list(table["library_id"]) == list(frame["id"])
    # the hits exported: the engine's hits frame (repository indexes, file, dataset, scan)
    out = s.export(tmp_path / "hits.tsv")
    back = pd.read_csv(out, sep="\t", keep_default_na=False, dtype={"shard": str})
    pd.testing.assert_frame_equal(back, repo.hits_frame(hits, queries), check_dtype=False)


def test_stopped_repository_search_keeps_the_final_hits(repo, query_file, tmp_path):
    s = Session()
    s.open(query_file, "queries")
    s.repositories.open(repo.path)
    s.events.repository_progress.connect(lambda p: s.cancel() if p.shards_done >= 1 else None)
    task = s.search(PARAMS, backend="cpu")
    assert task.state == "cancelled" and s.cancelled
    kept = s.repositories.hits
    done = np.unique(kept.query_index)
    expected, _, _ = expected_of(repo, s.queries.spectra)
    assert 0 < len(done) < len(np.unique(expected.query_index))
    same_hits(kept, expected.take(np.flatnonzero(np.isin(expected.query_index, done))))
    assert len(s.incomplete) and not np.isin(s.incomplete, done).any()
    pd.testing.assert_frame_equal(s.repositories.summary(), repo.summary(kept, s.queries.spectra))
    # session files keep no repository hits: a one-line reason instead of a half-saved file
    from simms_gui.model.session_file import save_session

    with pytest.raises(ValueError, match="repository search's hits are not kept"):
        save_session(s, tmp_path / "x.simms")
    assert not (tmp_path / "x.simms").exists()


def test_not_a_repository_is_one_line(tmp_path, window, boxes):
    assert window.repositories.open(tmp_path) is None
    assert boxes == [
        ("critical", "Cannot open repository", f"{tmp_path}: not a repository (no repository.json)")
    ]
    assert window.library_panel.repository_item.isHidden()


def test_spectra_panel_says_how_many_shards_are_prepared_on_disk(tmp_path, window, data_dir):
    built = engine.Repository.build(tmp_path / "r", [data_dir / "pesticides.mgf"], shard_spectra=30)
    built.prepare(mode="identity")
    assert window.repositories.open(built.path) is not None
    item = window.library_panel.repository_item.child(0)
    shards = len(built.manifest["shards"])
    assert item.child(0).text(0) == f"{shards} shards, {shards} prepared on disk"
    assert f"prepared on disk: {shards} of {shards} shards" in item.toolTip(0)


def search_in_window(qtbot, window, repo, query_file, monkeypatch, backend="cpu", address=""):
    from PyQt6.QtWidgets import QFileDialog

    s = window.session
    s.set_queries(query_file, engine.read_library(query_file))
    # File > Open repository…: a folder dialog
    file_menu = window.menuBar().actions()[0].menu()
    assert window.open_repository_action in file_menu.actions()
    assert window.open_repository_action.text() == "Open re&pository…"
    asked = []
    monkeypatch.setattr(
        QFileDialog, "getExistingDirectory", lambda *a: asked.append(a) or str(repo.path)
    )
    window.open_repository_action.trigger()
    assert len(asked) == 1 and s.repository is not None and s.repository.path == repo.path
    panel = window.search_panel
    panel.set_parameters(PARAMS)
    panel.set_backend(backend)
    if address:
        panel.dask_address.setText(address)
    with qtbot.waitSignal(window.searchFinished, timeout=120_000) as blocker:
        qtbot.mouseClick(panel.search_button, Qt.MouseButton.LeftButton)
    assert blocker.args[0] is False
    qtbot.waitUntil(lambda: window.repository_panel.summary is not None)
    qtbot.waitUntil(lambda: window.repository_panel.summary.final)
    return s


def check_window(window, repo, boxes):
    assert not boxes, boxes
    s = window.session
    queries = s.queries.spectra
    hits, by_file, by_dataset = expected_of(repo, queries)
    same_hits(s.repositories.hits, hits)
    # the hit table shows the session's hits, each with its source file
    model = window.results.model
    shown = model.hit_table(visible=False).sorted()
    same_hits(s.repositories.hit_spectra.repository_hits(shown).sorted(), hits)
    files = set(Path(f).name for f in by_file["file"])
    assert {Path(model.row_of(r)["library"]).name for r in range(model.rowCount())} <= files
    frame = repo.hits_frame(hits, queries)
    for r in range(model.rowCount()):  # each row with its repository spectrum's provenance
        row = model.row_of(r)
        k = np.flatnonzero(
            (frame["query_index"] == row["query_index"])
            & (frame["repository_index"] == int(row["library_repository_index"]))
        )
        assert len(k) == 1
        assert row["library_dataset"] == frame["dataset"][k[0]]
        assert row["library_source_file"] == frame["file"][k[0]]
        assert row["library_file_index"] == str(frame["file_index"][k[0]])
    # the summary tab: the engine's summary, per file and per dataset
    panel = window.repository_panel
    assert window.tabs.isTabVisible(window.tabs.indexOf(panel))
    pd.testing.assert_frame_equal(panel.model.frame, by_file)
    assert panel.model.rowCount() == len(by_file)
    proxy = panel.proxy  # shown in the engine's order until a header is clicked
    assert [proxy.mapToSource(proxy.index(r, 0)).row() for r in range(len(by_file))] == list(
        range(len(by_file))
    )
    first = panel.model.index(0, [c.key for c in panel.model.columns].index("best_score"))
    assert panel.model.data(first) == f"{by_file['best_score'].iloc[0]:.4f}"
    panel.set_by("dataset")
    pd.testing.assert_frame_equal(panel.model.frame, by_dataset)
    assert "file" not in [c.key for c in panel.model.columns]
    panel.set_by("file")
    assert "SYNTHETIC" in panel.title.text() or "generated" in panel.title.text()
    return by_file, by_dataset


@pytest.mark.slow
def test_window_searches_a_repository_and_shows_the_summary(
    qtbot, window, boxes, repo, query_file, tmp_path, monkeypatch
):
    search_in_window(qtbot, window, repo, query_file, monkeypatch)
    by_file, by_dataset = check_window(window, repo, boxes)
    # the Spectra panel shows the repository (its info, synthetic label)
    item = window.library_panel.repository_item
    assert not item.isHidden() and item.childCount() == 1
    texts = [item.child(0).child(k).text(0) for k in range(item.child(0).childCount())]
    assert texts[0] == f"{len(repo.manifest['shards'])} shards"
    assert texts[1] == "8 files in 3 datasets"
    assert texts[2].startswith("SYNTHETIC")
    assert "shards" in window.search_panel.progress_view.label.text()
    # export: CSV and XLSX, read back by pandas
    out = window.repositories.export(tmp_path / "summary.csv")
    pd.testing.assert_frame_equal(pd.read_csv(out, keep_default_na=False), by_file,
                                  check_dtype=False)  # fmt: skip
    try:
        import openpyxl  # noqa: F401
    except ImportError:  # XLSX is an extra (simms-desktop[xlsx]): a one-line refusal
        assert window.repositories.export(tmp_path / "summary.xlsx", by="dataset") is None
        assert "XLSX needs openpyxl" in boxes.pop()[2]
    else:
        out = window.repositories.export(tmp_path / "summary.xlsx", by="dataset")
        back = pd.read_excel(out, keep_default_na=False)
        pd.testing.assert_frame_equal(back, by_dataset, check_dtype=False)
    # closing the repository: the active library is searched again
    window.library_panel.repositoryCloseRequested.emit()
    qtbot.waitUntil(lambda: item.isHidden())
    assert window.session.repository is None


@pytest.mark.slow
def test_window_searches_a_repository_on_the_typed_dask_address(
    qtbot, window, boxes, repo, query_file, cluster, monkeypatch
):
    address = cluster[0].scheduler_address
    s = search_in_window(qtbot, window, repo, query_file, monkeypatch, "dask", address)
    assert s.backend == "dask" and address in s.device
    check_window(window, repo, boxes)


@pytest.mark.slow
def test_viewer_opens_and_searches_a_repository(qtbot, repo, query_file):
    from simms_gui import Viewer

    viewer = Viewer(show=False)
    qtbot.addWidget(viewer.window)
    try:
        viewer.open_queries(query_file)
        assert viewer.open_repository(repo.path).synthetic
        viewer.search(backend="cpu", top_n=5).wait()
        hits, by_file, by_dataset = expected_of(repo, viewer.queries)
        same_hits(viewer.session.repositories.hits, hits)
        pd.testing.assert_frame_equal(viewer.repository_summary(), by_file)
        pd.testing.assert_frame_equal(viewer.repository_summary("dataset"), by_dataset)
        assert len(viewer.hits) == len(hits)
    finally:
        viewer.window.shutdown()
