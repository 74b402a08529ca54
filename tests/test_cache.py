"""The library cache trusts nothing it reads and never writes through a path it did not create."""

from __future__ import annotations

import json
import os
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from engine.io import LoadCancelled
from engine.io import cache as cache_module
from engine.io import reader as reader_module
from engine.io.cache import cache_path, load_library
from engine.library import SpectrumLibrary

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
MSP = DATA / "sample.msp"
MGF = DATA / "pesticides.mgf"


def _same(a: SpectrumLibrary, b: SpectrumLibrary) -> bool:
    fields = ("mz", "intensity", "offsets", "precursor_mz", "charge", "ion_mode")
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in fields)


def _tampered_entry(tmp_path: Path, change) -> tuple[SpectrumLibrary, Path]:
    """A cache entry for sample.msp whose arrays were changed, with the digest recomputed
    (as a crafted file would be) or left as it was."""
    good = load_library(MSP, cache_dir=tmp_path)
    target = cache_path(good.source.sha256, tmp_path)
    with np.load(target) as data:
        arrays = {k: data[k] for k in data.files}
    change(arrays)
    with open(target, "wb") as fh:
        np.savez(fh, **arrays)
    return good, target


@pytest.mark.parametrize(
    "change",
    [
        lambda a: a.__setitem__("offsets", a["offsets"] + 1000),  # points past the peaks
        lambda a: a.__setitem__("offsets", a["offsets"][::-1].copy()),
        lambda a: a["mz"].__setitem__(0, np.nan),
        lambda a: a["mz"].__setitem__(slice(0, 2), [500.0, 10.0]),  # unsorted
        lambda a: a["intensity"].__setitem__(0, -1.0),
        lambda a: a.__setitem__("ion_mode", np.full_like(a["ion_mode"], 7)),
        lambda a: a.__setitem__("mz", a["mz"].astype(np.float32)),
        lambda a: a.__setitem__("offsets", a["offsets"].reshape(-1, 1)),
        lambda a: a.__setitem__("intensity", a["intensity"] * 2),  # digest no longer matches
        lambda a: a.pop("charge"),
    ],
    ids=[
        "offsets-out-of-range",
        "offsets-decreasing",
        "nan-mz",
        "unsorted-mz",
        "negative-intensity",
        "ion-mode",
        "float32",
        "2-d",
        "digest",
        "missing-array",
    ],
)
@pytest.mark.slow
def test_crafted_entry_is_refused_and_replaced(tmp_path, change):
    """Before: a crafted entry segfaulted a search."""
    good, target = _tampered_entry(tmp_path, change)
    with pytest.warns(UserWarning, match="ignoring unreadable cache file"):
        again = load_library(MSP, cache_dir=tmp_path)
    assert _same(good, again)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the entry was replaced by a good one
        assert _same(good, load_library(MSP, cache_dir=tmp_path))


def test_swapped_entry_is_refused(tmp_path):
    """Before: another library's entry under this key silently returned its spectra."""
    other = load_library(MGF, cache_dir=tmp_path)
    mine = load_library(MSP, cache=False)
    target = cache_path(mine.source.sha256, tmp_path)
    os.replace(cache_path(other.source.sha256, tmp_path), target)
    with pytest.warns(UserWarning, match="another file's spectra"):
        again = load_library(MSP, cache_dir=tmp_path)
    assert _same(mine, again) and again.source.sha256 == mine.source.sha256


def test_symlinked_entry_is_not_followed_and_its_target_untouched(tmp_path):
    mine = load_library(MSP, cache=False)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    target = cache_path(mine.source.sha256, cache_dir)
    target.symlink_to(victim)
    with pytest.warns(UserWarning, match="not a regular file"):
        again = load_library(MSP, cache_dir=cache_dir)
    assert _same(mine, again)
    assert victim.read_text() == "precious"
    assert not target.is_symlink() and target.is_file()  # the link itself was replaced


def test_planted_part_file_link_is_never_written_through(tmp_path):
    """Before: the cache wrote through a fixed ``<sha>.npz.part``; a planted link there
    overwrote an unrelated file."""
    mine = load_library(MSP, cache=False)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    target = cache_path(mine.source.sha256, cache_dir)
    target.with_name(target.name + ".part").symlink_to(victim)
    load_library(MSP, cache_dir=cache_dir)
    assert victim.read_text() == "precious"
    assert target.is_file()
    assert not [p for p in cache_dir.iterdir() if p.name.startswith(".")]  # no temp debris


def _load_in_process(cache_dir: str) -> tuple[int, float]:
    lib = load_library(MGF, cache_dir=cache_dir)
    return len(lib), float(lib.mz.sum())


def test_concurrent_loaders_all_succeed(tmp_path):
    """Before: four loaders of one file collided on the fixed temporary name 3 times of 4."""
    with ProcessPoolExecutor(4) as pool:
        results = list(pool.map(_load_in_process, [str(tmp_path)] * 8))
    assert len(set(results)) == 1 and results[0][0] == 76
    entries = sorted(p.name for p in tmp_path.iterdir())
    assert entries == sorted(
        [cache_path(load_library(MGF, cache=False).source.sha256).name, "files"]
    )
    # side records of the file, written the same way: one, no temporary debris
    assert [p.suffix for p in (tmp_path / "files").iterdir()] == [".json"]


def test_cache_directory_is_private(tmp_path):
    load_library(MSP, cache_dir=tmp_path / "new")
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o700


def test_entry_records_its_key(tmp_path):
    lib = load_library(MSP, cache_dir=tmp_path)
    _, header = SpectrumLibrary._from_npz(cache_path(lib.source.sha256, tmp_path))
    assert header["cache_key"] == lib.source.sha256
    assert header["reader_version"] == cache_module.READER_VERSION


def test_saved_library_is_mapped_read_only_and_equal(tmp_path, massbank_queries):
    path = tmp_path / "q.npz"
    massbank_queries.save(path)
    again = SpectrumLibrary.load(path)
    for name in ("mz", "intensity", "offsets", "precursor_mz", "charge", "ion_mode"):
        np.testing.assert_array_equal(getattr(again, name), getattr(massbank_queries, name))
        assert not getattr(again, name).flags.writeable
    for key, column in massbank_queries.metadata.items():
        assert list(again.metadata[key]) == list(column)
    # the arrays stay valid after the file is replaced (a cache entry rewritten)
    path.unlink()
    assert float(again.mz.sum()) == float(massbank_queries.mz.sum())


def test_mapped_reader_takes_compressed_members_and_refuses_cut_files(tmp_path):
    from engine.npz_mapped import load_npz_mapped

    plain, packed = tmp_path / "plain.npz", tmp_path / "packed.npz"
    arrays = {"a": np.arange(10.0), "b": np.array([1, 2, 3], dtype=np.int8)}
    np.savez(plain, **arrays)
    np.savez_compressed(packed, **arrays)
    for path in (plain, packed):
        with open(path, "rb") as fh:
            got = load_npz_mapped(fh)
        assert set(got) == {"a", "b"}
        np.testing.assert_array_equal(got["a"], arrays["a"])
        np.testing.assert_array_equal(got["b"], arrays["b"])
    cut = tmp_path / "cut.npz"
    cut.write_bytes(plain.read_bytes()[:200])
    with open(cut, "rb") as fh, pytest.raises(ValueError):
        load_npz_mapped(fh)


# -- side records: an unchanged file is not hashed again, a changed one always is -------


def _aged(path: Path, ns: int | None = None) -> int:
    """Give ``path`` a modification time an hour ago (or ``ns``); returns it."""
    ns = time.time_ns() - 3600 * 10**9 if ns is None else ns
    os.utime(path, ns=(ns, ns))
    return ns


def _mgf(title: str) -> bytes:
    return f"BEGIN IONS\nTITLE={title}\nPEPMASS=100\n10 1\n20 2\nEND IONS\n".encode() * 50


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    calls: list[str] = []
    original = getattr(cache_module, name)

    def counted(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(cache_module, name, counted)
    return calls


def test_unchanged_file_is_neither_hashed_nor_parsed_again(tmp_path, monkeypatch):
    path = tmp_path / "lib.mgf"
    path.write_bytes(MGF.read_bytes())
    _aged(path)
    first = load_library(path, cache_dir=tmp_path / "c")
    assert cache_module.known_digest(path, tmp_path / "c") == first.source.sha256
    calls = _counting(monkeypatch, "file_digest") + _counting(monkeypatch, "read_library")
    again = load_library(path, cache_dir=tmp_path / "c")
    assert calls == [] and _same(first, again) and again.source == first.source


def test_changed_file_never_reuses_the_entry(tmp_path, monkeypatch):
    path = tmp_path / "lib.mgf"
    path.write_bytes(_mgf("aaa"))
    when = _aged(path)
    assert load_library(path, cache_dir=tmp_path / "c").metadata["title"][0] == "aaa"
    # same size, same inode, the old modification time put back: the probe sees it
    path.write_bytes(_mgf("bbb"))
    _aged(path, when)
    hashed = _counting(monkeypatch, "file_digest")
    changed = load_library(path, cache_dir=tmp_path / "c")
    assert changed.metadata["title"][0] == "bbb" and hashed == ["file_digest"]
    assert changed.source.sha256 == load_library(path, cache=False).source.sha256
    # another size, another time: hashed again; the first content's entry stays unused
    path.write_bytes(_mgf("cc"))
    assert load_library(path, cache_dir=tmp_path / "c").metadata["title"][0] == "cc"
    assert len(hashed) == 2


def test_young_file_gets_no_side_record(tmp_path, monkeypatch):
    """A file modified a moment ago could change again within the clock's resolution."""
    path = tmp_path / "lib.mgf"
    path.write_bytes(_mgf("new"))
    hashed = _counting(monkeypatch, "file_digest")
    for _ in range(2):
        load_library(path, cache_dir=tmp_path / "c")
    assert hashed == ["file_digest"] * 2
    assert not (tmp_path / "c" / "files").exists()


def test_unreadable_side_record_means_hashing(tmp_path):
    path = tmp_path / "lib.mgf"
    path.write_bytes(_mgf("x"))
    _aged(path)
    lib = load_library(path, cache_dir=tmp_path / "c")
    (record,) = (tmp_path / "c" / "files").iterdir()
    good = json.loads(record.read_text())
    assert good["sha256"] == lib.source.sha256
    broken = [{**good, "sha256": "not a digest"}, {**good, "reader_version": -1}]
    broken += [{**good, "probe": "0" * 64}, {**good, "file": good["file"][:-1]}]
    for text in ["not json", "[]", '{"file": 1}', *map(json.dumps, broken)]:
        record.write_text(text)
        assert cache_module.known_digest(path, tmp_path / "c") is None, text
    record.write_text(json.dumps(good))
    assert cache_module.known_digest(path, tmp_path / "c") == lib.source.sha256
    path.write_bytes(_mgf("y"))  # changed: the record no longer applies
    assert cache_module.known_digest(path, tmp_path / "c") is None


def test_load_progress_covers_hashing_then_parsing(tmp_path, monkeypatch):
    monkeypatch.setattr(reader_module, "SMALL_FILE_BYTES", 0)  # the fast parser, streamed
    path = tmp_path / "lib.mgf"
    path.write_bytes(_mgf("p") * 400)  # 1.7 MB: read in blocks
    size = path.stat().st_size
    calls: list[tuple[int, int]] = []
    load_library(path, cache_dir=tmp_path / "c", progress=lambda *a: calls.append(a))
    assert all(total == size for _, total in calls)
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[-1] == size
    assert any(0 < d <= size // 10 for d in done)  # the hashing share
    assert len([d for d in done if size // 10 < d < size]) >= 3  # the parse, while it reads
    with pytest.raises(LoadCancelled):
        load_library(path, cache_dir=tmp_path / "d", progress=lambda *a: False)
    assert not (tmp_path / "d").exists()
