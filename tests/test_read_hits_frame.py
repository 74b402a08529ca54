"""``engine.read_hits``: a hit list back as a DataFrame, its provenance in ``.attrs``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import engine
from engine import SearchParameters, search
from engine.export import HIT_COLUMNS, HitWriter, write_hits
from engine.export import read_hits as read_hits_columns


@pytest.fixture(scope="module")
def searched(pesticides):
    queries = pesticides.subset(range(10))
    params = SearchParameters(mode="analog", top_n=3)
    return queries, pesticides, params, search(queries, pesticides, params, backend="cpu")


@pytest.mark.parametrize("suffix", [".tsv", ".csv", ".parquet"])
def test_read_hits_gives_a_frame_with_provenance(tmp_path, searched, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    queries, library, params, hits = searched
    path = write_hits(tmp_path / f"hits{suffix}", hits, queries, library, params, backend="cpu")
    frame = engine.read_hits(path)
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == list(HIT_COLUMNS) and len(frame) == len(hits)
    np.testing.assert_array_equal(frame["query_index"], hits.query_index)
    np.testing.assert_array_equal(frame["library_index"], hits.library_index)
    np.testing.assert_array_equal(frame["score"], hits.score)
    assert list(frame["library_id"]) == list(library.ids[hits.library_index])
    prov = frame.attrs["provenance"]
    assert {"software", "date", "queries", "library", "parameters", "backend"} <= set(prov)
    assert library.source.sha256 in prov["library"]
    assert "score=modified_cosine" in prov["parameters"]
    assert frame.attrs["complete"] is True
    assert frame.attrs["path"] == str(path)
    if suffix != ".parquet":  # the same numbers as the column reader and plain pandas
        columns, _ = read_hits_columns(path)
        for name in HIT_COLUMNS:
            np.testing.assert_array_equal(frame[name].to_numpy(), columns[name])
        plain = pd.read_csv(path, sep="," if suffix == ".csv" else "\t", comment="#")
        np.testing.assert_array_equal(frame["score"], plain["score"])


def test_read_hits_says_when_the_search_did_not_finish(tmp_path, searched):
    queries, library, params, hits = searched
    writer = HitWriter(tmp_path / "part.tsv", queries, library, params)
    writer.write(hits.take(np.arange(5)))
    writer.close(complete=False, note="cancelled")
    frame = engine.read_hits(tmp_path / "part.tsv")
    assert len(frame) == 5
    assert frame.attrs["complete"] is False
    assert frame.attrs["provenance"]["complete"].startswith("no (cancelled")
