"""``simms cluster``: outputs read back, equal the Python API's; bad options fail at once;
Ctrl-C cancels the clustering and writes nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import engine
from engine.cli import main
from tests.signals import as_from_a_terminal

ROOT = Path(__file__).resolve().parents[1]


def test_cluster_writes_table_representatives_and_hits(data_dir, library_cache, tmp_path, capsys):
    spectra = data_dir / "pesticides.mgf"
    out, reps, hits = tmp_path / "clusters.tsv", tmp_path / "reps.mgf", tmp_path / "hits.tsv"
    code = main(
        [
            "cluster",
            str(spectra),
            "-o",
            str(out),
            "--representatives",
            str(reps),
            "--threshold",
            "0.7",
            "--library",
            str(spectra),
            "--hits",
            str(hits),
            "--top",
            "2",
            "--backend",
            "cpu",
        ]  # fmt: skip
    )
    err = capsys.readouterr().err
    assert code == 0, err
    assert "linked pairs" in err and "reduction factor" in err
    want = engine.cluster_spectra(spectra, threshold=0.7, backend="cpu")
    table = pd.read_csv(out, sep="\t", keep_default_na=False)
    assert np.array_equal(table.cluster, want.labels)
    assert np.array_equal(table.representative_index, want.representatives[want.labels])
    assert len(engine.read_library(reps)) == want.n_clusters
    found = pd.read_csv(hits, sep="\t", keep_default_na=False)
    direct = engine.search(want.representative_spectra(), spectra, top_n=2, backend="cpu")
    for member in (0, int(np.argmax(want.sizes[want.labels]))):
        rows = found[found["index"] == member]
        rep = direct.query_index == want.labels[member]
        assert np.array_equal(rows.library_index, direct.library_index[rep])
        assert np.allclose(rows.score, direct.score[rep])


def test_cluster_options_in_ppm_and_da(data_dir, library_cache, tmp_path, capsys):
    spectra = data_dir / "pesticides.mgf"
    out = tmp_path / "clusters.tsv"
    args = ["cluster", str(spectra), "-o", str(out), "--backend", "cpu", "-q"]
    assert main([*args, "--precursor-tolerance", "0.01", "--linkage", "single"]) == 0
    want = engine.cluster_spectra(
        spectra, precursor_tolerance=0.01, precursor_unit="Da", linkage="single", backend="cpu"
    )
    assert np.array_equal(pd.read_csv(out, sep="\t").cluster, want.labels)
    assert main([*args, "--precursor-tolerance", "10", "--ppm", "--score", "entropy"]) == 0
    want = engine.cluster_spectra(spectra, precursor_tolerance=10, score="entropy", backend="cpu")
    assert np.array_equal(pd.read_csv(out, sep="\t").cluster, want.labels)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--hits", "h.tsv"], "--library and --hits go together"),
        (["--consensus"], "--consensus needs --representatives"),
        (["--linkage", "complete", "--threshold", "1.5"], "threshold"),
        (["--representatives", "missing-dir/reps.mgf"], "does not exist"),
    ],
)
def test_bad_options_fail_before_any_work(data_dir, tmp_path, capsys, extra, message):
    out = tmp_path / "clusters.tsv"
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code = main(["cluster", str(data_dir / "pesticides.mgf"), "-o", str(out), *extra])
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1
    assert not out.exists()


@pytest.mark.slow
def test_ctrl_c_cancels_and_writes_nothing(data_dir, library_cache, tmp_path):
    out = tmp_path / "clusters.tsv"
    env = {**os.environ, "SIMMS_CACHE_DIR": str(library_cache)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "cluster", str(data_dir / "massbank_ms2.mgf.gz"),
         "-o", str(out), "--backend", "cpu", "--precursor-tolerance", "2",
         "--threshold", "0.5"],  # fmt: skip
        cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        preexec_fn=as_from_a_terminal,
    )  # fmt: skip
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "scoring pairs" in line:
            break
    time.sleep(1.0)  # these pairs of 54,390 spectra take 8 s on 2 cores
    proc.send_signal(signal.SIGINT)
    err = "".join(lines) + proc.stderr.read()
    code = proc.wait(timeout=120)
    assert code == 130, err
    assert "Traceback" not in err and "nothing written" in err
    assert not out.exists()
    assert not list(tmp_path.glob(".clusters.tsv*"))
