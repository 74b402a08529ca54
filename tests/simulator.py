"""Run a test's checks in a fresh interpreter under numba's CUDA simulator.

numba reads ``NUMBA_ENABLE_CUDASIM`` on the first import of ``numba.cuda``, so the
simulated checks run in a subprocess of their own; the script prints its report
as JSON on its last line.

The simulator runs each GPU thread of a block as a Python thread, and its block
manager polls them in a busy loop for the barrier (``syncthreads``) and their end:
the poller competes with the simulated threads for the interpreter lock.
:func:`event_driven_blocks` replaces that loop by a condition variable with the
same semantics (a barrier opens when every live thread of the block waits at it;
a thread that ends no longer counts), so the simulated kernels compute the same
and the tests spend their time in them.  The simulator's cost grows with the
number of simulated threads, so the tests launch small blocks (8 threads where a
kernel allows it, one warp for the merge kernel: :func:`merge_threads`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Runs a script (or ``-c CODE``) as ``__main__`` under the simulator, with
#: :func:`event_driven_blocks` and :func:`merge_threads` on.
_LAUNCH = """
import runpy, sys
from tests.simulator import event_driven_blocks, merge_threads
event_driven_blocks()
merge_threads()
if sys.argv[1] == "-c":
    code, sys.argv = sys.argv[2], ["-c", *sys.argv[3:]]
    exec(compile(code, "<simulated>", "exec"), {"__name__": "__main__"})
else:
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
"""


def simulator_env() -> dict[str, str]:
    """The environment of a simulated run: ``NUMBA_ENABLE_CUDASIM=1``, the repository importable."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": path}


def run_simulated(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """Run ``script [args]`` or ``-c code [args]`` in a fresh interpreter under the CUDA
    simulator (event-driven blocks); its output captured as text."""
    return subprocess.run(
        [sys.executable, "-c", _LAUNCH, *args], env=simulator_env(), capture_output=True,
        text=True, timeout=timeout, cwd=ROOT,
    )  # fmt: skip


def simulated_report(script: str | Path, *args: str, timeout: int = 900) -> dict:
    """Run ``script`` (with ``args``) under the CUDA simulator and return its JSON
    report (the last line of its output)."""
    proc = run_simulated(str(script), *args, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


class BlockBarrier:
    """The barrier of one simulated thread block: live threads, threads waiting."""

    def __init__(self, live: int) -> None:
        self.cond = threading.Condition()
        self.live = live
        self.waiting = 0
        self.generation = 0
        self.abort = False

    def _open(self) -> None:
        self.waiting = 0
        self.generation += 1
        self.cond.notify_all()

    def wait(self) -> None:
        with self.cond:
            if self.abort:
                raise RuntimeError("abort flag set on syncthreads call")
            generation = self.generation
            self.waiting += 1
            if self.waiting == self.live:
                self._open()
                return
            while generation == self.generation and not self.abort:
                self.cond.wait()
            if self.abort:
                raise RuntimeError("abort flag set on syncthreads clear")

    def leave(self, failed: bool) -> None:
        with self.cond:
            self.live -= 1
            if failed:
                self.abort = True
                self.cond.notify_all()
            elif self.live and self.waiting == self.live:
                self._open()


def small_backend():  # pragma: no cover - runs in the simulator process
    """A CUDA backend with the smallest blocks its kernels allow: 8 threads a block for
    the score and selection kernels (several blocks per row of a few columns), one
    warp for the bound kernel (its lanes share a warp's window: multiples of 32)."""
    from engine.backends.cuda import CudaBackend

    gpu = CudaBackend(threads=8, select_threads=8)
    gpu.bound_threads = 32
    return gpu


def merge_threads(threads: int = 32) -> None:  # pragma: no cover - simulator process
    """Launch the running top-N's merge kernel with ``threads`` per block (one warp,
    not 256): the kernel strides over its entries by ``blockDim.x``, and every
    search of the simulated tests keeps at most 10 hits a query (``top_n`` may not
    exceed it).  Each simulated thread is a Python thread that waits at every
    barrier of the bitonic sort, so the merges cost an eighth."""
    from engine.kernels import cuda_topn

    cuda_topn.MERGE_THREADS = threads


def event_driven_blocks() -> None:  # pragma: no cover - runs in the simulator process
    """Replace the simulator's polling block manager by an event-driven one."""
    from numba.cuda.simulator import kernel

    def syncthreads(self) -> None:
        self._manager.barrier.wait()

    def thread_run(self) -> None:
        try:
            run_thread(self)
        finally:
            self._manager.barrier.leave(self.exception is not None)

    def run(self, grid_point, *args) -> None:
        self.barrier = BlockBarrier(int(self.block_state.size))

        def target():
            self._f(*args)

        threads = [
            kernel.BlockThread(target, self, grid_point, point, self._debug)
            for point in kernel.np.ndindex(*self._block_dim)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        failed = [t.exception for t in threads if t.exception]
        if failed:  # the first error that is not another thread's abort
            real = [e for e in failed if "abort flag" not in str(e[0])] or failed
            raise real[0][0].with_traceback(real[0][1])

    run_thread = kernel.BlockThread.run
    kernel.BlockThread.syncthreads = syncthreads
    kernel.BlockThread.run = thread_run
    kernel.BlockManager.run = run
