"""MoNA records read by typed decoding give exactly the reference reader's library.

Titles, precursors, charges and ion modes are settled in batches; records that
are not settled go the record-by-record way.  Seeded files of real MoNA records
with the entries that matter to that work (``title``, ``id``, ``name``,
``inchikey``, ``precursor m/z``, ``charge``, ``ms level`` ... with usable,
missing and odd values, in the record's and in the compound's ``metaData``) are
read both ways and compared bit for bit, and the typed path is checked to read them.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from engine.io import read_library
from engine.io import spectra_json_fast as typed
from tests.test_json_fast import FORMATS, _assert_same

pytest.importorskip("msgspec")

_NAMES = ["title", "id", "name", "inchikey", "InChI", "SMILES", "precursor m/z", "charge"]
_NAMES += ["ms level", "precursor type", "ionization mode", "instrument", "Retention Time"]
_NAMES += ["compound name", "ID", " Title ", "mass/charge", ""]
_VALUES = ["abc", "  x y  ", "N/A", "", " nan ", "NULL", None, True, 2, -0.0, 181.07, 1e300]
_VALUES += ["[M+H]+", "[M-2H]2-", "positive", "NEGATIVE", "2+", "-1", "300", "0"]
_PRECURSORS = ["181.1 (M+H)", " 181.1 ", "1_0", "-5", "0", "inf", "abc", "", 181.07, 7]
_LEVELS = ["MS2", "MS3", "2", "ms 2", "MSn", "x", "", 2, 3]


def _entry(name: object, value: object) -> dict:
    return {"category": "none", "computed": False, "name": name, "value": value}


def _pick(pool: list, rng: np.random.Generator) -> object:
    return pool[int(rng.integers(len(pool)))]


def _record(base: dict, rng: np.random.Generator, k: int) -> dict:
    record = copy.deepcopy(base)
    record["id"] = _pick([f"r{k}", f"r{k}", "", " n/a ", None, k], rng)
    compound = record["compound"][0]
    if rng.random() < 0.3:
        compound["names"] = _pick([[], [{"name": "N/A"}], [{"name": f" c{k} "}], [{}]], rng)
    if rng.random() < 0.2:
        compound.pop("inchi", None)
        compound["inchiKey"] = _pick(["KEY", "", None, "null"], rng)
    for _ in range(int(rng.integers(0, 4))):
        target = record["metaData"] if rng.random() < 0.7 else compound["metaData"]
        name = _pick(_NAMES, rng)
        value = _pick(_VALUES, rng)
        if name == "precursor m/z":
            value = _pick(_PRECURSORS, rng)
        elif name == "ms level":
            value = _pick(_LEVELS, rng)
        target.insert(int(rng.integers(len(target) + 1)), _entry(name, value))
    if rng.random() < 0.05:  # a key of its own (other_metadata)
        record["metaData"].append(_entry(f"note {k}", f"v{k}"))
    if rng.random() < 0.05:
        record["compound"] = []
    if rng.random() < 0.03:
        record["spectrum"] = _pick(["100:0 50:1", "200:1 100:2", "1_0:5", "", "100:5 100:6"], rng)
    return record


@pytest.mark.parametrize("seed", range(4))
def test_seeded_metadata_reads_the_same(tmp_path, monkeypatch, seed):
    """Many records per key set, odd entries among them: fast equals reference."""
    read: list[bool] = []
    real = typed._read_mona
    monkeypatch.setattr(typed, "_read_mona", lambda *a: read.append(real(*a)) or read[-1])
    rng = np.random.default_rng(20261127 + seed)
    records = json.loads((FORMATS / "mona.json").read_text(encoding="utf-8"))
    items = [_record(records[k % len(records)], rng, k) for k in range(400)]
    path = tmp_path / f"mona{seed}.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    _assert_same(path)
    assert read == [True]


def test_the_mona_file_is_read_in_one_batch(monkeypatch):
    """Every record of the MoNA test file is settled in the batch."""
    batches: list[int] = []
    real = typed._flush

    def spy(builder: object, batch: list, *args: object) -> None:
        batches.append(len(batch))
        real(builder, batch, *args)

    monkeypatch.setattr(typed, "_flush", spy)
    library = read_library(FORMATS / "mona.json", parser="fast")
    assert [b for b in batches if b] == [5] and len(library) == 5


_SMALL = {
    "no-string-peaks": '[{"id": "n", "spectrum": 5}, {"spectrum": null}]',
    "empty-peaks": '[{"id": "n", "spectrum": ""}]',
    "unreadable-peaks": '[{"id": "n", "spectrum": "x:y"}, {"spectrum": "1_0:5"}]',
    "one": '[{"id": "n", "spectrum": "100:1"}]',
    "ms3": '[{"spectrum": "100:1", "metaData": [{"name": "ms level", "value": "MS3"}]}]',
    "precursor": '[{"spectrum": "1:1", "metaData": [{"name": "precursor m/z", "value": "x"}]}]',
    "escaped-peaks": '[{"spectrum": "100:1\\t200:2"}, {"spectrum": "100:1\\u0020200:2 3:4"},'
    ' {"spectrum": "1\\u0030:5"}, {"spectrum": "\\"1:2\\""}, {"spectrum": "1:2\\n"}]',
    "non-string-peaks": '[{"spectrum": ["1:2"]}, {"spectrum": {"a": 1}}, {"spectrum": true},'
    ' {"spectrum": "1:2"}, {"spectrum": -0.0}, {"spectrum": "x", "spectrum": "5:6"}]',
    "utf8-peaks": '[{"spectrum": "100:1\u00a0200:2"}, {"spectrum": "\u0663:5"},'
    ' {"spectrum": "1:1"}]',
    "title-id": '[{"id": " ", "spectrum": "1:1", "metaData": [{"name": "Title", "value": "t"},'
    ' {"name": "id", "value": "i"}, {"name": "name", "value": "N/A"}]}]',
}


@pytest.mark.parametrize("name", sorted(_SMALL))
def test_small_documents_read_the_same(tmp_path, name):
    """No record read, records settled one by one, peak strings with escapes or not strings."""
    path = tmp_path / f"{name}.json"
    path.write_text(_SMALL[name], encoding="utf-8")
    _assert_same(path)
