"""The on-disk repository: built from real files, appended to, searched shard by shard.

The repository stores float32 m/z and per-spectrum scaled uint16 intensities;
its searches must give exactly the hits of the in-memory library search over
the same stored peaks (``Repository.library()``), in every mode, locally and on
a Dask cluster, and the stored peaks must be the files' peaks to float32 m/z and
1/65535 of each spectrum's largest intensity.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import engine
from engine.io.mgf_writer import write_mgf
from engine.repository import Repository
from engine.repository.synthetic import add_synthetic, build_synthetic
from tests import repository_checks as checks
from tests.repository_checks import MODES, P
from tests.repository_checks import assert_same_hits as _same_hits


@pytest.fixture(scope="module")
def real_repo(tmp_path_factory, data_dir):
    """Pesticides (76, negative) in shards of 20, then the mzML and MSP files appended."""
    return checks.build_real_repository(tmp_path_factory.mktemp("repo") / "real", data_dir)


@pytest.fixture(scope="module")
def real_queries(data_dir):
    """Real queries of both ion modes: the pesticides and the mzML scans."""
    return checks.real_queries(data_dir)


def test_build_and_add_store_the_files_peaks(real_repo, data_dir):
    repo, first = real_repo
    reopened = Repository(repo.path)
    assert len(reopened) == 76 + 10 + 5
    assert first == 4 and len(reopened.manifest["shards"]) > first
    files = reopened.files()
    assert list(files["spectra"]) == [76, 10, 5]
    assert list(files["dataset"]) == ["gnps", "runs", "runs"]
    for shard in reopened.shards:
        manifest = json.loads((shard.folder / "shard.json").read_text())
        assert manifest["spectra"] == len(shard) <= 20
        precursor = np.asarray(shard.array("precursor_mz"))
        assert np.all(np.diff(precursor) >= 0)  # sorted within the shard
        assert len(set(shard.array("ion_mode").tolist())) == 1
        assert shard.array("mz").dtype == np.float32
        assert shard.array("intensity").dtype == np.uint16
        assert manifest["precursor_min"] == precursor.min()
    # every stored spectrum is its file's spectrum: m/z to float32, intensity to 1/65535
    stored = reopened.library()
    records = reopened.records(np.arange(len(reopened)))
    for path in ("pesticides.mgf", "sample.mzML", "sample.msp"):
        original = engine.read_library(data_dir / path)
        rows = np.flatnonzero([f.endswith(path) for f in records["file"]])
        assert len(rows) == len(original)
        for row in rows:
            mz, intensity = stored.peaks(row)
            mz0, int0 = original.peaks(int(records["file_index"][row]))
            np.testing.assert_array_equal(mz, mz0.astype(np.float32).astype(np.float64))
            np.testing.assert_allclose(intensity, int0, rtol=0, atol=int0.max() / 65535)
            assert stored.precursor_mz[row] == original.precursor_mz[records["file_index"][row]]
            assert records["id"][row] == original.ids[records["file_index"][row]]


def test_stored_peaks_widen_as_numpy_widens_them(real_repo, massbank_library):
    """The threaded widening of stored peaks equals numpy's, bit for bit."""
    from engine.kernels.stored_peaks import widen_stored_peaks
    from engine.repository.store import quantize_intensity

    repo, _ = real_repo
    stored = [
        (s.array("mz"), s.array("intensity"), s.array("scale"), s.array("offsets"))
        for s in repo.shards
    ]
    codes, scale = quantize_intensity(massbank_library.intensity, massbank_library.offsets)
    stored.append((massbank_library.mz.astype(np.float32), codes, scale, massbank_library.offsets))
    for mz, codes, scale, offsets in stored:
        wide_mz, wide_intensity = widen_stored_peaks(mz, codes, scale, offsets)
        np.testing.assert_array_equal(wide_mz, np.asarray(mz, dtype=np.float64))
        per_peak = np.repeat(np.asarray(scale, dtype=np.float64), np.diff(offsets))
        np.testing.assert_array_equal(wide_intensity, codes.astype(np.float64) * per_peak)


@pytest.mark.parametrize("mode", list(MODES))
def test_search_equals_the_in_memory_search_of_the_stored_peaks(real_repo, real_queries, mode):
    repo, _ = real_repo
    params = MODES[mode]
    streamed = []
    job = repo.search(real_queries, params, backend="cpu", on_shard=lambda s, h: None)
    for chunk in job:
        streamed.append(chunk)
    hits = job.hits
    expected = engine.search(real_queries, repo.library(), params, backend="cpu")
    assert len(expected) > 0
    _same_hits(hits, expected)
    assert sum(len(c) for c in streamed) == len(hits)
    assert job.progress.shards_done == job.progress.shards_total


def test_resident_shards_keep_their_prepared_spectra_only(real_repo, real_queries):
    """Shards kept for later searches hold the prepared peaks, not float64 raw copies;
    searches of other modes against them still equal the in-memory search."""
    from engine.backends import PreparedSpectra
    from engine.backends.base import preparation_key
    from engine.repository import search as repository_search

    repo, _ = real_repo
    cache = repository_search._CACHE
    cache.items.clear()
    sizes = []
    for mode in ("identity", "cosine", "identity"):
        hits = repo.search(real_queries, MODES[mode], backend="cpu", resident_bytes=1 << 30).run()
        expected = engine.search(real_queries, repo.library(), MODES[mode], backend="cpu")
        _same_hits(hits, expected)
        sizes.append(len(cache.items))
    kept = [prepared for prepared, _ in cache.items.values()]
    assert sizes[0] < sizes[1] == sizes[2] <= 2 * len(repo.shards)  # the third reused them
    assert all(isinstance(p, PreparedSpectra) for p in kept)
    assert {p.preparation for p in kept} == {
        preparation_key(MODES["identity"]),
        preparation_key(MODES["cosine"]),
    }
    cache.items.clear()


def test_spectra_prepared_for_other_parameters_are_refused(real_repo, real_queries):
    from engine.api import search_job
    from engine.backends import PreparedSpectra

    library = real_repo[0].library()
    prepared = PreparedSpectra.for_search(library, MODES["identity"])
    hits = search_job(real_queries, prepared, MODES["identity"], backend="cpu").run()
    _same_hits(hits, engine.search(real_queries, library, MODES["identity"], backend="cpu"))
    with pytest.raises(ValueError, match="prepared for"):
        search_job(real_queries, prepared, MODES["cosine"], backend="cpu").run()


def test_cancelled_search_keeps_only_final_hits(real_repo, real_queries):
    repo, _ = real_repo
    params = MODES["identity"]  # a precursor window: many queries need one shard only
    expected = repo.search(real_queries, params, backend="cpu").run()
    job = repo.search(real_queries, params, backend="cpu", on_shard=lambda name, hits: None)
    job.on_shard = lambda name, hits: job.cancel()
    hits = job.run()
    assert job.progress.shards_done == 1 < job.progress.shards_total
    done = np.unique(hits.query_index)
    assert 0 < len(done) < len(np.unique(expected.query_index))
    _same_hits(hits, expected.take(np.flatnonzero(np.isin(expected.query_index, done))))


def test_every_pesticide_finds_its_own_stored_copy_first(real_repo, data_dir):
    repo, _ = real_repo
    queries = engine.read_library(data_dir / "pesticides.mgf")
    best = repo.search(queries, top_n=1, backend="cpu").run()
    frame = repo.hits_frame(best, queries)
    assert len(frame) == len(queries)
    # each finds its own stored copy first; quantized intensities move a score a
    # little (1 of 76 by 0.005: a peak near the 1 % noise cut of entropy cleaning)
    np.testing.assert_array_equal(frame["file_index"], np.arange(len(queries)))
    assert (frame["score"] > 0.99).all() and (frame["score"] > 0.9999).sum() >= 75


def test_per_file_summary(tmp_path, data_dir):
    pesticides = engine.read_library(data_dir / "pesticides.mgf")
    part = tmp_path / "part.mgf"
    write_mgf(pesticides.subset(np.arange(10)), part)
    repo = Repository.build(tmp_path / "repo", [data_dir / "pesticides.mgf"], dataset="a")
    repo.add([part], dataset="b")
    queries = pesticides.subset(np.arange(0, 20, 2))
    hits = repo.search(queries, top_n=0, threshold=0.9, backend="cpu").run()
    table = repo.summary(hits, queries)
    # the reference: the in-memory search, each hit's file told by its position
    ref = engine.search(queries, repo.library(), top_n=0, threshold=0.9, backend="cpu")
    file_of = np.asarray(repo.records(np.arange(len(repo)))["file"])
    for q in range(len(queries)):
        mine = ref.library_index[ref.query_index == q]
        rows = table[table["query_index"] == q]
        expected = {f: int((file_of[mine] == f).sum()) for f in set(file_of[mine])}
        assert dict(zip(rows["file"], rows["hits"], strict=True)) == expected
        for f, best in zip(rows["file"], rows["best_score"], strict=True):
            in_file = (ref.query_index == q) & (file_of[ref.library_index] == f)
            assert best == ref.score[in_file].max()
        in_part = 2 * q < 10
        assert (str(part) in set(rows["file"])) == in_part
    by_dataset = repo.summary(hits, queries, by="dataset")
    assert set(by_dataset["dataset"]) == {"a", "b"}
    assert not table["synthetic"].any()


def test_compact_makes_disjoint_precursor_ranges_and_keeps_the_hits(tmp_path, data_dir):
    files = [data_dir / "pesticides.mgf", data_dir / "sample.mzML", data_dir / "sample.msp"]
    repo = Repository.build(tmp_path / "repo", files[:1], shard_spectra=15)
    repo.add(files[1:])
    queries = engine.read_library(data_dir / "pesticides.mgf")
    params = P(top_n=0)

    def found(r):
        hits = r.search(queries, params, backend="cpu").run()
        rec = r.records(hits.library_index)
        return sorted(zip(hits.query_index.tolist(), rec["file"], rec["file_index"].tolist(),
                          hits.score.tolist(), hits.matches.tolist(), strict=True))  # fmt: skip

    before = found(repo)
    old = {s.name for s in repo.shards}
    repo.compact()
    assert not old & {p.name for p in (repo.path / "shards").iterdir()}
    assert len(repo) == 91 and len(Repository(repo.path)) == 91
    for mode in ("positive", "negative"):
        ranges = [(s.manifest["precursor_min"], s.manifest["precursor_max"])
                  for s in repo.shards if s.manifest["ion_mode"] == mode]  # fmt: skip
        assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:], strict=False))  # disjoint
        assert all(len(s) <= 2 * 15 for s in repo.shards)
    assert found(repo) == before and len(before) > 76
    _same_hits(
        repo.search(queries, backend="cpu").run(),
        engine.search(queries, repo.library(), backend="cpu"),
    )


def test_bad_file_and_duplicate_leave_the_repository_as_it_was(tmp_path, data_dir):
    repo = Repository.build(tmp_path / "repo", [data_dir / "sample.msp"])
    before = (repo.path / "repository.json").read_text()
    shards = sorted(p.name for p in (repo.path / "shards").iterdir())
    assert shards == ["000000", "000001"]  # 4 positive, 1 negative
    broken = tmp_path / "broken.mgf"
    broken.write_text("not a spectrum file\n")
    with pytest.raises(engine.SpectrumFileError, match="broken.mgf"):
        repo.add([data_dir / "pesticides.mgf", broken])
    with pytest.raises(ValueError, match="already in the repository"):
        repo.add([data_dir / "sample.msp"])
    assert (repo.path / "repository.json").read_text() == before
    assert sorted(p.name for p in (repo.path / "shards").iterdir()) == shards
    assert len(Repository(repo.path)) == 5
    with pytest.raises(ValueError, match="not a repository"):
        Repository(tmp_path)


def test_a_file_with_broken_records_is_added_and_its_issues_said(tmp_path, data_dir):
    """Valid records of a damaged file are stored; the message counts the others."""
    damaged = tmp_path / "damaged.mgf"
    damaged.write_text(
        "BEGIN IONS\nPEPMASS=abc\n100 10\nEND IONS\n"  # no precursor m/z: kept, repaired
        "BEGIN IONS\nPEPMASS=200.1\nCHARGE=1\n50.0 100\n60.0 20\nEND IONS\n"
        "BEGIN IONS\nPEPMASS=300\n"  # cut off: skipped
    )
    notes: list[str] = []
    repo = Repository.build(tmp_path / "repo", [data_dir / "sample.msp"])
    repo.add([damaged], on_message=notes.append)
    said = [n for n in notes if "damaged.mgf" in n]
    assert len(said) == 1 and said[0].startswith(f"{damaged}: 2 spectra ("), notes
    assert "; 1 record skipped, 1 repaired" in said[0], said
    assert len(Repository(repo.path)) == 5 + 2
    quiet: list[str] = []
    Repository.build(tmp_path / "clean", [data_dir / "sample.msp"], on_message=quiet.append)
    assert not any("skipped" in n for n in quiet), quiet


def test_synthetic_repository_is_labelled(tmp_path, pesticides):
    repo = build_synthetic(tmp_path / "syn", pesticides, 500, shard_spectra=200, seed=3)
    add_synthetic(repo, pesticides, 100, seed=4)
    assert len(repo) == 600 and repo.synthetic
    manifest = json.loads((repo.path / "repository.json").read_text())
    assert manifest["synthetic"] is True
    assert all(json.loads((s.folder / "shard.json").read_text())["synthetic"] for s in repo.shards)
    assert repo.info().startswith("SYNTHETIC")
    assert "SYNTHETIC" in repr(repo)
    notes = []
    hits = repo.search(pesticides[:5], backend="cpu", on_message=notes.append).run()
    assert any("SYNTHETIC" in n for n in notes)
    assert repo.hits_frame(hits)["synthetic"].all()
    records = repo.records(np.arange(600))
    assert set(records["id"]) <= set(pesticides.ids)  # each copies a real spectrum
    assert len(set(records["file"])) == 2  # the append got a file of its own
    real = Repository.build(tmp_path / "real", [])
    with pytest.raises(ValueError, match="synthetic"):
        add_synthetic(real, pesticides, 10)


@pytest.mark.slow
def test_parallel_synthetic_build_and_compaction_give_the_same_spectra(tmp_path, pesticides):
    kw = {"shard_spectra": 700, "chunk_spectra": 400}
    serial = build_synthetic(tmp_path / "serial", pesticides, 3000, seed=5, **kw)
    parallel = build_synthetic(
        tmp_path / "parallel", pesticides, 3000, seed=5, processes=2, compact=True, **kw
    )

    def spectra(repo):
        lib, rec = repo.library(), repo.records(np.arange(len(repo)))
        return sorted(
            (f, int(i), float(p), lib.peaks(k)[0].tobytes(), lib.peaks(k)[1].tobytes())
            for k, (f, i, p) in enumerate(zip(rec["file"], rec["file_index"],
                                              lib.precursor_mz, strict=True))
        )  # fmt: skip

    assert len(parallel) == 3000 and len(parallel.manifest["files"]) == 8
    assert spectra(serial) == spectra(parallel)
    queries = pesticides.subset(np.arange(0, 76, 4))
    _same_hits(
        parallel.search(queries, backend="cpu").run(),
        engine.search(queries, parallel.library(), backend="cpu"),
    )


@pytest.fixture(scope="module")
def client(cluster):
    return cluster[1]


@pytest.mark.slow
@pytest.mark.parametrize("via", ["tasks", "job"])
def test_dask_search_of_real_files_equals_in_memory(client, real_repo, real_queries, via):
    repo, _ = real_repo
    for params in (MODES["identity"], MODES["entropy-open"]):
        hits = repo.search(real_queries, params, backend="cpu", client=client, via=via).run()
        _same_hits(hits, engine.search(real_queries, repo.library(), params, backend="cpu"))


@pytest.mark.slow
def test_million_spectrum_synthetic_repository_on_dask(
    client, tmp_path, massbank_library, massbank_queries
):
    """10⁶ SYNTHETIC spectra built, 10⁵ appended, searched on a local Dask cluster."""
    repo = build_synthetic(tmp_path / "syn", massbank_library, 1_000_000, shard_spectra=250_000)
    add_synthetic(repo, massbank_library, 100_000, seed=1)
    assert len(repo) == 1_100_000 and repo.synthetic
    queries = massbank_queries.subset(np.arange(0, 1000, 50))  # 20 real queries
    whole = repo.library()
    for params in (MODES["identity"], MODES["entropy-open"]):
        expected = engine.search(queries, whole, params, backend="cpu")
        hits = repo.search(queries, params, backend="cpu", client=client).run()
        assert len(expected) > 100  # most of the 20 queries have hits
        _same_hits(hits, expected)


@pytest.mark.slow
def test_worker_killed_mid_search_gives_identical_hits(tmp_path, massbank_sample, massbank_queries):
    """A Dask worker killed after the first shard: its shards are redone, hits identical."""
    import os
    import signal

    from distributed import Client, LocalCluster

    repo = build_synthetic(tmp_path / "syn", massbank_sample, 60_000, shard_spectra=6_000)
    queries = massbank_queries.subset(np.arange(0, 1000, 10))
    params = MODES["entropy-open"]
    expected = repo.search(queries, params, backend="cpu").run()
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
        env={"NUMBA_NUM_THREADS": "1"},
    ) as lc, Client(lc, set_as_default=False) as client:  # fmt: skip
        victim = sorted(client.nthreads())[0]
        pid = client.run(os.getpid, workers=[victim])[victim]
        killed = []

        def kill_once(name, hits):
            if not killed:
                killed.append(name)
                os.kill(pid, signal.SIGKILL)

        job = repo.search(queries, params, backend="cpu", client=client, on_shard=kill_once)
        hits = job.run()
        assert killed and job.progress.shards_done == job.progress.shards_total > 2
        _same_hits(hits, expected)


def test_cli_build_add_compact_info_search(tmp_path, data_dir, capsys):
    import pandas as pd

    from engine.cli import main

    repo = tmp_path / "repo"
    build = ["repo", "build", str(repo), str(data_dir / "pesticides.mgf"), "--shard-spectra", "30"]
    assert main(build) == 0
    assert main(["repo", "add", str(repo), str(data_dir / "sample.msp"), "--dataset", "x"]) == 0
    assert main(["repo", "add", str(repo), str(data_dir / "sample.msp")]) == 2  # already in
    assert "already in the repository" in capsys.readouterr().err
    assert main(["repo", "compact", str(repo)]) == 0
    assert main(["repo", "info", str(repo), "--files"]) == 0
    out = capsys.readouterr().out
    assert "spectra: 81" in out and "sample.msp\tx" in out
    hits, summary = tmp_path / "hits.tsv", tmp_path / "files.tsv"
    args = ["repo", "search", str(data_dir / "pesticides.mgf"), str(repo), "-o", str(hits),
            "--summary", str(summary), "--top", "3", "-q"]  # fmt: skip
    assert main(args) == 0
    frame = pd.read_csv(hits, sep="\t")
    expected = engine.search(
        engine.read_library(data_dir / "pesticides.mgf"), Repository(repo).library(),
        top_n=3, backend="cpu",
    )  # fmt: skip
    np.testing.assert_array_equal(frame["repository_index"], expected.library_index)
    np.testing.assert_allclose(frame["score"], expected.score, rtol=0, atol=1e-12)
    assert set(pd.read_csv(summary, sep="\t")["file"]) <= {str(data_dir / "pesticides.mgf")}
    assert main(["repo", "info", str(tmp_path)]) == 2  # not a repository: one line, status 2
