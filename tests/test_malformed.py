"""Malformed inputs: every bad file gives a clear error, every bad record a numbered issue."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pytest

from engine.io import SpectrumFileError, read_library

CORPUS = Path(__file__).resolve().parent / "data" / "malformed"
DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

GOOD_MGF = b"BEGIN IONS\nTITLE=a\nPEPMASS=100\n10 1\n20 2\nEND IONS\n"
GOOD_MSP = b"Name: x\nPrecursorMZ: 100\nNum Peaks: 1\n10 1\n"


def _issues(lib):
    return {i.record: (i.skipped, i.reason) for i in lib.report.issues}


def test_mixed_mgf_every_valid_record_read():
    lib = read_library(CORPUS / "mixed.mgf")
    report = lib.report
    assert report.records == 11 and report.spectra == 7 == len(lib)
    assert list(lib.metadata["title"]) == [
        "good one",
        "needs repair",
        "no precursor",
        "pepmass with intensity",
        "bad pepmass",
        "bad charge",
        "last good",
    ]
    issues = _issues(lib)
    assert set(issues) == {2, 3, 4, 6, 7, 8, 9, 10}
    assert issues[2] == (True, "unreadable peak line 'abc def'")
    assert issues[3][0] is False
    for part in ("2 peak(s) with invalid m/z", "2 peak(s) with zero", "sorted", "repeated"):
        assert part in issues[3][1]
    assert issues[4] == (False, "no precursor m/z (kept with unknown precursor)")
    assert issues[6][0] and issues[6][1].startswith("no valid peaks")
    assert issues[7] == (True, "no END IONS before the next BEGIN IONS")
    assert issues[8][0] is False and "PEPMASS 'abc'" in issues[8][1]
    assert issues[9][0] is False and "CHARGE 'xyz'" in issues[9][1]
    assert issues[10] == (True, "no peaks")

    assert lib.ids[0] == "ID1" and lib.ids[-1] == "ID11"
    assert lib.ids[1] == "needs repair"  # no SPECTRUMID: title
    # repaired peaks: invalid dropped, sorted stably (duplicates in file order)
    mz, intensity = lib.peaks(1)
    np.testing.assert_array_equal(mz, [15.0, 15.0, 30.0])
    np.testing.assert_array_equal(intensity, [1.5, 2.5, 3.0])
    assert math.isnan(lib.precursor_mz[2])
    assert lib.charge[2] == -1 and lib.ion_mode[2] == -1  # CHARGE=1, IONMODE=negative
    assert lib.precursor_mz[3] == 123.4 and lib.charge[3] == 2  # PEPMASS with intensity, 2+
    assert math.isnan(lib.precursor_mz[4])
    assert lib.precursor_mz[5] == 600.0 and lib.charge[5] == 0
    np.testing.assert_array_equal(lib.peaks(6)[0], [120.0, 130.0])  # annotation column ignored
    assert "record 2 (non numeric peak): skipped" in str(report)


def test_mixed_msp():
    lib = read_library(CORPUS / "mixed.msp")
    assert lib.report.records == 5 and len(lib) == 3
    assert list(lib.ids) == ["M1", "M3", "last"]
    issues = _issues(lib)
    assert issues[2] == (True, "unreadable peak line 'oops here'")
    assert issues[3][0] is False and "'Num Peaks: 3' but 2 peak(s) found" in issues[3][1]
    assert issues[4] == (True, "no peaks and no 'Num Peaks' line")
    np.testing.assert_array_equal(lib.peaks(0)[0], [10.0, 20.0, 30.0])  # pairs split by ';'
    np.testing.assert_array_equal(lib.peaks(1)[0], [12.5, 15.5])  # sorted, annotations dropped
    assert lib.charge[1] == -1 and lib.ion_mode[1] == -1  # from [M-H]-
    assert lib.ion_mode[0] == 1  # Ion_mode: P
    assert lib.precursor_mz[2] == 180.5


def test_crlf_and_bom(tmp_path):
    text = (CORPUS / "mixed.mgf").read_bytes().replace(b"\n", b"\r\n")
    path = tmp_path / "crlf.mgf"
    path.write_bytes(b"\xef\xbb\xbf" + text)
    lib = read_library(path)
    expected = read_library(CORPUS / "mixed.mgf")
    assert len(lib) == len(expected)
    assert list(lib.metadata["title"]) == list(expected.metadata["title"])
    np.testing.assert_array_equal(lib.mz, expected.mz)
    msp = tmp_path / "crlf.msp"
    msp.write_bytes(b"\xef\xbb\xbf" + (CORPUS / "mixed.msp").read_bytes().replace(b"\n", b"\r\n"))
    assert list(read_library(msp).ids) == ["M1", "M3", "last"]


def test_gzip_plain_equal(tmp_path):
    path = tmp_path / "mixed.mgf.gz"
    path.write_bytes(gzip.compress((CORPUS / "mixed.mgf").read_bytes()))
    lib = read_library(path)
    assert len(lib) == 7 and lib.source.format == "mgf"


def test_large_spectrum(tmp_path):
    rng = np.random.default_rng(7)
    mz = np.sort(rng.uniform(50, 2000, 50_000))
    intensity = rng.uniform(1, 1000, 50_000)
    lines = "\n".join(f"{m:.6f} {i:.4f}" for m, i in zip(mz, intensity, strict=True))
    path = tmp_path / "big.mgf"
    path.write_text(f"BEGIN IONS\nTITLE=big\nPEPMASS=1000\n{lines}\nEND IONS\n" + GOOD_MGF.decode())
    lib = read_library(path)
    assert len(lib) == 2 and lib.peak_counts[0] == 50_000
    np.testing.assert_allclose(lib.peaks(0)[0], mz, rtol=0, atol=1e-6)


def _error(path: Path, **kwargs) -> SpectrumFileError:
    with pytest.raises(SpectrumFileError) as info:
        read_library(path, **kwargs)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    return info.value


#: Unusable files: (name, content, what the one-line error says).  Fixed bytes (gzip
#: without a time stamp), so every test worker collects the same cases.
UNUSABLE = [
    ("empty.mgf", b"", "empty file"),
    ("blank.msp", b"\n \r\n\t\n", "empty file"),
    ("empty.mgf.gz", gzip.compress(b"", mtime=0), "empty file"),
    ("garbage.mgf", np.random.default_rng(0).bytes(5000), "binary content"),
    ("truncated.mgf.gz", gzip.compress(GOOD_MGF * 200, mtime=0)[:-20], "truncated gzip"),
    ("corrupt.mgf.gz", b"\x1f\x8b" + b"\x00" * 40, "gzip"),
    ("notes.mgf", b"just some text\nno spectra here\n", "not a valid MGF file"),
    ("notes.msp", b"just some text\n", "not a valid MSP file"),
    ("notes.txt", b"just some text\n", "unknown format"),
    (
        "scan.mzXML",
        b'<?xml version="1.0"?>\n<mzXML>\n</mzXML>\n',
        "no valid spectra (0 records",
    ),
    ("other.mzML", b'<?xml version="1.0"?>\n<html></html>\n', "XML but neither mzML nor"),
    (
        "allbad.mgf",
        b"BEGIN IONS\nTITLE=a\n1 x\nEND IONS\nBEGIN IONS\nTITLE=b\n1 0\nEND IONS\n",
        "no valid spectra (2 records seen, 2 skipped)",
    ),
    ("nopeaks.msp", b"Name: a\nNum Peaks: 0\n\n", "no valid spectra (1 records seen"),
]


@pytest.mark.parametrize(
    ("name", "content", "reason"), UNUSABLE, ids=[case[0] for case in UNUSABLE]
)
def test_unusable_files(tmp_path, name, content, reason):
    path = tmp_path / name
    path.write_bytes(content)
    error = _error(path)
    assert reason in error.reason
    assert error.path == str(path)


def test_missing_file_and_directory(tmp_path):
    assert _error(tmp_path / "nope.mgf").reason == "file not found"
    assert "directory" in _error(tmp_path).reason


def test_content_wins_over_name(tmp_path):
    path = tmp_path / "really_msp.mgf"
    path.write_bytes(GOOD_MSP)
    with pytest.warns(UserWarning, match="content is MSP"):
        lib = read_library(path)
    assert lib.source.format == "msp" and len(lib) == 1


def test_explicit_format_mismatch(tmp_path):
    path = tmp_path / "x.msp"
    path.write_bytes(GOOD_MSP)
    assert "asked to read as MGF but the content is MSP" in _error(path, format="mgf").reason
    assert len(read_library(path, format="MSP")) == 1
    with pytest.raises(ValueError, match="format must be one of"):
        read_library(path, format="csv")


def test_unterminated_last_record(tmp_path):
    path = tmp_path / "cut.mgf"
    path.write_bytes(GOOD_MGF + b"BEGIN IONS\nTITLE=cut\nPEPMASS=5\n10 1\n")
    lib = read_library(path)
    assert len(lib) == 1
    assert _issues(lib) == {2: (True, "file ends inside the record (no END IONS)")}


def test_mgf_file_header_applies(tmp_path):
    path = tmp_path / "header.mgf"
    path.write_bytes(b"IONMODE=negative\nCHARGE=1\n" + GOOD_MGF)
    lib = read_library(path)
    assert lib.ion_mode[0] == -1 and lib.charge[0] == -1


@pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data not present")
def test_truncated_mzml_keeps_spectra_before_break(tmp_path):
    data = (DATA / "sample.mzML").read_bytes()
    path = tmp_path / "cut.mzML"
    path.write_bytes(data[: len(data) // 2])
    lib = read_library(path)
    assert 0 < len(lib) < 10
    last = lib.report.issues[-1]
    assert last.skipped and last.reason.startswith("XML broken here")
    assert last.record == lib.report.records + 1
    full = read_library(DATA / "sample.mzML")
    np.testing.assert_array_equal(lib.peaks(0)[0], full.peaks(0)[0])


def test_every_valid_record_of_a_broken_file_is_searched(tmp_path, capsys):
    from engine.cli import main
    from engine.export import read_hits

    out = tmp_path / "hits.tsv"
    corpus = str(CORPUS / "mixed.mgf")
    status = main(
        ["search", "--mode", "custom", corpus, corpus, "-o", str(out), "--top", "0", "--no-cache"]
    )
    assert status == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "7 spectra read" in err and "4 skipped" in err
    cols, _ = read_hits(out)
    self_hits = cols["query_index"] == cols["library_index"]
    # each of the 7 spectra kept is searched and finds itself with score 1
    assert sorted(cols["query_index"][self_hits]) == list(range(7))
    np.testing.assert_allclose(cols["score"][self_hits], 1.0)
