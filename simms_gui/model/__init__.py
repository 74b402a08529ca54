"""The desktop's headless model: a session, its tasks and its typed events (no Qt).

>>> from simms_gui.model import Session            # doctest: +SKIP
>>> s = Session()                                  # tasks run in this thread
>>> s.open("library.mgf", "library")               # doctest: +SKIP
>>> s.open("queries.mgf", "queries")               # doctest: +SKIP
>>> s.events.hits.connect(print)                   # doctest: +SKIP
>>> hits = s.search().wait()                       # doctest: +SKIP
>>> clusters = s.cluster("queries").wait()         # doctest: +SKIP
"""

from __future__ import annotations

from simms_gui.model.analyses import ClusterTask, HeatmapTask, LoadTask, NetworkTask, SearchTask
from simms_gui.model.events import SessionEvents
from simms_gui.model.files import LoadedFile
from simms_gui.model.requests import HeatmapRequest, NetworkRequest, SearchRequest
from simms_gui.model.session import Session
from simms_gui.model.signal import Signal
from simms_gui.model.tasks import CallTask, Task, TaskFailed, TaskRunner

__all__ = [
    "CallTask",
    "ClusterTask",
    "HeatmapRequest",
    "HeatmapTask",
    "LoadTask",
    "LoadedFile",
    "NetworkRequest",
    "NetworkTask",
    "SearchRequest",
    "SearchTask",
    "Session",
    "SessionEvents",
    "Signal",
    "Task",
    "TaskFailed",
    "TaskRunner",
]
