"""Persistent settings (QSettings): search parameters, recent files, first start."""

from __future__ import annotations

import json
from pathlib import Path

from PyQt6.QtCore import QSettings

__all__ = ["settings", "recent_files", "add_recent_file", "first_start", "load_json", "save_json"]

ORGANIZATION = "SimMS"
APPLICATION = "SimMS desktop"
MAX_RECENT = 10


def settings() -> QSettings:
    """The application's settings (an INI file in the user's config folder).

    Tests redirect it with ``QSettings.setPath(IniFormat, UserScope, tmp)``.
    """
    return QSettings(
        QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANIZATION, APPLICATION
    )


def load_json(key: str, default=None):
    """A JSON value stored under ``key`` (``default`` when absent or unreadable)."""
    raw = settings().value(key, None)
    if raw is None:
        return default
    try:
        return json.loads(str(raw))
    except (TypeError, ValueError):
        return default


def save_json(key: str, value) -> None:
    """Store ``value`` as JSON under ``key``."""
    s = settings()
    s.setValue(key, json.dumps(value))
    s.sync()


def recent_files() -> list[tuple[str, str]]:
    """Recently opened files, newest first, as ``(kind, path)`` (kind: library/queries)."""
    items = load_json("recent_files", [])
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, list) and len(item) == 2:
            out.append((str(item[0]), str(item[1])))
    return out


def add_recent_file(kind: str, path: str | Path) -> None:
    """Put ``path`` first in the recent-files list."""
    path = str(Path(path).resolve())
    items = [(k, p) for k, p in recent_files() if not (k == kind and p == path)]
    save_json("recent_files", [[kind, path], *items][:MAX_RECENT])


def first_start() -> bool:
    """True the first time the application starts (then remembers it)."""
    s = settings()
    first = not s.value("first_start_done", False, type=bool)
    if first:
        s.setValue("first_start_done", True)
        s.sync()
    return first
