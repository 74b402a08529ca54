"""``simms network`` and ``simms qc``: their files equal the engine's results; errors; Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import pytest

import engine
from engine.cli import main
from tests.signals import as_from_a_terminal

ROOT = Path(__file__).resolve().parents[1]
OPTIONS = ["--preprocess", "none", "--tolerance", "0.1", "--threshold", "0.7", "--min-matches", "6"]


@pytest.mark.parametrize("link_method", ["single", "mutual"])
def test_network_files_equal_the_engine_network(data_dir, tmp_path, capsys, link_method):
    path = data_dir / "pesticides.mgf"
    graphml, edges = tmp_path / "net.graphml", tmp_path / "edges.tsv"
    status = main(
        ["network", str(path), "-o", str(graphml), "--edges", str(edges), *OPTIONS,
         "--top-n", "5", "--max-links", "3", "--link-method", link_method,
         "--max-component-size", "8", "--score", "modified-cosine", "--no-cache"]
    )  # fmt: skip
    assert status == 0
    expected = engine.network(
        engine.load_library(path, cache=False), score="modified_cosine", preprocess="none",
        tolerance=0.1, threshold=0.7, min_matches=6, top_n=5, max_links=3,
        link_method=link_method, max_component_size=8,
    )  # fmt: skip
    table = pd.read_csv(edges, sep="\t")
    assert (table[["source_index", "target_index"]].to_numpy() == expected.edges).all()
    assert np.allclose(table["score"], expected.score)
    graph = nx.read_graphml(graphml)
    assert graph.number_of_edges() == expected.n_edges > 10
    assert max(len(c) for c in nx.connected_components(graph)) <= 8
    err = capsys.readouterr().err
    assert f"{expected.n_edges} edges" in err
    assert f"{expected.removed_edges} edges removed" in err


def test_qc_prints_counts_and_writes_the_report(data_dir, tmp_path, capsys):
    path = data_dir / "pesticides.mgf"
    report, clean = tmp_path / "qc.tsv", tmp_path / "clean.mgf"
    argv = ["qc", str(path), "-o", str(report), "--deduplicated", str(clean), "--quiet"]
    assert main([*argv, "--no-cache"]) == 0
    out = capsys.readouterr().out
    qc = engine.library_qc(engine.load_library(path, cache=False))
    for name, count in qc.counts().items():
        assert f"{name.replace('_', ' ')}\t{count}\n" in out
    table = pd.read_csv(report, sep="\t", keep_default_na=False)
    assert len(table) == len(qc.pairs) > 0
    assert (table[["index_a", "index_b"]].to_numpy() == qc.pairs).all()
    # the de-duplicated library reads back: the spectra kept, peaks and metadata unchanged
    kept = engine.load_library(clean, cache=False)
    expected = qc.deduplicated()
    assert 0 < len(kept) == len(expected) < len(qc.library)
    assert list(kept.ids) == list(expected.ids)
    assert np.array_equal(kept.mz, expected.mz) and np.array_equal(kept.offsets, expected.offsets)
    assert np.array_equal(kept.intensity, expected.intensity)
    assert np.array_equal(kept.precursor_mz, expected.precursor_mz)
    for key in ("name", "inchikey", "smiles", "adduct"):
        assert list(kept.metadata[key]) == list(expected.metadata[key])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["network", "{spectra}", "--quiet"], "-o NET.graphml"),
        (["network", "{spectra}", "-o", "{tmp}/net.xlsx"], ".graphml"),
        (["network", "{spectra}", "--edges", "{tmp}/no/edges.tsv"], "does not exist"),
        (["network", "{spectra}", "-o", "{tmp}/n.graphml", "--top-n", "2"], "max_links"),
        (["qc", "{tmp}/missing.mgf"], "missing.mgf"),
        (["qc", "{spectra}", "--threshold", "1.5"], "threshold"),
        (["qc", "{spectra}", "--deduplicated", "{tmp}/clean.msp"], ".mgf"),
    ],
)
def test_bad_input_is_one_line_and_status_2(data_dir, tmp_path, capsys, args, message):
    spectra = str(data_dir / "pesticides.mgf")
    argv = [a.format(spectra=spectra, tmp=tmp_path) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("simms: error:") and message in err[-1]
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_ctrl_c_cancels_qc_and_writes_nothing(data_dir, tmp_path, library_cache):
    report = tmp_path / "qc.tsv"
    env = {**os.environ, "SIMMS_CACHE_DIR": str(library_cache)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "qc", str(data_dir / "massbank_ms2.mgf.gz"),
         "-o", str(report), "--backend", "cpu", "--precursor-tolerance", "2"],
        cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        preexec_fn=as_from_a_terminal,
    )  # fmt: skip
    for line in proc.stderr:  # the progress bar: the search runs
        if "pairs/s" in line:
            break
    time.sleep(0.5)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "nothing written" in err
    assert time.monotonic() - started < 30
    assert not list(tmp_path.iterdir())
