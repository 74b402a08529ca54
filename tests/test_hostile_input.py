"""Hostile and broken inputs: one bad record never costs the file, small files stay cheap.

Each test reproduces an attack from the edges issue; before the fix it crashed,
hung, lost valid spectra or loaded wrong numbers.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import threading
import tracemalloc

import numpy as np
import pytest

from engine.io import SpectrumFileError, read_library
from engine.io.stream import MAX_GZIP_RATIO, decode_text, split_lines

MGF = "BEGIN IONS\nTITLE={title}\nPEPMASS=100\n{extra}50 1\n60 2\nEND IONS\n"


def _mgf(*records: tuple[str, str]) -> str:
    return "".join(MGF.format(title=t, extra=e) for t, e in records)


# -- one bad record ruins a whole file ---------------------------------------------------


@pytest.mark.parametrize("charge", ["40000+", "99999999999999999999-", "32768"])
def test_huge_mgf_charge_is_a_repair_not_a_crash(tmp_path, charge):
    path = tmp_path / "charge.mgf"
    path.write_text(_mgf(("a", ""), ("b", f"CHARGE={charge}\n"), ("c", "CHARGE=2+\n")))
    lib = read_library(path)
    assert len(lib) == 3
    assert list(lib.charge) == [0, 0, 2]
    (issue,) = lib.report.issues
    assert issue.record == 2 and not issue.skipped and "implausible charge" in issue.reason


def test_huge_msp_charge_is_a_repair(tmp_path):
    path = tmp_path / "charge.msp"
    path.write_text(
        "Name: a\nPrecursorMZ: 100\nCharge: 70000\nNum Peaks: 1\n50 1\n\n"
        "Name: b\nPrecursorMZ: 100\nNum Peaks: 1\n50 1\n"
    )
    lib = read_library(path)
    assert len(lib) == 2 and list(lib.charge) == [0, 0]
    assert "implausible charge 70000" in lib.report.issues[0].reason


@pytest.fixture(scope="module")
def sample_mzml(data_dir) -> str:
    return (data_dir / "sample.mzML").read_text(encoding="utf-8")


def _binaries(text: str) -> list[re.Match]:
    return list(re.finditer(r"<binary>([^<]*)</binary>", text))


def _replace_binary(text: str, k: int, payload: str) -> str:
    match = _binaries(text)[k]
    return text[: match.start(1)] + payload + text[match.end(1) :]


def test_mzml_huge_charge(tmp_path, sample_mzml):
    text = sample_mzml.replace('name="charge state" value="', 'name="charge state" value="4', 1)
    text = re.sub(r'name="charge state" value="\d+"', 'name="charge state" value="99999"', text)
    path = tmp_path / "charge.mzML"
    path.write_text(text)
    lib = read_library(path)
    assert len(lib) == 10 and not lib.charge.any()


@pytest.mark.parametrize(
    "payload, reason",
    [
        ("!!!not base64!!!", "corrupt binary array"),
        ("AAAAAAAAAAAAAAAA", "corrupt binary array"),  # valid base64, not zlib
    ],
    ids=["bad-base64", "bad-zlib"],
)
def test_mzml_corrupt_array_skips_that_spectrum_only(tmp_path, sample_mzml, payload, reason):
    """Before: an uncaught zlib.error, or every later spectrum dropped (9 of 10 lost)."""
    # binary 2 is the m/z array of the first MS2 scan (record 2)
    path = tmp_path / "broken.mzML"
    path.write_text(_replace_binary(sample_mzml, 2, payload))
    lib = read_library(path)
    assert len(lib) == 9
    skipped = lib.report.skipped
    assert len(skipped) == 1 and skipped[0].record == 2 and reason in skipped[0].reason


def test_huge_profile_ms1_scan_does_not_reject_the_file(tmp_path, sample_mzml):
    """Before: one 16 MB MS1 array tripped lxml's size limit and all 10 MS2 spectra were lost."""
    path = tmp_path / "profile.mzML"
    path.write_text(_replace_binary(sample_mzml, 0, "A" * (16 * 2**20)))
    lib = read_library(path)
    assert len(lib) == 10 and not lib.report.issues


@pytest.mark.parametrize(
    "header, note",
    [
        ("CHARGE=abc\n", "unreadable CHARGE 'abc' in the file header ignored"),
        ("RTINSECONDS=zz\n", "unreadable RTINSECONDS 'zz' in the file header ignored"),
        ("PEPMASS=x\nCHARGE=2+\n", "unreadable PEPMASS 'x' in the file header ignored"),
    ],
    ids=["charge", "rt", "pepmass"],
)
def test_unreadable_mgf_header_value_is_dropped_not_fatal(tmp_path, header, note):
    """Before: CHARGE=abc crashed with a traceback; RTINSECONDS=zz made every record fail."""
    path = tmp_path / "header.mgf"
    path.write_text(header + _mgf(("a", ""), ("b", "CHARGE=1+\n")))
    lib = read_library(path)
    assert len(lib) == 2 and not lib.report.skipped
    assert note in lib.report.notes
    assert list(lib.charge) == ([2, 1] if "CHARGE=2+" in header else [0, 1])


def test_mzml_doctype_is_refused(tmp_path, sample_mzml):
    """Entities cannot expand: huge_tree lifts lxml's limits, so a DOCTYPE is refused."""
    entities = '<!DOCTYPE mzML [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>\n'
    text = sample_mzml.replace("?>", "?>\n" + entities, 1)
    path = tmp_path / "doctype.mzML"
    path.write_text(text)
    with pytest.raises(SpectrumFileError, match="DOCTYPE"):
        read_library(path)


def test_mzml_zlib_bomb_array_skips_that_spectrum_only(tmp_path, sample_mzml):
    """An array inflating far past its defaultArrayLength is refused before it fills memory."""
    import base64
    import zlib

    bomb = base64.b64encode(zlib.compress(bytes(64 * 2**20), 9)).decode()
    path = tmp_path / "bomb.mzML"
    path.write_text(_replace_binary(sample_mzml, 2, bomb))
    tracemalloc.start()
    try:
        lib = read_library(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(lib) == 9
    (skipped,) = lib.report.skipped
    assert skipped.record == 2 and "defaultArrayLength" in skipped.reason
    assert peak < 32 * 2**20


# -- small inputs, large costs -----------------------------------------------------------


def test_gzip_bomb_is_refused_with_one_line(tmp_path):
    """Before: a 5.2 MB .gz exhausted 9 GB; now decompression stops at the cap."""
    path = tmp_path / "bomb.mgf.gz"
    with gzip.open(path, "wb", compresslevel=9) as fh:
        block = b"\0" * 2**20
        for _ in range(200):  # 200 MiB of zeros, about 200 KB compressed
            fh.write(block)
    tracemalloc.start()
    with pytest.raises(SpectrumFileError, match="gzip bomb") as info:
        read_library(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert path.name in str(info.value) and "\n" not in str(info.value)
    assert peak < 200 * 2**20  # stopped at the 64 MiB floor, well before the full output
    assert MAX_GZIP_RATIO >= 20  # real spectrum text (4-10x) is never refused


def test_real_gzip_library_is_not_refused(data_dir):
    lib = read_library(data_dir / "massbank_ms2_queries.mgf.gz")
    assert len(lib) == 1000


@pytest.mark.slow
def test_distinct_keys_per_record_cost_memory_in_proportion(tmp_path):
    """Before: a 0.97 MB MGF with a key of its own per record took 1.93 GB and 36 s."""
    n = 8000
    records = [(f"r{i}", f"UNIQUE_KEY_{i}=value {i}\nCOMMON=c{i}\n") for i in range(n)]
    path = tmp_path / "keys.mgf"
    path.write_text(_mgf(*records))
    tracemalloc.start()
    lib = read_library(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(lib) == n
    assert peak < 100 * 2**20  # dense columns: 8000 x 8000 cells, over 500 MB
    assert lib.metadata["common"][5] == "c5"
    assert json.loads(lib.metadata["other_metadata"][7]) == {"unique_key_7": "value 7"}
    assert len(lib.metadata) < 20


def test_fifo_is_refused_instead_of_hanging(tmp_path):
    path = tmp_path / "pipe.mgf"
    os.mkfifo(path)
    result: list[BaseException] = []

    def read() -> None:
        try:
            read_library(path)
        except BaseException as exc:  # noqa: BLE001
            result.append(exc)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(30)
    if thread.is_alive():  # unblock the reader so the test process can end
        with open(path, "wb"):
            pass
        pytest.fail("reading a FIFO blocked")
    assert isinstance(result[0], SpectrumFileError)
    assert "not a regular file" in str(result[0])


# -- silent wrong input ------------------------------------------------------------------


def test_msp_decimal_commas_give_the_right_numbers(tmp_path):
    """Before: ``85,0284 100`` became m/z 85 and 284 with a mere 'repaired' note."""
    path = tmp_path / "comma.msp"
    path.write_text(
        "Name: comma\nPrecursorMZ: 181,0707\nNum Peaks: 3\n"
        '85,0284 100\n109,0284\t12,5\n163,0601 7 "annotation"\n\n'
        "Name: plain\nPrecursorMZ: 181.07\nNum Peaks: 2\n85,100\n109 12\n",
        encoding="utf-8",
    )
    lib = read_library(path)
    np.testing.assert_array_equal(lib.peaks(0)[0], [85.0284, 109.0284, 163.0601])
    np.testing.assert_array_equal(lib.peaks(0)[1], [100, 12.5, 7])
    assert lib.precursor_mz[0] == pytest.approx(181.0707)
    np.testing.assert_array_equal(lib.peaks(1)[0], [85, 109])  # comma as the separator
    assert "decimal comma" in lib.report.issues[0].reason


def test_one_invalid_byte_does_not_turn_the_file_into_latin1(tmp_path):
    """Before: one bad byte re-decoded every UTF-8 name as Latin-1 mojibake."""
    text = _mgf(("Æsculin β-glucoside", ""), ("caf\x00", ""), ("last", ""))
    data = text.encode("utf-8").replace(b"caf\x00", b"caf\xe9")  # one cp1252/Latin-1 byte
    path = tmp_path / "mixed.mgf"
    path.write_bytes(data)
    lib = read_library(path)
    assert list(lib.metadata["title"]) == ["Æsculin β-glucoside", "café", "last"]
    assert any("not UTF-8" in note for note in lib.report.notes)


def test_cp1252_ellipsis_does_not_split_lines(tmp_path):
    """Before: byte 0x85 (cp1252 '…') decoded as U+0085, which str.splitlines splits at."""
    data = _mgf(("first", ""), ("name with XX end", ""), ("third", "")).encode("ascii")
    path = tmp_path / "ellipsis.mgf"
    path.write_bytes(data.replace(b"XX", b"\x85"))
    lib = read_library(path)
    assert list(lib.metadata["title"]) == ["first", "name with … end", "third"]
    assert not lib.report.skipped
    msp = tmp_path / "ellipsis.msp"
    msp.write_bytes(b"Name: a\x85b\nPrecursorMZ: 100\nNum Peaks: 1\n50 1\n")
    assert read_library(msp).metadata["name"][0] == "a…b"


def test_decode_and_split_helpers():
    assert decode_text("β".encode() + b"\x85")[0] == "β…"
    assert decode_text(b"plain")[1] == 0
    assert split_lines("a\u0085b\u2028c\r\nd\re") == ["a\u0085b\u2028c", "d", "e"]
