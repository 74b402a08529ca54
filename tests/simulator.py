"""Run a test's checks in a fresh interpreter under numba's CUDA simulator.

numba reads ``NUMBA_ENABLE_CUDASIM`` on the first import of ``numba.cuda``, so the
simulated checks run in a subprocess of their own; the script prints its report
as JSON on its last line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def simulated_report(script: str | Path, timeout: int = 900) -> dict:
    """Run ``script`` with ``NUMBA_ENABLE_CUDASIM=1`` (and the repository importable, as
    ``tests.simulator`` is by the script itself); return its JSON report (last line)."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": path}
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True,
        timeout=timeout, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
