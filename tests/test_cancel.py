"""Cancellation reaches the kernels: a batch in flight stops within a pair, hits are kept."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from engine import CancelToken, SearchJob, SearchParameters, SpectrumLibrary
from engine.backends import CpuBackend
from engine.kernels import SearchOptions, SpectrumSet, prepare_weights, search_block


def _csr(library: SpectrumLibrary):
    w, norm = prepare_weights(library.mz, library.intensity, library.offsets)
    return SpectrumSet(library.mz, w, library.offsets, norm, library.precursor_mz)


@pytest.mark.slow
@pytest.mark.parametrize("modified", [False, True])
@pytest.mark.parametrize("top_n", [0, 5])
def test_a_set_flag_stops_every_kernel(pesticides, modified, top_n):
    """With the flag set before the call no row is scored (fails if a kernel ignores it)."""
    args = (_csr(pesticides), _csr(pesticides), 0, len(pesticides), 0, len(pesticides))
    options = SearchOptions(0.05, modified, top_n=top_n)
    full = search_block(*args, options)
    assert len(full[0]) > 0
    stop = np.ones(1, dtype=np.uint8)
    cut = search_block(*args, options, stop=stop)
    assert len(cut[0]) == 0


def _huge_query(n_peaks: int = 200_000) -> SpectrumLibrary:
    rng = np.random.default_rng(7)
    mz = np.sort(rng.uniform(50, 1000, n_peaks))
    return SpectrumLibrary.from_peak_lists([mz], [rng.uniform(1, 100, n_peaks)], precursor_mz=[500])


@pytest.mark.parametrize("score", ["cosine", "modified_cosine"])
def test_cancel_reaches_a_batch_in_flight(massbank_library, score):
    """One huge query against one library block: a single batch that takes many seconds.

    Before the kernels polled the token, ``cancel`` waited for the whole batch (52 s
    for a million-peak spectrum) and every pair was scored; now the batch returns
    within about a pair's time with the hits found so far.  The huge query matches
    nearly every library spectrum, so a batch run to its end has about one hit per
    library spectrum.  The join below only guards against a hang.
    """
    params = SearchParameters(mode="custom", score=score, top_n=0, tolerance=0.5)
    query = _huge_query()
    SearchJob(query, massbank_library.subset(range(3)), params, backend="cpu").run()  # compile
    _, block = CpuBackend().block_shape(params.batch_size)
    library = massbank_library.subset(range(block))  # exactly one batch
    token = CancelToken()
    job = SearchJob(query, library, params, backend="cpu", cancel_token=token)
    thread = threading.Thread(target=job.run, daemon=True)
    thread.start()
    thread.join(0.5)
    token.cancel()
    thread.join(60)
    assert not thread.is_alive(), "the search did not stop after cancel"
    assert job.cancelled and not job.finished
    assert list(job.incomplete_queries) == [0]
    assert job.progress.hits < len(library) // 2


def test_cpu_backend_bound_to_the_job_token(pesticides):
    token = CancelToken()
    job = SearchJob(pesticides, pesticides, backend="cpu", cancel_token=token)
    job.run()
    assert isinstance(job.backend, CpuBackend)
    assert job.backend.stop is token.flag
    token.cancel()
    assert token.flag[0] == 1


def test_keep_hits_false_streams_without_keeping(pesticides):
    job = SearchJob(pesticides, pesticides, backend="cpu", keep_hits=False)
    streamed = sum(len(chunk) for chunk in job)
    assert streamed == job.progress.hits > 0
    with pytest.raises(RuntimeError, match="keep_hits"):
        _ = job.hits
