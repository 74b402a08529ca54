"""HitsTableModel: columnar sorting and filtering (no window needed)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from PyQt6.QtCore import Qt

from simms_gui._qt.results_model import COLUMNS, HitsTableModel

COL = {c.key: k for k, c in enumerate(COLUMNS)}


def _columns(n: int, rng: np.random.Generator, n_queries: int = 1000, n_lib: int = 50_000):
    q = np.sort(rng.integers(0, n_queries, n))
    lib = rng.integers(0, n_lib, n)
    lib_names = np.array([f"compound {i:05d}" for i in range(n_lib)], dtype=object)
    lib_keys = np.array([f"KEY{(i * 7919) % n_lib:05d}-XX" for i in range(n_lib)], dtype=object)
    q_ids = np.array([f"Q{i:04d}" for i in range(n_queries)], dtype=object)
    qp = rng.uniform(100, 900, n_queries)[q]
    lp = rng.uniform(100, 900, n_lib)[lib]
    return {
        "query_index": q,
        "query_id": q_ids[q],
        "library_index": lib,
        "library_id": np.array([f"L{i}" for i in range(n_lib)], dtype=object)[lib],
        "score": rng.random(n),
        "matches": rng.integers(1, 40, n).astype(np.int32),
        "query_precursor_mz": qp,
        "library_precursor_mz": lp,
        "precursor_mz_delta": lp - qp,
        "query_name": q_ids[q],
        "library_name": lib_names[lib],
        "library_smiles": lib_names[lib],
        "library_inchikey": lib_keys[lib],
        "library_formula": lib_names[lib],
        "library_adduct": lib_names[lib],
        "library_ion_mode": lib_names[lib],
    }


def _query_order(cols, n: int | None = None) -> np.ndarray:
    """The table's default order, by the rule: query, score descending, library, arrival."""
    q, score, lib = cols["query_index"], cols["score"], cols["library_index"]
    n = len(q) if n is None else n
    return np.array(sorted(range(n), key=lambda i: (q[i], -score[i], lib[i], i)), dtype=np.int64)


@pytest.fixture
def small(qtbot):
    rng = np.random.default_rng(7)
    model = HitsTableModel()
    cols = _columns(5000, rng, n_queries=50, n_lib=800)
    model.set_columns(cols, "lib.mgf")
    return model, cols


@pytest.mark.slow
def test_sort_one_million_rows_fast(qtbot):
    rng = np.random.default_rng(1)
    cols = _columns(1_000_000, rng)
    model = HitsTableModel()
    model.set_columns(cols, "massbank.mgf")
    assert model.rowCount() == 1_000_000
    timings = {}
    for key in ("score", "library_name", "precursor_mz_delta"):
        for order in (Qt.SortOrder.DescendingOrder, Qt.SortOrder.AscendingOrder):
            start = time.perf_counter()
            model.sort(COL[key], order)
            timings[(key, order.name)] = time.perf_counter() - start
    start = time.perf_counter()
    model.set_text_filter("compound 0012")
    timings[("text filter", "")] = time.perf_counter() - start
    print("\n1,000,000-row model:", {f"{k} {o}": f"{t:.3f} s" for (k, o), t in timings.items()})
    assert model.rowCount() == int(np.isin(cols["library_index"], np.arange(120, 130)).sum())
    model.set_text_filter("")
    model.sort(COL["score"], Qt.SortOrder.DescendingOrder)
    shown = model.column("score")
    assert np.all(np.diff(shown) <= 0)


def test_sort_matches_numpy_stable(small):
    model, cols = small
    model.sort(COL["score"], Qt.SortOrder.AscendingOrder)
    np.testing.assert_array_equal(model.view_rows, np.argsort(cols["score"], kind="stable"))
    model.sort(COL["score"], Qt.SortOrder.DescendingOrder)
    np.testing.assert_array_equal(model.view_rows, np.argsort(-cols["score"], kind="stable"))
    first = model.index(0, COL["score"]).data()
    assert first == f"{cols['score'].max():.4f}"
    # integer column, stable: ties keep the previous order (here: query order)
    model.sort(-1)
    base = _query_order(cols)
    np.testing.assert_array_equal(model.view_rows, base)
    model.sort(COL["matches"], Qt.SortOrder.AscendingOrder)
    expected = base[np.argsort(cols["matches"][base], kind="stable")]
    np.testing.assert_array_equal(model.view_rows, expected)
    # text column sorts like Python's sorted() over the displayed (lower-case) text
    model.sort(-1)
    model.sort(COL["library_name"], Qt.SortOrder.AscendingOrder)
    names = [str(v).lower() for v in cols["library_name"]]
    expected = sorted(base, key=lambda i: names[i])
    np.testing.assert_array_equal(model.view_rows, expected)
    # a second sort is stable over the first: score descending within equal names
    model.sort(COL["score"], Qt.SortOrder.DescendingOrder)
    model.sort(COL["library_name"], Qt.SortOrder.AscendingOrder)
    expected = sorted(range(len(names)), key=lambda i: (names[i], -cols["score"][i]))
    np.testing.assert_array_equal(model.view_rows, expected)
    model.sort(-1)
    np.testing.assert_array_equal(model.view_rows, base)


def test_filters_are_numpy_masks(small):
    model, cols = small
    model.set_text_filter("COMPOUND 0001")  # case-insensitive substring
    expected = np.array(["compound 0001" in str(n) for n in cols["library_name"]])
    assert model.rowCount() == expected.sum() > 0
    model.set_text_filter("")
    model.set_score_range(0.25, 0.5)
    s = cols["score"]
    assert model.rowCount() == int(((s >= 0.25) & (s <= 0.5)).sum())
    model.set_text_filter("q0003")  # query id
    assert model.rowCount() == int(((s >= 0.25) & (s <= 0.5) & (cols["query_id"] == "Q0003")).sum())
    model.set_text_filter("")
    model.set_score_range(None, None)
    model.set_best_only(True)
    assert model.rowCount() == len(np.unique(cols["query_index"]))
    shown_q = model.column("query_index")
    shown_s = model.column("score")
    for q, score in zip(shown_q, shown_s, strict=True):
        assert score == cols["score"][cols["query_index"] == q].max()


def test_append_chunks_inserts_rows(small, qtbot):
    model = HitsTableModel()
    rng = np.random.default_rng(3)
    cols = _columns(300, rng, n_queries=10, n_lib=100)
    inserted = []
    model.rowsInserted.connect(lambda _p, first, last: inserted.append((first, last)))
    for part in np.array_split(np.arange(300), 3):
        model.append_columns({k: v[part] for k, v in cols.items()})
    assert inserted == [(0, 99), (100, 199), (200, 299)]
    assert model.rowCount() == 300
    assert model.index(5, COL["library"]).data() == ""


def test_streamed_chunks_are_stored_without_copying_all_rows_each_time(qtbot):
    """An all-hits search streams hundreds of chunks: rows are copied O(1) times each."""
    from simms_gui._qt.growable import GrowableColumns

    rng = np.random.default_rng(11)
    cols = _columns(60_000, rng, n_queries=300, n_lib=5000)
    parts = np.array_split(np.arange(60_000), 250)
    model = HitsTableModel()
    store_sizes = []
    for k, part in enumerate(parts):
        model.append_columns({key: v[part] for key, v in cols.items()})
        store_sizes.append(len(model._store._buffers["score"]))  # noqa: SLF001
        if k == 100:  # a sort in the middle of the stream, as a user clicking a header
            model.sort(COL["score"], Qt.SortOrder.DescendingOrder)
    # capacity doubles: a handful of reallocations, never one per chunk
    assert len(set(store_sizes)) <= 6
    assert store_sizes[-1] <= 2 * 60_000
    for key, values in cols.items():
        np.testing.assert_array_equal(model._cols[key], values)  # noqa: SLF001
    model.sort(COL["score"], Qt.SortOrder.DescendingOrder)
    np.testing.assert_array_equal(model.view_rows, np.argsort(-cols["score"], kind="stable"))
    model.sort(-1)
    np.testing.assert_array_equal(model.view_rows, _query_order(cols))
    # dtypes widen when a later chunk needs it (an int column meeting floats)
    store = GrowableColumns()
    store.append({"a": np.array([1, 2], dtype=np.int32)})
    store.append({"a": np.array([2.5])})
    np.testing.assert_array_equal(store.columns()["a"], [1.0, 2.0, 2.5])


def _argsort_reference(key: np.ndarray, descending: bool) -> np.ndarray:
    """numpy's stable argsort with NaN last in both directions (independent of the model)."""
    key = np.asarray(key)
    if key.dtype.kind == "f":
        nan = np.isnan(key)
        numbers = np.flatnonzero(~nan)
        values = -key[numbers] if descending else key[numbers]
        return np.concatenate([numbers[np.argsort(values, kind="stable")], np.flatnonzero(nan)])
    values = -key.astype(np.int64) if descending else key
    return np.argsort(values, kind="stable")


@pytest.mark.parametrize("descending", [False, True])
def test_stable_order_equals_numpy_stable_argsort(descending):
    from simms_gui._qt.sort_order import stable_order

    rng = np.random.default_rng(5)
    n = 20_000
    scores = rng.random(n)
    ties = np.round(rng.random(n), 2)  # many equal scores
    ties[rng.integers(0, n, 300)] = np.nan
    ties[rng.integers(0, n, 50)] = -0.0
    ties[rng.integers(0, n, 50)] = 0.0
    skewed = np.concatenate([rng.random(n - 3) * 1e-9, [1e6, -1e6, 0.5]])
    infinite = np.where(rng.random(n) < 0.01, np.inf, rng.random(n))
    keys = {
        "scores": scores,
        "ties, NaN, signed zeros": ties,
        "skewed": skewed,
        "infinite": infinite,
        "all NaN": np.full(10, np.nan),
        "constant": np.full(100, 0.25),
        "one": np.array([3.0]),
        "empty": np.empty(0),
        "small ints": rng.integers(1, 40, n).astype(np.int32),
        "large ints": rng.integers(-(10**12), 10**12, n),
        "wide ints with ties": rng.integers(0, 200_000, n) * 1000,
        "bools": rng.random(n) < 0.5,
    }
    for label, key in keys.items():
        got = stable_order(key, descending=descending)
        expected = _argsort_reference(key, descending)
        np.testing.assert_array_equal(got, expected, err_msg=label)


def test_text_sort_follows_new_names_as_chunks_stream_in(qtbot):
    """Ranks of names are cached between sorts and redone when a new spectrum appears."""
    rng = np.random.default_rng(12)
    cols = _columns(30_000, rng, n_queries=200, n_lib=3000)
    # later chunks hit spectra the first ones never hit (their names are new)
    cols["library_index"] = np.sort(cols["library_index"])
    names = np.array([f"Name {(i * 37) % 997:04d}" for i in range(3000)], dtype=object)
    cols["library_name"] = names[cols["library_index"]]
    model = HitsTableModel()
    seen = 0
    for part in np.array_split(np.arange(30_000), 7):
        model.append_columns({k: v[part] for k, v in cols.items()})
        seen = part[-1] + 1
        for key in ("library_name", "score"):
            for order in (Qt.SortOrder.AscendingOrder, Qt.SortOrder.DescendingOrder):
                model.sort(-1)
                model.sort(COL[key], order)
                base = _query_order(cols, seen)  # the order before the sort
                values = cols[key][base]
                if key == "library_name":
                    text = [str(v).lower() for v in values]
                    rank = np.unique(text, return_inverse=True)[1].ravel()
                    expected = base[_argsort_reference(rank, order == Qt.SortOrder.DescendingOrder)]
                else:
                    descending = order == Qt.SortOrder.DescendingOrder
                    expected = base[_argsort_reference(values, descending)]
                np.testing.assert_array_equal(model.view_rows, expected, err_msg=f"{key} {order}")
    # the sorted view is stable over the previous sort: names, then score descending
    model.sort(COL["score"], Qt.SortOrder.DescendingOrder)
    model.sort(COL["library_name"], Qt.SortOrder.DescendingOrder)
    text = [str(v).lower() for v in cols["library_name"]]
    expected = sorted(range(30_000), key=lambda i: (text[i], cols["score"][i]), reverse=True)
    np.testing.assert_array_equal(model.view_rows, expected)


def test_stable_order_of_keys_in_long_runs():
    """Already sorted, reversed (with ties) and nearly sorted keys: numpy's stable order."""
    from simms_gui._qt.sort_order import stable_order

    rng = np.random.default_rng(9)
    ties = np.sort(np.round(rng.random(50_000), 3))
    nearly = np.sort(rng.random(50_000))
    nearly[rng.integers(0, 50_000, 100)] = rng.random(100)
    for key in (ties, ties[::-1], nearly, nearly[::-1], np.sort(rng.integers(0, 9, 1000))):
        for descending in (False, True):
            np.testing.assert_array_equal(
                stable_order(key, descending=descending), _argsort_reference(key, descending)
            )
