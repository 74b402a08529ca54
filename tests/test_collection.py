"""Several libraries searched as one; library filters (ion mode, instrument, licence, structure)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import engine
from engine.collection import combine_libraries, filter_library


@pytest.fixture(scope="module")
def parts(massbank_library):
    """Two disjoint real MassBank libraries (every 7th spectrum, and the next ones)."""
    a = massbank_library.subset(np.arange(0, len(massbank_library), 7))
    b = massbank_library.subset(np.arange(3, len(massbank_library), 7))
    return a, b


def test_combined_library_is_both_libraries_in_order(parts):
    a, b = parts
    both = combine_libraries([a, b], names=["first.mgf", "second.msp"])
    assert len(both) == len(a) + len(b)
    for i in (0, len(a) - 1):
        np.testing.assert_array_equal(both.peaks(i)[0], a.peaks(i)[0])
    for i in (0, len(b) - 1):
        np.testing.assert_array_equal(both.peaks(len(a) + i)[1], b.peaks(i)[1])
    np.testing.assert_array_equal(both.ids[len(a) :], b.ids)
    assert set(both.metadata["library_file"][: len(a)]) == {"first.mgf"}
    assert set(both.metadata["library_file"][len(a) :]) == {"second.msp"}
    assert both.source.format == "combined" and " + " in both.source.path


def test_searching_combined_libraries_equals_searching_each(parts, massbank_queries):
    """Top-N over the union = the best N of each library's own top-N, every score equal."""
    a, b = parts
    queries = massbank_queries.subset(np.arange(0, 1000, 5))
    params = engine.SearchParameters(mode="custom", tolerance=0.02, top_n=5)
    both = combine_libraries([a, b])
    hits = engine.search(queries, both, params, backend="cpu")
    ha = engine.search(queries, a, params, backend="cpu")
    hb = engine.search(queries, b, params, backend="cpu")
    rows = [
        (q, lib, s) for q, lib, s in zip(ha.query_index, ha.library_index, ha.score, strict=True)
    ]
    rows += [
        (q, lib + len(a), s)
        for q, lib, s in zip(hb.query_index, hb.library_index, hb.score, strict=True)
    ]
    expected = set()
    for q in np.unique([r[0] for r in rows]):
        mine = sorted((r for r in rows if r[0] == q), key=lambda r: (-r[2], r[1]))[:5]
        expected |= {(int(r[0]), int(r[1])) for r in mine}
    got = set(zip(hits.query_index.tolist(), hits.library_index.tolist(), strict=True))
    assert got == expected
    frame = hits.to_pandas()
    names = {a.source.path.split("/")[-1]}
    assert set(frame["library_file"]) == names  # both parts come from the same file here


def test_filters_keep_what_they_say(massbank_library):
    lib = massbank_library
    positive = filter_library(lib, ion_mode="positive")
    assert len(positive) == int((lib.polarity() == 1).sum()) > 0
    assert (positive.polarity() == 1).all()
    qtof = filter_library(lib, instrument_type="qtof")
    column = lib.metadata["instrument_type"]
    assert len(qtof) == sum("qtof" in str(v).lower() for v in column) > 0
    open_licence = filter_library(lib, license=["CC0"])
    assert len(open_licence) == int((lib.metadata["license"] == "CC0").sum()) == 7007
    with_structure = filter_library(lib, has_structure=True)
    without = filter_library(lib, has_structure=False)
    assert len(with_structure) + len(without) == len(lib)
    assert all(
        s or k
        for s, k in zip(
            with_structure.metadata["smiles"], with_structure.metadata["inchikey"], strict=True
        )
    )
    both = filter_library(lib, ion_mode="negative", license="CC0")
    assert len(both) == int(((lib.polarity() == -1) & (lib.metadata["license"] == "CC0")).sum())
    with pytest.raises(ValueError, match="ion_mode"):
        filter_library(lib, ion_mode="neutral")


@pytest.mark.slow
def test_cli_searches_several_libraries_and_filters(data_dir, tmp_path):
    out = tmp_path / "hits.tsv"
    run = subprocess.run(
        [
            sys.executable, "-m", "engine", "search", "-q", str(data_dir / "pesticides.mgf"),
            str(data_dir / "pesticides.mgf"), str(data_dir / "massbank_ms2_queries.mgf.gz"),
            "--mode", "custom", "--top", "3", "--license", "CC BY", "--license", "CC0",
            "--has-structure", "-o", str(out),
        ],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    hits = pd.read_csv(out, sep="\t", comment="#")
    assert len(hits) > 0
    # the GNPS pesticides carry no licence: only MassBank spectra pass the licence filter
    assert set(hits["library_file"]) == {"massbank_ms2_queries.mgf.gz"}
    assert set(hits["library_license"]) <= {"CC BY", "CC0"}
    header = [line for line in out.read_text().splitlines() if line.startswith("#")]
    assert any("pesticides.mgf + " in line for line in header if line.startswith("# library:"))
    assert any(line.startswith("# library filters: ") for line in header)
    nothing = subprocess.run(
        [
            sys.executable, "-m", "engine", "search", "-q", str(data_dir / "pesticides.mgf"),
            str(data_dir / "pesticides.mgf"), "--license", "CC0",
        ],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert nothing.returncode != 0
    assert "no library spectrum passes the library filters" in nothing.stderr
    assert len(nothing.stderr.strip().splitlines()) == 1
