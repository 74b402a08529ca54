"""The spectrum sets a GPU holds: libraries kept resident, query sets apart."""

from __future__ import annotations

import math
import weakref
from collections import OrderedDict
from typing import Any

import numpy as np

from engine.backends.base import PreparedSpectra
from engine.backends.cuda_buffers import Resident, resident_key
from engine.backends.gpu import CudaError

__all__ = ["QUERY_SETS", "ResidentSets"]

#: Query sets kept on the GPU after their search (apart from the resident libraries).
QUERY_SETS = 2


class ResidentSets:
    """Device copies of spectrum sets, the least recently used dropped first.

    Parameters
    ----------
    cuda : module
        ``numba.cuda``.
    max_sets : int, optional
        Most libraries kept (None: as many as ``budget`` allows).
    budget : float
        Device bytes the libraries and their peak indexes may take (at least one
        library is always kept).

    Attributes
    ----------
    libraries, queries : OrderedDict of str to Resident
        The resident libraries; the last :data:`QUERY_SETS` query sets, which
        never push a library out.
    """

    def __init__(self, cuda: Any, max_sets: int | None, budget: float) -> None:
        self._cuda = cuda
        self.max_sets = math.inf if max_sets is None else int(max_sets)
        self.budget = float(budget)
        self.libraries: OrderedDict[str, Resident] = OrderedDict()
        self.queries: OrderedDict[str, Resident] = OrderedDict()
        self._by_id: dict[int, tuple[weakref.ref, str]] = {}

    def upload(self, spectra: PreparedSpectra, keep: bool = True) -> Resident:
        """Device copy of ``spectra``: the resident one, else uploaded.

        ``keep``: a library, kept resident (within ``max_sets`` and the byte
        budget); otherwise a query set, kept among the last :data:`QUERY_SETS`
        only (a library already resident is used as it is).
        """
        hit = self._by_id.get(id(spectra))
        key = hit[1] if hit is not None and hit[0]() is spectra else resident_key(spectra)
        res = self.libraries.get(key)
        if res is None:
            res = self.queries.pop(key, None)
            if res is None:
                res = self._to_device(spectra)
            if keep:
                self.libraries[key] = res
                while len(self.libraries) > 1 and (
                    len(self.libraries) > self.max_sets or self.resident_bytes() > self.budget
                ):
                    self.libraries.popitem(last=False)
            else:
                self.queries[key] = res
                while len(self.queries) > QUERY_SETS:
                    self.queries.popitem(last=False)
        (self.libraries if key in self.libraries else self.queries).move_to_end(key)
        self._by_id = {i: v for i, v in self._by_id.items() if v[0]() is not None}
        self._by_id[id(spectra)] = (weakref.ref(spectra), key)
        return res

    def resident_bytes(self) -> int:
        """Device bytes of the resident libraries and their peak indexes."""
        sets = self.libraries.values()
        return sum(r.nbytes + (r.bound or {}).get("index_bytes", 0) for r in sets)

    def clear(self) -> None:
        """Drop every set."""
        self.libraries.clear()
        self.queries.clear()
        self._by_id.clear()

    def _to_device(self, spectra: PreparedSpectra) -> Resident:
        """Upload ``spectra`` (CSR arrays as the kernels take them)."""
        offsets = np.asarray(spectra.offsets)
        if offsets[-1] >= 2**31:
            raise CudaError("more than 2**31 peaks in one spectrum set")
        arrays = {
            "mz": np.ascontiguousarray(spectra.mz, np.float64),
            "weight": np.ascontiguousarray(spectra.weight, np.float64),
            "offsets": np.ascontiguousarray(offsets, np.int32),
            "norm": np.ascontiguousarray(spectra.norm, np.float64),
            "precursor_mz": np.ascontiguousarray(spectra.precursor_mz, np.float64),
            "index": np.ascontiguousarray(spectra.ranks, np.int64),
            "polarity": np.ascontiguousarray(spectra.polarities, np.int8),
        }
        nbytes = sum(a.nbytes for a in arrays.values())
        dev = {k: self._cuda.to_device(a) for k, a in arrays.items()}
        counts = np.diff(offsets).astype(np.int64)
        return Resident(**dev, counts=counts, nbytes=nbytes, host=spectra)
