"""Every query of a search accounted for: hits, or the reason there are none."""

from __future__ import annotations

import numpy as np

import engine
from engine.backends import PreparedSpectra
from engine.search.accounting import QUERY_STATUSES, query_status, status_summary


def test_each_query_gets_the_reason_it_has_no_hit(massbank_queries, massbank_library):
    library = massbank_library.subset(range(0, len(massbank_library), 20))
    params = engine.SearchParameters()  # identity: entropy, ±0.01 Da, same ion mode
    hits = engine.search(massbank_queries, library, params, backend="cpu")
    has = np.zeros(len(massbank_queries), dtype=bool)
    has[hits.query_index] = True
    status = query_status(massbank_queries, library, params, has)
    counts = {s: int((status == s).sum()) for s in QUERY_STATUSES}
    assert counts["hits"] == has.sum() > 0
    for s in QUERY_STATUSES[2], QUERY_STATUSES[4], QUERY_STATUSES[5], QUERY_STATUSES[6]:
        assert counts[s] > 0, (s, counts)
    # checked one query at a time, by the definitions
    prepared = PreparedSpectra.for_search(massbank_queries, params)
    qmode, lmode = massbank_queries.polarity(), library.polarity()
    for q in np.flatnonzero(~has):
        near = np.abs(library.precursor_mz - massbank_queries.precursor_mz[q]) <= 0.01
        same = near & ((lmode == qmode[q]) | (lmode == 0) | (qmode[q] == 0))
        empty = prepared.offsets[q + 1] == prepared.offsets[q]
        expected = (
            QUERY_STATUSES[2] if empty else
            QUERY_STATUSES[4] if not near.any() else
            QUERY_STATUSES[5] if not same.any() else
            QUERY_STATUSES[6]
        )  # fmt: skip
        assert status[q] == expected, q
    summary = status_summary(status)
    assert summary.startswith(f"{counts['hits']} with hits, ")
    assert sum(int(part.split()[0]) for part in summary.split(", ")) == len(massbank_queries)


def test_a_cancelled_query_says_so(pesticides):
    params = engine.SearchParameters(mode="custom")
    status = query_status(pesticides, pesticides, params, np.zeros(len(pesticides), bool), [3])
    assert status[3] == "search not finished" and (np.delete(status, 3) != status[3]).all()
