"""PyInstaller runtime hook of the SimMS desktop app (runs before the app's code).

Sets a UTF-8 character locale when the environment has none, and points numba's
kernel cache (``NUMBA_CACHE_DIR``) at a writable per-user folder,
``$XDG_CACHE_HOME/simms/numba/<executable>`` (default ``~/.cache/simms/numba/...``),
so ``@njit(cache=True)`` kernels compiled on the first start load from disk on the
next. See simms_gui/frozen.py.
"""

try:
    from simms_gui.frozen import configure

    configure()
except Exception as exc:  # never stop the app from starting over the cache
    import sys

    print(f"simms: numba cache not configured: {exc}", file=sys.stderr)
