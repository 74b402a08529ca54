"""What the repository tests share: the search modes of issue 33 and one hit-table check."""

from __future__ import annotations

import numpy as np

import engine

P = engine.SearchParameters

#: The modes of the issue: entropy identity and open, cosine, modified-cosine analog.
MODES = {
    "identity": P(),
    "entropy-open": P(precursor_tolerance=None),
    "cosine": P(mode="custom", top_n=5),
    "analog": P(mode="analog", threshold=0.0, min_matches=1),
}


def assert_same_hits(a: engine.HitTable, b: engine.HitTable) -> None:
    """Equal hit tables: every column, bit for bit."""
    assert len(a) == len(b)
    for column in engine.HitTable.columns():
        np.testing.assert_array_equal(getattr(a, column), getattr(b, column), err_msg=column)


def build_real_repository(path, data_dir) -> tuple[engine.Repository, int]:
    """Pesticides (76, negative) in shards of 20, then the mzML and MSP files appended:
    the repository and its number of shards before the append."""
    repo = engine.Repository.build(
        path, [data_dir / "pesticides.mgf"], dataset="gnps", shard_spectra=20
    )
    first = len(repo.manifest["shards"])
    repo.add([data_dir / "sample.mzML", data_dir / "sample.msp"], dataset="runs")
    return repo, first


def real_queries(data_dir) -> engine.SpectrumLibrary:
    """Real queries of both ion modes: the pesticides and the mzML scans."""
    return engine.combine_libraries(
        [engine.read_library(data_dir / "pesticides.mgf"),
         engine.read_library(data_dir / "sample.mzML")]
    )  # fmt: skip
