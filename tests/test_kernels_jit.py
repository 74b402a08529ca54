"""Helpers compiled without Python entry points: same results, and searches never call
them from Python (which would compile a second, uncached copy of each)."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import numpy as np
import pytest
from numba import njit

import engine
import engine.kernels
from engine.kernels.jit import HelperDispatcher
from engine.kernels.sorting import stable_order

ROOT = Path(__file__).resolve().parents[1]
DEMO_QUERIES = ROOT / "resources" / "demo_queries.mgf"
DEMO_LIBRARY = ROOT / "resources" / "demo_library.mgf"


def _helpers() -> list[HelperDispatcher]:
    found = []
    for info in pkgutil.iter_modules(engine.kernels.__path__, "engine.kernels."):
        if info.name.split(".")[-1].startswith("cuda"):
            continue  # numba-cuda's modules: not CPU helpers
        module = importlib.import_module(info.name)
        found += [v for v in vars(module).values() if isinstance(v, HelperDispatcher)]
    return found


@njit(cache=False)
def _order_in_compiled_code(keys):  # pragma: no cover - numba
    return stable_order(keys)


def test_a_helper_gives_the_same_answer_from_compiled_code_and_from_python():
    keys = np.random.default_rng(0).integers(0, 5, 200).astype(np.float64)
    expected = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(_order_in_compiled_code(keys), expected)
    np.testing.assert_array_equal(stable_order(keys), expected)  # the separate Python entry
    assert stable_order.called_from_python


def test_helpers_are_compiled_without_python_or_c_entry_points():
    helpers = _helpers()
    assert len(helpers) > 30
    for helper in helpers:
        options = helper.targetoptions
        assert options["no_cpython_wrapper"] and options["no_cfunc_wrapper"], helper
        assert helper._cache is not None, helper  # noqa: SLF001 - cached like njit(cache=True)


@pytest.mark.parametrize("mode", ["identity", "analog"])
def test_a_search_never_calls_a_helper_from_python(mode):
    before = {id(h) for h in _helpers() if h.called_from_python}
    hits = engine.search(DEMO_QUERIES, DEMO_LIBRARY, mode=mode, backend="cpu")
    assert len(hits) > 0
    called = [h.py_func.__qualname__ for h in _helpers()
              if h.called_from_python and id(h) not in before]  # fmt: skip
    assert called == []


def test_cleaning_compiles_one_signature_for_read_only_and_writable_peaks():
    """The window's mirror cleans a pair's own (writable) arrays, a search a library's
    read-only ones: one compiled signature serves both (a second cost the window's
    first hits ~2 s of compiling on the GUI thread)."""
    from engine.kernels.entropy import _clean_span, _weights_span, clean_spectra, entropy_weights

    mz = np.array([50.0, 80.0, 80.02, 120.0, 60.0, 90.0])
    intensity = np.array([1.0, 2.0, 2.0, 3.0, 5.0, 1.0])
    offsets = np.array([0, 4, 6], dtype=np.int64)
    writable = clean_spectra(mz, intensity, offsets)
    signatures = len(_clean_span.signatures)
    frozen = [a.copy() for a in (mz, intensity, offsets)]
    for a in frozen:
        a.flags.writeable = False
    for got, want in zip(clean_spectra(*frozen), writable, strict=True):
        np.testing.assert_array_equal(got, want)
    assert len(_clean_span.signatures) == signatures
    assert not any(sig[k].mutable for sig in _clean_span.signatures for k in (2, 3, 4))
    weights = entropy_weights(writable[1], writable[2])
    signatures = len(_weights_span.signatures)
    again = entropy_weights(*(read_only_copy(a) for a in writable[1:]))
    np.testing.assert_array_equal(again, weights)
    assert len(_weights_span.signatures) == signatures


def read_only_copy(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flags.writeable = False
    return a


_ONE_SIGNATURE = """
import importlib, json, pkgutil, sys
import engine, engine.kernels
from numba.core.registry import CPUDispatcher
from simms_gui.pairs import compute_pair
p = engine.SearchParameters(mode=sys.argv[1])
queries, library = engine.load_library(sys.argv[2]), engine.load_library(sys.argv[3])
hits = engine.search(queries, library, p, backend="cpu")
for k in range(min(3, len(hits))):  # the window's mirror of the first hits
    compute_pair(queries, int(hits.query_index[k]), library, int(hits.library_index[k]), p)
multi = {}
for info in pkgutil.iter_modules(engine.kernels.__path__, "engine.kernels."):
    if "cuda" not in info.name:
        for name, v in vars(importlib.import_module(info.name)).items():
            if isinstance(v, CPUDispatcher) and len(v.signatures) > 1:
                multi[info.name + "." + name] = [str(s) for s in v.signatures]
print(json.dumps({"hits": len(hits), "multi": multi}))
"""


@pytest.mark.slow  # a fresh interpreter per mode (kernels from numba's cache)
@pytest.mark.parametrize("mode", ["identity", "analog", "custom"])
def test_a_search_and_its_mirrors_compile_one_signature_per_kernel(mode):
    """A second signature of a kernel (a read-only or layout variant) is compiled
    again on first use, on whichever thread meets it: the window's GUI thread did."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _ONE_SIGNATURE, mode, str(DEMO_QUERIES), str(DEMO_LIBRARY)],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=True,
    )  # fmt: skip
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["hits"] > 0
    assert report["multi"] == {}
