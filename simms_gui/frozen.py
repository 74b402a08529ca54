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
executable once with ``SIMMS_BUILD_KERNEL_CACHE`` set (numba then caches into the
bundle's ``numba_cache/<executable>/``) and :func:`index_kernel_cache` records
which source folder each cache folder belongs to.  On a start with an empty
per-user cache, :func:`seed_numba_cache` copies them there, renamed for where the
app is installed (numba names a cache folder by a hash of its source folder's
path).  numba itself checks every entry (the executable's time stamp and size,
the CPU) and compiles again only what does not fit.
"""

from __future__ import annotations

import hashlib
import json
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
    "index_kernel_cache",
    "is_frozen",
    "numba_cache_dir",
    "seed_numba_cache",
]

#: The bundle's folder of kernels compiled at packaging time, one sub-folder per executable.
SHIPPED_CACHE = "numba_cache"
#: Written into a shipped cache folder by :func:`index_kernel_cache`.
MANIFEST = "manifest.json"


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


def _cache_folder_name(source_dir: Path) -> str:
    """numba's name of the cache folder of the modules in ``source_dir``
    (its ``_UserProvidedCacheLocator``: the folder's name and the SHA-1 of its path)."""
    path = os.path.abspath(source_dir)
    return f"{os.path.basename(path)}_{hashlib.sha1(path.encode()).hexdigest()}"


def index_kernel_cache(cache: Path, bundle: Path) -> dict[str, str]:
    """Write ``cache/manifest.json``: the bundle folder (relative) of each cache folder.

    Parameters
    ----------
    cache : Path
        A cache filled by the app started with ``SIMMS_BUILD_KERNEL_CACHE=cache``.
    bundle : Path
        The app's bundle folder (``_internal`` of a PyInstaller one-folder build)
        where the app ran from.

    Returns
    -------
    dict
        Cache folder name -> source folder relative to ``bundle``.
    """
    cache, bundle = Path(cache), Path(bundle)
    wanted = {p.name for p in cache.iterdir() if p.is_dir()}
    found: dict[str, str] = {}
    for folder, _dirs, _files in os.walk(bundle):
        name = _cache_folder_name(Path(folder))
        if name in wanted:
            found[name] = Path(folder).relative_to(bundle).as_posix()
    (cache / MANIFEST).write_text(json.dumps({"folders": found}, indent=1, sort_keys=True))
    return found


def seed_numba_cache(target: Path, shipped: Path) -> int:
    """Copy the kernels compiled at packaging time into the user's cache, once.

    Each shipped cache folder is renamed for the bundle's place on this machine;
    files the user's cache has already are kept.  A marker holding the manifest's
    hash makes later starts skip the copy until the app is replaced.

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
    manifest = Path(shipped) / MANIFEST
    try:
        text = manifest.read_text()
        folders = json.loads(text)["folders"]
    except (OSError, ValueError, KeyError):
        return 0
    target = Path(target)
    marker = target / ".seeded"
    stamp = hashlib.sha1(f"{text}{manifest.stat().st_mtime_ns}".encode()).hexdigest()
    if marker.is_file() and marker.read_text() == stamp:
        return 0
    bundle = Path(shipped).parent.parent
    copied = 0
    try:
        for name, relative in folders.items():
            source = Path(shipped) / name
            here = target / _cache_folder_name(bundle / relative)
            here.mkdir(parents=True, exist_ok=True)
            for item in source.iterdir():
                if item.is_file() and not (here / item.name).exists():
                    shutil.copy2(item, here / item.name)  # keeps numba's own checks valid
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
