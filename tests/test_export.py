"""Hit-list exports: columns, provenance, formats and atomic writes."""

from __future__ import annotations

import numpy as np
import pytest

from engine import SearchParameters, search
from engine.export import HIT_COLUMNS, read_hits, write_hits


@pytest.fixture(scope="module")
def searched(pesticides):
    queries = pesticides.subset(range(10))
    params = SearchParameters(mode="custom", top_n=4)
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

    import engine.export.writer as writer

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(writer, "delimited_rows", broken)
    with pytest.raises(OSError, match="disk full"):
        write_hits(target, hits, queries, library, params)
    assert target.read_text() == "previous export\n"
    assert [p.name for p in tmp_path.iterdir()] == ["hits.tsv"]


def test_unknown_format(tmp_path, searched):
    queries, library, params, hits = searched
    with pytest.raises(ValueError, match="unknown hit-list format"):
        write_hits(tmp_path / "hits.xlsx", hits, queries, library, params)


# -- attacks from the edges issue ------------------------------------------------------


def _hits_on(library, rows: int = 4):
    from engine.hits import HitTable

    idx = np.arange(rows) % len(library)
    return HitTable.from_arrays(idx, idx, np.linspace(1.0, 0.5, rows), np.full(rows, 3))


def _library_with(names: list[str], smiles: list[str]):
    from engine import SpectrumLibrary

    n = len(names)
    return SpectrumLibrary.from_peak_lists(
        [np.array([100.0, 200.0])] * n,
        [np.array([1.0, 2.0])] * n,
        precursor_mz=[112.12579999999997] * n,
        metadata={"name": names, "smiles": smiles},
    )


@pytest.mark.parametrize("sep, suffix", [("\t", ".tsv"), (",", ".csv")])
def test_pandas_reads_smiles_with_hash_and_names_intact(tmp_path, sep, suffix):
    """Before: ``read_csv(comment="#")`` cut SMILES at the triple bond's ``#``."""
    pd = pytest.importorskip("pandas")
    names = ['caffeine, "anhydrous"', "a\ttab", '=HYPERLINK("http://x")', "-ionone", "@x"]
    smiles = ["C#N", "CC#CC(=O)O", "N#CC#N", "C", "O"]
    library = _library_with(names, smiles)
    path = write_hits(tmp_path / f"hits{suffix}", _hits_on(library, 5), library, library,
                      SearchParameters(mode="custom"))  # fmt: skip
    table = pd.read_csv(path, sep=sep, comment="#")
    assert len(table) == 5
    assert list(table.library_smiles) == smiles
    cols, _ = read_hits(path)
    assert list(cols["library_smiles"]) == smiles
    assert list(cols["library_name"]) == names  # read_hits removes the spreadsheet guard


def test_formula_injection_is_neutralised(tmp_path):
    """Before: ``=HYPERLINK(...)`` from a library went verbatim into the CSV."""
    pd = pytest.importorskip("pandas")
    names = ['=HYPERLINK("http://evil")', "+1+2", "-2+3", "@SUM(A1)", "\rcmd", "fine"]
    library = _library_with(names, ["C"] * len(names))
    path = write_hits(tmp_path / "hits.csv", _hits_on(library, 6), library, library,
                      SearchParameters(mode="custom"))  # fmt: skip
    cells = list(pd.read_csv(path, comment="#").library_name)
    assert all(not str(c).startswith(("=", "+", "-", "@", "\r")) for c in cells)
    assert cells[:5] == ["'" + n for n in names[:5]] and cells[5] == "fine"


def test_numbers_are_readable(tmp_path):
    """Before: ``112.12579999999997``; m/z columns are rounded to 8 decimals."""
    library = _library_with(["x"], ["C"])
    path = write_hits(tmp_path / "hits.tsv", _hits_on(library, 1), library, library,
                      SearchParameters(mode="custom"))  # fmt: skip
    text = path.read_text()
    assert "112.1258\t" in text and "112.12579999" not in text


def test_files_follow_the_umask(tmp_path, searched):
    """Before: always 0600 (mkstemp's mode)."""
    import os

    queries, library, params, hits = searched
    old = os.umask(0o022)
    try:
        path = write_hits(tmp_path / "hits.tsv", hits, queries, library, params)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize(
    "name, error, match",
    [
        ("hits.xlsx", ValueError, "unknown hit-list format 'xlsx'"),
        ("missing/hits.tsv", OSError, "does not exist"),
        ("adir", OSError, "is a directory"),
        ("afile/hits.tsv", OSError, "is not a directory"),
    ],
)
def test_bad_outputs_fail_before_anything_is_written(tmp_path, searched, name, error, match):
    """Before: checked after the search, and ``-o /nonexistent/x.tsv`` made the directory."""
    from engine.export import HitWriter, check_output

    queries, library, params, _ = searched
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x")
    with pytest.raises(error, match=match):
        check_output(tmp_path / name)
    with pytest.raises(error, match=match):
        HitWriter(tmp_path / name, queries, library, params)
    assert not (tmp_path / "missing").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "afile"]


def test_parquet_without_pyarrow_fails_up_front(tmp_path, monkeypatch):
    import builtins

    from engine.export import check_output

    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name.startswith("pyarrow"):
            raise ImportError("no pyarrow")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(ValueError, match="Parquet output needs pyarrow"):
        check_output(tmp_path / "hits.parquet")


@pytest.mark.parametrize("suffix", [".tsv", ".parquet"])
def test_incomplete_mark_and_streaming(tmp_path, searched, suffix):
    from engine.export import HitWriter

    queries, library, params, hits = searched
    writer = HitWriter(tmp_path / f"hits{suffix}", queries, library, params)
    assert not (tmp_path / f"hits{suffix}").exists()  # only the temporary file so far
    half = len(hits) // 2
    writer.write(hits.take(np.arange(half)))
    writer.write(hits.take(np.arange(half, len(hits))))
    path = writer.close(complete=False, note="cancelled:\n3 queries cut")
    if suffix == ".tsv":
        cols, provenance = read_hits(path)
        assert "complete: no (cancelled: 3 queries cut)" in provenance
        np.testing.assert_array_equal(cols["score"], hits.score)
    else:
        pq = pytest.importorskip("pyarrow.parquet")
        meta = pq.read_metadata(path).metadata
        assert meta[b"simms_complete"] == b"no (cancelled: 3 queries cut)"
        assert pq.read_table(path).num_rows == len(hits)
    queries_file = path.with_name(f"hits.queries{suffix}")  # every query accounted for
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, queries_file.name])


def test_abort_leaves_no_temporary_file(tmp_path, searched):
    from engine.export import HitWriter

    queries, library, params, hits = searched
    with pytest.raises(KeyboardInterrupt):
        with HitWriter(tmp_path / "hits.csv", queries, library, params) as writer:
            writer.write(hits)
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_stream_gets_the_mark_last(searched):
    import io

    from engine.export import HitWriter

    queries, library, params, hits = searched
    out = io.StringIO()
    writer = HitWriter(out, queries, library, params)
    writer.write(hits)
    assert writer.close() is None
    lines = out.getvalue().splitlines()
    assert lines[-1] == "# complete: yes"
    assert sum(1 for ln in lines if not ln.startswith("#")) == len(hits) + 1


@pytest.mark.slow
def test_memory_is_bounded_by_the_chunk(tmp_path, massbank_library):
    """Before: every row became Python strings at once (0.8 KB per hit: 13 GB for 20 M)."""
    import tracemalloc

    from engine.export import HitWriter
    from engine.hits import HitTable

    rng = np.random.default_rng(3)
    n, chunk = 40_000, 5_000  # 8 chunks (tracemalloc makes each row slow to write)
    library, params = massbank_library, SearchParameters(mode="custom", top_n=0)
    tracemalloc.start()
    with HitWriter(tmp_path / "hits.tsv", library, library, params) as writer:
        for start in range(0, n, chunk):
            q = np.arange(start, start + chunk) % len(library)
            l = rng.integers(0, len(library), chunk)
            writer.write(HitTable.from_arrays(q, l, rng.random(chunk), np.ones(chunk)))
        _, peak = tracemalloc.get_traced_memory()
        writer.close()
    tracemalloc.stop()
    print(f"peak {peak / 1e6:.1f} MB")
    # about 1.5 kB per row of one chunk (27 columns, metadata and evidence included);
    # all 40,000 rows at once take about 170 MB (80,000: 347 MB measured)
    assert peak < 32e6
    with open(tmp_path / "hits.tsv") as fh:
        assert sum(1 for line in fh if not line.startswith("#")) == n + 1
