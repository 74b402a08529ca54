"""Library quality check on real spectra with planted duplicates and conflicts, against matchms."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import engine
from engine.analyses.qc import duplicate_groups, library_qc, pairs_frame, write_qc_report

N_BASE = 40


@pytest.fixture(scope="module")
def planted(massbank_queries):
    """40 real spectra (one contributor's series, so some are natural near-duplicates)
    and planted copies: an exact copy and a noisy copy of spectrum 5 (duplicates), a copy
    of spectrum 8 under another compound's InChIKey (a conflict), a copy of spectrum 11
    without InChIKey (unverified), and a copy of spectrum 14 whose precursor is 0.05 Da
    off (not near-identical)."""
    base = massbank_queries.subset(range(N_BASE))
    rng = np.random.default_rng(7)
    mz = [base.peaks(i)[0] for i in range(N_BASE)]
    intensity = [base.peaks(i)[1] for i in range(N_BASE)]
    meta = {k: list(v) for k, v in base.metadata.items()}
    prec = list(base.precursor_mz)
    ion = list(base.ion_mode)

    def plant(source, *, noise=0.0, inchikey=None, shift=0.0, name=None):
        mz.append(base.peaks(source)[0])
        intensity.append(base.peaks(source)[1] * (1 + noise * rng.random(len(mz[-1]))))
        for k in meta:
            meta[k].append(meta[k][source])
        meta["id"][-1] = f"PLANTED-{len(mz) - 1}"
        if inchikey is not None:
            meta["inchikey"][-1] = inchikey
        if name is not None:
            meta["name"][-1] = name
        prec.append(prec[source] + shift)
        ion.append(ion[source])

    plant(5)  # 40: exact duplicate of 5
    plant(5, noise=0.1)  # 41: noisy duplicate of 5
    plant(8, inchikey="RYYVLZVUVIJVGH-UHFFFAOYSA-N")  # 42: caffeine's key: a conflict with 8
    plant(11, inchikey="")  # 43: unverified
    plant(14, shift=0.05)  # 44: precursor too far: no pair
    for i in (5, 8, 11, 14):  # enough fragments to be near-identical with their copies
        assert (np.abs(mz[i] - prec[i]) > 1.6).sum() >= 3
    return engine.SpectrumLibrary.from_peak_lists(
        mz, intensity, precursor_mz=prec, charge=list(base.charge) + [0] * 5, ion_mode=ion,
        metadata=meta,
    )  # fmt: skip


def matchms_near_identical(lib) -> set[tuple[int, int]]:
    """Pairs with precursors within 0.01 Da and the same ion mode whose fragments (peaks
    more than 1.6 Da from the precursor) score a matchms cosine >= 0.95 with >= 3 matches."""
    from matchms import Spectrum
    from matchms.similarity import CosineGreedy

    cosine = CosineGreedy(tolerance=0.02)
    objects = []
    for i in range(len(lib)):
        mz, intensity = lib.peaks(i)
        fragment = np.abs(mz - lib.precursor_mz[i]) > 1.6
        objects.append(
            Spectrum(mz=mz[fragment].copy(), intensities=intensity[fragment].copy(),
                     metadata={"precursor_mz": float(lib.precursor_mz[i])},
                     metadata_harmonization=False)
        )  # fmt: skip
    polarity = lib.polarity()
    found = set()
    for a in range(len(lib)):
        for b in range(a + 1, len(lib)):
            if abs(lib.precursor_mz[a] - lib.precursor_mz[b]) > 0.01:
                continue
            if polarity[a] and polarity[b] and polarity[a] != polarity[b]:
                continue
            r = cosine.pair(objects[b], objects[a])
            if r["score"] >= 0.95 and r["matches"] >= 3:
                found.add((a, b))
    return found


def test_planted_duplicates_and_conflicts(planted, tmp_path):
    qc = library_qc(planted, backend="cpu")
    assert {(int(a), int(b)) for a, b in qc.pairs} == matchms_near_identical(planted)
    kind = {(int(a), int(b)): k for (a, b), k in zip(qc.pairs, qc.kind, strict=True)}
    assert kind[(5, 40)] == kind[(5, 41)] == kind[(40, 41)] == "duplicate"
    assert kind[(8, 42)] == "conflict"
    assert kind[(11, 43)] == "unverified"
    assert not any(44 in pair for pair in kind)
    # 5, 40 and 41 are one group; a de-duplicated library keeps one of them, and
    # every spectrum it drops is a duplicate of the one kept for its group
    assert qc.group[5] == qc.group[40] == qc.group[41] > 0
    kept = qc.keep()
    assert kept[[5, 40, 41]].sum() == 1
    assert kept[[8, 42, 11, 43, 14, 44]].all()  # conflicts and unverified pairs stay
    duplicates = {k for k, v in kind.items() if v == "duplicate"}
    for i in np.flatnonzero(~kept):
        rep = qc.representatives[qc.group[i] - 1]
        assert (min(i, rep), max(i, rep)) in duplicates
    counts = qc.counts()
    assert counts["conflicting_pairs"] == sum(v == "conflict" for v in kind.values())
    assert counts["redundant_spectra"] == (~kept).sum()
    dedup = engine.deduplicate(planted, qc)
    assert len(dedup) == kept.sum()
    assert list(dedup.ids) == list(planted.ids[kept])

    table = pd.read_csv(write_qc_report(qc, tmp_path / "qc.tsv"), sep="\t", keep_default_na=False)
    expected = pairs_frame(qc)
    assert len(table) == len(qc.pairs)
    assert list(table.columns) == list(expected.columns)
    assert (table["id_a"].to_numpy() == planted.ids[qc.pairs[:, 0]]).all()
    assert np.allclose(table["score"], qc.score, atol=1e-12)
    assert list(table["kind"]) == list(qc.kind)


def test_duplicate_groups_cover_by_representatives():
    # a chain 0-1-2-3 and a star around 5: representatives must resemble their members
    pairs = np.array([[0, 1], [1, 2], [2, 3], [4, 5], [5, 6], [5, 7]])
    group, reps = duplicate_groups(pairs, 9)
    assert list(reps) == [5, 1]  # most duplicates first, ties by index
    # 3's only duplicate (2) is 1's already: 3 stays, in no group
    assert list(group) == [2, 2, 2, -1, 1, 1, 1, 1, -1]


@pytest.mark.parametrize("name", ["massbank_ms2_queries.mgf.gz", "sample.msp"])
def test_mgf_writer_round_trip(data_dir, tmp_path, name):
    from engine.io.mgf_writer import write_mgf

    original = engine.load_library(data_dir / name, cache=False)
    again = engine.load_library(write_mgf(original, tmp_path / "out.mgf"), cache=False)
    for key in ("mz", "intensity", "offsets", "charge"):
        assert np.array_equal(getattr(original, key), getattr(again, key)), key
    assert np.array_equal(original.precursor_mz, again.precursor_mz, equal_nan=True)
    assert np.array_equal(original.polarity(), again.polarity())
    for key, column in original.metadata.items():
        if (column != "").any():
            assert list(again.metadata[key]) == list(column), key
