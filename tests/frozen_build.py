"""The frozen build (``packaging/build.sh``, minutes) started when a test session begins.

The build is one long single step that no test can share; run by its test it came
last under the two test workers and ran alone.  So the session starts it in the
background as soon as the frozen test is collected (:func:`start`, from
``conftest.py``: in the controlling process of the workers, or in the only one), and
the test waits for its exit status (:func:`result`).  :func:`stop` ends a build that
no test waited for (a run stopped early).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD_SCRIPT = ROOT / "packaging" / "build.sh"
FOLDER = ROOT / "build"
#: The background build's process id, its output and its exit status.
PID, LOG, STATUS = (FOLDER / f"frozen-build.{ext}" for ext in ("pid", "log", "status"))
#: The test that needs the build.
TEST_FILE = "test_frozen_build.py"

_process: subprocess.Popen | None = None


def wanted() -> bool:
    """Whether this session builds the frozen app: in CI (``CI=true``) or with
    ``SIMMS_TEST_FROZEN=1``."""
    default = "1" if os.environ.get("CI") == "true" else "0"
    return os.environ.get("SIMMS_TEST_FROZEN", default) == "1"


def start(test_ids) -> None:
    """Start the build in the background if ``test_ids`` hold the frozen test (once)."""
    global _process
    if _process is not None or not wanted() or not any(TEST_FILE in t for t in test_ids):
        return
    FOLDER.mkdir(exist_ok=True)
    for path in (STATUS, PID):
        path.unlink(missing_ok=True)
    part = f"{STATUS}.part"
    script = f'"{BUILD_SCRIPT}" > "{LOG}" 2>&1; echo $? > "{part}"; mv "{part}" "{STATUS}"'
    _process = subprocess.Popen(["bash", "-c", script], cwd=ROOT, start_new_session=True)
    PID.write_text(str(_process.pid))


def stop() -> None:
    """End a background build still running (no test waited for it)."""
    if _process is not None and _process.poll() is None:
        os.killpg(_process.pid, signal.SIGTERM)
        _process.wait(timeout=60)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # an ended child not yet reaped by the process that started it


def result(timeout: float = 3600.0) -> tuple[int, str]:
    """``(exit status, output)`` of this session's build: the background one, or one run
    here when none was started."""
    if not PID.exists():
        proc = subprocess.run(
            [str(BUILD_SCRIPT)], cwd=ROOT, capture_output=True, text=True, timeout=timeout
        )
        return proc.returncode, proc.stdout + proc.stderr
    pid, deadline = int(PID.read_text()), time.monotonic() + timeout
    while not STATUS.exists():
        if not _running(pid):
            time.sleep(1.0)  # its status may have been written just before it ended
            if not STATUS.exists():
                return -1, f"the background build (pid {pid}) ended without an exit status"
        if time.monotonic() > deadline:
            raise TimeoutError(f"the frozen build still runs after {timeout:.0f} s")
        time.sleep(1.0)
    return int(STATUS.read_text()), LOG.read_text(errors="replace")
