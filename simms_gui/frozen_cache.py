"""numba's cache locator of the frozen app: kernels cached by module, not by path.

numba names a cache folder by a hash of the kernel's source folder, and inside a
PyInstaller bundle that path is the build machine's (the code objects keep it),
so kernels compiled at packaging time would never be found on a user's machine.
This locator files them under ``NUMBA_CACHE_DIR/<package path>`` instead (for
``engine.kernels.greedy``: ``engine/kernels``), the same wherever the app runs;
entries stay stamped as numba stamps them (inside a frozen app: the hash of the
executable), so a different build never loads them.

numba imports it by name from ``NUMBA_CACHE_LOCATOR_CLASSES``, which
:func:`simms_gui.frozen.configure_numba_cache` sets in a frozen app only.
"""

from __future__ import annotations

import os

from numba.core.caching import _CacheLocator, _SourceFileBackedLocatorMixin

__all__ = ["BundleCacheLocator"]


class BundleCacheLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
    """Cache of the kernels of module ``a.b.c`` in ``NUMBA_CACHE_DIR/a/b``."""

    def __init__(self, py_func, py_file: str) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        package = py_func.__module__.split(".")[:-1]
        self._cache_path = os.path.join(os.environ["NUMBA_CACHE_DIR"], *package, "")

    def get_cache_path(self) -> str:
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file: str):
        module = getattr(py_func, "__module__", None) or ""
        if not os.environ.get("NUMBA_CACHE_DIR") or "." not in module:
            return None  # a script's or a top-level module's kernel: numba's own locators
        locator = cls(py_func, py_file)
        try:
            locator.ensure_cache_path()
        except OSError:
            return None
        return locator
