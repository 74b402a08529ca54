"""mzXML, GNPS/MoNA JSON and the MSP flavours: same spectra as the source files and as matchms.

The files in ``tests/data/formats`` hold five real spectra (``make_files.py`` there
writes them from ``../shared/data``): two GNPS pesticides (negative) and three
MassBank HBM4EU spectra (positive).
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

from engine.cli import main as cli_main
from engine.io import SpectrumFileError, load_library, read_library

FORMATS = Path(__file__).resolve().parent / "data" / "formats"
DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SOURCES = [
    ("pesticides.mgf", 0),
    ("pesticides.mgf", 5),
    ("sample.msp", 2),
    ("sample.msp", 3),
    ("sample.msp", 4),
]
MSP_FLAVOURS = ["nist.msp", "massbank.msp", "riken.msp", "mona.msp", "golm.msp"]
ALL_FILES = [*MSP_FLAVOURS, "loose_num_peaks.msp", "gnps.json", "mona.json", "sample.mzXML"]
MATCHMS_LOADERS = {".msp": "load_from_msp", ".json": "load_from_json", ".mzXML": "load_from_mzxml"}


@pytest.fixture(scope="module")
def source(data_dir) -> list[dict]:
    """The five source spectra as read from ../shared/data."""
    out = []
    for name, index in SOURCES:
        lib = read_library(data_dir / name)
        mz, intensity = lib.peaks(index)
        out.append({**lib.record(index), "mz": mz, "intensity": intensity})
    return out


def _nominal(mz: np.ndarray, intensity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """GOLM's nominal-mass peaks: the largest intensity per rounded m/z."""
    keys = np.rint(mz).astype(np.int64)
    unique = np.unique(keys)
    return unique.astype(np.float64), np.array([intensity[keys == k].max() for k in unique])


def _matchms(path: Path) -> list:
    import matchms.importing as importing

    loader = getattr(importing, MATCHMS_LOADERS[path.suffix])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(loader(str(path)))


def _issues(lib) -> dict[int, tuple[bool, str]]:
    return {i.record: (i.skipped, i.reason) for i in lib.report.issues}


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL_FILES)
def test_file_equals_source_spectra(name, source):
    lib = read_library(FORMATS / name)
    assert len(lib) == 5 and not lib.report.skipped
    for i, expected in enumerate(source):
        mz, intensity = expected["mz"], expected["intensity"]
        if name == "golm.msp":
            mz, intensity = _nominal(mz, intensity)
        got_mz, got_intensity = lib.peaks(i)
        np.testing.assert_array_equal(got_mz, mz)
        np.testing.assert_array_equal(got_intensity, intensity)
        record = lib.record(i)
        assert record["precursor_mz"] == expected["precursor_mz"]
        assert record["ion_mode"] == expected["ion_mode"]
        if expected["adduct"] or name in ("gnps.json", "sample.mzXML"):  # these carry a charge
            assert record["charge"] == expected["charge"]
        if name != "sample.mzXML":  # mzXML carries no compound metadata
            for key in ("name", "inchikey", "smiles", "id"):
                assert record[key] == expected[key], key
            if expected["adduct"]:
                assert record["adduct"] == expected["adduct"]


@pytest.mark.parametrize("name", [*MSP_FLAVOURS, "gnps.json", "sample.mzXML"])
def test_file_equals_matchms(name):
    lib = read_library(FORMATS / name)
    spectra = _matchms(FORMATS / name)
    assert len(spectra) == len(lib)
    for i, spectrum in enumerate(spectra):
        order = np.argsort(spectrum.peaks.mz, kind="stable")
        mz, intensity = lib.peaks(i)
        np.testing.assert_array_equal(mz, spectrum.peaks.mz[order])
        np.testing.assert_array_equal(intensity, spectrum.peaks.intensities[order])
        assert lib.precursor_mz[i] == pytest.approx(spectrum.get("precursor_mz"), abs=1e-9)
        record = lib.record(i)
        if spectrum.get("ionmode") not in (None, "n/a"):
            assert record["ion_mode"] == spectrum.get("ionmode")
        if spectrum.get("compound_name"):
            assert record["name"] == spectrum.get("compound_name")
        inchikey = spectrum.get("inchikey") or spectrum.metadata.get("inchikey_smiles")
        if inchikey:
            assert record["inchikey"] == inchikey


def test_mona_json_equals_mona_msp_read_by_matchms():
    """matchms has no MoNA JSON loader: its read of the MoNA MSP export stands in."""
    lib = read_library(FORMATS / "mona.json")
    spectra = _matchms(FORMATS / "mona.msp")
    for i, spectrum in enumerate(spectra):
        np.testing.assert_array_equal(lib.peaks(i)[0], np.sort(spectrum.peaks.mz))
        assert lib.record(i)["name"] == spectrum.get("compound_name")
        assert lib.record(i)["inchikey"] == (spectrum.get("inchikey") or "")
    assert lib.metadata["instrument"][0] == "-Q-Exactive Plus Orbitrap Res 70k"


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("gnps.json", "json"), ("mona.json", "json"), ("sample.mzXML", "mzxml"), ("golm.msp", "msp")],
)
def test_gzip_and_any_name_read_the_same(tmp_path, name, fmt):
    plain = read_library(FORMATS / name)
    packed = tmp_path / "library.dat.gz"  # the content tells the format, not the name
    packed.write_bytes(gzip.compress((FORMATS / name).read_bytes()))
    lib = read_library(packed)
    assert lib.source.format == plain.source.format == fmt
    np.testing.assert_array_equal(lib.mz, plain.mz)
    np.testing.assert_array_equal(lib.intensity, plain.intensity)
    np.testing.assert_array_equal(lib.precursor_mz, plain.precursor_mz)
    assert read_library(FORMATS / name, format=fmt.upper()).source.format == fmt


def test_cache_keeps_the_format(tmp_path):
    first = load_library(FORMATS / "mona.json", cache_dir=tmp_path)
    second = load_library(FORMATS / "mona.json", cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.npz"))) == 1
    assert second.source.format == first.source.format == "json"
    np.testing.assert_array_equal(second.mz, first.mz)


def test_cli_info_reads_every_new_format(capsys):
    files = [str(FORMATS / n) for n in ("gnps.json", "mona.json", "sample.mzXML", "riken.msp")]
    assert cli_main(["info", *files]) == 0
    out = capsys.readouterr().out
    assert "5 spectra read as JSON" in out and "5 spectra read as MZXML from 7 records" in out


def test_missing_and_wrong_num_peaks():
    lib = read_library(FORMATS / "loose_num_peaks.msp")
    issues = _issues(lib)
    assert set(issues) == {2, 4}
    assert issues[2] == (False, "'Num Peaks: 45' but 38 peak(s) found")


# -- broken records: one is skipped with its number and reason, the rest kept -----------


def _write_json(tmp_path, records) -> Path:
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_gnps_json_broken_records(tmp_path):
    records = json.loads((FORMATS / "gnps.json").read_text(encoding="utf-8"))
    records[1]["peaks_json"] = '[[85.1, 100], [86.2, "x"]]'
    records[2]["Precursor_MZ"] = "abc"
    records[3]["peaks_json"] = "[]"
    records.append("not a spectrum")
    lib = read_library(_write_json(tmp_path, records))
    assert len(lib) == 2 and lib.report.records == 6
    assert list(lib.ids) == [records[0]["spectrum_id"], records[4]["spectrum_id"]]
    issues = _issues(lib)
    assert issues[2][0] and "non-numeric peak 2" in issues[2][1]
    assert issues[3] == (True, "unreadable precursor m/z 'abc'")
    assert issues[4] == (True, "no peaks")
    assert issues[6] == (True, "not a JSON object but str")
    assert "record 3 (Tentotoxin" not in str(lib.report)  # titles name the right records
    assert records[2]["Compound_Name"] in str(lib.report)


def test_mona_json_broken_records(tmp_path):
    records = json.loads((FORMATS / "mona.json").read_text(encoding="utf-8"))
    records[0]["metaData"][0]["value"] = "MS1"
    records[2]["spectrum"] = "85.1:100 86.2:x"
    del records[3]["spectrum"]
    lib = read_library(_write_json(tmp_path, records))
    assert len(lib) == 2
    assert list(lib.ids) == [records[1]["id"], records[4]["id"]]
    issues = _issues(lib)
    assert issues[1] == (True, "MS level 'MS1' (only MS2 spectra are read)")
    assert issues[3] == (True, "non-numeric peak '86.2:x' in 'spectrum'")
    assert issues[4] == (True, "no peaks (neither 'peaks_json' nor 'spectrum')")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'[{"peaks_json": "[[1, 2]]",}]', "invalid JSON at line 1"),
        (b"[" * 100_000 + b"]" * 100_000, "JSON nested too deeply"),
        (b'[1, "a", null]', "no valid spectra (3 records seen, 3 skipped)"),
    ],
)
def test_unusable_json_is_one_line(tmp_path, content, reason):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(SpectrumFileError) as info:
        read_library(path)
    assert reason in info.value.reason and "\n" not in str(info.value)


def _mzxml_text() -> str:
    return (FORMATS / "sample.mzXML").read_text(encoding="ISO-8859-1")


def _set_peaks(text: str, num: int, payload: str) -> str:
    """Replace the base64 peaks of scan ``num``."""
    start = text.index(f'<scan num="{num}"')
    match = re.compile(r">([A-Za-z0-9+/=]+)</peaks>").search(text, start)
    return text[: match.start(1)] + payload + text[match.end(1) :]


def test_mzxml_broken_scans_are_skipped_alone(tmp_path):
    text = _set_peaks(_mzxml_text(), 3, "@@not base64@@")
    text = text.replace('<scan num="5" msLevel="2"', '<scan num="5" msLevel="x"')
    path = tmp_path / "broken.mzXML"
    path.write_text(text, encoding="ISO-8859-1")
    lib = read_library(path)
    assert list(lib.ids) == ["2", "6", "7"] and lib.report.records == 7
    issues = _issues(lib)
    assert issues[3][0] and issues[3][1].startswith("corrupt peaks")
    assert issues[5] == (True, "unreadable msLevel 'x'")


def test_mzxml_zlib_bomb_skips_that_scan_only(tmp_path):
    bomb = base64.b64encode(zlib.compress(bytes(32 * 2**20), 9)).decode()
    path = tmp_path / "bomb.mzXML"
    path.write_text(_set_peaks(_mzxml_text(), 2, bomb), encoding="ISO-8859-1")
    lib = read_library(path)
    assert len(lib) == 4
    (skipped,) = lib.report.skipped
    assert skipped.record == 2 and "peaksCount" in skipped.reason


def test_mzxml_truncated_keeps_scans_before_the_break(tmp_path):
    text = _mzxml_text()
    path = tmp_path / "cut.mzXML"
    path.write_text(text[: text.index('<scan num="6"') + 40], encoding="ISO-8859-1")
    lib = read_library(path)
    assert list(lib.ids) == ["2", "3", "5"]
    assert lib.report.skipped[-1].record == 6
    assert "XML broken here" in lib.report.skipped[-1].reason


def test_mzxml_doctype_is_refused(tmp_path):
    text = _mzxml_text().replace("<mzXML", '<!DOCTYPE mzXML [<!ENTITY a "aaaaaaaaaa">]>\n<mzXML', 1)
    path = tmp_path / "doctype.mzXML"
    path.write_text(text, encoding="ISO-8859-1")
    with pytest.raises(SpectrumFileError, match="DOCTYPE"):
        read_library(path)


def test_msp_flavour_broken_record(tmp_path):
    text = (FORMATS / "golm.msp").read_text(encoding="utf-8")
    start = text.index("Name: Cyclizine")
    text = text[:start] + text[start:].replace("\n99:", "\n99:x 99:", 1)
    path = tmp_path / "broken.msp"
    path.write_text(text, encoding="utf-8")
    lib = read_library(path)
    assert len(lib) == 4 and "Cyclizine" not in list(lib.metadata["name"])
    (skipped,) = lib.report.skipped
    assert skipped.record == 3 and skipped.reason.startswith("unreadable peak line '99:x")


def test_mzxml_without_namespace_and_precursor_attributes(tmp_path):
    """mzXML 2.x writers: no namespace, a bare ``<precursorMz>``; matchms reads it the same."""
    text = _mzxml_text().replace(
        ' xmlns="http://sashimi.sourceforge.net/schema_revision/mzXML_3.2"', ""
    )
    text = re.sub(r"<precursorMz [^>]*>", "<precursorMz>", text)
    text = _set_peaks(text, 7, "")  # an empty peak list
    path = tmp_path / "plain.mzXML"
    path.write_text(text, encoding="ISO-8859-1")
    lib = read_library(path)
    reference = read_library(FORMATS / "sample.mzXML")
    assert len(lib) == 4 and _issues(lib) == {7: (True, "no peaks")}
    np.testing.assert_array_equal(lib.precursor_mz, reference.precursor_mz[:4])
    np.testing.assert_array_equal(lib.mz, reference.mz[: lib.offsets[-1]])
    np.testing.assert_array_equal(lib.ion_mode, reference.ion_mode[:4])
    assert list(lib.charge) == [0, 0, 0, 0]  # no precursorCharge given
    spectra = _matchms(FORMATS / "sample.mzXML")[:4]
    for i, spectrum in enumerate(spectra):
        np.testing.assert_array_equal(lib.peaks(i)[0], spectrum.peaks.mz)
        assert lib.precursor_mz[i] == spectrum.get("precursor_mz")


def test_msp_blank_line_after_num_peaks_and_several_synonyms(tmp_path):
    text = (FORMATS / "nist.msp").read_text(encoding="utf-8")
    text = text.replace("Num Peaks: 3\n", "Num Peaks: 3\n\n")  # Cyclizine, Metoclopramide
    path = tmp_path / "blank.msp"
    path.write_text(text, encoding="utf-8")
    lib = read_library(path)
    plain = read_library(FORMATS / "nist.msp")
    assert len(lib) == 5 and not lib.report.issues
    np.testing.assert_array_equal(lib.mz, plain.mz)
    assert lib.metadata["synon"][0] == "$:00in-source; spectrum 1"
