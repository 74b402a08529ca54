"""Profile-mode (not centroided) spectra: flagged at import, searched exactly in bounded time.

A profile export puts thousands of points 1.7e-5 Da apart; at a 0.1 Da tolerance
two such spectra of 30,000 points have ~10⁹ candidate pairs, all in one
component of the greedy matching.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from engine import (
    CancelToken,
    SearchParameters,
    cosine_greedy_pair,
    modified_cosine_pair,
    read_library,
    search,
)
from engine.kernels.index_bounds import (
    DENSE_ROW,
    DENSE_ROWS,
    INDEX_EPS,
    KEY_ROUNDING,
    NO_DENSE_ROWS,
    dense_rows,
)
from engine.kernels.peak_index import library_peak_index
from engine.kernels.spectrum_set import spectrum_set
from engine.preprocess import Pipeline, Step

STEP = 1.7e-5


def profile_mgf(path, n, precursors=(500.0, 500.0, 500.0)):
    """Three profile spectra of ``n`` points each (sine-shaped intensities)."""
    lines = []
    x = np.arange(n)
    for s, precursor in enumerate(precursors):
        mz = 100.0 + s * 3.1e-6 + x * STEP
        intensity = 1000 * (1.2 + np.sin(x / 50.0 + s)) + (x * 7919 % 101) / 100
        lines += [f"BEGIN IONS\nTITLE=profile {s}\nPEPMASS={precursor}\nCHARGE=1+"]
        lines += [f"{m:.6f} {i:.2f}" for m, i in zip(mz, intensity, strict=True)]
        lines.append("END IONS")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def profile_30k(tmp_path_factory):
    return read_library(profile_mgf(tmp_path_factory.mktemp("profile") / "p30k.mgf", 30_000))


def test_the_import_report_flags_profile_spectra(profile_30k, massbank_queries):
    report = profile_30k.report
    assert report.not_centroided == [1, 2, 3]
    assert any("not centroided" in note and "record 1 (profile 0)" in note for note in report.notes)
    assert "not centroided" in report.summary()
    # centroided spectra are not flagged
    assert len(massbank_queries.report.not_centroided) < 0.02 * len(massbank_queries)


@pytest.mark.slow
def test_a_search_of_30000_point_spectra_finishes(profile_30k):
    hits = search(profile_30k, profile_30k, mode="custom", backend="cpu")
    assert len(hits) == 9
    own = hits.query_index == hits.library_index
    assert np.all(hits.matches[own] == 30_000)  # every point matched to itself
    assert np.allclose(hits.score[own], 1.0)


def test_stop_acts_within_a_search_of_profile_spectra(profile_30k):
    token = CancelToken()
    progress = []

    def stop_at_once(p):
        progress.append(p.pairs_done)
        token.cancel()

    done = threading.Event()
    result = []

    def run():
        result.append(
            search(
                profile_30k,
                profile_30k,
                mode="custom",
                backend="cpu",
                on_progress=stop_at_once,
                cancel_token=token,
            )  # fmt: skip
        )
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(60), "the search did not stop"
    assert len(result[0]) <= 9


@pytest.mark.slow
def test_equal_to_matchms_on_3000_point_spectra(tmp_path):
    from matchms.importing import load_from_mgf
    from matchms.similarity import CosineGreedy, ModifiedCosineGreedy

    path = profile_mgf(tmp_path / "p3k.mgf", 3000, precursors=(500.0, 514.016, 500.0))
    ours = read_library(path)
    theirs = list(load_from_mgf(str(path)))
    a, b = theirs[0], theirs[2]
    want = CosineGreedy(tolerance=0.01).pair(a, b)
    got = cosine_greedy_pair(*ours.peaks(0), *ours.peaks(2), tolerance=0.01)
    assert got[1] == want["matches"] and got[0] == pytest.approx(float(want["score"]), abs=1e-12)
    a, b = theirs[0], theirs[1]  # 14.016 Da apart: shifted candidates too
    want = ModifiedCosineGreedy(tolerance=0.01).pair(a, b)
    got = modified_cosine_pair(
        *ours.peaks(0), ours.precursor_mz[0], *ours.peaks(1), ours.precursor_mz[1],
        tolerance=0.01,
    )  # fmt: skip
    assert got[1] == want["matches"] and got[0] == pytest.approx(float(want["score"]), abs=1e-12)


def test_centroiding_merges_profile_points(profile_30k):
    step = Pipeline((Step("centroid", {"width": 0.05}),))
    centroided = step(profile_30k)
    counts = centroided.peak_counts
    assert np.all(counts < 30_000 / 100)
    for s in range(3):
        mz, intensity = centroided.peaks(s)
        assert np.all(np.diff(mz) > 0.05)
        total = profile_30k.peaks(s)[1].sum()
        assert intensity.sum() == pytest.approx(total, rel=1e-6)
    assert SearchParameters(preprocess='[["centroid", {"width": 0.02}]]').preprocess


def _dense_row_taken(queries, library, tolerance: float) -> list[bool]:
    """Per query row: whether ``accumulate_bounds`` would take the dense path (numpy)."""
    index = library_peak_index(library, 0, len(library.norm))
    taken = []
    for q in range(len(queries.norm)):
        qmz = queries.mz[queries.offsets[q] : queries.offsets[q + 1]]
        widen = tolerance + INDEX_EPS + (np.abs(qmz) + tolerance) * KEY_ROUNDING
        los = np.searchsorted(index.mz, qmz - widen, side="left")
        his = np.searchsorted(index.mz, qmz + widen, side="right")
        reached = np.zeros(len(index.mz), dtype=bool)
        for lo, hi in zip(los, his, strict=True):
            reached[lo:hi] = True
        taken.append((his - los).sum() > DENSE_ROW * (reached.sum() + len(qmz)))
    return taken


def _set(lib):
    return spectrum_set(lib.mz, lib.intensity, lib.offsets, np.ones(len(lib)), lib.precursor_mz)


def test_dense_rows_only_where_a_row_can_be_dense(profile_30k, massbank_queries):
    """Centroided queries never compile the dense bounds; profile ones (and doubt) do."""
    tolerance = 0.02
    profile = _set(profile_30k)
    assert dense_rows(profile, 0, 3, tolerance) is DENSE_ROWS
    assert any(_dense_row_taken(profile, profile, tolerance))
    queries = _set(massbank_queries)  # a few of them profile spectra
    marked = [dense_rows(queries, q, q + 1, tolerance) is DENSE_ROWS for q in range(1000)]
    assert 0 < sum(marked) < 20
    taken = _dense_row_taken(queries, queries, tolerance)
    assert all(m for m, t in zip(marked, taken, strict=True) if t)  # never a dense row unmarked
    # nine peaks within two windows of one spectrum: a library key may be in all nine windows
    close = np.r_[np.linspace(100, 100 + 1.9 * tolerance, 9), 300.0, 400.0]
    spread = np.r_[np.linspace(100, 100 + 2.4 * tolerance, 9), 300.0, 400.0]
    for mz, expected in ((close, DENSE_ROWS), (spread, NO_DENSE_ROWS)):
        two = spectrum_set(mz, np.ones(11), [0, 9, 11], np.ones(2), [np.nan, 500.0])
        assert dense_rows(two, 0, 2, tolerance) is expected
    unsorted = spectrum_set(close[::-1], np.ones(11), [0, 11], np.ones(1), [500.0])
    assert dense_rows(unsorted, 0, 1, tolerance) is DENSE_ROWS
