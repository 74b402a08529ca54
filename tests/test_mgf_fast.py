"""The fast MGF reader gives exactly the reference (pyteomics) reader's library.

Every MGF file of the repository and of ../shared/data is read both ways and
compared array by array (bit for bit), column by column and issue by issue;
then real spectra are written out again with awkward but legal formatting
(and some illegal lines) and compared the same way.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from engine.io import (
    LoadCancelled,
    SpectrumFileError,
    load_library,
    mgf_fast,
    mgf_scan,
    read_library,
)
from engine.io import _build as build_module
from engine.io import reader as reader_module
from engine.io import stream as stream_module
from engine.library import SpectrumLibrary
from tests.same_library import assert_same_library

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
CORPUS = Path(__file__).parent / "data" / "malformed"

_READ = mgf_fast._read


def _mgf_files() -> list[Path]:
    found = [*DATA.glob("*.mgf*"), *(ROOT / "resources").glob("*.mgf")]
    found += (ROOT / "tests" / "data").rglob("*.mgf*")
    return sorted(found)


def _read(path: Path, parser: str) -> object:
    try:
        return read_library(path, parser=parser)
    except SpectrumFileError as exc:
        return str(exc)


#: Reference libraries of the files that do not change, read once.
_REFERENCES: dict[Path, object] = {}


def _reference(path: Path) -> object:
    if path not in _REFERENCES:
        _REFERENCES[path] = _read(path, "reference")
    return _REFERENCES[path]


def _both(path: Path) -> tuple[object, object]:
    """Each parser's library, or its error message."""
    reference = _reference(path) if path.is_relative_to(ROOT.parent) else _read(path, "reference")
    return _read(path, "fast"), reference


def _assert_same(path: Path) -> SpectrumLibrary | None:
    fast, reference = _both(path)
    if isinstance(reference, str):
        assert fast == reference
        return None
    assert_same_library(fast, reference)
    return fast


@pytest.mark.slow
@pytest.mark.parametrize("path", _mgf_files(), ids=lambda p: p.name)
def test_every_mgf_file_of_the_repository(path):
    _assert_same(path)


def _tiny_chunks(monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    """Read in blocks of ``block`` bytes, parse a chunk at every record start possible.

    The format is told from the first block, and every file goes through the stream.
    """
    monkeypatch.setattr(stream_module, "BLOCK_BYTES", block)
    monkeypatch.setattr(reader_module, "_HEAD_BYTES", 1)
    monkeypatch.setattr(mgf_fast, "CHUNK_BYTES", 1)
    monkeypatch.setattr(build_module._Growing, "BLOCK", 7)  # peaks kept in many blocks


@pytest.mark.slow
@pytest.mark.parametrize("path", _mgf_files(), ids=lambda p: p.name)
def test_every_mgf_file_read_in_tiny_chunks(monkeypatch, path):
    """Records, lines and numbers across many block and chunk edges give the same library."""
    calls = []
    monkeypatch.setattr(mgf_fast, "_read", lambda *a: calls.append(1) or _READ(*a))
    _tiny_chunks(monkeypatch, 97 if path.stat().st_size < 2**22 else 2**16)
    _assert_same(path)
    if path.stat().st_size > 4096:
        assert len(calls) > 10  # really read in many chunks


def test_files_are_found():
    names = {p.name for p in _mgf_files()}
    assert {"mixed.mgf", "demo_library.mgf"} <= names
    if DATA.is_dir():
        assert {"massbank_ms2.mgf.gz", "pesticides.mgf"} <= names


def test_real_records_take_the_fast_path(monkeypatch):
    """The reference parser is only called for records the fast path cannot prove."""
    if not DATA.is_dir():
        pytest.skip("../shared/data not present")
    calls = []
    original = mgf_fast.read_block
    monkeypatch.setattr(mgf_fast, "read_block", lambda *a: calls.append(a[2]) or original(*a))
    lib = read_library(DATA / "massbank_ms2_queries.mgf.gz")
    assert len(lib) == 1000 and len(calls) < 20
    calls.clear()
    read_library(DATA / "pesticides.mgf")
    assert calls == []


# -- the malformed corpus and the hostile inputs, as bytes ------------------------------

GOOD = b"BEGIN IONS\nTITLE=a\nPEPMASS=100\n10 1\n20 2\nEND IONS\n"
MIXED = (CORPUS / "mixed.mgf").read_bytes()


def _record(title: str, extra: str = "", peaks: str = "50 1\n60 2\n") -> str:
    return f"BEGIN IONS\nTITLE={title}\nPEPMASS=100\n{extra}{peaks}END IONS\n"


BYTE_CASES = {
    "crlf": MIXED.replace(b"\n", b"\r\n"),
    "bom_crlf": b"\xef\xbb\xbf" + MIXED.replace(b"\n", b"\r\n"),
    "lone_cr": MIXED.replace(b"\n", b"\r"),
    "double_bom": b"\xef\xbb\xbf\xef\xbb\xbf" + GOOD + b"\xe9",
    "gzip": gzip.compress(MIXED),
    "unterminated": GOOD + b"BEGIN IONS\nTITLE=cut\nPEPMASS=5\n10 1\n",
    "header": b"IONMODE=negative\nCHARGE=1\nPEPMASS=7\nRTINSECONDS=5\n" + GOOD,
    "header_bad_charge": b"CHARGE=abc\n" + GOOD * 2,
    "header_bad_rt": b"RTINSECONDS=zz\n" + GOOD,
    "header_bad_pepmass": b"PEPMASS=x\nCHARGE=2+\n" + GOOD,
    "huge_charges": "".join(
        _record(t, f"CHARGE={c}\n")
        for t, c in [
            ("a", "40000+"),
            ("b", "99999999999999999999-"),
            ("c", "2+"),
            ("d", "1" * 5000),
        ]
    ).encode(),
    "charge_lists": "".join(
        _record(t, f"CHARGE={c}\n") for t, c in [("a", "2+ and 3+"), ("b", "1+,2+"), ("c", "+")]
    ).encode(),
    "cp1252": _record("caf\x00").encode().replace(b"\x00", b"\xe9") + _record("é β").encode(),
    "ellipsis": _record("name XX end").encode().replace(b"XX", b"\x85"),
    "non_ascii_lines": _record("x", "\u00a0KEY=v\n\u2028\n", "50 1\u00a0\n").encode(),
    "long_digits": _record("d", "", "1" * 100_000 + " 1\n50 1." + "0" * 3000 + "1\n").encode(),
    "markers_inside": (
        b"BEGIN IONS\nTITLE=m\n10 1\nEND IONS\x0c\n20 2\nEND IONS\n"
        b" BEGIN IONS \t\r\nTITLE=n\n10 1\n\tEND IONS\t\r\n"
        b"BEGIN IONS\rTITLE=o\r10 1\rEND IONS\r\n"
    ),
    "empty_records": b"BEGIN IONS\nEND IONS\nBEGIN IONS\nTITLE=x\nEND IONS\n" + GOOD,
    "no_markers": b"TITLE=x\n10 1\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BYTE_CASES))
def test_byte_level_cases(tmp_path, name):
    path = tmp_path / f"{name}.mgf"
    path.write_bytes(BYTE_CASES[name])
    _assert_same(path)


@pytest.mark.parametrize("block", [1, 5, 64])
@pytest.mark.parametrize("name", sorted(BYTE_CASES))
def test_byte_level_cases_in_tiny_chunks(tmp_path, monkeypatch, name, block):
    """Edges inside CRLF pairs, BOMs, multi-byte characters and markers change nothing."""
    path = tmp_path / f"{name}.mgf"
    path.write_bytes(BYTE_CASES[name] * 3)
    _tiny_chunks(monkeypatch, block if len(BYTE_CASES[name]) < 10_000 else 4096 * block)
    _assert_same(path)


# -- real spectra, written with edge formatting -----------------------------------------


def _number(rng: np.random.Generator, value: float) -> str:
    style = rng.integers(400) % 10
    if style == 0:
        return f"{value:.6e}"
    if style == 1:
        return f"{value:E}"
    if style == 2:
        return f"{value:.17g}"
    if style == 3:
        return f"+{value:.4f}" if value >= 0 else f"{value:.4f}"
    if style == 4:
        return f"{value:.10f}".rstrip("0")  # may end with "."
    if rng.random() < 0.002:
        return f"{value:.25f}"  # too many digits for the fast conversion
    return repr(float(value))


def _peak_line(rng: np.random.Generator, mz: float, intensity: float) -> str:
    gap = ["\t", " ", "  ", " \t "][rng.integers(4)]
    tail = ["", " ", "\t", "  \t"][rng.integers(4)]
    lead = ["", "", " ", "\t"][rng.integers(4)]
    return f"{lead}{_number(rng, mz)}{gap}{_number(rng, intensity)}{tail}"


ODD_PEAK_LINES = [
    "100.5",  # no intensity column: the reference skips the record
    "100.5 20 1+",  # third column
    "100.5 1/2",
    "inf 3",
    "100.5 nan",
    "1_00.5 3",
    "100.5 3,5",
    "0x10 3",
    "100.5 -0",
    "-0.0 5",
    ".5 2",
    "5. 2",
    "1e400 1",
    "1e-400 1",
    "100.5\x0b3",
]
ODD_PARAM_LINES = [
    "TITLE = spaced key",
    "  IONMODE=Negative  ",
    "charge=2-",
    "CHARGE=3",
    "PEPMASS=250.1 1200",
    "PEPMASS=250.1 1200 2+",
    "PEPMASS=",
    "RTINSECONDS=12.50",
    "RTINSECONDS=abc",
    "NAME=x=y",
    "SPECTRUMID=",
    "=no key",
    "ION_MODE=neg",
    "COMMENT=Ärger “quoted” …",
    "OWN_KEY_{i}=rare",
]


def _spectrum_text(rng: np.random.Generator, lib: SpectrumLibrary, i: int) -> str:
    lines = [f"TITLE={lib.metadata['title'][i]}", f"PEPMASS={float(lib.precursor_mz[i])!r}"]
    if lib.charge[i]:
        lines.append(f"CHARGE={abs(int(lib.charge[i]))}{'+' if lib.charge[i] > 0 else '-'}")
    for key in ("smiles", "inchikey", "name"):
        if lib.metadata[key][i]:
            lines.append(f"{key.upper()}={lib.metadata[key][i]}")
    if rng.random() < 0.3:
        lines.append(ODD_PARAM_LINES[rng.integers(len(ODD_PARAM_LINES))].format(i=i))
    mz, intensity = lib.peaks(i)
    peaks = [_peak_line(rng, a, b) for a, b in zip(mz, intensity, strict=True)]
    if rng.random() < 0.2 and peaks:  # zero, negative, duplicate m/z
        k = rng.integers(len(peaks))
        peaks.insert(k, ["50 0", "60.5 -3", peaks[k]][rng.integers(3)])
    if rng.random() < 0.15:
        peaks.insert(
            rng.integers(len(peaks) + 1), ODD_PEAK_LINES[rng.integers(len(ODD_PEAK_LINES))]
        )
    body = lines + peaks
    for _ in range(rng.integers(3)):  # blank lines, comments, a late parameter
        extra = ["", "   ", "# comment = with equals", "; note", "!x", "/y", "MSLEVEL=2"]
        body.insert(rng.integers(len(body) + 1), extra[rng.integers(len(extra))])
    return "\n".join(["BEGIN IONS", *body, "END IONS"])


@pytest.mark.parametrize("seed", range(6))
def test_real_spectra_with_edge_formatting(tmp_path, monkeypatch, seed):
    if not DATA.is_dir():
        pytest.skip("../shared/data not present")
    source = read_library(DATA / "massbank_ms2_queries.mgf.gz")
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(source), size=120, replace=False)
    text = "\n\n".join(_spectrum_text(rng, source, int(i)) for i in picks) + "\n"
    newline = ["\n", "\r\n", "\n", "\r\n"][seed % 4]
    path = tmp_path / "edge.mgf"
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    if seed % 2:  # the scanner stops and goes on whenever its room is full
        monkeypatch.setattr(mgf_scan, "FIRST_ROWS", 2)
    if seed % 3 == 0:  # streamed in blocks of 1 KB, a chunk per record or two
        _tiny_chunks(monkeypatch, 1000)
    lib = _assert_same(path)
    assert lib is not None and len(lib) > 60


# -- progress and cancelling ------------------------------------------------------------


@pytest.mark.parametrize("parser", ["fast", "reference"])
def test_progress_reports_bytes_up_to_the_total(tmp_path, parser):
    path = tmp_path / "many.mgf"
    path.write_bytes(GOOD * 5000)
    calls = []
    lib = read_library(
        path, parser=parser, progress=lambda done, total: calls.append((done, total))
    )
    assert len(lib) == 5000
    total = len(GOOD) * 5000
    assert calls[0] == (0, total) and calls[-1] == (total, total)
    assert all(t == total for _, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    if parser == "fast":
        assert len(calls) > 3  # reports while reading, not only at both ends


def test_progress_returning_false_cancels(tmp_path):
    path = tmp_path / "many.mgf"
    path.write_bytes(GOOD * 5000)
    seen = []

    def stop_half_way(done: int, total: int) -> bool:
        seen.append(done)
        return done < total // 2

    with pytest.raises(LoadCancelled, match="cancelled"):
        read_library(path, progress=stop_half_way)
    assert 0 < seen[-1] < len(GOOD) * 5000
    assert len(read_library(path)) == 5000  # nothing left behind


def test_progress_through_the_cache(tmp_path):
    path = tmp_path / "small.mgf"
    path.write_bytes(GOOD * 10)
    calls = []
    for _ in range(2):  # parsed, then from the cache
        load_library(path, cache_dir=tmp_path / "cache", progress=lambda *a: calls.append(a))
    assert calls[-1] == (len(GOOD) * 10, len(GOOD) * 10)
    with pytest.raises(LoadCancelled):
        load_library(path, cache_dir=tmp_path / "cache", progress=lambda *a: False)


def test_wide_line_positions_give_the_same_records():
    """Files past 2 GiB hold line positions as int64; the scanners read both widths."""
    data = MIXED.replace(b"\n", b"\r\n") + GOOD
    buf = np.frombuffer(data, dtype=np.uint8)
    newlines, split = mgf_scan.lines(data, buf, 0)
    assert newlines.dtype == np.int32 and split is None
    wide = newlines.astype(np.int64)
    narrow_records = mgf_scan.find_records(buf, 0, newlines)
    wide_records = mgf_scan.find_records(buf, 0, wide)
    for a, b in zip(narrow_records[:3], wide_records[:3], strict=True):
        np.testing.assert_array_equal(a, b)
    kinds, first, last, _ = narrow_records
    narrow = mgf_scan.scan_records(buf, first, last, kinds, 0, newlines, None)
    for a, b in zip(
        narrow, mgf_scan.scan_records(buf, first, last, kinds, 0, wide, None), strict=True
    ):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_damaged_gzip_found_while_streaming(tmp_path, monkeypatch, damage):
    """The error comes from the reading thread once the parse reaches it, as one line."""
    packed = gzip.compress(GOOD * 20000)  # 1 MB of text: read in blocks, parsed in chunks
    if damage == "truncated":
        packed = packed[: len(packed) * 2 // 3]
    else:
        middle = len(packed) // 2
        packed = packed[:middle] + bytes(64) + packed[middle + 64 :]
    path = tmp_path / "big.mgf.gz"
    path.write_bytes(packed)
    monkeypatch.setattr(stream_module, "BLOCK_BYTES", 1 << 14)
    monkeypatch.setattr(mgf_fast, "CHUNK_BYTES", 1 << 16)
    with pytest.raises(SpectrumFileError, match=f"{damage} gzip") as info:
        read_library(path)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)
