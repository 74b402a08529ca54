"""The fused preprocessing pass equals the step-by-step filters bit for bit, on real spectra."""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np
import pytest

from engine.kernels.peak_filters import SQRT, filter_peaks
from engine.library import SpectrumLibrary
from engine.preprocess import FILTERS, PRESETS, Pipeline, Step, pipeline, preset
from engine.preprocess.fused import KernelSegment, compile_plan, run_plan


@pytest.fixture(autouse=True)
def _fused_at_any_size(monkeypatch):
    """Pipelines fuse libraries of any size here (small ones otherwise go step by step)."""
    monkeypatch.setattr(pipeline, "FUSED_FROM_PEAKS", 0)


def test_small_libraries_go_step_by_step(monkeypatch, pesticides):
    """Below ``FUSED_FROM_PEAKS`` peaks nothing fused runs (nothing of it compiles)."""
    monkeypatch.setattr(pipeline, "FUSED_FROM_PEAKS", pesticides.n_peaks + 1)
    monkeypatch.setattr(pipeline, "run_plan", None)  # would fail if called
    for name in PRESETS:
        assert_same(preset(name)(pesticides), preset(name).reference(pesticides))


#: Real parameter values for each filter, as pipelines use them.
CHOICES = {
    "select_mz_range": [
        {"min_mz": 10.0, "max_mz": 1000.0},
        {"min_mz": 50.0},
        {"max_mz": 300.0},
        {"min_mz": 100.0, "max_mz": 100.0},
        {},
    ],
    "remove_precursor_peaks": [{"tolerance": 17.0}, {"tolerance": 0.5}, {"tolerance": 0.0}, {}],
    "relative_intensity_threshold": [
        {"min_relative": 0.01},
        {"min_relative": 0.05},
        {"min_relative": 0.5},
        {"min_relative": 1.0},
        {"min_relative": 0.0},
    ],
    "keep_top_k": [{"k": 100}, {"k": 20}, {"k": 5}, {"k": 1}, {"k": 0}],
    "window_filter": [
        {"k": 6, "window": 50.0},
        {"k": 1, "window": 10.0},
        {"k": 3, "window": 0.0},
        {"k": 0},
        {},
    ],
    "scale_intensity": [{"method": "sqrt"}, {"method": "log"}, {"method": "none"}, {}],
    "normalize_intensity": [{}],
    "centroid": [{"width": 0.05}, {"width": 0.5}, {}],
}


def assert_same(got: SpectrumLibrary, expected: SpectrumLibrary) -> None:
    """Equal bit for bit: peaks, offsets, and the same spectra with the same metadata."""
    for name in ("mz", "intensity", "offsets"):
        a, b = getattr(got, name), getattr(expected, name)
        assert a.dtype == b.dtype, name
        bits = f"i{a.itemsize}"  # compare the bits: -0.0 and NaN payloads count too
        np.testing.assert_array_equal(a.view(bits), b.view(bits), err_msg=name)
    assert len(got) == len(expected)
    for name in ("precursor_mz", "charge", "ion_mode"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name))
    assert got.metadata.keys() == expected.metadata.keys()
    for key, column in expected.metadata.items():
        assert list(got.metadata[key]) == list(column), key
    assert got.source == expected.source


def random_pipelines(seed: int, count: int) -> list[Pipeline]:
    rng = np.random.default_rng(seed)
    names = sorted(FILTERS)
    pipes = []
    for _ in range(count):
        steps = []
        for name in rng.choice(names, size=rng.integers(1, 7)):
            options = CHOICES[str(name)]
            steps.append(Step(str(name), dict(options[rng.integers(len(options))])))
        pipes.append(Pipeline(tuple(steps)))
    return pipes


def with_edge_cases(lib: SpectrumLibrary) -> SpectrumLibrary:
    """Every 5th spectrum without peaks, every 3rd without precursor."""
    mz = [lib.peaks(i)[0] if i % 5 else np.empty(0) for i in range(len(lib))]
    intensity = [lib.peaks(i)[1] if i % 5 else np.empty(0) for i in range(len(lib))]
    precursor = np.where(np.arange(len(lib)) % 3 == 1, np.nan, lib.precursor_mz)
    return SpectrumLibrary.from_peak_lists(
        mz, intensity, precursor_mz=precursor, metadata={"id": list(lib.ids)}
    )


def with_ties(lib: SpectrumLibrary) -> SpectrumLibrary:
    """Intensities rounded to four levels of each spectrum's base peak: many equal ones."""
    top = np.zeros(len(lib))
    nonempty = lib.peak_counts > 0
    top[nonempty] = np.maximum.reduceat(lib.intensity, lib.offsets[:-1][nonempty])
    base = np.repeat(top, lib.peak_counts)
    return lib.with_peaks(lib.mz, np.ceil(4 * lib.intensity / base), lib.offsets)


def reversed_mz(lib: SpectrumLibrary) -> SpectrumLibrary:
    """Each spectrum's peaks in descending m/z (not a valid library: the kernels' other branch)."""
    bounds = zip(lib.offsets[:-1], lib.offsets[1:], strict=True)
    order = np.concatenate([np.arange(b - 1, a - 1, -1) for a, b in bounds])
    return lib.with_peaks(lib.mz[order], lib.intensity[order], lib.offsets)


@pytest.fixture(scope="module")
def massbank_slice(massbank_library) -> SpectrumLibrary:
    """Every 20th MassBank spectrum plus the 60 largest and the 60 densest (peaks per Da)."""
    counts = massbank_library.peak_counts
    span = np.zeros(len(massbank_library))
    many = counts > 1
    last = massbank_library.mz[massbank_library.offsets[1:][many] - 1]
    span[many] = last - massbank_library.mz[massbank_library.offsets[:-1][many]]
    density = np.where(span > 0, counts / np.maximum(span, 1e-9), 0.0)
    picked = np.unique(
        np.concatenate(
            [
                np.arange(0, len(massbank_library), 20),
                np.argsort(-counts, kind="stable")[:60],
                np.argsort(-density, kind="stable")[:60],
            ]
        )
    )
    assert counts[picked].max() == counts.max()
    return massbank_library.subset(picked)


@pytest.fixture(scope="module")
def sample_msp(data_dir, library_cache) -> SpectrumLibrary:
    from engine import load_library

    return load_library(data_dir / "sample.msp", cache_dir=library_cache)


@pytest.fixture(scope="module")
def libraries(pesticides, sample_msp, massbank_queries, massbank_slice):
    libs = {
        "pesticides": pesticides,
        "sample.msp": sample_msp,
        "massbank queries": massbank_queries,
        "massbank slice": massbank_slice,
    }
    libs["queries, empty and no precursor"] = with_edge_cases(massbank_queries)
    libs["pesticides, ties"] = with_ties(pesticides)
    libs["slice, ties"] = with_ties(massbank_slice)
    libs["no spectra"] = massbank_queries.subset([])
    return libs


@pytest.mark.parametrize("name", PRESETS)
def test_presets_equal_the_filters_step_by_step(name, libraries):
    pipe = preset(name)
    for label, lib in libraries.items():
        got = pipe(lib)
        assert_same(got, pipe.reference(lib))
        if name == "none":
            assert got is lib, label


@pytest.mark.parametrize("name", ["gnps", "msas"])
def test_presets_are_one_fused_pass(name):
    plan = compile_plan(preset(name).steps, FILTERS)
    assert plan is not None and len(plan.segments) == 1
    assert isinstance(plan.segments[0], KernelSegment)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_pipelines_equal_the_filters(seed, libraries):
    for pipe in random_pipelines(seed, 30):
        assert compile_plan(pipe.steps, FILTERS) is not None, pipe
        for lib in libraries.values():
            assert_same(pipe(lib), pipe.reference(lib))


def test_gnps_on_the_whole_massbank_library(massbank_library):
    for name in ("gnps", "msas"):
        assert_same(preset(name)(massbank_library), preset(name).reference(massbank_library))


def test_unsorted_peaks_take_the_exact_slow_branches(pesticides):
    lib = reversed_mz(with_ties(pesticides))
    for pipe in [
        Pipeline((Step("keep_top_k", {"k": 5}),)),
        Pipeline((Step("window_filter", {"k": 2, "window": 20.0}),)),
        *random_pipelines(4, 20),
    ]:
        assert_same(pipe(lib), pipe.reference(lib))


def test_log_scaling_runs_as_its_filter_between_fused_segments(pesticides):
    pipe = Pipeline(
        (
            Step("remove_precursor_peaks", {"tolerance": 17.0}),
            Step("scale_intensity", {"method": "log"}),
            Step("keep_top_k", {"k": 10}),
        )
    )
    plan = compile_plan(pipe.steps, FILTERS)
    kinds = [isinstance(s, KernelSegment) for s in plan.segments]
    assert kinds == [True, False, True]
    assert_same(run_plan(plan, pesticides), pipe.reference(pesticides))


@pytest.mark.parametrize(
    "step",
    [
        Step("keep_top_k", {"k": -1}),
        Step("keep_top_k", {"k": 2.5}),
        Step("keep_top_k", {}),
        Step("window_filter", {"window": -1.0}),
        Step("select_mz_range", {"min_mz": 500.0, "max_mz": 100.0}),
        Step("relative_intensity_threshold", {"min_relative": 2.0}),
        Step("remove_precursor_peaks", {"tolerance": float("nan")}),
        Step("scale_intensity", {"method": "cube"}),
        Step("normalize_intensity", {"x": 1}),
    ],
)
def test_unusual_parameters_run_step_by_step(step, pesticides):
    """Such steps are not fused: the pipeline runs the filters, which raise or decide."""
    pipe = Pipeline((Step("normalize_intensity"), step))
    assert compile_plan(pipe.steps, FILTERS) is None
    try:
        expected = pipe.reference(pesticides)
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            pipe(pesticides)
    else:
        assert_same(pipe(pesticides), expected)


def test_peaks_of_other_types_run_step_by_step(pesticides):
    lib = pesticides.with_peaks(
        pesticides.mz.astype(np.float32),
        pesticides.intensity.astype(np.float32),
        pesticides.offsets,
    )
    for name in ("gnps", "msas"):
        assert_same(preset(name)(lib), preset(name).reference(lib))
    top = Pipeline((Step("keep_top_k", {"k": 5}),))
    assert top(lib).intensity.dtype == np.float32
    assert_same(top(lib), top.reference(lib))


def test_whole_number_parameters_of_other_types(pesticides):
    pipe = Pipeline(
        (
            Step("keep_top_k", {"k": np.int64(7)}),
            Step("window_filter", {"k": 2.0, "window": np.float32(25.0)}),
            Step("select_mz_range", {"min_mz": 50, "max_mz": np.inf}),
        )
    )
    assert compile_plan(pipe.steps, FILTERS) is not None
    assert_same(pipe(pesticides), pipe.reference(pesticides))


def test_concurrent_calls_from_threads(massbank_queries):
    """Two threads preprocessing at once (the kernel runs inside parallel_region)."""
    results: dict[str, SpectrumLibrary] = {}

    def run(name: str) -> None:
        for _ in range(3):
            results[name] = preset(name)(massbank_queries)

    threads = [threading.Thread(target=run, args=(n,)) for n in ("gnps", "msas")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in ("gnps", "msas"):
        assert_same(results[name], preset(name).reference(massbank_queries))


def test_metadata_and_precursors_are_the_inputs(pesticides):
    lib = replace(pesticides, precursor_mz=pesticides.precursor_mz.copy())
    out = preset("msas")(lib)
    assert out.metadata is lib.metadata
    # the same memory (a library holds read-only views of its arrays), not a copy
    assert np.shares_memory(out.precursor_mz, lib.precursor_mz)
    np.testing.assert_array_equal(out.precursor_mz, lib.precursor_mz)


def dense_spectra(seed: int) -> SpectrumLibrary:
    """Spectra of every size around the window kernel's groups and blocks (16, 32 peaks).

    Sorted m/z, packed densely enough that windows hold hundreds of peaks, with
    equal m/z values, intensities of few levels (many ties), NaN, zero and
    negative zero intensities, and infinite m/z at the ends of some spectra.
    """
    rng = np.random.default_rng(seed)
    sizes = [*range(1, 70), 95, 96, 97, 128, 129, 300, 700]
    mz, intensity = [], []
    for i, n in enumerate(sizes):
        spacing = rng.choice([0.01, 0.3, 2.0, 40.0])
        peaks = np.sort(np.round(rng.uniform(50, 50 + spacing * n, n), 1))
        levels = rng.integers(1, 8, n).astype(float)
        if i % 4 == 1:
            levels[rng.integers(0, n)] = np.nan
        if i % 5 == 2:
            levels[rng.integers(0, n, 2)] = [0.0, -0.0]
        if i % 7 == 3 and n > 2:
            peaks[-1] = np.inf
        if i % 11 == 5 and n > 2:
            peaks[0] = -np.inf
        mz.append(peaks)
        intensity.append(levels if i % 3 else rng.uniform(0, 100, n))
    mz.append(np.array([np.nan]))  # one peak of unknown m/z
    intensity.append(np.array([5.0]))
    return SpectrumLibrary.from_peak_lists(mz, intensity)


@pytest.mark.parametrize("seed", [5, 6])
@pytest.mark.parametrize(
    "params",
    [
        {"k": 6, "window": 50.0},
        {"k": 1, "window": 0.0},
        {"k": 0, "window": 5.0},
        {"k": 3, "window": float("inf")},
        {"k": 40, "window": 10.0},
        {"k": 2, "window": 1e-3},
        {"k": 6, "window": 1e6},
    ],
)
def test_window_filter_at_group_and_block_edges(seed, params):
    lib = dense_spectra(seed)
    pipe = Pipeline((Step("window_filter", params),))
    assert compile_plan(pipe.steps, FILTERS) is not None
    assert_same(pipe(lib), pipe.reference(lib))


#: Pipelines around the two passes: intensity steps before a step that drops peaks (the
#: second pass divides by the first pass's divisor), none that drops any, spectra that keep
#: every peak, none, or lose their last ones (the gather's end).
TWO_PASS_PIPELINES = [
    (  # the base peak is often the precursor, or above 200: divided by a dropped peak
        Step("normalize_intensity"),
        Step("remove_precursor_peaks", {"tolerance": 17.0}),
        Step("relative_intensity_threshold", {"min_relative": 0.3}),
        Step("select_mz_range", {"max_mz": 200.0}),
    ),
    (
        Step("scale_intensity", {"method": "sqrt"}),
        Step("normalize_intensity"),
        Step("window_filter", {"k": 2, "window": 20.0}),
        Step("normalize_intensity"),
        Step("keep_top_k", {"k": 7}),
        Step("scale_intensity", {"method": "sqrt"}),
    ),
    (Step("scale_intensity", {"method": "sqrt"}), Step("normalize_intensity")),
    (Step("normalize_intensity"), Step("scale_intensity", {"method": "sqrt"})),
    (Step("select_mz_range", {"min_mz": -np.inf, "max_mz": np.inf}), Step("normalize_intensity")),
    (Step("select_mz_range", {"max_mz": 150.0}), Step("normalize_intensity")),
    (Step("keep_top_k", {"k": 0}), Step("normalize_intensity")),
    (Step("remove_precursor_peaks", {"tolerance": 1e9}), Step("scale_intensity")),
]


@pytest.mark.parametrize("steps", TWO_PASS_PIPELINES)
def test_two_passes_equal_the_filters(steps, libraries):
    pipe = Pipeline(steps)
    plan = compile_plan(pipe.steps, FILTERS)
    assert plan is not None and all(isinstance(s, KernelSegment) for s in plan.segments)
    for lib in libraries.values():
        assert_same(pipe(lib), pipe.reference(lib))


def test_output_arrays_have_their_exact_size_in_new_memory(massbank_queries):
    """Exactly the kept peaks, never a view of an input-sized buffer (nor of the input)."""
    lib = massbank_queries
    plans = [compile_plan(preset(name).steps, FILTERS).segments[0] for name in ("gnps", "msas")]
    plans.append(KernelSegment((SQRT,), ((0.0, 0.0),)))  # drops nothing
    for plan in plans:
        mz, intensity, offsets = filter_peaks(
            lib.mz,
            lib.intensity,
            lib.offsets,
            lib.precursor_mz,
            np.array(plan.codes, dtype=np.int64),
            np.array(plan.params, dtype=np.float64),
        )
        assert offsets.shape == lib.offsets.shape and offsets[0] == 0
        assert mz.shape == intensity.shape == (offsets[-1],)
        for out in (mz, intensity):
            assert out.dtype == np.float64 and out.flags.c_contiguous and out.flags.writeable
            assert not np.shares_memory(out, lib.mz) and not np.shares_memory(out, lib.intensity)
        assert not np.shares_memory(mz, intensity)
        for out in (mz, intensity):  # no buffer of more peaks behind them
            block = out if out.base is None else out.base
            assert block.nbytes <= mz.nbytes + intensity.nbytes
