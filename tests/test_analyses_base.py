"""The base the analyses share: run options taken from keywords, the writability check."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from engine import AnalysisCancelled, CancelToken, RunOptions
from engine.analyses import ClusterCancelled, OutputPathError, check_writable
from engine.analyses.files import write_table


def test_run_options_take_the_run_keywords_and_leave_the_rest():
    token = CancelToken()
    keywords = {"backend": "cpu", "threshold": 0.8, "cancel_token": token, "top_n": 5}
    run = RunOptions.take(keywords, RunOptions(cpu_threads=2))
    assert keywords == {"threshold": 0.8, "top_n": 5}
    assert (run.backend, run.cpu_threads, run.cancel_token) == ("cpu", 2, token)
    assert RunOptions.take({}).cancel_token is not None  # always a token to check


def test_a_cancelled_run_raises_the_one_cancellation():
    run = RunOptions.take({})
    run.check()
    run.cancel_token.cancel()
    with pytest.raises(AnalysisCancelled, match="stopped"):
        run.check("stopped")
    assert ClusterCancelled is AnalysisCancelled


@pytest.mark.parametrize(
    ("name", "suffixes", "reason"),
    [
        ("no/such/dir/out.tsv", (), "does not exist"),
        ("out.xlsx", (".tsv", ".csv"), "must end in .tsv or .csv"),
        (".", (), "is a directory"),
    ],
)
def test_unwritable_paths_are_refused_before_any_work(tmp_path, name, suffixes, reason):
    with pytest.raises(OutputPathError, match=reason) as caught:
        check_writable(tmp_path / name, suffixes)
    assert isinstance(caught.value, OSError) and isinstance(caught.value, ValueError)
    assert str(tmp_path) in str(caught.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_a_read_only_directory_is_refused(tmp_path):
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(OutputPathError, match="not writable"):
            check_writable(tmp_path / "out.tsv")
    finally:
        tmp_path.chmod(0o700)


def test_tables_are_written_whole_and_read_back(tmp_path):
    frame = pd.DataFrame({"id": ["=1+1", "b"], "score": [0.5, 1.0]})
    tsv = write_table(tmp_path / "t.tsv", frame, neutral=True)
    csv = write_table(tmp_path / "t.csv", frame)
    assert pd.read_csv(tsv, sep="\t").score.tolist() == [0.5, 1.0]
    assert not pd.read_csv(tsv, sep="\t").id[0].startswith("=")  # no formula in a spreadsheet
    assert pd.read_csv(csv).equals(frame)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "t.tsv"]  # no temporaries
