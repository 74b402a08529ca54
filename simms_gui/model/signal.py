"""A small typed signal (the shape of psygnal's ``Signal``), with no Qt.

>>> class Events:
...     changed = Signal(int)
>>> events = Events()
>>> seen = []
>>> _ = events.changed.connect(seen.append)
>>> events.changed.emit(3)
>>> seen
[3]

A signal declares the types of what it carries; :meth:`SignalInstance.emit`
checks them, so a wrong payload fails where it is sent, and a misspelt signal
name is an ``AttributeError``, never an event nobody hears.  Bound methods are
held weakly (a closed window's controller is not kept alive by the model).
Listeners run in the emitting thread: a Qt listener that touches widgets runs
through ``simms_gui._qt.main_thread.on_main_thread``.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["Signal", "SignalInstance"]


class SignalInstance:
    """The listeners of one signal of one object (made by :class:`Signal`)."""

    def __init__(self, name: str, types: tuple[type, ...]) -> None:
        self.name = name
        self.types = types
        self._slots: list[Callable[[], Callable | None]] = []
        self._lock = threading.Lock()

    def connect(self, slot: Callable) -> Callable:
        """Call ``slot(*payload)`` on every :meth:`emit`; returns ``slot`` (a decorator)."""
        if not callable(slot):
            raise TypeError(f"{self.name}: cannot connect {slot!r}, not callable")
        if hasattr(slot, "__self__") and hasattr(slot, "__func__"):
            ref: Callable[[], Callable | None] = weakref.WeakMethod(slot)
        else:
            ref = lambda slot=slot: slot  # noqa: E731 - a strong reference
        with self._lock:
            self._slots.append(ref)
        return slot

    def disconnect(self, slot: Callable) -> None:
        """Stop calling ``slot`` (nothing happens when it was not connected)."""
        with self._lock:
            self._slots = [ref for ref in self._slots if ref() not in (slot, None)]

    def __len__(self) -> int:
        return sum(ref() is not None for ref in self._slots)

    def emit(self, *payload: Any) -> None:
        """Call every listener with ``payload`` (checked against the declared types)."""
        if len(payload) != len(self.types):
            raise TypeError(f"{self.name} carries {len(self.types)} value(s), {len(payload)} given")
        for value, kind in zip(payload, self.types, strict=True):
            if kind is not object and value is not None and not isinstance(value, kind):
                raise TypeError(f"{self.name} carries {kind.__name__}, not {type(value).__name__}")
        with self._lock:
            slots = [ref() for ref in self._slots]
            self._slots = [ref for ref, slot in zip(self._slots, slots, strict=True) if slot]
        for slot in slots:
            if slot is not None:
                slot(*payload)


class Signal:
    """Declare a typed signal on a class: ``changed = Signal(FilesChanged)``.

    Parameters
    ----------
    *types : type
        What each emission carries (``object`` accepts anything; None is always
        accepted, for "nothing now").
    """

    def __init__(self, *types: type) -> None:
        self.types = types
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            return self
        key = f"_signal_{self.name}"
        instance = obj.__dict__.get(key)
        if instance is None:
            instance = obj.__dict__.setdefault(key, SignalInstance(self.name, self.types))
        return instance
