"""Runtime set-up of the frozen (PyInstaller) application.

numba's ``cache=True`` writes compiled kernels next to the module sources
(``__pycache__``), which inside an installed, frozen app is read-only or absent.
:func:`configure_numba_cache` points ``NUMBA_CACHE_DIR`` at a writable per-user
folder instead, so the second start of the frozen app loads its kernels from the
cache rather than recompiling them.

It must run before ``numba`` is imported: the PyInstaller build calls it from a
runtime hook (``packaging/rthook_simms.py``), so the application code needs no
change. Outside a frozen app it does nothing (unless ``force=True``).

The build ships the kernels already compiled: ``packaging/build.sh`` runs each
executable once with ``SIMMS_BUILD_KERNEL_CACHE`` set, so numba caches into the
bundle's ``numba_cache/<executable>/``, filed by module rather than by source
path (:mod:`simms_gui.frozen_cache`: the path inside a bundle is the build
machine's).  On the first start of a build, :func:`seed_numba_cache` copies them
to the per-user cache.  numba itself checks every entry (the executable's hash,
the CPU model and features) and compiles again only what does not fit.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

__all__ = [
    "configure",
    "enable_numba_cuda_redirect",
    "configure_locale",
    "configure_numba_cache",
    "is_frozen",
    "numba_cache_dir",
    "seed_numba_cache",
]

#: The bundle's folder of kernels compiled at packaging time, one sub-folder per executable.
SHIPPED_CACHE = "numba_cache"
#: A shipped cache's build stamp (written by ``packaging/build.sh``).
BUILD_STAMP = "BUILD"
#: numba's cache locators in a frozen app (``NUMBA_CACHE_LOCATOR_CLASSES``): kernels
#: filed by module (:mod:`simms_gui.frozen_cache`), then numba's own.
LOCATORS = (
    "simms_gui.frozen_cache.BundleCacheLocator,UserProvidedCacheLocator,InTreeCacheLocator,"
    "UserWideCacheLocator,IPythonCacheLocator,ZipCacheLocator"
)


def is_frozen() -> bool:
    """True inside a PyInstaller (or similar) frozen executable."""
    return bool(getattr(sys, "frozen", False))


def _user_cache_root() -> Path:
    """``$XDG_CACHE_HOME`` (or the platform's equivalent), else ``~/.cache``."""
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"])
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"])
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches"
    return Path.home() / ".cache"


def numba_cache_dir(executable: str | None = None) -> Path:
    """The per-user numba cache folder of one executable of the app.

    ``<user cache>/simms/numba/<executable name>``. Inside a frozen app numba
    stamps its cache entries with the hash of ``sys.executable`` (there is no
    source file to stamp), so the ``simms-gui`` and ``simms`` executables each get
    their own folder and do not invalidate each other's entries; a new build
    (different executable) recompiles once.
    """
    name = Path(executable or sys.executable).stem or "simms"
    return _user_cache_root() / "simms" / "numba" / name


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
        return True
    except OSError:
        return False


def configure_numba_cache(force: bool = False) -> str | None:
    """Set ``NUMBA_CACHE_DIR`` to a writable per-user folder when frozen.

    Parameters
    ----------
    force : bool, default False
        Also set it when not frozen (for tests).

    Returns
    -------
    str or None
        The cache folder in use, or None when nothing was changed (not frozen,
        or no writable folder could be found: numba then compiles every start).
        A ``NUMBA_CACHE_DIR`` set by the user is kept as it is.
    """
    if not (force or is_frozen()):
        return None
    os.environ.setdefault("NUMBA_CACHE_LOCATOR_CLASSES", LOCATORS)
    if os.environ.get("SIMMS_BUILD_KERNEL_CACHE"):  # packaging time: fill the bundle's cache
        os.environ["NUMBA_CACHE_DIR"] = os.environ["SIMMS_BUILD_KERNEL_CACHE"]
        return os.environ["NUMBA_CACHE_DIR"]
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.environ["NUMBA_CACHE_DIR"]
    candidates = [numba_cache_dir()]
    uid = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    candidates.append(
        Path(tempfile.gettempdir()) / f"simms-{uid}" / "numba" / Path(sys.executable).stem
    )
    for path in candidates:
        if _writable(path):
            os.environ["NUMBA_CACHE_DIR"] = str(path)
            bundle = getattr(sys, "_MEIPASS", None)
            if bundle:
                seed_numba_cache(path, Path(bundle) / SHIPPED_CACHE / Path(sys.executable).stem)
            return str(path)
    return None


def seed_numba_cache(target: Path, shipped: Path) -> int:
    """Copy the kernels compiled at packaging time into the user's cache, once per build.

    Files the user's cache has already are kept.  A marker holding the build's
    stamp (``shipped/BUILD``, written by ``packaging/build.sh``) makes later
    starts skip the copy until the app is replaced.

    Parameters
    ----------
    target : Path
        The per-user numba cache folder (``NUMBA_CACHE_DIR``).
    shipped : Path
        The bundle's ``numba_cache/<executable>`` folder.

    Returns
    -------
    int
        The number of files copied (0 when nothing was shipped or all was there).
    """
    shipped, target = Path(shipped), Path(target)
    try:
        stamp = (shipped / BUILD_STAMP).read_text()
    except OSError:
        return 0
    marker = target / ".seeded"
    if marker.is_file() and marker.read_text() == stamp:
        return 0
    copied = 0
    try:
        for source in shipped.rglob("*"):
            here = target / source.relative_to(shipped)
            if source.is_file() and source.name != BUILD_STAMP and not here.exists():
                here.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, here)
                copied += 1
        marker.write_text(stamp)
    except OSError as exc:  # a partial copy only means compiling what is missing
        print(f"simms: shipped kernels not copied to {target}: {exc}", file=sys.stderr)
    return copied


def configure_locale() -> str | None:
    """Give a frozen app started with an empty environment a UTF-8 character locale.

    Started as ``env -i simms-gui`` (or from some launchers) no ``LANG``/``LC_*`` is
    set; Qt then warns that the "C" locale is not UTF-8 and switches to C.UTF-8
    itself. Setting ``LC_CTYPE=C.UTF-8`` first does the same quietly. A locale the
    user set is kept. Returns the value set, or None.
    """
    if not is_frozen() or sys.platform in ("win32", "darwin"):
        return None
    if any(os.environ.get(name) for name in ("LC_ALL", "LC_CTYPE", "LANG")):
        return None
    os.environ["LC_CTYPE"] = "C.UTF-8"
    return "C.UTF-8"


def enable_numba_cuda_redirect() -> bool:
    """Route ``numba.cuda`` to the numba-cuda package inside a frozen app.

    numba-cuda replaces numba's built-in ``numba.cuda`` through an import hook that
    its ``_numba_cuda_redirector.pth`` installs at interpreter start; a frozen app
    runs no ``.pth`` files, so the hook is installed here when numba-cuda is bundled.
    Returns True when the redirect is active.
    """
    if not is_frozen():
        return False
    if "_numba_cuda_redirector" in sys.modules:
        return True
    import importlib.util

    try:
        if importlib.util.find_spec("numba_cuda") is None:
            return False
        import _numba_cuda_redirector  # noqa: F401  (installs the meta-path finder)
    except ImportError:
        return False
    return True


def configure() -> None:
    """Everything the frozen app sets up before its own code runs (the runtime hook)."""
    configure_locale()
    configure_numba_cache()
    enable_numba_cuda_redirect()
