"""The search job: batching, top-N merging, precursor windows, cancellation, memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from engine import CancelToken, SearchJob, SearchParameters, search
from engine.backends import Backend, CpuBackend
from engine.hits import HitTable
from engine.matching import greedy_matches


def brute_force(queries, library, params: SearchParameters):
    """Every pair scored with the independent numpy matcher, then filtered."""
    rows = []
    for qi in range(len(queries)):
        qmz, qint = queries.peaks(qi)
        for li in range(len(library)):
            qp, lp = queries.precursor_mz[qi], library.precursor_mz[li]
            if params.precursor_tolerance is not None:
                tol = params.precursor_tolerance * (
                    qp * 1e-6 if params.precursor_unit == "ppm" else 1
                )
                if not abs(qp - lp) <= tol:
                    continue
            lmz, lint = library.peaks(li)
            extra = {"precursor_mz1": qp, "precursor_mz2": lp} if params.modified else {}
            m = greedy_matches(qmz, qint, lmz, lint, tolerance=params.tolerance, **extra)
            if m.matches >= max(1, params.min_matches) and m.score >= params.threshold:
                rows.append((qi, li, m.score, m.matches))
    rows.sort(key=lambda r: (r[0], -r[2], r[1]))
    if params.top_n:
        kept, count = [], {}
        for r in rows:
            count[r[0]] = count.get(r[0], 0) + 1
            if count[r[0]] <= params.top_n:
                kept.append(r)
        rows = kept
    return rows


def assert_same_hits(hits, rows):
    assert len(hits) == len(rows)
    expected = np.array(rows, dtype=float).reshape(-1, 4)
    np.testing.assert_array_equal(hits.query_index, expected[:, 0])
    np.testing.assert_array_equal(hits.matches, expected[:, 3])
    np.testing.assert_allclose(hits.score, expected[:, 2], atol=1e-9, rtol=0)
    # ties in score may order library indexes either way only if scores differ by < 1e-9
    np.testing.assert_array_equal(hits.library_index, expected[:, 1])


@pytest.mark.parametrize(
    "params",
    [
        SearchParameters(mode="custom", top_n=3),
        SearchParameters(mode="custom", top_n=0, threshold=0.5, min_matches=3, tolerance=0.02),
        SearchParameters(mode="custom", top_n=5, precursor_tolerance=50.0),
        SearchParameters(mode="custom", top_n=4, precursor_tolerance=2000.0, precursor_unit="ppm"),
        SearchParameters(mode="custom", top_n=2, score="modified_cosine", tolerance=0.05),
    ],
    ids=["top3", "threshold", "precursor-da", "precursor-ppm", "modified"],
)
def test_search_matches_brute_force(pesticides, params):
    queries, library = pesticides.subset(range(0, 76, 5)), pesticides
    small_batches = SearchParameters.from_dict({**params.to_dict(), "batch_size": 7})
    expected = brute_force(queries, library, params)
    for p in (params, small_batches):
        assert_same_hits(search(queries, library, p, backend="cpu"), expected)


def test_job_streams_chunks_and_reports_progress(massbank_sample):
    queries, library = massbank_sample.subset(range(200)), massbank_sample
    seen = []
    job = SearchJob(
        queries, library, SearchParameters(mode="custom", top_n=5, batch_size=128), backend="cpu",
        on_progress=lambda p: seen.append((p.pairs_done, p.pairs_total)),
    )  # fmt: skip
    chunks = list(job)
    assert len(chunks) > 1, "hits should stream out in several chunks"
    assert job.finished and not job.cancelled
    assert seen[-1] == (200 * len(library), 200 * len(library))
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    total = sum(len(c) for c in chunks)
    assert total == len(job.hits) > 4 * 200
    one_batch = search(
        queries,
        library,
        SearchParameters(mode="custom", top_n=5, batch_size=100_000),
        backend="cpu",
    )
    np.testing.assert_array_equal(job.hits.library_index, one_batch.library_index)
    np.testing.assert_array_equal(job.hits.score, one_batch.score)


def test_cancel_keeps_partial_hits(massbank_sample):
    queries, library = massbank_sample.subset(range(300)), massbank_sample
    token = CancelToken()
    batches = []

    def on_progress(p):
        batches.append(p.pairs_done)
        # CPU blocks of 64 queries x 2,048 library spectra (top N): 3 batches a
        # block, so after 4 the first block is complete and the second cut short
        if len(batches) == 4:
            token.cancel()

    params = SearchParameters(mode="custom", top_n=5, batch_size=64)
    job = SearchJob(
        queries, library, params, backend="cpu", on_progress=on_progress, cancel_token=token
    )
    hits = job.run()
    assert job.cancelled and not job.finished
    assert job.progress.pairs_done < job.progress.pairs_total
    assert 0 < len(hits) < 5 * 300
    # the hits kept are real: each equals the score of that pair in a full search
    full = search(queries, library, SearchParameters(mode="custom", top_n=0), backend="cpu")
    pairs = zip(full.query_index, full.library_index, strict=True)
    key = dict(zip(pairs, full.score, strict=True))
    for q, l, s in zip(hits.query_index, hits.library_index, hits.score, strict=True):
        assert key[(q, l)] == pytest.approx(s, abs=1e-12)
    # queries of completed blocks have exactly their final top-N; the cut block is flagged
    assert len(job.incomplete_queries) > 0
    final = search(queries, library, params, backend="cpu")
    complete = np.setdiff1d(np.unique(hits.query_index), job.incomplete_queries)
    assert len(complete) == 64
    for q in complete:
        np.testing.assert_array_equal(
            hits.library_index[hits.query_index == q], final.library_index[final.query_index == q]
        )


def test_no_dense_query_by_library_array(massbank_sample):
    queries, library = massbank_sample.subset(range(2000)), massbank_sample
    search(queries.subset(range(2)), library.subset(range(10)), backend="cpu")  # compile first
    tracemalloc.start()
    search(
        queries, library, SearchParameters(mode="custom", top_n=10, batch_size=256), backend="cpu"
    )
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    dense_bytes = len(queries) * len(library) * 8
    assert peak < dense_bytes / 8, f"peak {peak} bytes vs dense {dense_bytes}"


def test_every_query_finds_itself(massbank_library, massbank_queries):
    params = SearchParameters(mode="custom", top_n=0, threshold=0.999999)
    hits = search(massbank_queries, massbank_library, params, backend="cpu")
    position = {id_: i for i, id_ in enumerate(massbank_library.ids)}
    own = np.array([position[i] for i in massbank_queries.ids])
    found = hits.library_index == own[hits.query_index]
    assert found.sum() == len(massbank_queries) == 1000
    np.testing.assert_allclose(hits.score[found], 1.0, atol=1e-6)


class _FailingBackend(Backend):
    """A backend that dies after a few batches, like a GPU losing its context."""

    name = "cuda"

    def __init__(self, fail_after: int) -> None:
        self.left = fail_after
        self.cpu = CpuBackend()

    @property
    def device(self) -> str:
        return "a GPU about to fail"

    def score_batch(self, queries, library, batch, params):
        if self.left == 0:
            raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS")
        self.left -= 1
        return self.cpu.score_batch(queries, library, batch, params)

    def dense(self, queries, library, params):
        raise RuntimeError("CUDA_ERROR_OUT_OF_MEMORY")


def test_backend_failure_falls_back_to_cpu_without_losing_hits(pesticides):
    params = SearchParameters(mode="custom", top_n=3, batch_size=8)
    messages = []
    job = SearchJob(
        pesticides, pesticides, params, backend=_FailingBackend(5), on_message=messages.append
    )
    hits = job.run()
    assert job.finished and job.backend.name == "cpu"
    assert any("cuda backend failed" in m and "continuing on the CPU" in m for m in messages)
    expected = search(pesticides, pesticides, params, backend="cpu")
    np.testing.assert_array_equal(hits.library_index, expected.library_index)
    np.testing.assert_array_equal(hits.score, expected.score)


class _WithholdingBackend(_FailingBackend):
    """A backend that holds each query's hits until the last batch of its block
    (as the CUDA backend's device top-N does), then dies mid-block."""

    def run_batches(self, queries, library, batches, params, across_batches=False):
        held: dict[tuple[int, int], list[HitTable]] = {}
        last = {(b.q_start, b.q_stop): b for b in batches}
        for batch in batches:
            key = (batch.q_start, batch.q_stop)
            held.setdefault(key, []).append(self.score_batch(queries, library, batch, params))
            if batch is last[key]:
                yield batch, HitTable.concat(held.pop(key)).top_per_query(params.top_n)
            else:
                yield batch, HitTable.empty()


@pytest.mark.parametrize("fail_after", [1, 3, 6])
def test_failure_mid_block_redoes_the_block_without_losing_hits(pesticides, fail_after):
    """Hits held back on the device for a block's last batch are not lost when the
    device fails before it: the CPU redoes the whole block."""
    params = SearchParameters(mode="custom", top_n=3, batch_size=4)
    job = SearchJob(
        pesticides, pesticides, params, backend=_WithholdingBackend(fail_after),
        on_message=lambda m: None,
    )  # fmt: skip
    plan = job._plan()
    assert max(len(batches) for _, batches in plan.blocks) > fail_after  # dies mid-block
    hits = job.run()
    assert job.finished and job.backend.name == "cpu"
    assert job.progress.pairs_done == plan.pairs
    expected = search(pesticides, pesticides, params, backend="cpu")
    order = np.lexsort((expected.library_index, expected.query_index))
    got = np.lexsort((hits.library_index, hits.query_index))
    np.testing.assert_array_equal(hits.query_index[got], expected.query_index[order])
    np.testing.assert_array_equal(hits.library_index[got], expected.library_index[order])
    np.testing.assert_array_equal(hits.score[got], expected.score[order])


def test_missing_gpu_is_reported_and_cpu_used():
    from engine import get_backend, gpu_status

    ok, reason = gpu_status()
    if ok:
        pytest.skip("a GPU is present")
    messages = []
    backend = get_backend("cuda", on_message=messages.append)
    assert backend.name == "cpu"
    assert messages and "using the CPU instead" in messages[0] and reason in messages[0]


def test_dense_failure_falls_back_to_cpu(pesticides):
    from engine import score_matrix

    subset = pesticides.subset(range(12))
    messages = []
    scores, matches = score_matrix(
        subset, subset, backend=_FailingBackend(0), on_message=messages.append
    )
    assert "computing the matrix on the CPU" in messages[0]
    expected, expected_matches = score_matrix(subset, subset, backend="cpu")
    np.testing.assert_array_equal(scores, expected)
    np.testing.assert_array_equal(matches, expected_matches)


@pytest.mark.parametrize("score", ["cosine", "modified_cosine"])
@pytest.mark.parametrize("top_n", [1, 2])
def test_tied_scores_rank_by_library_index_under_a_precursor_window(pesticides, score, top_n):
    """Copies of one spectrum score the same; the top-N keeps the lowest library indexes.

    The copies' precursors fall as their index rises, so in the precursor-sorted
    order the window search uses, the highest index comes first: a kernel that
    broke ties by position would keep the wrong copies.
    """
    from engine import SpectrumLibrary

    mz, intensity = pesticides.peaks(3)
    n = 6
    precursor = pesticides.precursor_mz[3] + 0.01 * np.arange(n)[::-1]
    library = SpectrumLibrary.from_peak_lists([mz] * n, [intensity] * n, precursor_mz=precursor)
    query = SpectrumLibrary.from_peak_lists([mz], [intensity], precursor_mz=[precursor.mean()])
    params = SearchParameters(mode="custom", score=score, top_n=top_n, precursor_tolerance=1.0)
    hits = search(query, library, params, backend="cpu")
    assert hits.library_index.tolist() == list(range(top_n))
    assert np.all(hits.score == hits.score[0])
    assert hits.library_index.tolist() == [r[1] for r in brute_force(query, library, params)]


@pytest.mark.slow
@pytest.mark.parametrize("prune", [True, False])
def test_kernel_top_n_ranks_ties_by_original_index(pesticides, prune):
    """The backend's own top-N on a reordered library keeps the lowest original indexes."""
    from engine import SpectrumLibrary
    from engine.backends import Batch, PreparedSpectra

    mz, intensity = pesticides.peaks(3)
    n = 6
    library = SpectrumLibrary.from_peak_lists([mz] * n, [intensity] * n, precursor_mz=[300.0] * n)
    query = PreparedSpectra.from_library(library.subset([0]))
    reordered = PreparedSpectra.from_library(library).reordered(np.arange(n)[::-1])
    params = SearchParameters(
        mode="custom", top_n=2, score="cosine" if prune else "modified_cosine"
    )
    hits = CpuBackend().score_batch(query, reordered, Batch(0, 1, 0, n), params)
    assert reordered.ranks[hits.library_index].tolist() == [0, 1]


@pytest.mark.parametrize(
    ("tolerance", "unit"),
    [(0.5, "Da"), (0.01, "Da"), (20.0, "ppm")],
    ids=["0.5Da", "0.01Da", "ppm"],
)
@pytest.mark.slow
def test_windowed_blocks_give_the_hits_of_scoring_every_pair(
    massbank_library, massbank_queries, tolerance, unit
):
    """Queries grouped by their own windows: every pair inside a window is still scored."""
    from engine.search.window import _windows, windowed_query_blocks

    library = massbank_library.subset(np.arange(0, len(massbank_library), 4))
    queries = massbank_queries
    windowed = SearchParameters(
        mode="custom", tolerance=0.02, top_n=5, precursor_tolerance=tolerance, precursor_unit=unit
    )
    hits = search(queries, library, windowed, backend="cpu")
    # the same search with no window, keeping every hit, then the window applied by hand
    every = search(
        queries, library, SearchParameters(mode="custom", tolerance=0.02, top_n=0), backend="cpu"
    )
    qp = queries.precursor_mz[every.query_index]
    lp = library.precursor_mz[every.library_index]
    allowed = tolerance * (qp * 1e-6 if unit == "ppm" else 1.0)
    inside = np.abs(qp - lp) <= allowed
    keep = np.flatnonzero(inside)
    expected = HitTable(
        every.query_index[keep], every.library_index[keep], every.score[keep], every.matches[keep]
    ).top_per_query(5)
    a, b = hits.sorted(), expected.sorted()
    np.testing.assert_array_equal(a.query_index, b.query_index)
    np.testing.assert_array_equal(a.library_index, b.library_index)
    np.testing.assert_array_equal(a.matches, b.matches)
    np.testing.assert_allclose(a.score, b.score, atol=1e-12, rtol=0)
    # the blocks cover every query with a precursor once, and save pairs
    q_sorted = np.sort(queries.precursor_mz)
    l_sorted = np.sort(library.precursor_mz)
    blocks = windowed_query_blocks(q_sorted, l_sorted, windowed, 256)
    assert blocks[0][0] == 0 and blocks[-1][1] == np.count_nonzero(~np.isnan(q_sorted))
    assert all(b0 == a1 for (_, a1), (b0, _) in zip(blocks, blocks[1:], strict=False))
    lo, hi = _windows(q_sorted, l_sorted, windowed)
    scored = sum((q1 - q0) * (hi[q1 - 1] - lo[q0]) for q0, q1 in blocks)
    fixed = sum((min(q0 + 256, len(lo)) - q0) * (hi[min(q0 + 256, len(lo)) - 1] - lo[q0])
                for q0 in range(0, len(lo), 256))  # fmt: skip
    assert scored <= fixed


@pytest.mark.parametrize("mode", ["identity", "analog"])
def test_a_library_made_resident_is_what_the_first_search_uses(pesticides, mode):
    from engine.search import make_resident

    class Recording(CpuBackend):
        resident = searched = None

        def make_resident(self, library, batches, params):
            self.resident = library

        def run_batches(self, queries, library, batches, params, across_batches=False):
            self.searched = library
            yield from super().run_batches(queries, library, batches, params, across_batches)

    params = SearchParameters(mode=mode)
    backend = Recording()
    make_resident(pesticides, params, backend=backend)
    hits = SearchJob(pesticides, pesticides, params, backend=backend).run()
    assert backend.resident is backend.searched  # prepared and ordered once, not again
    expected = SearchJob(pesticides, pesticides, params, backend="cpu").run()
    assert len(hits) > 0
    for column in ("query_index", "library_index", "score", "matches"):
        np.testing.assert_array_equal(getattr(hits, column), getattr(expected, column))
