"""MoNA JSON read by typed decoding gives exactly the reference reader's library.

The typed path (:mod:`engine.io.spectra_json_fast`) must read the MoNA test file
and the seeded odd MoNA files itself (not hand them back), give up on documents
that do not fit its schema or that :func:`json.loads` reads differently, and
decode numbers exactly as :func:`json.loads` does.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engine.io import spectra_json_fast as typed
from engine.io._build import LibraryBuilder
from tests.test_json_fast import FORMATS, _assert_same

msgspec = pytest.importorskip("msgspec")


def _records() -> list[dict]:
    return json.loads((FORMATS / "mona.json").read_text(encoding="utf-8"))


def _reads(text: str) -> bool:
    return typed._read_mona(text, LibraryBuilder(Path("x.json"), "json"))


def test_the_mona_file_is_read_by_the_typed_path():
    assert _reads((FORMATS / "mona.json").read_text(encoding="utf-8"))
    assert not _reads((FORMATS / "gnps.json").read_text(encoding="utf-8"))


def _variants() -> list[tuple[str, str, bool]]:
    """(name, document, read by the typed path) of MoNA documents, odd ones included."""
    records = _records()
    first = json.dumps(records[0])
    body = ", ".join(json.dumps(r) for r in records)
    extra = '{"name": "precursor m/z", "value": %s}'
    nested = '{"names": [{}], "inchi": [1]}'
    out = [("plain", f"[{body}]", True)]
    for name, number in [("nan", "NaN"), ("inf", "Infinity"), ("overflow", "1e400")]:
        entry = extra % number
        out.append((name, f'[{{"metaData": [{entry}], "spectrum": "100:1"}}, {body}]', False))
    for name, number in [("bigint", "1" + "0" * 30), ("tiny", "1e-400"), ("neg0", "-0.0")]:
        entry = extra % number
        out.append((name, f'[{{"metaData": [{entry}], "spectrum": "100:1"}}, {body}]', True))
    out += [
        ("object", first, False),
        ("mixed", f'[{body}, {{"peaks_json": "[[100, 1]]", "spectrum": "1:1"}}]', False),
        ("compound-object", f'[{body}, {{"compound": {{}}, "spectrum": "1:1"}}]', False),
        ("entry-string", f'[{body}, {{"metaData": ["x"], "spectrum": "1:1"}}]', False),
        ("record-null", f"[{body}, null]", False),
        ("duplicate", f'[{body}, {{"spectrum": "1:1", "spectrum": "100:2", "id": "d"}}]', True),
        ("no-peaks", f'[{body}, {{"id": "n", "Compound_Name": "t"}}, {{"spectrum": 5}}]', True),
        ("unicode", f'[{body}, {{"spectrum": "1:1 \u0663:2", "id": "\\u00e9 x"}}]', True),
        ("empty-lists", f'[{body}, {{"compound": [], "metaData": [], "spectrum": "1:1"}}]', True),
        ("nested", f'[{body}, {{"compound": [{nested}], "spectrum": "1:1"}}]', True),
        ("broken", f"[{body}", False),
    ]
    return out


@pytest.mark.parametrize("case", _variants(), ids=lambda c: c[0])
def test_odd_mona_documents_read_the_same(tmp_path, case):
    name, text, fits = case
    assert _reads(text) == fits
    path = tmp_path / f"{name}.json"
    path.write_text(text, encoding="utf-8")
    _assert_same(path)


def test_numbers_decode_as_json_loads_decodes_them():
    """Seeded floats and ints written many ways: the typed decoder gives json.loads's values."""
    rng = np.random.default_rng(20261126)
    values = rng.standard_normal(3000) * 10.0 ** rng.integers(-320, 300, 3000)
    texts = [repr(float(v)) for v in values if np.isfinite(v)]
    texts += [f"{float(v):.17e}" for v in values[:500] if np.isfinite(v)]
    texts += [f"{float(v):.6g}".upper() for v in values[:500] if np.isfinite(v)]
    texts += [str(int(v)) for v in rng.integers(-(2**62), 2**62, 500)]
    texts += ["0", "-0", "0.0", "-0.0", "1E+2", "5e-324", "2.2250738585072011e-308"]
    texts += ["179769313486231570" + "0" * 291, "123456789012345678901234567890"]
    document = "[" + ", ".join(f'{{"name": "x", "value": {t}}}' for t in texts) + "]"
    decoded = msgspec.json.Decoder(list[typed._Entry]).decode(document)
    expected = json.loads(document)
    for got, want in zip(decoded, expected, strict=True):
        assert type(got.value) is type(want["value"])
        assert repr(got.value) == repr(want["value"])


@pytest.mark.parametrize("flavour", ["gnps", "mona"])
def test_bom_and_stray_bytes_read_the_same(tmp_path, flavour):
    """Content read from bytes: a UTF-8 BOM and a byte that is not UTF-8 (cp1252 0xe9)."""
    text = (FORMATS / f"{flavour}.json").read_text(encoding="utf-8")
    data = text.encode("utf-8")
    first = data.index(b'"', data.index(b"{") + 2) + 1  # inside the first key's value or name
    for k, content in enumerate([b"\xef\xbb\xbf" + data, data[:first] + b"\xe9" + data[first:]]):
        path = tmp_path / f"{flavour}{k}.json"
        path.write_bytes(content)
        _assert_same(path)
