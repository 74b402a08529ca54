"""The full frozen build (packaging/build.sh, minutes: see packaging/README.md) and the
built app's smoke test, with no Python environment around it.

It runs in CI (``CI=true``) or with ``SIMMS_TEST_FROZEN=1``.  A file of its own, which
the suite hands out first (``conftest.py``): one test worker builds while the other
runs the rest.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGING = ROOT / "packaging"
APP_DIR = ROOT / "dist" / "simms-desktop"


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("SIMMS_TEST_FROZEN", "1" if os.environ.get("CI") == "true" else "0") != "1",
    reason="the frozen build takes minutes: it runs in CI (CI=true) or with SIMMS_TEST_FROZEN=1 "
    "(by hand: packaging/build.sh && dist/simms-desktop/simms-gui --smoke-test)",
)
def test_frozen_app_builds_and_passes_its_smoke_test(tmp_path):
    subprocess.run([str(PACKAGING / "build.sh")], cwd=ROOT, check=True, timeout=3600)
    # no Python environment: only the system's PATH, a private HOME (fresh numba cache)
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "QT_QPA_PLATFORM": "offscreen"}
    version = subprocess.run(
        [str(APP_DIR / "simms-gui"), "--version"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert version.returncode == 0 and "simms-gui" in version.stdout
    # the second run on numba's workqueue layer, as on a machine without libgomp1,
    # where the warm-up thread and the search must take turns
    runs = {
        "first (kernels shipped in the bundle)": {},
        "second (numba cache, workqueue)": {"NUMBA_THREADING_LAYER": "workqueue"},
    }
    for run, extra in runs.items():
        smoke = subprocess.run(
            [str(APP_DIR / "simms-gui"), "--smoke-test"],
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=900,
        )
        print(run, smoke.stdout.strip())
        assert smoke.returncode == 0, smoke.stdout + smoke.stderr
        assert "smoke test: OK" in smoke.stdout
    user_cache = tmp_path / ".cache" / "simms" / "numba" / "simms-gui"
    assert any(user_cache.rglob("*.nbi"))
    # the first start found the kernels compiled at packaging time
    assert (APP_DIR / "_internal" / "numba_cache" / "simms-gui" / "BUILD").is_file()
    assert any((user_cache / "engine" / "kernels").glob("*.nbi"))
    assert (user_cache / ".seeded").is_file()
