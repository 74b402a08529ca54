"""Ctrl-C during ``simms search``: exit 130, every hit found written, the file marked incomplete.

Before: numba wrapped the KeyboardInterrupt (``SystemError ... returned a result with
an exception set``), the modified cosine segfaulted, nothing was written, and a
Ctrl-C during the final write lost the finished search.

``SIMMS_INTERRUPT_TRIALS`` sets the number of random moments per score (default 2;
the closing measurement used 10).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from engine.matching import greedy_matches
from tests.signals import as_from_a_terminal

ROOT = Path(__file__).resolve().parents[1]
TRIALS = int(os.environ.get("SIMMS_INTERRUPT_TRIALS", "2"))
SCORES = {"cosine": ["--top", "0", "--threshold", "0.2"], "modified-cosine": ["--top", "3"]}


def _start(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "engine", "search", "--mode", "custom", *args],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        preexec_fn=as_from_a_terminal,
    )


def _wait_for(proc: subprocess.Popen, word: str) -> list[str]:
    """Read stderr until a line holds ``word`` (e.g. "searching": the libraries are loaded)."""
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if word in line:
            return lines
    raise AssertionError(f"no {word!r} line: " + "".join(lines))


def _check_scores(table: pd.DataFrame, queries, library, score: str, rng) -> None:
    """Sampled rows score as the independent numpy matcher says (cut queries included)."""
    rows = rng.sample(range(len(table)), min(200, len(table)))
    for r in rows:
        q, l = int(table.query_index[r]), int(table.library_index[r])
        qp, lp = queries.precursor_mz[q], library.precursor_mz[l]
        extra = {"precursor_mz1": qp, "precursor_mz2": lp} if score != "cosine" else {}
        ref = greedy_matches(*queries.peaks(q), *library.peaks(l), tolerance=0.1, **extra)
        assert table["matches"][r] == ref.matches
        assert abs(table.score[r] - ref.score) <= 1e-9


@pytest.fixture(scope="module")
def small_queries(massbank_queries):
    """200 real queries: the search takes a few seconds on 2 cores."""
    return massbank_queries.subset(range(200))


@pytest.mark.slow
@pytest.mark.parametrize("score", list(SCORES))
def test_ctrl_c_keeps_every_hit_found(
    data_dir, library_cache, tmp_path, massbank_library, small_queries, score
):
    queries_path = tmp_path / "queries.mgf"
    with open(queries_path, "w") as fh:  # full precision: the subprocess reads the same peaks
        for i in range(len(small_queries)):
            fh.write(f"BEGIN IONS\nTITLE=q{i}\nPEPMASS={float(small_queries.precursor_mz[i])!r}\n")
            mz, intensity = small_queries.peaks(i)
            peaks = zip(mz.tolist(), intensity.tolist(), strict=True)
            fh.writelines(f"{m!r} {x!r}\n" for m, x in peaks)
            fh.write("END IONS\n")
    env = {**os.environ, "SIMMS_CACHE_DIR": str(library_cache)}
    library_path = str(data_dir / "massbank_ms2.mgf.gz")
    rng = random.Random(f"{score}-interrupts")
    for trial in range(TRIALS):
        out = tmp_path / f"hits-{trial}.tsv"
        args = [str(queries_path), library_path, "-o", str(out), "--backend", "cpu"]
        proc = _start([*args, "--score", score, *SCORES[score]], env)
        _wait_for(proc, "searching")
        time.sleep(rng.uniform(0.0, 1.5))
        proc.send_signal(signal.SIGINT)
        err = proc.stderr.read()
        code = proc.wait(timeout=300)
        assert "Traceback" not in err and "Fatal" not in err, err
        assert code in (130, 0), err  # 0: the search had already finished
        text = out.read_text(encoding="utf-8")
        complete = [ln for ln in text.splitlines() if ln.startswith("# complete:")]
        assert len(complete) == 1
        assert complete[0].split(":", 1)[1].strip().startswith("no" if code == 130 else "yes")
        table = pd.read_csv(out, sep="\t", comment="#")
        rows = list(zip(table.query_index, table.library_index, strict=True))
        assert len(set(rows)) == len(rows), "a hit was written twice"
        _check_scores(table, small_queries, massbank_library, score, rng)


def test_ctrl_c_before_the_search_exits_130_without_traceback(data_dir, tmp_path, library_cache):
    """An interrupt while the library loads: exit 130, one line, nothing written."""
    out = tmp_path / "hits.tsv"
    big = data_dir / "massbank_ms2.mgf.gz"
    env = {**os.environ, "SIMMS_CACHE_DIR": str(tmp_path / "cold-cache")}
    proc = _start([str(big), str(big), "-o", str(out), "--no-cache"], env)
    _wait_for(proc, "reading")
    time.sleep(0.2)  # well inside the read (about 0.7 s cold on a quiet machine)
    proc.send_signal(signal.SIGINT)
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 130, err
    assert "Traceback" not in err
    assert not out.exists()
    assert not list(tmp_path.glob(".hits.tsv*")), "a temporary file was left behind"


def test_ctrl_c_while_the_output_is_written_does_not_lose_it():
    """Before: a Ctrl-C during the final write raised KeyboardInterrupt and lost the search.
    Now SIGINT only cancels (the kernels stop), and the file is finished."""
    from engine.cli import _cancel_on_interrupt
    from engine.search import CancelToken

    token, said = CancelToken(), []
    # as from an interactive shell, even when pytest was started with SIGINT ignored
    started_with = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with _cancel_on_interrupt(token, said.append):
            os.kill(os.getpid(), signal.SIGINT)  # arrives "during the write"
            time.sleep(0.1)  # the handler runs here, in the main thread, and does not raise
            finished = True
        assert finished and token.cancelled
        assert said and "interrupted" in said[0]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, started_with)


def test_a_process_started_with_sigint_ignored_keeps_ignoring_it():
    from engine.cli import _cancel_on_interrupt
    from engine.search import CancelToken

    started_with = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as after `&` or nohup
    try:
        token = CancelToken()
        with _cancel_on_interrupt(token, print):
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
        assert not token.cancelled
    finally:
        signal.signal(signal.SIGINT, started_with)


def test_plain_install_reads_mzml():
    """Before: ``pip install .`` lacked psims, which pyteomics needs for mzML."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert any(dep.startswith("psims") for dep in project["dependencies"])
