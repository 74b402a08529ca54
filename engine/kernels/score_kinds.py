"""The score kind as a type, so that a kernel compiles only the score it runs.

A search runs one score for all its pairs, but a kernel that reads the kind at
run time (:func:`~engine.kernels.greedy.score_pair`) compiles all three, and
the greedy cosines with their large-component matchers are most of a fresh
install's compile time.  The row kernels take instead a *kind marker*, an
instance of one of three empty tuple classes; numba types each class apart, and
:func:`kind_score` resolves to that kind's pair function while the kernel is
typed.  One compiled kernel per kind, each with only its own scoring code.
"""

from __future__ import annotations

from typing import NamedTuple

from numba.extending import overload

from engine.kernels.greedy import (
    cosine_pair,
    cosine_pair_deferring,
    entropy_pair,
    modified_pair,
    modified_pair_deferring,
    score_pair,
)
from engine.kernels.jit import HELPER_JIT_OPTIONS
from engine.kernels.spectrum_set import COSINE, ENTROPY, MODIFIED_COSINE

__all__ = ["kind_marker", "kind_score", "kind_score_deferring"]


class CosineKind(NamedTuple):
    """Marker of the greedy cosine (:data:`~engine.kernels.spectrum_set.COSINE`)."""

    kind: int = COSINE


class ModifiedCosineKind(NamedTuple):
    """Marker of the greedy modified cosine."""

    kind: int = MODIFIED_COSINE


class EntropyKind(NamedTuple):
    """Marker of the entropy similarity."""

    kind: int = ENTROPY


_MARKERS = {COSINE: CosineKind(), MODIFIED_COSINE: ModifiedCosineKind(), ENTROPY: EntropyKind()}
_PAIRS = {CosineKind: cosine_pair, ModifiedCosineKind: modified_pair, EntropyKind: entropy_pair}
_DEFERRING = {
    CosineKind: cosine_pair_deferring,
    ModifiedCosineKind: modified_pair_deferring,
    EntropyKind: entropy_pair,
}


def kind_marker(kind: int) -> NamedTuple:
    """The marker of score ``kind`` (``COSINE``, ``MODIFIED_COSINE`` or ``ENTROPY``)."""
    try:
        return _MARKERS[int(kind)]
    except KeyError:
        raise ValueError(f"unknown score kind {kind!r}") from None


def kind_score(marker, q, l, queries, library, tolerance, scratch):
    """Score and matches of query ``q`` × library spectrum ``l`` for ``marker``'s kind.

    As :func:`~engine.kernels.greedy.score_pair`; in compiled code only the
    marker's own pair function is compiled.
    """
    return score_pair(q, l, queries, library, tolerance, marker.kind, scratch)


@overload(kind_score, jit_options=HELPER_JIT_OPTIONS)
def _kind_score(marker, q, l, queries, library, tolerance, scratch):
    pair = _PAIRS.get(getattr(marker, "instance_class", None))
    if pair is None:
        return None

    def impl(marker, q, l, queries, library, tolerance, scratch):  # pragma: no cover
        return pair(q, l, queries, library, tolerance, scratch)

    return impl


def kind_score_deferring(marker, q, l, queries, library, tolerance, scratch):
    """:func:`kind_score`, but ``(0.0, -1)`` for a (modified) cosine pair with a component
    too large for ``scratch``: compiled, it includes none of the large-component
    matchers; such pairs are scored again by :func:`kind_score`
    (:mod:`~engine.kernels.deferred`)."""
    s, m = score_pair(q, l, queries, library, tolerance, marker.kind, scratch)
    return s, m


@overload(kind_score_deferring, jit_options=HELPER_JIT_OPTIONS)
def _kind_score_deferring(marker, q, l, queries, library, tolerance, scratch):
    pair = _DEFERRING.get(getattr(marker, "instance_class", None))
    if pair is None:
        return None

    def impl(marker, q, l, queries, library, tolerance, scratch):  # pragma: no cover
        return pair(q, l, queries, library, tolerance, scratch)

    return impl
