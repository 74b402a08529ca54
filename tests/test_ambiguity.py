"""Ambiguity shown on real MassBank spectra: ties, few peaks, isomers, every query in exports."""

from __future__ import annotations

import ms_entropy
import numpy as np
import pytest

from engine import SearchParameters, search
from engine.analyses.qc import IsomerCheck, complete_ties, isomer_parameters, library_qc
from engine.export import (
    GNPS_COLUMNS,
    queries_path,
    write_gnps,
    write_hits,
    write_mztab,
)
from engine.search import ambiguity_columns, order_ties, query_status

ACIDS = ("Citraconic acid", "Itaconic acid", "Mesaconic acid")  # all C5H6O4, [M-H]- 129.0188


@pytest.fixture(scope="module")
def c5h6o4(massbank_library):
    """The itaconic-acid query and the MassBank spectra around its precursor (both modes)."""
    lib = massbank_library
    names = lib.metadata["name"]
    itaconic = int(np.flatnonzero(names == "Itaconic acid")[0])
    near = np.flatnonzero(np.abs(lib.precursor_mz - lib.precursor_mz[itaconic]) < 0.5)
    return lib.subset([itaconic]), lib.subset(near)


def _entropy_reference(query, library, k):
    """ms_entropy's similarity of the query and library spectrum ``k``, precursor cleaned."""
    a, b = query.peaks(0), library.peaks(k)
    return ms_entropy.calculate_entropy_similarity(
        np.column_stack(a).astype(np.float32), np.column_stack(b).astype(np.float32),
        ms2_tolerance_in_da=0.02, max_mz=float(query.precursor_mz[0]) - 1.6,
    )  # fmt: skip


@pytest.mark.slow
def test_itaconic_tie_is_flagged_and_ordered_by_name_not_library_position(c5h6o4):
    query, library = c5h6o4
    params = SearchParameters(mode="identity", top_n=10)
    hits = order_ties(search(query, library, params, backend="cpu"), query, library, params)
    flags = ambiguity_columns(hits, library)
    names = library.metadata["name"][hits.library_index]
    # the reference: ms_entropy scores exactly these three 1.0, every other spectrum lower
    ref = {k: _entropy_reference(query, library, k) for k in hits.library_index.tolist()}
    tied = [k for k, s in ref.items() if s > 1 - 1e-6]
    assert sorted(library.metadata["name"][tied]) == list(ACIDS)
    assert tuple(names[:3]) == ACIDS  # alphabetical; the library holds them in another order
    assert list(library.metadata["name"][sorted(tied)]) != list(ACIDS)
    np.testing.assert_array_equal(flags["tied"][:3], 3)
    assert (flags["tied"][3:] == 0).all()
    assert set(flags["tied_compounds"][:3]) == {"; ".join(ACIDS)}
    assert hits.matches[:3].tolist() == [1, 1, 1] and flags["few_peaks"][:3].all()
    np.testing.assert_array_equal(flags["few_peaks"], hits.matches <= 2)
    # the same order whatever the library order
    rng = np.random.default_rng(29)
    for _ in range(3):
        shuffled = library.subset(rng.permutation(len(library)))
        again = order_ties(search(query, shuffled, params, backend="cpu"), query, shuffled, params)
        assert tuple(shuffled.metadata["name"][again.library_index[:3]]) == ACIDS


def test_a_tie_cut_by_the_top_n_is_kept_whole(c5h6o4):
    query, library = c5h6o4
    params = SearchParameters(mode="identity", top_n=2)
    cut = search(query, library, params, backend="cpu")
    assert len(cut) == 2  # the top 2 would choose between three equal hits by library position
    whole = complete_ties(cut, query, library, params, backend="cpu")
    assert sorted(library.metadata["name"][whole.library_index]) == list(ACIDS)


@pytest.mark.slow
@pytest.mark.parametrize("searched", [None, "identity"])
def test_isomer_check_is_the_library_checks_conflicts_of_one_formula(massbank_library, searched):
    """Near a known conflict (triamcinolone acetonide / dexamethasone-21-acetate, both
    C24H31FO6, cosine 1.0): the isomers flagged are exactly the library check's
    conflicting pairs whose formulas agree, with the library check's own definition
    and with a search's (its score, as ``simms search`` checks)."""
    params = None if searched is None else isomer_parameters(SearchParameters(mode=searched))
    lib = massbank_library
    a = int(np.flatnonzero(lib.metadata["id"] == "MSBNK-Athens_Univ-AU282606")[0])
    near = lib.subset(np.flatnonzero(np.abs(lib.precursor_mz - lib.precursor_mz[a]) < 0.05))
    qc = library_qc(near, params, backend="cpu")
    formula = np.array([f.strip() for f in near.metadata["formula"]], dtype=object)
    names = near.metadata["name"]
    expected = {i: set() for i in range(len(near))}
    for (i, j), kind in zip(qc.pairs.tolist(), qc.kind.tolist(), strict=True):
        if kind == "conflict" and formula[i] == formula[j] and formula[i]:
            expected[i].add(names[j])
            expected[j].add(names[i])
    check = IsomerCheck(near, params, backend="cpu")
    got = check(np.arange(len(near)))
    assert any(expected.values())
    for i in range(len(near)):
        assert set(filter(None, got[i].split("; "))) == expected[i], near.metadata["id"][i]
    mine = int(np.flatnonzero(near.metadata["id"] == "MSBNK-Athens_Univ-AU282606")[0])
    assert "Dexamethasone" in got[mine] or "dexamethasone" in got[mine].lower()


@pytest.fixture(scope="module")
def massbank_search(massbank_queries, massbank_library):
    """200 MassBank queries (every 5th) against the library, identity mode, top 5."""
    queries = massbank_queries.subset(np.arange(0, len(massbank_queries), 5))
    params = SearchParameters(mode="identity", top_n=5)
    hits = search(queries, massbank_library, params, backend="cpu")
    return queries, massbank_library, params, order_ties(hits, queries, massbank_library, params)


def test_mztab_reads_back_with_pyteomics_every_hit(tmp_path, massbank_search):
    mztab = pytest.importorskip("pyteomics.mztab")
    queries, library, params, hits = massbank_search
    path = write_mztab(tmp_path / "hits.mztab", hits, queries, library, params)
    table = mztab.MzTab(str(path))
    assert table.variant == "M" and str(table.version) == "2.0.0-M"
    sme = table.small_molecule_evidence_table
    assert len(sme) == len(hits)
    np.testing.assert_array_equal(sme["opt_global_query_index"].to_numpy(int), hits.query_index)
    np.testing.assert_array_equal(sme["opt_global_library_index"].to_numpy(int), hits.library_index)
    np.testing.assert_array_equal(sme["id_confidence_measure[1]"].to_numpy(float), hits.score)
    np.testing.assert_array_equal(sme["id_confidence_measure[2]"].to_numpy(int), hits.matches)
    assert sme["database_identifier"].tolist() == library.ids[hits.library_index].tolist()
    np.testing.assert_allclose(
        sme["exp_mass_to_charge"].to_numpy(float), queries.precursor_mz[hits.query_index]
    )
    # every query is a feature, with its status; each query with hits one small molecule
    smf = table.small_molecule_feature_table
    status = query_status(queries, library, params, np.isin(np.arange(len(queries)),
                                                            hits.query_index))  # fmt: skip
    assert smf["opt_global_status"].tolist() == status.tolist()
    sml = table.small_molecule_table
    assert len(sml) == len(np.unique(hits.query_index))
    meta = table.metadata
    assert any(str(v) == f"score={params.score}" for v in meta.values())
    assert library.source.sha256 in str(meta["database[1]-version"])


def test_mztab_shows_the_itaconic_tie(tmp_path, c5h6o4):
    mztab = pytest.importorskip("pyteomics.mztab")
    query, library = c5h6o4
    params = SearchParameters(mode="identity", top_n=10)
    hits = search(query, library, params, backend="cpu")
    table = mztab.MzTab(str(write_mztab(tmp_path / "t.mztab", hits, query, library, params)))
    sml = table.small_molecule_table
    assert len(sml) == 1
    assert sml["chemical_name"].iloc[0] == "|".join(ACIDS)
    assert int(sml["opt_global_tied"].iloc[0]) == 3
    assert int(table.small_molecule_feature_table["SME_ID_REF_ambiguity_code"].iloc[0]) == 1
    sme = table.small_molecule_evidence_table
    assert sme["rank"].tolist() == [1, 1, 1, *range(4, len(sme) + 1)]
    assert sme["chemical_name"].tolist()[:3] == list(ACIDS)


def test_gnps_tsv_reads_with_pandas(tmp_path, c5h6o4, massbank_library):
    pd = pytest.importorskip("pandas")
    query, library = c5h6o4
    params = SearchParameters(mode="identity", top_n=10)
    hits = order_ties(search(query, library, params, backend="cpu"), query, library, params)
    path = write_gnps(tmp_path / "gnps.tsv", hits, query, library, params)
    frame = pd.read_csv(path, sep="\t", keep_default_na=False)
    assert tuple(frame.columns) == GNPS_COLUMNS
    assert frame["Compound_Name"].tolist()[:3] == list(ACIDS)
    np.testing.assert_array_equal(frame["MQScore"].to_numpy(), hits.score)
    np.testing.assert_array_equal(frame["SharedPeaks"].to_numpy(), hits.matches)
    assert frame["SpectrumID"].tolist() == library.ids[hits.library_index].tolist()
    lib_mz = library.precursor_mz[hits.library_index]
    ppm = np.abs(lib_mz - query.precursor_mz[0]) / lib_mz * 1e6
    np.testing.assert_allclose(frame["MZErrorPPM"].to_numpy(float), ppm, atol=1e-6)
    assert frame["SimMS_Tied"].tolist()[:3] == [3, 3, 3]
    assert frame["#Scan#"].tolist() == [1] * len(hits)
    queries_table = pd.read_csv(tmp_path / "gnps.queries.tsv", sep="\t")
    assert queries_table["status"].tolist() == ["hits"] and queries_table["tied"].tolist() == [3]


def test_queries_table_lists_every_query_with_its_status(tmp_path, massbank_search):
    pd = pytest.importorskip("pandas")
    queries, library, params, hits = massbank_search
    path = write_hits(tmp_path / "hits.tsv", hits, queries, library, params)
    table = pd.read_csv(queries_path(path), sep="\t")
    assert queries_path(path).name == "hits.queries.tsv"
    assert table["query_index"].tolist() == list(range(len(queries)))
    assert table["query_id"].tolist() == queries.ids.tolist()
    counts = np.bincount(hits.query_index, minlength=len(queries))
    np.testing.assert_array_equal(table["hits"].to_numpy(), counts)
    status = query_status(queries, library, params, counts > 0)
    assert table["status"].tolist() == status.tolist()
    assert set(status) >= {"hits", "no peaks left after preprocessing"}  # both kinds shown
    first = np.flatnonzero(np.r_[True, hits.query_index[1:] != hits.query_index[:-1]])
    best = table.set_index("query_index").loc[hits.query_index[first]]
    np.testing.assert_array_equal(best["best_score"].to_numpy(), hits.score[first])


@pytest.mark.slow
def test_cli_writes_every_format_with_the_same_hits_and_every_query(tmp_path, data_dir):
    pd = pytest.importorskip("pandas")
    mztab = pytest.importorskip("pyteomics.mztab")
    from engine.cli import main
    from engine.export import read_hits

    path = str(data_dir / "pesticides.mgf")
    common = ["search", "--mode", "custom", "--top", "3", path, path, "-q", "--backend", "cpu"]
    assert main([*common, "-o", str(tmp_path / "hits.tsv")]) == 0
    assert main([*common, "-o", str(tmp_path / "hits.mztab")]) == 0
    assert main([*common, "-o", str(tmp_path / "gnps.tsv"), "--format", "gnps"]) == 0
    cols, _ = read_hits(tmp_path / "hits.tsv")
    sme = mztab.MzTab(str(tmp_path / "hits.mztab")).small_molecule_evidence_table
    gnps = pd.read_csv(tmp_path / "gnps.tsv", sep="\t")
    for scores in (sme["id_confidence_measure[1]"], gnps["MQScore"]):
        np.testing.assert_array_equal(scores.to_numpy(float), cols["score"])
    assert gnps["SpectrumID"].tolist() == sme["database_identifier"].tolist()
    for name in ("hits.queries.tsv", "gnps.queries.tsv"):
        table = pd.read_csv(tmp_path / name, sep="\t")
        assert len(table) == 76 and set(table["status"]) == {"hits"}
    assert not (tmp_path / "hits.queries.tsv.part").exists()


def test_order_ties_keeps_query_blocks_and_moves_only_tied_rows(massbank_search):
    """Queries in any block order (a precursor window streams them so): each query's
    block stays where it is, its untied rows stay in place, its tied best rows follow
    the key (matches, reverse score, explained intensity, name, InChIKey, id)."""
    queries, library, params, canonical = massbank_search
    from engine.search import evidence

    hits = canonical.sorted()  # back to library-position order inside ties
    starts = np.flatnonzero(np.r_[True, hits.query_index[1:] != hits.query_index[:-1]])
    bounds = np.r_[starts, len(hits)]
    blocks = np.random.default_rng(7).permutation(len(starts))
    shuffled = hits.take(np.concatenate([np.arange(bounds[b], bounds[b + 1]) for b in blocks]))
    ordered = order_ties(shuffled, queries, library, params)
    np.testing.assert_array_equal(ordered.query_index, shuffled.query_index)
    flags = ambiguity_columns(ordered, library)
    assert (flags["tied"] > 1).sum() > 20  # enough ties to test
    reverse, explained = evidence(ordered, queries, library, params)
    names = library.metadata["name"][ordered.library_index]
    for q in np.unique(ordered.query_index):
        rows = np.flatnonzero(ordered.query_index == q)
        before = shuffled.take(np.flatnonzero(shuffled.query_index == q))
        tied = rows[flags["tied"][rows] > 0]
        untied = rows[flags["tied"][rows] == 0]
        n = len(tied)
        np.testing.assert_array_equal(ordered.library_index[untied], before.library_index[n:])
        assert sorted(ordered.library_index[tied]) == sorted(before.library_index[:n])
        keys = [(-ordered.matches[r], -reverse[r], -explained[r], str(names[r]).casefold())
                for r in tied]  # fmt: skip
        assert keys == sorted(keys)
