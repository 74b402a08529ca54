"""Hit-list exports: columns, provenance, formats and atomic writes."""

from __future__ import annotations

import numpy as np
import pytest

from engine import SearchParameters, search
from engine.export import HIT_COLUMNS, read_hits, write_hits


@pytest.fixture(scope="module")
def searched(pesticides):
    queries = pesticides.subset(range(10))
    params = SearchParameters(top_n=4)
    return queries, pesticides, params, search(queries, pesticides, params, backend="cpu")


@pytest.mark.parametrize("suffix", [".tsv", ".csv"])
def test_round_trip(tmp_path, searched, suffix):
    queries, library, params, hits = searched
    path = write_hits(tmp_path / f"hits{suffix}", hits, queries, library, params, backend="cpu")
    cols, provenance = read_hits(path)
    assert list(cols) == list(HIT_COLUMNS)
    np.testing.assert_array_equal(cols["query_index"], hits.query_index)
    np.testing.assert_array_equal(cols["library_index"], hits.library_index)
    np.testing.assert_array_equal(cols["score"], hits.score)  # repr() round-trips floats
    np.testing.assert_array_equal(cols["matches"], hits.matches)
    assert list(cols["library_id"]) == list(library.ids[hits.library_index])
    keys = {line.split(":")[0] for line in provenance}
    assert {"software", "date", "queries", "library", "parameters", "backend"} <= keys
    assert library.source.sha256 in "\n".join(provenance)


def test_parquet(tmp_path, searched):
    pq = pytest.importorskip("pyarrow.parquet")
    queries, library, params, hits = searched
    path = write_hits(tmp_path / "hits.parquet", hits, queries, library, params)
    table = pq.read_table(path)
    assert table.column_names == list(HIT_COLUMNS)
    np.testing.assert_array_equal(table["score"].to_numpy(), hits.score)
    assert b"simms_provenance" in table.schema.metadata


def test_failed_write_leaves_old_file_and_no_debris(tmp_path, searched, monkeypatch):
    queries, library, params, hits = searched
    target = tmp_path / "hits.tsv"
    target.write_text("previous export\n")

    import engine.export as export

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(export, "write_delimited", broken)
    with pytest.raises(OSError, match="disk full"):
        write_hits(target, hits, queries, library, params)
    assert target.read_text() == "previous export\n"
    assert [p.name for p in tmp_path.iterdir()] == ["hits.tsv"]


def test_unknown_format(tmp_path, searched):
    queries, library, params, hits = searched
    with pytest.raises(ValueError, match="unknown hit-list format"):
        write_hits(tmp_path / "hits.xlsx", hits, queries, library, params)
