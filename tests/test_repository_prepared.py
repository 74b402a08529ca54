"""Prepared spectra stored beside a repository's shards: read by cold searches, exactly.

A stored preparation must be the preparation a search would make (every array
equal bit for bit), searches reading it must give the hits of searches that
prepare again, and a damaged or foreign store must be ignored (with a warning),
never read.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

import engine
from engine.backends import PreparedSpectra
from engine.backends.base import preparation_key
from engine.repository import Repository
from engine.repository.prepared import load_prepared, prepared_folder
from engine.repository.store import Shard
from tests.repository_checks import (
    MODES,
    P,
    assert_same_hits,
    build_real_repository,
    real_queries,
)  # fmt: skip


@pytest.fixture
def repo(tmp_path, data_dir) -> Repository:
    """Real spectra of both ion modes in small shards (a fresh folder per test)."""
    return build_real_repository(tmp_path / "r", data_dir)[0]


@pytest.fixture(scope="module")
def queries(data_dir):
    return real_queries(data_dir)


def _same_prepared(a: PreparedSpectra, b: PreparedSpectra) -> None:
    for name in ("mz", "weight", "offsets", "norm", "precursor_mz", "polarities"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert (a.mz_power, a.intensity_power) == (b.mz_power, b.intensity_power)
    assert a.preparation == b.preparation


def _same_hits(a: engine.HitTable, b: engine.HitTable) -> None:
    assert len(a) > 0
    assert_same_hits(a, b)


@pytest.mark.parametrize("mode", list(MODES))
def test_stored_preparation_is_the_preparation_and_searches_read_it(repo, queries, mode):
    params = MODES[mode]
    expected = repo.search(queries, params).run()  # prepares in memory
    folders = repo.prepare(params)
    assert len(folders) == len(repo.shards) and all(f.is_dir() for f in folders)
    for shard, folder in zip(repo.shards, folders, strict=True):
        stored = load_prepared(shard, params)
        assert stored is not None and folder == prepared_folder(shard, params)
        _same_prepared(stored, PreparedSpectra.for_search(shard.library(), params))
        dtypes = json.loads((folder / "prepared.json").read_text())["dtypes"]
        if params.entropy:  # ms_entropy's arithmetic: float32 values, stored in half the bytes
            assert dtypes == {"mz": "float32", "weight": "float32"}
    # a fresh process's view: shards reopened, and preparing them again would fail
    fresh = Repository(repo.path)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Shard, "library", lambda *a, **k: pytest.fail("prepared again"))
        _same_hits(fresh.search(queries, params).run(), expected)
    n = len(folders)
    described = {  # the info line says, in words, which searches the store serves
        "identity": "entropy similarity: identity and open searches, tolerance up to 0.025 Da",
        "entropy-open": "entropy similarity: identity and open searches, tolerance up to 0.025 Da",
        "cosine": "cosine and modified cosine: peaks weighted m/z^0 x intensity^1",
        "analog": "cosine and modified cosine: peaks weighted m/z^0 x intensity^1, "
        "gnps preprocessing",
    }[mode]
    assert f"prepared on disk: {n} of {n} shards for {described}" in fresh.info().splitlines()


def test_identity_and_open_search_share_one_stored_preparation(repo):
    shard = repo.shards[0]
    assert prepared_folder(shard, MODES["identity"]) == prepared_folder(
        shard, MODES["entropy-open"]
    )
    assert prepared_folder(shard, MODES["identity"]) != prepared_folder(shard, MODES["cosine"])


def test_damaged_or_foreign_store_is_ignored_and_prepare_repairs_it(repo, queries, caplog):
    params = MODES["identity"]
    expected = repo.search(queries, params).run()
    first, second, third = repo.prepare(params)[:3]
    n_shards = len(repo.shards)
    assert repo.preparations() == {repr(preparation_key(params)): n_shards}
    (first / "weight.npy").write_bytes(b"not an array")  # damaged
    manifest = json.loads((second / "prepared.json").read_text())
    manifest["spectra"] += 1  # made for another shard
    (second / "prepared.json").write_text(json.dumps(manifest))
    np.save(third / "mz.npy", np.load(third / "mz.npy")[:-1])  # cut short
    fresh = Repository(repo.path)
    assert fresh.preparations() == {repr(preparation_key(params)): n_shards - 3}  # not counted
    with caplog.at_level(logging.WARNING, logger="engine.repository.prepared"):
        for shard in fresh.shards[:3]:
            assert load_prepared(shard, params) is None
        _same_hits(fresh.search(queries, params).run(), expected)
    said = [r.getMessage() for r in caplog.records]
    assert any(str(first) in m and "weight.npy is not a readable array" in m for m in said)
    assert any(str(second) in m and "another shard" in m for m in said)
    assert any(str(third) in m and "mz does not match the manifest" in m for m in said)
    repo.prepare(params)
    assert fresh.preparations() == {repr(preparation_key(params)): n_shards}
    for shard in fresh.shards:
        _same_prepared(
            load_prepared(shard, params), PreparedSpectra.for_search(shard.library(), params)
        )


def test_cli_prepare_and_info(repo, capsys):
    from engine.cli import main

    assert main(["repo", "prepare", str(repo.path), "--mode", "open", "--processes", "2"]) == 0
    assert f"prepared {len(repo.shards)} shards for open searches" in capsys.readouterr().err
    assert main(["repo", "info", str(repo.path)]) == 0
    out = capsys.readouterr().out
    assert f"prepared on disk: {len(repo.shards)} of {len(repo.shards)} shards" in out
    params = P(mode="open")  # stored by two processes: the same as preparing here
    for shard in Repository(repo.path).shards:
        fresh = PreparedSpectra.for_search(shard.library(), params)
        _same_prepared(load_prepared(shard, params), fresh)


def test_a_change_to_the_preparing_code_makes_stored_preparations_stale(repo, monkeypatch):
    from engine.repository import prepared

    params = MODES["identity"]
    old = repo.prepare(params)
    monkeypatch.setattr(prepared, "_code_fingerprint", lambda: "changed code")
    assert all(load_prepared(shard, params) is None for shard in repo.shards)
    assert "prepared on disk: none" in Repository(repo.path).info()
    new = repo.prepare(params)
    assert not any(f.exists() for f in old) and all(f.is_dir() for f in new)
    assert f"prepared on disk: {len(new)} of {len(new)} shards" in Repository(repo.path).info()


@pytest.mark.parametrize("mode", ["identity", "cosine", "analog"])
def test_open_index_is_the_built_index_and_open_searches_read_it(repo, queries, mode):
    """Each score kind's stored open-search indexes: the arrays a search builds, bit for bit;
    a fresh repository's cold open search builds none and finds the same hits."""
    import dataclasses

    from engine.backends import cpu
    from engine.backends.cpu import peak_index_key
    from engine.kernels.peak_index import library_peak_index
    from engine.repository.prepared_index import index_block

    params = dataclasses.replace(MODES[mode], precursor_tolerance=None)
    expected = repo.search(queries, params).run()
    repo.prepare(params, open_index=True)
    fresh = Repository(repo.path)
    kind, block = cpu.score_kind(params), index_block(params)
    for shard in fresh.shards:
        prepared = load_prepared(shard, params)
        for l0 in range(0, len(prepared), block):
            l1 = min(l0 + block, len(prepared))
            built = library_peak_index(prepared.spectrum_set, l0, l1, kind)
            stored = prepared.derived(peak_index_key(l0, l1, kind), lambda: pytest.fail("built"))
            for name, array in built._asdict().items():
                got = getattr(stored, name)
                np.testing.assert_array_equal(got, array, err_msg=name)
                assert np.asarray(got).dtype == np.asarray(array).dtype, name
    with pytest.MonkeyPatch.context() as m:
        m.setattr(cpu, "library_peak_index", lambda *a: pytest.fail("index built"))
        _same_hits(fresh.search(queries, params).run(), expected)


def test_damaged_open_index_is_ignored_and_prepare_repairs_it(repo, queries, caplog):
    params = MODES["entropy-open"]
    expected = repo.search(queries, params).run()
    folders = repo.prepare(params, open_index=True)
    index = folders[0] / "open_index"
    np.save(index / "weight.npy", np.load(index / "weight.npy")[:-1])  # cut short
    fresh = Repository(repo.path)
    with caplog.at_level(logging.WARNING, logger="engine.repository.prepared_index"):
        _same_hits(fresh.search(queries, params).run(), expected)
    said = [r.getMessage() for r in caplog.records]
    assert any(str(index) in m and "weight does not match its starts" in m for m in said), said
    repo.prepare(params, open_index=True)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="engine.repository.prepared_index"):
        _same_hits(Repository(repo.path).search(queries, params).run(), expected)
    assert not caplog.records


def test_cli_prepare_with_the_open_index(repo, capsys):
    from engine.cli import main

    assert main(["repo", "prepare", str(repo.path), "--open-index"]) == 0
    err = capsys.readouterr().err
    assert "prepared spectra and open-search index stored" in err
    assert all((f / "open_index" / "index.json").is_file() for f in _prepared_folders(repo))


def _prepared_folders(repo: Repository) -> list:
    return [prepared_folder(s, MODES["identity"]) for s in repo.shards]
