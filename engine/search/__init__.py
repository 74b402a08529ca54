"""Local search jobs: planning (precursor window), streaming, progress and cancellation.

:class:`SearchJob` runs queries × library in batches on one backend and yields
hit chunks as soon as they are final; :mod:`engine.distributed` builds on the same
:class:`StreamingJob`, :class:`CancelToken` and :class:`SearchProgress`.
"""

from engine.search.accounting import QUERY_STATUSES, query_status, status_summary
from engine.search.ambiguity import (
    AMBIGUITY_COLUMNS,
    FEW_PEAKS,
    TIE_TOLERANCE,
    ambiguity_columns,
    order_ties,
)
from engine.search.annotate import SearchContext, hit_columns
from engine.search.evidence import evidence
from engine.search.job import SearchJob, make_resident
from engine.search.progress import FIRST_QUERY_BLOCK, CancelToken, SearchProgress, query_blocks
from engine.search.streaming import StreamingJob
from engine.search.window import library_window, precursor_order

__all__ = [
    "AMBIGUITY_COLUMNS",
    "FEW_PEAKS",
    "TIE_TOLERANCE",
    "ambiguity_columns",
    "order_ties",
    "FIRST_QUERY_BLOCK",
    "QUERY_STATUSES",
    "CancelToken",
    "SearchJob",
    "SearchProgress",
    "SearchContext",
    "StreamingJob",
    "evidence",
    "hit_columns",
    "make_resident",
    "library_window",
    "precursor_order",
    "query_blocks",
    "query_status",
    "status_summary",
]
