"""The simulated profile of ``bench_dask_gpu.py --profile``: task costs measured on CPU workers.

On a LocalCluster of 2 worker processes (1 numba thread each, CPU backend), with
the MassBank library resident on the workers (2 shards):

* fixed cost per task: a search cut into many tiny tasks (``max_block_queries=2``),
  split into the part on the worker (the task's own clock) and the dispatch around
  it (scheduler, transfers, the client's loop): ``a = wall · W / T - b · pairs``;
* cost per pair on a CPU worker: the tasks of a search in large blocks;
* transfer: a 32 MB object sent to a worker and back (loopback, like one host's GPUs);
  pickled bytes of a query block and of a task's hits;
* the client's merge per hit row (``HitTable.concat(...).top_per_query``).

Then predicts the all-vs-all MassBank search (54,390², threshold 0.7, top 100:
2.958e9 pairs, 3,510,898 hits) on 1, 2 and 4 GPUs from the single-GPU figures in
``benchmarks/RESULTS.md`` (one process on one H200: 1.61 s; fixed cost of a task
on a GPU worker: about 62 ms) and the plan the engine makes for each worker count
(:func:`engine.distributed.plan.query_block_bounds` with that cost model):
``T(W) = b·P/W + k·a + the last block's transfer and merge`` (``c`` per hit row:
the merge and transfer measured here), where ``k`` is the number of blocks (tasks
per worker) the engine's plan makes with that cost model; the earlier blocks'
merges overlap with the workers' next block.
"""

from __future__ import annotations

import logging
import pickle
import time

import numpy as np

from engine.distributed.cost import TaskCost
from engine.distributed.plan import query_block_bounds
from engine.hits import HitTable
from engine.io import read_library
from engine.params import SearchParameters
from engine.search import SearchJob

#: The all-vs-all MassBank search of RESULTS.md.
ALL_VS_ALL = {"queries": 54_390, "library": 54_390, "hits": 3_510_898}


def say(*args) -> None:
    print(*args, flush=True)


def measure(args) -> dict:
    import distributed

    from engine.distributed import DaskSearchJob

    logging.getLogger("distributed").setLevel(logging.ERROR)
    library = read_library(args.data / "massbank_ms2.mgf.gz")
    queries = read_library(args.data / "massbank_ms2_queries.mgf.gz")
    params = SearchParameters(
        mode="custom", tolerance=args.tolerance, threshold=args.threshold, top_n=args.top
    )
    out: dict = {}
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            env={"NUMBA_NUM_THREADS": "1"},
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        w = len(client.nthreads())

        def job(q, **kw):
            t = time.perf_counter()
            j = DaskSearchJob(q, library, params, client=client, backend="cpu", n_shards=2, **kw)
            j.run()
            return time.perf_counter() - t, j

        job(queries.subset(np.arange(64)))  # shards resident, kernels compiled
        sec, big = job(queries)
        p = np.array([t[0] for t in big.task_times], dtype=float)
        s = np.array([t[1] for t in big.task_times])
        tiny_sec, tiny = job(queries.subset(np.arange(200)), max_block_queries=2)
        tp = np.array([t[0] for t in tiny.task_times], dtype=float)
        ts = np.array([t[1] for t in tiny.task_times])
        a_w = float(np.median(ts))  # a tiny task is its fixed cost (2 x 27k pairs ~ 1 ms)
        b = float((s - a_w).clip(min=0).sum() / p.sum())
        a_w = float(np.median(ts - b * tp))
        a = tiny_sec * w / len(ts) - b * float(tp.mean())
        out.update(
            cpu_pairs_per_s=1 / b,
            worker_fixed_s=a_w,
            task_fixed_s=a,
            dispatch_s=a - a_w,
            tiny_tasks=len(ts),
            big_search_s=sec,
            big_tasks=len(s),
        )
        blob = np.random.default_rng(0).bytes(32 << 20)
        worker = sorted(client.nthreads())[0]
        t = time.perf_counter()
        fut = client.scatter(blob, workers=[worker])
        fut.result()
        back = client.submit(len, fut, workers=[worker]).result()
        up = time.perf_counter() - t
        t = time.perf_counter()
        client.submit(lambda b: b[:-1], fut, workers=[worker]).result()
        down = time.perf_counter() - t
        assert back == len(blob)
        out["transfer_bytes_per_s"] = 2 * len(blob) / (up + down)
    reference = SearchJob(queries, library, params, backend="cpu").run()
    from engine.backends import PreparedSpectra

    block = PreparedSpectra.for_search(queries, params)
    out["query_block_bytes_per_query"] = len(pickle.dumps(block)) / len(queries)
    out["hit_bytes"] = len(pickle.dumps(reference)) / max(1, len(reference))
    # the client's merge: two shards' top-N of every query, interleaved
    half = reference.library_index % 2 == 0
    parts = [reference.take(np.flatnonzero(half)), reference.take(np.flatnonzero(~half))]
    HitTable.concat(parts).top_per_query(args.top)  # compiled
    t = time.perf_counter()
    for _ in range(5):
        HitTable.concat(parts).top_per_query(args.top)
    out["merge_s_per_hit"] = (time.perf_counter() - t) / 5 / len(reference)
    out["reference_hits"] = len(reference)
    return out


def predict(m: dict, args) -> list[dict]:
    """Seconds of the all-vs-all on 1, 2, 4 GPUs by the cost model and the engine's plan."""
    q, n, hits = ALL_VS_ALL["queries"], ALL_VS_ALL["library"], ALL_VS_ALL["hits"]
    pairs = q * n
    b = args.gpu_one_process / pairs
    hit_s = m["merge_s_per_hit"] + m["hit_bytes"] / m["transfer_bytes_per_s"]
    cost = TaskCost(
        fixed_s=args.gpu_task_fixed, pair_s=b, hit_s=hit_s, hits_per_pair=hits / pairs,
        measured=True,
    )  # fmt: skip
    params = SearchParameters(mode="custom", threshold=args.threshold, top_n=args.top)
    rows = []
    for w in (1, 2, 4):
        blocks = query_block_bounds(np.zeros(q), np.zeros(n), params, w, cost)
        k = len(blocks)
        last = (blocks[-1][1] - blocks[-1][0]) / q * hits  # hit rows of the last block
        tail = last * hit_s
        first_block = blocks[0][1] - blocks[0][0]
        send = first_block * m["query_block_bytes_per_query"] / m["transfer_bytes_per_s"]
        total = b * pairs / w + k * cost.fixed_s + tail + send
        rows.append({"gpus": w, "blocks": k, "seconds": total, "tail_s": tail})
    for r in rows:
        r["speed_up"] = rows[0]["seconds"] / r["seconds"]
        r["vs_one_process"] = args.gpu_one_process / r["seconds"]
    return rows


def main(args) -> None:
    m = measure(args)
    say("\nmeasured on CPU workers (LocalCluster, 2 processes, 1 numba thread each):")
    say(
        f"  fixed cost per task {m['task_fixed_s'] * 1e3:.1f} ms "
        f"(on the worker {m['worker_fixed_s'] * 1e3:.1f} ms, dispatch around it "
        f"{m['dispatch_s'] * 1e3:.1f} ms; {m['tiny_tasks']} tiny tasks)"
    )
    say(
        f"  per pair: {m['cpu_pairs_per_s']:.3g} pairs/s per CPU worker "
        f"(1,000 x 54,390 in {m['big_search_s']:.2f} s, {m['big_tasks']} tasks)"
    )
    say(
        f"  transfer {m['transfer_bytes_per_s'] / 1e9:.2f} GB/s (32 MB there and back); "
        f"a query {m['query_block_bytes_per_query']:.0f} bytes, a hit {m['hit_bytes']:.0f} bytes"
    )
    say(
        f"  client merge {m['merge_s_per_hit'] * 1e9:.0f} ns per hit row "
        f"({m['reference_hits']} hits, 2 shards)"
    )
    rows = predict(m, args)
    say(
        f"\npredicted all-vs-all MassBank (2.958e9 pairs, 3,510,898 hits) from one GPU: "
        f"one process {args.gpu_one_process} s, fixed cost {args.gpu_task_fixed * 1e3:.0f} ms "
        f"per GPU task"
    )
    say(
        f"{'GPUs':>4s} {'blocks':>6s} {'seconds':>8s} {'tail s':>7s} {'vs 1 GPU':>8s} "
        f"{'effic.':>6s} {'vs 1 proc':>9s}"
    )
    for r in rows:
        say(
            f"{r['gpus']:4d} {r['blocks']:6d} {r['seconds']:8.2f} {r['tail_s']:7.3f} "
            f"{r['speed_up']:8.2f} {r['speed_up'] / r['gpus']:6.0%} {r['vs_one_process']:9.2f}"
        )
