"""Files written for users appear whole, keep the old file on failure, get normal permissions."""

from __future__ import annotations

import os
import stat

import pytest

import engine
from engine.atomic import atomic_path, file_mode
from engine.export import write_hits
from engine.io.mgf_writer import write_mgf


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_atomic_path_publishes_with_a_new_files_permissions(tmp_path, umask_022):
    target = tmp_path / "out.tsv"
    with atomic_path(target) as tmp:
        tmp.write_text("a\tb\n")
        assert not target.exists() and _mode(tmp) == 0o600  # private while written
    assert target.read_text() == "a\tb\n"
    assert _mode(target) == file_mode() == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["out.tsv"]


def test_a_failed_write_keeps_the_old_file_and_leaves_nothing(tmp_path):
    target = tmp_path / "out.tsv"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("disk full")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.tsv"]


def test_every_writer_gives_normal_permissions(tmp_path, data_dir, umask_022):
    spectra = engine.load_library(data_dir / "pesticides.mgf", cache=False)
    params = engine.SearchParameters(mode="custom", top_n=2)
    hits = engine.search(spectra, spectra, params, backend="cpu")
    written = [
        write_mgf(spectra, tmp_path / "spectra.mgf"),
        write_hits(tmp_path / "hits.tsv", hits, spectra, spectra, params),
        engine.cluster_spectra(spectra, backend="cpu").write_table(tmp_path / "clusters.tsv"),
    ]
    spectra.save(tmp_path / "library.npz")
    written.append(tmp_path / "library.npz")
    for path in written:
        assert _mode(path) == 0o644, path
