"""The GPU's exact upper-bound pruning vs the CPU backend, under numba's CUDA simulator.

As in ``test_cuda_sim.py`` the comparison runs in a fresh interpreter with
``NUMBA_ENABLE_CUDASIM=1``.  Inputs: pesticides and a MassBank slice with its
largest and densest spectra (plus consecutive records of the same compounds, so
that thresholds of 0.7 have hits), tolerances 0.01 to 1.0.  Checked: the hits of
the bound-pruned GPU search equal the CPU backend's (same pairs, same match
counts, scores within 1e-9) for cosine, modified cosine and entropy with
thresholds 0.3 / 0.7 and top-N 0 / 10, and a running top-N at threshold 0, where
its floor alone bounds pairs (cases alternate between the two bound
modes: surviving pairs listed, their flagged pairs scored by the GPU's pair
kernel, or bounds left in the score buffer, flagged pairs rescored on the host), and the
bound kernel's bound is never below the exact score of any pair; ``make_resident``
builds every device peak index a search then uses.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.simulator import simulated_report, small_backend

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
QUERIES = DATA / "massbank_ms2_queries.mgf.gz"
PESTICIDES = DATA / "pesticides.mgf"

#: (set, score, tolerance, threshold, top_n) of the compared searches.
CASES = [
    ("massbank", "cosine", 0.01, 0.3, 0),
    ("massbank", "cosine", 0.1, 0.7, 10),
    ("massbank", "cosine", 1.0, 0.3, 10),
    ("massbank", "cosine", 1.0, 0.7, 0),
    ("massbank", "modified_cosine", 0.1, 0.7, 10),
    ("massbank", "modified_cosine", 1.0, 0.3, 0),
    ("massbank", "entropy", 0.02, 0.7, 10),
    ("massbank", "entropy", 0.02, 0.3, 0),
    ("pesticides", "cosine", 0.1, 0.7, 0),
    ("pesticides", "cosine", 1.0, 0.3, 10),
]
#: (set, score, tolerance) of running top-N searches at threshold 0 (identity and open
#: modes), where only the floor bounds pairs: survivors listed, then bounds in the buffer.
AT_ZERO = [("massbank", "entropy", 0.02), ("massbank", "cosine", 0.1)]
#: (set, score, tolerance) of the direct bound >= score checks over every pair.
BOUNDS = [
    ("massbank", "cosine", 1.0),
    ("massbank", "modified_cosine", 0.1),
    ("massbank", "entropy", 0.05),
]


def densest(offsets, mz, count: int) -> list[int]:  # pragma: no cover - subprocess
    """Spectra with the most peaks inside one 1 Da window."""
    import numpy as np

    best = np.zeros(len(offsets) - 1, dtype=np.int64)
    for s in range(len(best)):
        x = mz[offsets[s] : offsets[s + 1]]
        if len(x):
            best[s] = int((np.searchsorted(x, x + 1.0, side="right") - np.arange(len(x))).max())
    return [int(i) for i in np.argsort(best, kind="stable")[-count:]]


#: Scores (cosine, 0.1 Da) of the neighbours picked for each group: near the thresholds.
TARGETS = (1.0, 0.72, 0.68, 0.5, 0.32, 0.28)


def similar_groups(lib, size: int, groups: int) -> list[int]:  # pragma: no cover
    """Spectra with the most neighbours of cosine >= 0.7, each with neighbours of
    scores near :data:`TARGETS` (pairs close to the thresholds)."""
    import numpy as np

    from engine.backends import CpuBackend, PreparedSpectra
    from engine.params import SearchParameters

    p = SearchParameters(mode="custom", tolerance=0.1)
    spectra = PreparedSpectra.for_search(lib, p)
    scores, _ = CpuBackend().dense(spectra, spectra, p)
    np.fill_diagonal(scores, 0.0)
    chosen: list[int] = []
    for i in np.argsort(-(scores >= 0.7).sum(axis=1), kind="stable"):
        if len(chosen) >= size * groups:
            break
        if int(i) in chosen:
            continue
        group = [int(i)]
        for target in TARGETS[: size - 1]:
            for j in np.argsort(np.abs(scores[i] - target), kind="stable"):
                if int(j) not in chosen and int(j) not in group:
                    group.append(int(j))
                    break
        chosen += group
    return chosen[: size * groups]


def _inputs():  # pragma: no cover - runs in the subprocess
    """``{name: (library, query rows)}``: real sets, queries first."""
    import numpy as np

    from engine.io import read_library

    mb = read_library(QUERIES)
    counts = np.diff(mb.offsets)
    big = [int(i) for i in np.argsort(counts, kind="stable")[-2:]]
    dense = [i for i in densest(mb.offsets, mb.mz, 4) if i not in big][:2]
    pick = list(dict.fromkeys(similar_groups(mb, 6, 2) + big + dense))
    pest = read_library(PESTICIDES)
    pest_pick = similar_groups(pest, 4, 2)
    pest_pick += [i for i in range(0, 76, 5) if i not in pest_pick]
    return {"massbank": (mb.subset(pick), 8), "pesticides": (pest.subset(pest_pick), 6)}


def _same(g, c) -> tuple[bool, float | None]:  # pragma: no cover - subprocess
    import numpy as np

    g, c = g.sorted(), c.sorted()
    same = (
        len(g) == len(c)
        and np.array_equal(g.query_index, c.query_index)
        and np.array_equal(g.library_index, c.library_index)
        and np.array_equal(g.matches, c.matches)
    )
    return bool(same), float(np.abs(g.score - c.score).max(initial=0.0)) if same else None


def _running_top(gpu, spectra, nq, p, cpu) -> dict[str, object]:  # pragma: no cover
    """Device top-N across batches (``across_batches``) vs the CPU's top-N of one batch.

    Two query blocks; the library in three or four batches given out of column order, so
    that each block's batches land in separate tiles and the running top-N (and
    its floor) is merged over several tiles.
    """
    import numpy as np

    from engine.backends import Batch
    from engine.hits import HitTable

    n = len(spectra)
    # cuts on a piece boundary of the bound (8 columns): those tiles read the whole
    # library's peak index from a later piece; the one at 11 has an index of its own
    assert n > 12
    cuts = sorted({0, 8, 11, *([16] if n > 16 else []), n})
    pieces = [(cuts[i], cuts[i + 1]) for i in (1, 3, 0, 2) if i + 1 < len(cuts)]
    split = [Batch(q0, q1, l0, l1) for q0, q1 in ((0, nq // 2), (nq // 2, nq)) for l0, l1 in pieces]
    # the device peak indexes of every tile, built ahead (as a Dask worker does)
    gpu.make_resident(spectra, split, p)
    index = gpu.bounds.info(gpu._upload(spectra))["index"]
    built = len(index)
    gpu.reset_bound_survivors()
    got = [h for _, h in gpu.run_batches(spectra, spectra, split, p, across_batches=True)]
    merged = HitTable.concat(got).top_per_query(p.top_n, library_rank=spectra.ranks)
    ref = cpu.score_batch(spectra, spectra, Batch(0, nq, 0, n), p)
    same, diff = _same(merged, ref)
    per_query = np.bincount(ref.query_index, minlength=nq) if len(ref) else np.zeros(nq, int)
    return {"score": p.score, "threshold": p.threshold, "hits": len(ref), "same_hits": same,
            "max_diff": diff, "full_queries": int((per_query == p.top_n).sum()),
            "indexes": built, "indexes_added_by_search": len(index) - built,
            "listed": gpu.list_survivors, "survivors": gpu.bound_survivors,
            "bounded_pairs": gpu.bounds.counted_pairs, "pairs": nq * n}  # fmt: skip


def _run_checks() -> dict[str, object]:  # pragma: no cover - runs in the subprocess
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from engine.backends import Batch, CpuBackend, PreparedSpectra
    from engine.params import SearchParameters

    gpus = []
    for listed in (True, False):  # survivors listed / bounds left in the score buffer
        gpu = small_backend()
        gpu.bound_chunk = 8  # several column pieces per tile (the GPU uses 2,048)
        gpu.count_bound_survivors = True
        gpu.list_survivors = listed
        gpu.pair_work_max = 4096  # more long pairs for the pair kernel (65,536 on a GPU)
        gpu.pairs_on_gpu = listed  # the pair kernel (opt-in) in one mode, the host's in the other
        gpu.pair_gpu_min = 0  # ... every flush of them on the GPU (16,384 on a GPU)
        gpus.append(gpu)
    cpu = CpuBackend()
    out: dict[str, object] = {"cases": [], "bounds": [], "running": [], "ranges": []}
    sets = _inputs()
    out["peaks"] = {name: int(np.diff(lib.offsets).max()) for name, (lib, _) in sets.items()}
    for n, (name, score, tol, thr, top_n) in enumerate(CASES):
        gpu = gpus[n % 2]
        lib, nq = sets[name]
        p = SearchParameters(mode="custom", score=score, tolerance=tol, threshold=thr, top_n=top_n)
        spectra = PreparedSpectra.for_search(lib, p)
        batch = Batch(0, nq, 0, len(spectra))
        gpu.reset_bound_survivors()
        g = gpu.score_batch(spectra, spectra, batch, p)
        same, diff = _same(g, cpu.score_batch(spectra, spectra, batch, p))
        out["cases"].append(
            {
                "set": name, "score": score, "tolerance": tol, "threshold": thr, "top_n": top_n,
                "hits": len(g), "same_hits": same, "max_diff": diff, "pairs": nq * len(spectra),
                "survivors": gpu.bound_survivors, "listed": gpu.list_survivors,
            }
        )  # fmt: skip
        if top_n:  # the running top-N on the device, over tiles that do not merge
            p3 = SearchParameters(mode="custom", score=score, tolerance=tol, threshold=thr, top_n=3)
            out["running"].append(_running_top(gpu, spectra, nq, p3, cpu))
    for n, (name, score, tol) in enumerate(AT_ZERO):
        lib, nq = sets[name]
        p0 = SearchParameters(mode="custom", score=score, tolerance=tol, threshold=0.0, top_n=3)
        spectra = PreparedSpectra.for_search(lib, p0)
        out["running"].append(_running_top(gpus[n % 2], spectra, nq, p0, cpu))
    # one tile per query block (one query against a repository shard): no floor to
    # bound with before the last tile, so no peak index is built for it
    gpu = small_backend()
    lib, nq = sets["massbank"]
    p0 = SearchParameters(mode="custom", score="entropy", threshold=0.0, top_n=3)
    spectra = PreparedSpectra.for_search(lib, p0)
    gpu.make_resident(spectra, [Batch(0, nq, 0, len(spectra))], p0)
    out["one_tile_indexes"] = len(gpu.bounds.info(gpu._upload(spectra))["index"])
    out["rescored"] = [g.rescored_pairs for g in gpus]  # overflowing pairs, host-rescored
    out["on_gpu"] = [g.gpu_scored_pairs for g in gpus]  # flagged pairs, the pair kernel's
    # the bound of every pair in one column piece: each block of the bound kernel runs
    # over all its query's peaks (the longest spectra are queries here), so pieces
    # multiply the simulated work; the searches above cut their columns into pieces
    gpu = small_backend()
    for name, score, tol in BOUNDS:
        lib, _ = sets[name]
        p = SearchParameters(mode="custom", score=score, tolerance=tol)
        spectra = PreparedSpectra.for_search(lib, p)
        bound = gpu.pair_bounds(spectra, spectra, p)
        exact, _ = cpu.dense(spectra, spectra, p)
        ok = np.isfinite(bound)
        out["bounds"].append(
            {
                "set": name, "score": score, "tolerance": tol, "pairs": int(ok.sum()),
                "min_slack": float((bound[ok] - exact[ok]).min()),
                "unbounded_score_zero": bool(np.all(exact[~ok] == 0.0)),
            }
        )  # fmt: skip
    # a column range from a piece boundary on reads the whole library's index from a
    # later piece; any other range has an index of its own: the same bounds either way
    gpu.bound_chunk = 8
    lib, _ = sets["pesticides"]
    for score in ("cosine", "modified_cosine"):
        p = SearchParameters(mode="custom", score=score, tolerance=1.0)
        spectra = PreparedSpectra.for_search(lib, p)
        whole = _range_bounds(gpu, spectra, p, 0)
        for l0 in (8, 11, 16):
            part = _range_bounds(gpu, spectra, p, l0)
            out["ranges"].append(
                {"score": score, "l0": l0, "nonzero": int((part > 0).sum()),
                 "same": bool(np.allclose(part, whole[:, l0:], rtol=1e-12, atol=0.0))}
            )  # fmt: skip
    return out


def _range_bounds(gpu, spectra, p, l0: int):  # pragma: no cover - runs in the subprocess
    """Raw bounds of every query × library columns ``[l0, n)`` (no listing)."""
    import numpy as np

    from engine.backends.base import score_kind, score_tolerance

    n = len(spectra)
    dq, dl = gpu._upload(spectra, keep=False), gpu._upload(spectra)
    out = gpu._cuda.device_array((n, n - l0), dtype=np.float64)
    stream = gpu._cuda.stream()
    kind, tol = score_kind(p), float(score_tolerance(p))
    gpu.bounds._queue(dq, dl, 0, n, l0, n, kind, tol, gpu.bounds.no_listing(), out, stream)
    stream.synchronize()
    return out.copy_to_host()


@pytest.mark.skipif(
    not (QUERIES.exists() and PESTICIDES.exists()), reason="shared test data not present"
)
@pytest.mark.slow
def test_bound_pruned_gpu_hits_equal_cpu_under_simulator() -> None:
    """Bound-pruned GPU hits equal the CPU backend's; the bound never undercuts a score."""
    report = simulated_report(__file__)
    assert report["peaks"]["massbank"] > 1024
    for case in report["cases"]:
        assert case["same_hits"], case
        assert case["max_diff"] <= 1e-9, case
        assert case["survivors"] <= case["pairs"], case
    # real hits beyond the self-matches, and pairs the bound removed
    assert all(c["hits"] > 8 for c in report["cases"] if c["set"] == "massbank"), report
    assert sum(c["pairs"] - c["survivors"] for c in report["cases"]) > 0
    assert {c["listed"] for c in report["cases"]} == {True, False}
    assert report["on_gpu"][0] > 0 and report["on_gpu"][1] == 0  # the pair kernel's, listed
    assert report["rescored"][1] > 0  # the host's rescoring, bounds in the buffer
    for case in report["running"]:
        assert case["same_hits"], case
        assert case["indexes"] > 0 and case["indexes_added_by_search"] == 0, case
        assert case["max_diff"] <= 1e-9, case
    # queries with a full top-N, so the floor rose above the threshold
    assert sum(c["full_queries"] for c in report["running"]) > 0, report["running"]
    # at threshold 0 the floor alone bounds pairs, in both bound modes; where the
    # survivors are listed, it removed some
    at_zero = [c for c in report["running"] if c["threshold"] == 0.0]
    assert {c["listed"] for c in at_zero} == {True, False}, at_zero
    assert all(c["indexes"] > 0 and c["bounded_pairs"] > 0 for c in at_zero), at_zero
    assert any(c["listed"] and c["survivors"] < c["bounded_pairs"] for c in at_zero), at_zero
    assert report["one_tile_indexes"] == 0
    assert len(report["ranges"]) == 6
    for r in report["ranges"]:
        assert r["same"] and r["nonzero"] > 0, r
    for b in report["bounds"]:
        assert b["pairs"] > 0, b
        assert b["min_slack"] >= -1e-12, b  # float rounding only; the search widens by 1e-9
        assert b["unbounded_score_zero"], b


if __name__ == "__main__":  # pragma: no cover - the simulator process
    print(json.dumps(_run_checks()))
