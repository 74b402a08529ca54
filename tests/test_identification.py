"""Identification-grade search: ion-mode filter, analog mode, evidence columns, the API."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.export import hit_columns
from tests.references import CosineGreedy, ModifiedCosineGreedy, Spectrum


@pytest.fixture(scope="module")
def mixed_queries(massbank_queries):
    """40 positive and 40 negative real query spectra."""
    polarity = massbank_queries.polarity()
    pos = np.flatnonzero(polarity > 0)[:40]
    neg = np.flatnonzero(polarity < 0)[:40]
    return massbank_queries.subset(np.r_[pos, neg])


def test_polarity_from_ion_mode_then_adduct_then_charge():
    lib = engine.SpectrumLibrary.from_peak_lists(
        [np.array([100.0])] * 5,
        [np.array([1.0])] * 5,
        precursor_mz=[200.0] * 5,
        charge=[0, 0, 0, 1, -1],
        ion_mode=[-1, 0, 0, 0, 0],
        metadata={"adduct": ["[M+H]+", "[M+H]+", "[M-H]-", "", "x"]},
    )
    assert lib.polarity().tolist() == [-1, 1, -1, 1, -1]


def test_ion_mode_filter_on_real_positive_and_negative_spectra(mixed_queries, massbank_library):
    """A wide precursor window lets opposite polarities in; the filter keeps them out."""
    q_pol = mixed_queries.polarity()
    l_pol = massbank_library.polarity()
    assert set(q_pol.tolist()) == {1, -1}
    common = {"precursor_tolerance": 5.0, "top_n": 20, "backend": "cpu"}
    either = engine.search(mixed_queries, massbank_library, match_ion_mode=False, **common)
    same = engine.search(mixed_queries, massbank_library, **common)
    opposite = q_pol[either.query_index] * l_pol[either.library_index] < 0
    assert opposite.sum() > 50  # the window alone lets many cross-polarity hits in
    assert not (q_pol[same.query_index] * l_pol[same.library_index] < 0).any()
    # the filter only removes pairs: every same-mode hit of the wide search is kept
    key = lambda h: set(zip(h.query_index.tolist(), h.library_index.tolist(), strict=True))  # noqa: E731
    full = engine.search(mixed_queries, massbank_library, match_ion_mode=False,
                         precursor_tolerance=5.0, top_n=0, backend="cpu")  # fmt: skip
    allowed = key(full.take(q_pol[full.query_index] * l_pol[full.library_index] >= 0))
    assert key(same) <= allowed
    assert set(np.unique(same.query_index)) >= set(np.unique(either.query_index[~opposite]))


def _mm(lib, i) -> Spectrum:
    mz, intensity = lib.peaks(i)
    return Spectrum(
        mz=mz.astype(float), intensities=intensity.astype(float),
        metadata={"precursor_mz": float(lib.precursor_mz[i])}, metadata_harmonization=False,
    )  # fmt: skip


def test_analog_mode_equals_matchms_modified_cosine(massbank_library):
    """Analog hits carry matchms ModifiedCosineGreedy's scores and report the precursor shift."""
    lib = massbank_library
    rng = np.random.default_rng(7)
    queries = lib.subset(rng.choice(len(lib), 25, replace=False))
    params = engine.SearchParameters(mode="analog", preprocess="none", top_n=0, threshold=0.5)
    assert params.score == "modified_cosine" and params.precursor_tolerance == 100.0
    hits = engine.search(queries, lib, params, backend="cpu")
    assert len(hits) > 25
    delta = hits["precursor_mz_delta"]
    assert (np.abs(delta) <= 100.0).all() and (np.abs(delta) > 1.0).any()  # real analogs
    reference = ModifiedCosineGreedy(tolerance=params.tolerance)
    rows = rng.choice(len(hits), min(300, len(hits)), replace=False)
    for r in rows:
        q, l = int(hits.query_index[r]), int(hits.library_index[r])
        ref = reference.pair(_mm(lib, l), _mm(queries, q))
        assert hits.score[r] == pytest.approx(float(ref["score"]), abs=1e-6)
        assert hits.matches[r] == int(ref["matches"])
        assert hits.matches[r] >= 6 and hits.score[r] >= 0.5


def test_reverse_score_ignores_query_peaks_absent_from_the_library_spectrum():
    lib = engine.SpectrumLibrary.from_peak_lists(
        [np.array([100.0, 150.0, 200.0])], [np.ones(3)], precursor_mz=[300.0]
    )
    # the query has the three library peaks and three foreign ones
    queries = engine.SpectrumLibrary.from_peak_lists(
        [np.array([100.0, 150.0, 200.0, 250.0, 260.0, 270.0])], [np.ones(6)], precursor_mz=[300.0]
    )
    for score in ("cosine", "entropy"):
        params = engine.SearchParameters(mode="custom", score=score, tolerance=0.02, top_n=0)
        hits = engine.search(queries, lib, params, backend="cpu")
        cols = hit_columns(hits, queries, lib, params)
        assert cols["score"][0] < 0.8
        assert cols["reverse_score"][0] == pytest.approx(1.0)
        assert cols["library_explained"][0] == pytest.approx(1.0)
    # a library peak the query lacks lowers the explained share
    half = engine.SpectrumLibrary.from_peak_lists(
        [np.array([100.0, 500.0])], [np.array([3.0, 1.0])]
    )
    params = engine.SearchParameters(mode="custom", tolerance=0.02)
    hits = engine.search(queries, half, params, backend="cpu")
    assert hit_columns(hits, queries, half, params)["library_explained"][0] == pytest.approx(0.75)


def test_reverse_cosine_equals_cosine_of_partnered_query_peaks(massbank_queries, massbank_library):
    """Independent check: the reverse score is matchms' cosine after dropping the query's
    peaks that have no library peak within the tolerance."""

    queries = massbank_queries.subset(np.arange(15))
    params = engine.SearchParameters(mode="custom", tolerance=0.02, precursor_tolerance=0.01)
    hits = engine.search(queries, massbank_library, params, backend="cpu")
    cols = hit_columns(hits, queries, massbank_library, params)
    cosine = CosineGreedy(tolerance=0.02)
    for r in range(0, len(hits), 3):
        q, l = int(hits.query_index[r]), int(hits.library_index[r])
        qmz, qint = queries.peaks(q)
        lmz, _ = massbank_library.peaks(l)
        keep = np.array([np.any(np.abs(lmz - m) <= 0.02) for m in qmz])
        reduced = Spectrum(
            mz=qmz[keep].astype(float), intensities=qint[keep].astype(float),
            metadata={"precursor_mz": 1.0}, metadata_harmonization=False,
        )  # fmt: skip
        ref = cosine.pair(_mm(massbank_library, l), reduced)
        assert cols["reverse_score"][r] == pytest.approx(float(ref["score"]), abs=1e-9)


def test_search_api_refuses_unknown_keywords_and_reads_paths(data_dir):
    path = data_dir / "pesticides.mgf"
    with pytest.raises(TypeError, match="tolerence.*did you mean 'tolerance'"):
        engine.search(path, path, tolerence=0.1)
    with pytest.raises(TypeError, match="unexpected keyword arguments 'foo', 'bar'"):
        engine.search(path, path, foo=1, bar=2)
    with pytest.raises(TypeError, match="SpectrumLibrary or a spectrum file path"):
        engine.search(42, path)
    hits = engine.search(str(path), path, backend="cpu", top_n=2)
    assert len(hits) and hits.context is not None
    np.testing.assert_array_equal(hits["score"], hits.score)
    with pytest.raises(KeyError, match="no column 'scor'"):
        hits["scor"]


def test_to_pandas_gives_the_annotated_frame(massbank_queries, massbank_library):
    hits = engine.search(massbank_queries.subset(np.arange(10)), massbank_library, backend="cpu")
    frame = hits.to_pandas()
    for column in ("score", "reverse_score", "library_explained", "library_name",
                   "library_adduct", "library_inchikey", "library_ion_mode", "query_ion_mode",
                   "library_instrument_type", "library_collision_energy", "library_splash",
                   "library_license", "library_authors", "precursor_mz_delta"):  # fmt: skip
        assert column in frame.columns, column
    assert len(frame) == len(hits)
    assert (frame["library_license"] != "").all()  # MassBank: attribution is required
    best = frame.groupby("query_index")["score"].max()
    assert (best > 0).all()
    plain = engine.HitTable(hits.query_index, hits.library_index, hits.score, hits.matches)
    assert list(plain.to_pandas().columns) == ["query_index", "library_index", "score", "matches"]
    assert "<table>" in hits._repr_html_() and "library_name" in hits._repr_html_()


def test_to_pandas_without_pandas_says_how_to_install(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas":
            raise ImportError("no pandas")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(ImportError, match="pip install pandas"):
        engine.HitTable.empty().to_pandas()


def test_cli_defaults_are_identity_mode(data_dir, tmp_path):
    from engine.cli import build_parser, search_parameters

    args = build_parser().parse_args(["search", "q.mgf", "l.mgf"])
    assert search_parameters(args) == engine.SearchParameters()
    args = build_parser().parse_args(["search", "q", "l", "--mode", "analog", "--max-shift", "50"])
    assert search_parameters(args) == engine.SearchParameters(mode="analog", precursor_tolerance=50)
    args = build_parser().parse_args(
        ["search", "q", "l", "--no-match-ion-mode", "--score", "cosine"]
    )
    p = search_parameters(args)
    assert not p.match_ion_mode and p.score == "cosine" and p.precursor_tolerance == 0.01
    args = build_parser().parse_args(
        ["search", "q", "l", "--mode", "custom", "--preprocess", "none"]
    )
    assert search_parameters(args) == engine.SearchParameters(
        mode="custom", tolerance=0.1, precursor_tolerance=None, min_matches=0, threshold=0.0
    )
