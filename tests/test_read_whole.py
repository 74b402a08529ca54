"""Plain files read whole: hashed on a thread beside the parse, with the same digest and errors.

:func:`engine.io.read_library` reads a plain (not gzip) file that is not streamed
(everything but MGF for the fast parser) in one call and hashes it on a thread
(:class:`engine.io.stream.HashedBytes`) while it is parsed.  The digest must be
the file's sha256 whatever the size (inline below a MiB, threaded above), the
progress must still run from 0 to the file's size and cancel when asked to, and
empty or missing files must fail as before.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from engine.io import LoadCancelled, read_library
from engine.io import reader as reader_module
from engine.io import stream as stream_module
from engine.io.stream import HashedBytes
from engine.report import SpectrumFileError
from tests.test_json_fast import FORMATS


@pytest.mark.parametrize("size", [0, 10, HashedBytes.INLINE - 1, HashedBytes.INLINE, 3 << 20])
def test_digest_is_the_sha256(size):
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    assert HashedBytes(data).sha256 == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("copies", [1, 2000])
def test_json_source_digest_and_progress(tmp_path, copies):
    """A small and a threaded (over a MiB) JSON file: digest, progress from 0 to the size."""
    records = json.loads((FORMATS / "mona.json").read_text(encoding="utf-8"))
    path = tmp_path / "mona.json"
    path.write_text(json.dumps(records * copies) + "\n", encoding="utf-8")
    size = path.stat().st_size
    calls: list[tuple[int, int]] = []
    library = read_library(path, progress=lambda *a: calls.append(a))
    assert library.source.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert len(library) == 5 * copies
    assert calls[0] == (0, size) and calls[-1] == (size, size)
    assert all(total == size for _, total in calls)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    with pytest.raises(LoadCancelled):
        read_library(path, progress=lambda done, total: done < total // 2)


@pytest.mark.parametrize("content", [b"", b"  \n\t\r\x0b\x0c "])
def test_blank_files_are_refused(tmp_path, content):
    path = tmp_path / "blank.msp"
    path.write_bytes(content)
    with pytest.raises(SpectrumFileError, match="empty file"):
        read_library(path)


def test_missing_file_and_folder_are_refused(tmp_path):
    with pytest.raises(SpectrumFileError):
        read_library(tmp_path / "nothing.json")
    with pytest.raises(SpectrumFileError):
        read_library(tmp_path)


def test_large_files_are_read_in_blocks_with_progress(tmp_path, monkeypatch):
    """Over the size read at once, the file streams in blocks: progress moves, same library."""
    records = json.loads((FORMATS / "mona.json").read_text(encoding="utf-8"))
    path = tmp_path / "mona.json"
    path.write_text(json.dumps(records * 50), encoding="utf-8")
    whole = read_library(path)
    monkeypatch.setattr(reader_module, "_AT_ONCE_BYTES", 1000)
    monkeypatch.setattr(stream_module, "BLOCK_BYTES", 4096)
    calls: list[tuple[int, int]] = []
    library = read_library(path, progress=lambda *a: calls.append(a))
    assert len(calls) > 20
    assert library.source == whole.source and library.report == whole.report
    assert library.mz.tobytes() == whole.mz.tobytes()
