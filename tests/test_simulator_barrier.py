"""The barrier that stands in for the CUDA simulator's polling block manager
(``tests/simulator.py``): a ``syncthreads`` opens when every live thread of the
block waits at it, threads that ended no longer count, and an error releases
the waiting threads."""

from __future__ import annotations

import threading

from tests.simulator import BlockBarrier


def run_block(body, n: int, barrier: BlockBarrier) -> dict[int, Exception]:
    """Run ``body(i)`` in ``n`` threads of one block; their errors by thread."""
    errors: dict[int, Exception] = {}

    def thread(i: int) -> None:
        try:
            body(i)
        except Exception as e:  # as the simulator's thread records it
            errors[i] = e
        barrier.leave(i in errors)

    threads = [threading.Thread(target=thread, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a thread was left waiting"
    return errors


def test_every_live_thread_reaches_a_barrier_before_any_passes_it() -> None:
    n, barrier, lock, log = 7, BlockBarrier(7), threading.Lock(), []

    def body(i: int) -> None:
        with lock:
            log.append(("start", i))
        if i % 3 == 0:  # ends before the barrier (as a thread past the last column)
            return
        for phase in ("first", "second"):
            barrier.wait()
            with lock:
                log.append((phase, i))

    assert run_block(body, n, barrier) == {}
    phases = [p for p, _ in log]
    assert phases.count("start") == n and phases.count("first") == phases.count("second") == 4
    last = {p: max(k for k, q in enumerate(phases) if q == p) for p in set(phases)}
    first = {p: min(k for k, q in enumerate(phases) if q == p) for p in set(phases)}
    assert last["start"] < first["first"] and last["first"] < first["second"]


def test_an_error_releases_the_threads_waiting_at_the_barrier() -> None:
    def body(i: int) -> None:
        if i == 3:
            raise ValueError("a failing simulated thread")
        barrier.wait()

    barrier = BlockBarrier(4)
    errors = run_block(body, 4, barrier)
    assert isinstance(errors.pop(3), ValueError)
    assert sorted(errors) == [0, 1, 2]  # none passed the barrier, none was left waiting
    assert all(isinstance(e, RuntimeError) and "abort flag" in str(e) for e in errors.values())
