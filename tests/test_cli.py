"""The ``simms`` command against matchms on real spectra, its output and its errors."""

from __future__ import annotations

import gzip
import subprocess
import sys

import numpy as np
import pytest

from engine.cli import main
from engine.export import HIT_COLUMNS, read_hits


def matchms_scores(path, score: str, tolerance: float):
    """All-pairs scores of a file with matchms itself (the independent reference)."""
    from matchms.importing import load_from_mgf
    from matchms.similarity import CosineGreedy, ModifiedCosineGreedy

    spectra = list(load_from_mgf(str(path)))
    cls = CosineGreedy if score == "cosine" else ModifiedCosineGreedy
    result = cls(tolerance=tolerance).matrix(spectra, spectra)
    return result["score"], result["matches"]


@pytest.mark.slow
@pytest.mark.parametrize("score", ["cosine", "modified-cosine"])
def test_search_equals_matchms_on_real_spectra(data_dir, tmp_path, score):
    path = data_dir / "pesticides.mgf"
    out = tmp_path / "hits.tsv"
    status = main(
        ["search", "--mode", "custom", str(path), str(path), "-o", str(out), "--top", "0",
         "--score", score, "--tolerance", "0.05", "--quiet", "--no-cache", "--batch-size", "16"]
    )  # fmt: skip
    assert status == 0
    cols, provenance = read_hits(out)
    assert list(cols) == list(HIT_COLUMNS)
    assert any(line.startswith("parameters:") for line in provenance)
    assert any("sha256" in line for line in provenance)
    ref_score, ref_matches = matchms_scores(path, score.replace("-", "_"), 0.05)
    # every pair matchms scores with >= 1 match is a hit, with its score and match count
    expected = np.argwhere(ref_matches >= 1)
    got = {
        (q, l): (s, m)
        for q, l, s, m in zip(
            cols["query_index"], cols["library_index"], cols["score"], cols["matches"], strict=True
        )
    }
    assert len(got) == len(expected)
    worst = 0.0
    for q, l in expected:
        s, m = got[(q, l)]
        assert m == ref_matches[q, l]
        worst = max(worst, abs(s - ref_score[q, l]))
    assert worst <= 1e-6


def test_rows_ordered_and_ids(data_dir, tmp_path, capsys):
    path = data_dir / "pesticides.mgf"
    assert (
        main(["search", "--mode", "custom", str(path), str(path), "--top", "3", "-q", "--no-cache"])
        == 0
    )
    lines = [ln for ln in capsys.readouterr().out.splitlines() if not ln.startswith("#")]
    header, rows = lines[0].split("\t"), [ln.split("\t") for ln in lines[1:]]
    assert header[:6] == [
        "query_index",
        "query_id",
        "library_index",
        "library_id",
        "score",
        "matches",
    ]
    assert len(rows) == 76 * 3
    for q in range(76):
        mine = [r for r in rows if int(r[0]) == q]
        scores = [float(r[4]) for r in mine]
        assert scores == sorted(scores, reverse=True)
        assert mine[0][2] == str(q) and float(mine[0][4]) == pytest.approx(1.0)
        assert mine[0][1].startswith('"CCMSLIB')  # text fields are quoted


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"", "empty"),
        (b"\x00\x01\x02garbage\xff\xfe" * 50, ""),
        (b"BEGIN IONS\nPEPMASS=100\nEND IONS\n", ""),
    ],
    ids=["empty", "binary", "no-peaks"],
)
def test_unusable_input_gives_one_line_error(tmp_path, capsys, content, reason):
    bad = tmp_path / "bad.mgf"
    bad.write_bytes(content)
    status = main(["search", "--mode", "custom", str(bad), str(bad), "-q", "--no-cache"])
    err = capsys.readouterr().err.strip()
    assert status == 2
    assert len(err.splitlines()) == 1 and "bad.mgf" in err and "Traceback" not in err
    assert reason in err


def test_truncated_gzip_and_missing_file(tmp_path, capsys):
    good = gzip.compress(b"BEGIN IONS\nPEPMASS=100\n50.0 1.0\nEND IONS\n" * 200)
    trunc = tmp_path / "lib.mgf.gz"
    trunc.write_bytes(good[: len(good) // 2])
    for target in (trunc, tmp_path / "missing.mgf"):
        assert (
            main(["search", "--mode", "custom", str(target), str(target), "-q", "--no-cache"]) == 2
        )
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and target.name in err


@pytest.mark.slow
def test_console_script_runs_as_module(data_dir, tmp_path):
    out = tmp_path / "hits.csv"
    path = data_dir / "sample.msp"
    command = [sys.executable, "-m", "engine", "search", "--mode", "custom", str(path), str(path)]
    proc = subprocess.run(
        [*command, "-o", str(out), "--no-cache"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert "hits from" in proc.stderr
    cols, _ = read_hits(out)
    assert len(cols["score"]) > 0


@pytest.mark.slow
def test_search_equals_matchms_on_large_and_dense_spectra(massbank_library, tmp_path):
    """`simms search` vs matchms on the largest and most densely peaked MassBank spectra."""
    counts = massbank_library.peak_counts
    largest = np.argsort(counts)[-6:]
    assert counts[largest].min() > 1000
    gaps = np.array([
        np.min(np.diff(massbank_library.peaks(i)[0])) if counts[i] > 20 else np.inf
        for i in range(0, len(massbank_library), 7)
    ])  # fmt: skip
    densest = np.argsort(gaps)[:6] * 7
    others = np.arange(0, len(massbank_library), 2711)[:8]
    chosen = np.unique(np.r_[largest, densest, others])
    path = tmp_path / "large_dense.mgf"
    with open(path, "w") as fh:  # full precision, so both readers see the same peaks
        for i in chosen:
            fh.write(
                f"BEGIN IONS\nTITLE=s{i}\nPEPMASS={float(massbank_library.precursor_mz[i])!r}\n"
            )
            peaks = zip(*massbank_library.peaks(i), strict=True)
            fh.writelines(f"{float(m)!r} {float(x)!r}\n" for m, x in peaks)
            fh.write("END IONS\n")
    out = tmp_path / "hits.tsv"
    args = [
        "search",
        "--mode",
        "custom",
        str(path),
        str(path),
        "-o",
        str(out),
        "--top",
        "0",
        "-q",
        "--no-cache",
    ]
    assert main([*args, "--tolerance", "0.1"]) == 0
    cols, _ = read_hits(out)
    ref_score, ref_matches = matchms_scores(path, "cosine", 0.1)
    got = {
        (q, l): (s, m)
        for q, l, s, m in zip(
            cols["query_index"], cols["library_index"], cols["score"], cols["matches"], strict=True
        )
    }
    expected = np.argwhere(ref_matches >= 1)
    assert len(got) == len(expected)
    for q, l in expected:
        s, m = got[(q, l)]
        assert m == ref_matches[q, l] and abs(s - ref_score[q, l]) <= 1e-6


@pytest.mark.parametrize(
    "target, reason",
    [("missing/hits.tsv", "does not exist"), ("hits.xlsx", "unknown hit-list format")],
)
def test_bad_output_is_refused_before_any_loading(tmp_path, capsys, monkeypatch, target, reason):
    """Before: the output was checked after the search (which was lost), and
    ``-o /nonexistent/x.tsv`` silently created the directory."""
    import engine.cli as cli

    def no_loading(*args, **kwargs):
        raise AssertionError("loaded a library before checking the output")

    monkeypatch.setattr(cli, "load_library", no_loading)
    out = tmp_path / target
    assert main(["search", "--mode", "custom", "q.mgf", "l.mgf", "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and reason in err
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize(
    "args, reason",
    [
        (["--threshold", "nan"], "threshold must be a finite number"),
        (["--threshold", "1.5"], "threshold must be between 0 and 1"),
        (["--tolerance", "inf"], "tolerance must be a finite number"),
        (["--ppm"], "--ppm needs --precursor-tolerance"),
        (["--top", "-1"], "top_n must be >= 0"),
    ],
)
def test_bad_parameters_are_refused(data_dir, capsys, args, reason):
    path = str(data_dir / "sample.msp")
    assert main(["search", "--mode", "custom", path, path, "-q", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and reason in err


def test_search_error_keeps_the_hits_written(data_dir, tmp_path, capsys, monkeypatch):
    """A search that fails part-way (a lost cluster, a failed backend) keeps what it found."""
    import engine.api as api
    from engine.search import SearchJob

    class FailsAfterOneChunk(SearchJob):
        def __iter__(self):
            for chunk in super().__iter__():
                yield chunk
                raise RuntimeError("all Dask workers were lost")

    monkeypatch.setattr(api, "SearchJob", FailsAfterOneChunk)
    path, out = str(data_dir / "pesticides.mgf"), tmp_path / "hits.tsv"
    assert main(["search", "--mode", "custom", path, path, "-o", str(out), "-q", "--no-cache"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "all Dask workers were lost" in err
    cols, provenance = read_hits(out)
    assert len(cols["score"]) > 0
    assert any(p.startswith("complete: no (stopped by an error") for p in provenance)
