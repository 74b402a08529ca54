"""The independent references of the tests, imported on first use.

matchms takes about 3 s to import; test modules name these stand-ins at the top so
that collecting them (``pytest -k``, the inner loop) does not pay for it.
"""

from __future__ import annotations

import pytest


def Spectrum(*args, **kwargs):  # noqa: N802 - stands for matchms.Spectrum
    """``matchms.Spectrum(*args, **kwargs)``."""
    return pytest.importorskip("matchms").Spectrum(*args, **kwargs)


def CosineGreedy(*args, **kwargs):  # noqa: N802 - stands for the matchms class
    """``matchms.similarity.CosineGreedy(*args, **kwargs)``."""
    pytest.importorskip("matchms")
    from matchms.similarity import CosineGreedy as reference

    return reference(*args, **kwargs)


def ModifiedCosineGreedy(*args, **kwargs):  # noqa: N802 - stands for the matchms class
    """``matchms.similarity.ModifiedCosineGreedy(*args, **kwargs)``."""
    pytest.importorskip("matchms")
    from matchms.similarity import ModifiedCosineGreedy as reference

    return reference(*args, **kwargs)
