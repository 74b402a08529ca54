"""Structures derived once from an immutable object and kept with it.

A library's prepared peaks (preprocessed, weighted), its precursor order and its
pruning index depend only on the library and a few settings.  Building them for
every search cost more than the search itself on large libraries (a 1.5 M
spectrum library: seconds of re-weighting before a 0.2 s GPU search), so they are
built on first use and kept in the object's own ``__dict__``: they live exactly as
long as the library does, and an equal but distinct library builds its own.
Each owner keeps at most ``budget`` bytes (least recently used dropped first).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np

__all__ = ["derived", "nbytes"]

T = TypeVar("T")
_SLOT = "_derived"
_lock = threading.Lock()


class _Store:
    def __init__(self) -> None:
        self.items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self.total = 0
        self.lock = threading.Lock()


def nbytes(obj: object) -> int:
    """Bytes held in numpy arrays by ``obj`` (an array, a tuple of them, or a dataclass)."""
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, tuple | list):
        return sum(nbytes(o) for o in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return sum(nbytes(getattr(obj, f.name)) for f in dataclasses.fields(obj))
    return 0


def derived(owner: object, key: Hashable, build: Callable[[], T], *, budget: int) -> T:
    """``build()`` once per ``(owner, key)``; later calls return the same object.

    Parameters
    ----------
    owner : object
        An immutable object with a ``__dict__`` (a frozen dataclass is fine).
    key : hashable
        What the derived structure depends on besides ``owner``.
    build : callable
        Makes the structure (called without any lock held; two threads asking
        at once may both build, and one result is kept).
    budget : int
        Bytes of arrays kept for this owner; older entries are dropped beyond it
        (the newest is always kept).

    Returns
    -------
    The structure.
    """
    store = owner.__dict__.get(_SLOT)
    if store is None:
        with _lock:
            store = owner.__dict__.setdefault(_SLOT, _Store())
    with store.lock:
        hit = store.items.get(key)
        if hit is not None:
            store.items.move_to_end(key)
            return hit[0]
    value = build()
    size = nbytes(value)
    with store.lock:
        hit = store.items.get(key)
        if hit is not None:
            return hit[0]
        store.items[key] = (value, size)
        store.total += size
        while store.total > budget and len(store.items) > 1:
            _, (_, dropped) = store.items.popitem(last=False)
            store.total -= dropped
    return value
