"""The fast MSP reader gives exactly the reference (line by line) reader's library.

Every MSP file of the repository and of ../shared/data is read both ways and
compared array by array (bit for bit), column by column and issue by issue; so
are files made of real records and of lines of every kind the reader meets
(legal, odd and broken), shuffled together with a seeded generator, with each
of the three line ends.  ``SIMMS_MATCHMS_TESTDATA`` may name matchms's
``tests/testdata`` folder (not part of the project) to compare its files too.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from engine.io import SpectrumFileError, msp_scan, read_library
from engine.library import SpectrumLibrary
from tests.same_library import assert_same_library

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def _msp_files() -> list[Path]:
    found = [*DATA.glob("*.msp*"), *(ROOT / "tests" / "data").rglob("*.msp*")]
    testdata = os.environ.get("SIMMS_MATCHMS_TESTDATA")
    if testdata:
        found += [*Path(testdata).glob("*.msp"), *Path(testdata).glob("*.msl")]
    return sorted(found)


def _both(path: Path) -> list[object]:
    """Each parser's library, or its error message."""
    out: list[object] = []
    for parser in ("fast", "reference"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out.append(read_library(path, parser=parser, format="msp"))
            except SpectrumFileError as exc:
                out.append(str(exc))
    return out


def _assert_same(path: Path) -> None:
    fast, reference = _both(path)
    if isinstance(reference, str):
        assert fast == reference
    else:
        assert isinstance(fast, SpectrumLibrary), fast
        assert_same_library(fast, reference)


@pytest.mark.parametrize("path", _msp_files(), ids=lambda p: p.name)
def test_every_msp_file_reads_the_same(path):
    _assert_same(path)


def test_the_real_files_take_the_fast_path():
    """The plain records of real files are read by the scanner, not handed back."""
    for name in ("nist.msp", "massbank.msp", "mona.msp", "riken.msp", "golm.msp"):
        data = (ROOT / "tests" / "data" / "formats" / name).read_bytes()
        kinds = msp_scan.scan_msp(np.frombuffer(data, np.uint8))[0]
        assert (kinds == msp_scan.FAST).sum() == 5 and (kinds == msp_scan.SLOW).sum() == 0, name


#: Lines of every kind: keys (plain, special, odd white space, non-ASCII), peak lines
#: (plain, annotated, pairs, GOLM colons, MSL parentheses, decimal commas, numbers
#: only float() can read, broken) and others (blank, white space only, stray text).
_LINES = [
    "Name: Caffeine",
    "NAME: α-Pinene",
    "name:β",
    "Name:",
    "Synon: 1,3,7-trimethylxanthine",
    "Synon: $:00in-source",
    "DB#: PS010904",
    "PrecursorMZ: 195.0877",
    "PRECURSORMZ: 195,0877",
    "Precursor_MZ: abc",
    "Ion_mode: NEGATIVE",
    "Precursor_type: [M+2H]2+",
    "Charge: 250",
    "Charge: 99999999999999999999999",
    "Charge: " + "9" * 5000,
    'Comments: "SMILES=CCO" "precursor m/z=100.5" computed="yes"',
    "Comment: Parent=428.31",
    "  Formula :  C8H10N4O2  ",
    "Formula\t:\tC8H10N4O2\t",
    "Instrument: Orbitrap\u00a0",
    "Instrument:\u00a0Orbitrap",
    "Key\x0b: value",
    "Ke\x0by: va\x0blue",
    "Licence: CC BY — Éric",
    "#comment: with a hash",
    ":no key",
    "Num Peaks: 3",
    "Num peaks: 0",
    "NUM_PEAKS: 2",
    "numpeaks: x",
    "Num Peaks: 5",
    "123.4 100",
    "123.4\t100",
    "  77.0386 12.5  ",
    "85 100; 86 50;",
    "85 100;86 50",
    '85.0284 999 "C5H5+"',
    '85.0284 999 "p-CH3/2.1; x"',
    '85.0284 999 "unclosed',
    "85:201 86:55 87:10",
    "85 100 86 50",
    "85 100 86",
    "(85 100) (86 50)",
    "85,0284 100",
    "85,0284\t12,5",
    "85,100",
    "1e2 5E-1",
    "1.5e+02 -3",
    "0.1234567890123456789012 7",
    "123456789012345678901 2",
    "1e400 1",
    "5e-400 1",
    ".5 .25",
    "5. 2.",
    "-0 1",
    "85 -0.0",
    "85 +5",
    "85 inf",
    "85 1_0",
    "85 nan",
    "85 1e",
    ". 5",
    "85",
    "85 100 x",
    "",
    "   ",
    "\t",
    "\x0c",
    "\u3000",
    "stray text",
    "\ufeffName: bom",
]


def _fuzz_files(tmp_path: Path, count: int, rng: np.random.Generator) -> list[Path]:
    records = (DATA / "sample.msp").read_text(encoding="utf-8").split("\n\n")
    paths = []
    for k in range(count):
        parts: list[str] = []
        for _ in range(int(rng.integers(1, 6))):
            if rng.random() < 0.4:
                parts += records[int(rng.integers(len(records)))].strip("\n").split("\n")
            else:
                lines = rng.choice(len(_LINES), size=int(rng.integers(1, 12)))
                parts += [_LINES[i] for i in lines]
            if rng.random() < 0.7:
                parts.append("")
        end = ("\n", "\r\n", "\r")[k % 3]
        text = end.join(parts) + (end if rng.random() < 0.5 else "")
        path = tmp_path / f"fuzz{k}.msp"
        path.write_bytes(text.encode("utf-8"))
        paths.append(path)
    return paths


def test_mixed_lines_read_the_same(tmp_path):
    """Seeded random files of real records and odd lines: fast equals reference."""
    rng = np.random.default_rng(20261126)
    for path in _fuzz_files(tmp_path, 400, rng):
        _assert_same(path)


def test_many_records_and_numbers_for_float(tmp_path):
    """Enough records, keys and peaks to grow every output; numbers left to float()."""
    record = (
        'Name: compound {i}\nPrecursorMZ: {i}.5\nComments: "x={i}"\nNum Peaks: 3\n'
        "0.12345678901234567890 1\n{i}.25 2e30\n{i}.5 3.000000000000000000001\n\n"
    )
    path = tmp_path / "many.msp"
    path.write_text("".join(record.format(i=i + 1) for i in range(3000)), encoding="utf-8")
    fast, reference = _both(path)
    assert len(reference) == 3000
    assert_same_library(fast, reference)


def test_bytes_that_are_not_utf8_read_the_same(tmp_path):
    path = tmp_path / "cp1252.msp"
    path.write_bytes(b"Name: caf\xe9\nPrecursorMZ: 100\nNum Peaks: 1\n50 1\n\nName: b\x85\n60 2\n")
    _assert_same(path)
