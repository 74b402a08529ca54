"""The engine's version (one place; ``engine.__version__`` and provenance read it)."""

__version__ = "0.1.0"
