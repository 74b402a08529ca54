"""The desktop application's version (one place, importable without Qt)."""

__version__ = "0.1.0"
