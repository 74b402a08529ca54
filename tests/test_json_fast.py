"""The fast library JSON reader gives exactly the reference reader's library.

Every JSON file of the repository is read both ways and compared array by array
(bit for bit), column by column and issue by issue; so are files of real GNPS
and MoNA records whose peak strings and metadata values are replaced, with a
seeded generator, by legal, odd and broken ones.  ``SIMMS_MATCHMS_TESTDATA`` may
name matchms's ``tests/testdata`` folder (not part of the project) to compare its
JSON files too.
"""

from __future__ import annotations

import copy
import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from engine.io import SpectrumFileError, read_library
from engine.library import SpectrumLibrary
from tests.same_library import assert_same_library

ROOT = Path(__file__).resolve().parents[1]
FORMATS = ROOT / "tests" / "data" / "formats"


def _json_files() -> list[Path]:
    found = [*(ROOT / "tests" / "data").rglob("*.json")]
    testdata = os.environ.get("SIMMS_MATCHMS_TESTDATA")
    if testdata:
        found += Path(testdata).glob("*.json")
    return sorted(found)


def _assert_same(path: Path) -> None:
    out: list[object] = []
    for parser in ("fast", "reference"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out.append(read_library(path, parser=parser, format="json"))
            except SpectrumFileError as exc:
                out.append(str(exc))
    fast, reference = out
    if isinstance(reference, str):
        assert fast == reference
    else:
        assert isinstance(fast, SpectrumLibrary), fast
        assert_same_library(fast, reference)


@pytest.mark.parametrize("path", _json_files(), ids=lambda p: p.name)
def test_every_json_file_reads_the_same(path):
    _assert_same(path)


#: GNPS ``peaks_json`` strings: plain, spaced, integers, exponents, -0, numbers only
#: float() can read exactly, and broken ones (JSON that is not pairs, not JSON at all).
_GNPS_PEAKS = [
    "[[70.786774, 213.612045], [72.976173, 241.782242]]",
    "[[70.786774,213.612045],[72.976173,241.782242]]",
    " [ [ 70.5 ,\t1 ] ,\n[ 80 , 2.0 ] ] ",
    "[[100, 5], [200, 10]]",
    "[[1e2, 5E-1], [2.5e+2, 1]]",
    "[[-0, 1], [-0.0, 2], [0, 3], [-0e0, 4]]",
    "[[0.30000000000000004, 1], [123456789012345678901, 2]]",
    "[[1.7976931348623157e308, 1], [5e-324, 2], [1e400, 3]]",
    "[[100, 5, 7]]",
    "[[100]]",
    "[]",
    "[[]]",
    "",
    "[[100, 5],]",
    "[[100, 5]] x",
    "[[01, 5]]",
    "[[1., 5]]",
    "[[.5, 5]]",
    "[[+1, 5]]",
    "[[NaN, 5], [Infinity, -Infinity]]",
    "[[true, 5]]",
    '[["100", "5"]]',
    "[[100, 5], [200, null]]",
    "[[1e, 5]]",
    "[[100, 5]",
    "[[100; 5]]",
    "[[1" + "0" * 400 + ", 5]]",
    "[[100, 5], [-3, -4]]",
    "[[70.786774, 213.612045]]\u00a0",
]
#: MoNA ``spectrum`` strings, the same way.
_MONA_PEAKS = [
    "70.786774:213.612045 72.976173:241.782242",
    "  70.5:1\t80:2.0\n90:3  ",
    "100:5 200:10",
    "1e2:5E-1 2.5e+2:1",
    "-0:1 +5:2 .5:3 5.:4",
    "0.30000000000000004:1 123456789012345678901:2",
    "1e400:1 1e-400:2",
    "100:5:7",
    "100",
    "100:",
    ":5",
    "",
    "   ",
    "100:5 x",
    "nan:5 inf:1",
    "1_0:5",
    "100,5:1",
    "100:5\u00a0200:6",
    "100:5\x1c200:6",
    "100:5\u3000200:6",
    "٣:5",
    "1" + "0" * 400 + ":5",
]
#: Metadata values: missing markers, white space, numbers, lists, nested, null, bool.
_VALUES = ["N/A", "  ", "", " nan ", "None", "null", 183.057, 2, True, None, [1], {"a": 1}]
_VALUES += ["  [M-H]-  ", "negative", "Positive", "2+", "-1", "abc", "ms2", "MS1", "3"]


def _mutated(records: list[dict], key: str, pool: list, rng: np.random.Generator) -> list:
    out = []
    for _ in range(40):
        record = copy.deepcopy(records[int(rng.integers(len(records)))])
        if rng.random() < 0.8:
            record[key] = pool[int(rng.integers(len(pool)))]
        for _ in range(int(rng.integers(0, 3))):
            value = _VALUES[int(rng.integers(len(_VALUES)))]
            if "peaks_json" in record:
                names = ["Precursor_MZ", "Ion_Mode", "Adduct", "Charge", "Compound_Name"]
                names += ["ms_level", "SMILES", " Smiles ", "INCHI", "spectrum_id", "Extra"]
                record[names[int(rng.integers(len(names)))]] = value
            else:
                names = ["precursor m/z", "ionization mode", "precursor type", "ms level"]
                names += ["charge", "SMILES", "", "a/b c", "/", "instrument"]
                entry = {"name": names[int(rng.integers(len(names)))], "value": value}
                if rng.random() < 0.2:
                    entry["name"] = value
                record.setdefault("metaData", []).append(entry)
        out.append(record)
    return out


@pytest.mark.parametrize("flavour", ["gnps", "mona"])
def test_odd_records_read_the_same(tmp_path, flavour):
    """Seeded files of real records with odd peak strings and values: fast equals reference."""
    rng = np.random.default_rng(20261126 + len(flavour))
    records = json.loads((FORMATS / f"{flavour}.json").read_text(encoding="utf-8"))
    key, pool = ("peaks_json", _GNPS_PEAKS) if flavour == "gnps" else ("spectrum", _MONA_PEAKS)
    for k in range(30):
        items: list = _mutated(records, key, pool, rng)
        if k % 5 == 0:
            items += [None, 3, "text", [], {"name": "x"}, {key: [[100, 5], [200, 6]]}]
            items += [{key: 7}, {"peaks_json": [[1, 2, 3]]}, {"spectrum": ["1:2"]}]
        order = rng.permutation(len(items))
        path = tmp_path / f"{flavour}{k}.json"
        text = json.dumps([items[i] for i in order], ensure_ascii=bool(k % 2))
        path.write_text(text, encoding="utf-8")
        _assert_same(path)


def test_one_object_and_broken_documents_read_the_same(tmp_path):
    record = json.loads((FORMATS / "gnps.json").read_text(encoding="utf-8"))[0]
    for k, text in enumerate([json.dumps(record), "[1, 2", "{}", "[]", '"text"', "[" * 5000]):
        path = tmp_path / f"doc{k}.json"
        path.write_text(text, encoding="utf-8")
        _assert_same(path)
