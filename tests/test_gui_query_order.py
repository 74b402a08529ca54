"""The hit table lists hits in query order while and after a search streams them."""

from __future__ import annotations

import numpy as np

import engine


def _in_query_order(model) -> None:
    query = np.asarray(model.column("query_index"), dtype=np.int64)
    score = np.asarray(model.column("score"), dtype=np.float64)
    assert len(query) > 1
    assert np.all(np.diff(query) >= 0), "rows not in query order"
    same = np.diff(query) == 0
    assert np.all(np.diff(score)[same] <= 0), "a query's hits not best first"


def test_rows_stream_in_query_order(qtbot, window):
    assert window.files.load_demo(background=False)
    model = window.results.model
    seen: list[int] = []
    model.rowsInserted.connect(lambda *_: seen.append(model.rowCount()))
    model.layoutChanged.connect(lambda *_: _in_query_order(model))
    # a precursor window: the search visits queries in precursor order, in several chunks
    params = engine.SearchParameters(top_n=5, precursor_tolerance=0.05, batch_size=8)
    with qtbot.waitSignal(window.searchFinished, timeout=180_000):
        assert window.searches.start(params, "cpu") is not None
    assert len(seen) > 1  # it did stream
    _in_query_order(model)
    rows = model.view_rows
    first = model.row_of(0)
    assert int(first["query_index"]) == int(np.min(model.column("query_index")))
    assert len(rows) == len(window.session.hits)


def test_chunks_cut_inside_a_query_merge_into_query_order(qtbot):
    """Chunks in precursor order, some cut inside a query's hits: the view equals the rule."""
    from simms_gui._qt.results_model import HitsTableModel

    rng = np.random.default_rng(5)
    n = 6000
    query = np.sort(rng.integers(0, 300, n))
    visit = rng.permutation(300)  # the order a precursor window visits the queries
    order = np.argsort(visit[query], kind="stable")
    cols = {
        "query_index": query[order],
        "library_index": rng.integers(0, 500, n),
        "score": np.round(rng.random(n), 2),  # ties: kept in arrival order (the tie order)
        "matches": rng.integers(1, 20, n).astype(np.int32),
        "query_id": np.array([f"Q{i}" for i in query[order]], dtype=object),
        "library_id": np.array(["L"] * n, dtype=object),
    }
    model = HitsTableModel()
    for part in np.array_split(np.arange(n), 37):  # boundaries fall inside queries
        model.append_columns({k: v[part] for k, v in cols.items()})
    q, score = cols["query_index"], cols["score"]
    expected = sorted(range(n), key=lambda i: (q[i], -score[i], i))
    np.testing.assert_array_equal(model.view_rows, expected)
