"""Readers against the real files in ../shared/data, checked against matchms' loaders."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import numpy as np
import pytest

from engine.io import cache as cache_module
from engine.io import load_library, read_library
from engine.io.cache import cache_path
from engine.library import SpectrumLibrary

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
MASSBANK = DATA / "massbank_ms2.mgf.gz"
QUERIES = DATA / "massbank_ms2_queries.mgf.gz"
PESTICIDES = DATA / "pesticides.mgf"
MSP = DATA / "sample.msp"
MZML = DATA / "sample.mzML"

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data not present")


@pytest.fixture(scope="module")
def massbank_timed() -> tuple[SpectrumLibrary, float]:
    start = time.perf_counter()
    lib = read_library(MASSBANK)
    return lib, time.perf_counter() - start


@pytest.fixture(scope="module")
def massbank(massbank_timed) -> SpectrumLibrary:
    return massbank_timed[0]


@pytest.mark.parametrize(
    ("path", "count", "peaks", "ion_modes"),
    [
        (QUERIES, 1000, 29258, (711, 289)),
        (PESTICIDES, 76, 4721, (0, 76)),
        (MSP, 5, 41, (4, 1)),
        (MZML, 10, 282, (10, 0)),
    ],
)
def test_small_files_counts(path, count, peaks, ion_modes):
    lib = read_library(path)
    assert len(lib) == count
    assert lib.n_peaks == peaks
    assert (int((lib.ion_mode == 1).sum()), int((lib.ion_mode == -1).sum())) == ion_modes
    assert np.isfinite(lib.precursor_mz).all()
    assert lib.report.spectra == count and lib.report.issues == []
    assert lib.source.sha256 and lib.source.format == path.suffix.lower().strip(".").replace(
        "gz", "mgf"
    )
    for i in range(len(lib)):  # every spectrum sorted, valid
        mz, intensity = lib.peaks(i)
        assert np.all(np.diff(mz) >= 0) and np.all(intensity > 0)


def test_massbank_counts(massbank):
    lib = massbank
    assert len(lib) == 54390
    assert lib.n_peaks == 1_543_854
    assert int((lib.ion_mode == 1).sum()) == 39552
    assert int((lib.ion_mode == -1).sum()) == 14838
    assert np.isfinite(lib.precursor_mz).all()
    counts = lib.peak_counts
    assert counts.min() == 1 and np.median(counts) == 10 and counts.max() == 2210
    assert (lib.metadata["inchikey"] != "").sum() == 53586
    assert (lib.metadata["smiles"] != "").sum() == 54065
    assert lib.ids[0] == "MSBNK-AAFC-AC000001"
    assert len(set(lib.ids)) == len(lib)
    # charge follows the ion mode; 916 spectra have no CHARGE
    assert (lib.charge == 0).sum() == 916
    assert np.all((lib.charge == 0) | (np.sign(lib.charge) == lib.ion_mode))


def test_massbank_read_time(massbank_timed):
    assert massbank_timed[1] < 30  # measured ~9 s on the 2-core dev machine


def test_queries_are_library_copies(massbank):
    queries = read_library(QUERIES)
    n = len(massbank)
    index = {sid: i for i, sid in enumerate(massbank.ids)}
    for k in (0, 1, 500, 999):
        assert index[queries.ids[k]] == k * n // 1000
        q_mz, q_int = queries.peaks(k)
        l_mz, l_int = massbank.peaks(k * n // 1000)
        np.testing.assert_array_equal(q_mz, l_mz)
        np.testing.assert_array_equal(q_int, l_int)


def _compare_with_matchms(lib: SpectrumLibrary, spectra: list, indices) -> None:
    assert len(lib) == len(spectra)
    for i in indices:
        mz, intensity = lib.peaks(i)
        np.testing.assert_array_equal(mz, spectra[i].peaks.mz)
        np.testing.assert_array_equal(intensity, spectra[i].peaks.intensities)
        assert lib.precursor_mz[i] == pytest.approx(spectra[i].get("precursor_mz"))
        expected_mode = spectra[i].get("ionmode")
        if expected_mode is not None:  # matchms leaves it unset for mzML
            assert lib.record(i)["ion_mode"] == expected_mode


def test_mgf_matches_matchms():
    from matchms.importing import load_from_mgf

    lib = read_library(PESTICIDES)
    spectra = list(load_from_mgf(str(PESTICIDES)))
    _compare_with_matchms(lib, spectra, range(len(lib)))
    assert lib.metadata["smiles"][0] == spectra[0].get("smiles")
    assert lib.ids[3] == spectra[3].get("spectrum_id")
    assert np.all(lib.charge == -1)  # CHARGE=1 with IONMODE=negative


def test_gz_mgf_matches_matchms(tmp_path):
    from matchms.importing import load_from_mgf

    lib = read_library(QUERIES)
    plain = tmp_path / "queries.mgf"  # matchms does not read gzip
    plain.write_bytes(gzip.decompress(QUERIES.read_bytes()))
    spectra = list(load_from_mgf(str(plain)))
    _compare_with_matchms(lib, spectra, [0, 1, 2, 123, 500, 998, 999])
    assert lib.metadata["inchikey"][500] == spectra[500].get("inchikey")
    assert lib.metadata["name"][500] == spectra[500].get("compound_name")


def test_msp_matches_matchms():
    from matchms.importing import load_from_msp

    lib = read_library(MSP)
    spectra = list(load_from_msp(str(MSP)))
    _compare_with_matchms(lib, spectra, range(len(lib)))
    assert list(lib.ids) == [s.get("spectrum_id") or s.metadata.get("db#") for s in spectra]
    assert lib.ids[0] == "PS010904"
    assert lib.metadata["title"][0] == "ADP"
    assert lib.metadata["inchikey"][0] == "XTWYTFMLZFPYCI-UHFFFAOYSA-N"
    assert lib.charge[1] == -1  # [M-H]-
    assert lib.record(2)["adduct"] == "[M+H]+"


def test_mzml_matches_matchms():
    from matchms.importing import load_from_mzml

    lib = read_library(MZML)
    spectra = list(load_from_mzml(str(MZML)))
    _compare_with_matchms(lib, spectra, range(len(lib)))
    assert lib.ids[0] == "controllerType=0 controllerNumber=1 scan=2"
    assert list(lib.charge) == [s.get("charge") or 0 for s in spectra]
    assert lib.report.records == 12


def test_cache_round_trip(tmp_path, monkeypatch):
    lib = load_library(PESTICIDES, cache_dir=tmp_path)
    entry = cache_path(lib.source.sha256, tmp_path)
    assert entry.is_file()

    def no_parse(*args, **kwargs):
        raise AssertionError("cache was not used")

    monkeypatch.setattr(cache_module, "read_library", no_parse)
    again = load_library(PESTICIDES, cache_dir=tmp_path)
    _assert_same(lib, again)
    assert again.source == lib.source
    assert again.report.to_dict() == lib.report.to_dict()


def test_cache_keyed_by_content(tmp_path, monkeypatch):
    copy = tmp_path / "copy.msp"
    copy.write_bytes(MSP.read_bytes())
    first = load_library(MSP, cache_dir=tmp_path / "c")
    monkeypatch.setattr(cache_module, "read_library", None)  # any parse would fail
    second = load_library(copy, cache_dir=tmp_path / "c")
    _assert_same(first, second)
    assert second.source.path == str(copy) and second.report.path == str(copy)


def test_cache_env_and_write_failure(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMMS_CACHE_DIR", str(tmp_path / "envcache"))
    assert cache_module.default_cache_dir() == tmp_path / "envcache"
    lib = load_library(MSP)
    assert cache_path(lib.source.sha256).is_file()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.warns(UserWarning, match="could not write library cache"):
        lib2 = load_library(MSP, cache_dir=blocker / "sub")
    assert len(lib2) == 5


def test_corrupt_cache_entry_is_rebuilt(tmp_path):
    lib = load_library(MSP, cache_dir=tmp_path)
    cache_path(lib.source.sha256, tmp_path).write_bytes(b"not an npz")
    with pytest.warns(UserWarning, match="ignoring unreadable cache"):
        again = load_library(MSP, cache_dir=tmp_path)
    _assert_same(lib, again)


def test_massbank_cache_reload_fast(massbank, tmp_path):
    key = {"cache_key": massbank.source.sha256, "reader_version": cache_module.READER_VERSION}
    massbank.save(cache_path(massbank.source.sha256, tmp_path), extra=key)  # as the cache does
    start = time.perf_counter()
    again = load_library(MASSBANK, cache_dir=tmp_path)
    elapsed = time.perf_counter() - start
    _assert_same(massbank, again)
    assert elapsed < 2.0  # measured ~0.4 s on the 2-core dev machine


def _assert_same(a: SpectrumLibrary, b: SpectrumLibrary) -> None:
    for name in ("mz", "intensity", "offsets", "precursor_mz", "charge", "ion_mode"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert getattr(a, name).dtype == getattr(b, name).dtype
    assert a.metadata.keys() == b.metadata.keys()
    for key in a.metadata:
        assert list(a.metadata[key]) == list(b.metadata[key])
