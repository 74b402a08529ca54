"""Before Qt opens a window on X11: name the system packages its xcb plugin lacks.

On a bare Debian/Ubuntu, PyQt6's wheels bring Qt but not the X11 client libraries
its ``xcb`` platform plugin links to; Qt then aborts with a message that blames
another package.  :func:`missing_packages` runs ``ldd`` on the plugin and maps
each missing library to the Debian/Ubuntu package that ships it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["DEBIAN_PACKAGES", "missing_libraries", "missing_packages", "check_display_libraries"]

#: Shared library (soname) → Debian/Ubuntu package.
DEBIAN_PACKAGES = {
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-xinput.so.0": "libxcb-xinput0",
    "libxcb-glx.so.0": "libxcb-glx0",
    "libxcb.so.1": "libxcb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libSM.so.6": "libsm6",
    "libICE.so.6": "libice6",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libOpenGL.so.0": "libopengl0",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libdbus-1.so.3": "libdbus-1-3",
    "libglib-2.0.so.0": "libglib2.0-0",
}


def _xcb_plugin() -> Path | None:
    try:
        import PyQt6
    except ImportError:
        return None
    path = Path(PyQt6.__file__).parent / "Qt6" / "plugins" / "platforms" / "libqxcb.so"
    return path if path.is_file() else None


def missing_libraries(ldd_output: str) -> list[str]:
    """Sonames that ``ldd`` reports as ``not found``, in order, without repeats."""
    found: list[str] = []
    for line in ldd_output.splitlines():
        if "=> not found" in line:
            name = line.split("=>")[0].strip()
            if name not in found:
                found.append(name)
    return found


def missing_packages(libraries: list[str]) -> list[str]:
    """Debian/Ubuntu packages that provide ``libraries`` (a soname when unknown)."""
    packages: list[str] = []
    for name in libraries:
        package = DEBIAN_PACKAGES.get(name, name)
        if package not in packages:
            packages.append(package)
    return packages


def check_display_libraries() -> str | None:
    """A one-line message naming the packages to install, or None when all is there.

    Only checked where Qt would use X11 (Linux, no other platform asked for) and
    ``ldd`` exists; anything unexpected counts as "nothing to say".
    """
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if not sys.platform.startswith("linux") or platform not in ("", "xcb"):
        return None
    plugin, ldd = _xcb_plugin(), shutil.which("ldd")
    if plugin is None or ldd is None:
        return None
    try:
        out = subprocess.run([ldd, str(plugin)], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    libraries = missing_libraries(out.stdout)
    if not libraries:
        return None
    packages = missing_packages(libraries)
    return (
        f"simms-gui: Qt cannot open a window: missing system libraries "
        f"{', '.join(libraries)}; install them with: "
        f"sudo apt-get install {' '.join(packages)}"
    )
