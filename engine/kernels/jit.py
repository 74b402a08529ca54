"""``@nopython_helper``: a numba function that only other numba functions call.

``numba.njit`` compiles two entry points beside every function: a CPython wrapper
(boxing and unboxing each argument) and a C-callable wrapper.  A helper that only
compiled code calls never uses either, yet a cold first search paid for them in
every helper's lowering and LLVM passes (about a tenth of its compile time).
:func:`nopython_helper` compiles the function alone (numba's ``no_cpython_wrapper``
and ``no_cfunc_wrapper`` options) and is cached like ``njit(cache=True)``.

Calling such a dispatcher from Python would jump to an entry point that does not
exist, so :class:`HelperDispatcher` routes a Python call (tests, a REPL) through a
separate ordinary ``njit`` of the same function, compiled on that first call and
never cached: numba's cache index does not tell the two kinds of entry apart.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numba import config, njit
from numba.core.registry import CPUDispatcher

__all__ = ["HELPER_JIT_OPTIONS", "HelperDispatcher", "nopython_helper"]

#: The options of every helper: compiled code only, cached on disk.
_HELPER_OPTIONS = {"nopython": True, "no_cpython_wrapper": True, "no_cfunc_wrapper": True}

#: ``jit_options`` of a ``numba.extending.overload`` whose implementation is likewise
#: compiled for compiled callers only, and cached.
HELPER_JIT_OPTIONS = {"cache": True, "no_cpython_wrapper": True, "no_cfunc_wrapper": True}


class HelperDispatcher(CPUDispatcher):
    """A CPU dispatcher compiled without Python entry points (see the module)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.python_entry()(*args, **kwargs)

    def python_entry(self) -> CPUDispatcher:
        """The ordinary (uncached) ``njit`` of this function that Python calls go to."""
        entry = self.__dict__.get("_python_entry")
        if entry is None:
            entry = self.__dict__["_python_entry"] = njit(self.py_func)
        return entry

    @property
    def called_from_python(self) -> bool:
        """Whether Python has called this helper (and compiled its separate entry)."""
        return "_python_entry" in self.__dict__


def nopython_helper(func: Callable) -> Callable:
    """Compile ``func`` for numba callers only, cached (see the module).

    Parameters
    ----------
    func : callable
        A plain Python function in numba's nopython subset.

    Returns
    -------
    HelperDispatcher
        Callable from numba code as any ``njit`` function, and from Python through
        a separately compiled entry.  With ``NUMBA_DISABLE_JIT`` set, ``func`` itself.
    """
    if config.DISABLE_JIT:
        return func
    dispatcher = HelperDispatcher(py_func=func, locals={}, targetoptions=dict(_HELPER_OPTIONS))
    dispatcher.enable_caching()
    return dispatcher
