"""Preprocessing specs: presets or JSON pipelines, in the engine, the search and the CLI."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

import engine
from engine.cli import main
from engine.export import read_hits
from engine.preprocess import (
    FILTER_PARAMETERS,
    FILTERS,
    PRESETS,
    Pipeline,
    Step,
    keep_top_k,
    normalize_intensity,
    pipeline_from_spec,
    pipeline_spec,
    preset,
    relative_intensity_threshold,
    remove_precursor_peaks,
    scale_intensity,
)

CUSTOM = Pipeline(
    (
        Step("remove_precursor_peaks", {"tolerance": 10.0}),
        Step("relative_intensity_threshold", {"min_relative": 0.05}),
        Step("keep_top_k", {"k": 12}),
        Step("scale_intensity", {"method": "log"}),
        Step("normalize_intensity"),
    )
)


def by_hand(lib):
    lib = remove_precursor_peaks(lib, 10.0)
    lib = relative_intensity_threshold(lib, 0.05)
    lib = keep_top_k(lib, 12)
    return normalize_intensity(scale_intensity(lib, "log"))


def assert_identical(got, expected):
    assert len(got) == len(expected) > 0
    for column in got.columns():
        np.testing.assert_array_equal(getattr(got, column), getattr(expected, column))


def test_filter_parameters_describe_the_filters():
    assert set(FILTER_PARAMETERS) == set(FILTERS)
    for name, function in FILTERS.items():
        signature = list(inspect.signature(function).parameters)[1:]
        assert [p.name for p in FILTER_PARAMETERS[name]] == signature, name


@pytest.mark.parametrize("name", PRESETS)
def test_presets_by_name(name):
    assert pipeline_from_spec(name) == preset(name)
    assert pipeline_spec(preset(name)) == name
    assert engine.SearchParameters(mode="custom", preprocess=name).preprocess == name


def test_round_trip_of_a_custom_pipeline():
    spec = pipeline_spec(CUSTOM)
    assert "\n" not in spec and " " not in spec
    assert json.loads(spec) == json.loads(json.dumps(CUSTOM.to_dict(), sort_keys=True))
    assert pipeline_from_spec(spec) == CUSTOM
    assert pipeline_spec(pipeline_from_spec(spec)) == spec
    # a changed preset is no longer the preset
    gnps = preset("gnps")
    changed = Pipeline(
        (Step("remove_precursor_peaks", {"tolerance": 5.0}), *gnps.steps[1:]), "gnps"
    )
    assert pipeline_spec(changed).startswith("{")
    # SearchParameters keeps the canonical form of any equivalent JSON
    loose = json.dumps(CUSTOM.to_dict(), indent=2)
    assert engine.SearchParameters(mode="custom", preprocess=loose).preprocess == spec
    assert engine.SearchParameters.from_dict({"preprocess": spec}).preprocess == spec


def test_lenient_forms():
    pipe = pipeline_from_spec('[["window_filter", {"k": 4.0}], "normalize_intensity"]')
    assert pipe.name == "custom"
    assert pipe.steps == (Step("window_filter", {"k": 4}), Step("normalize_intensity"))
    assert isinstance(pipe.steps[0].params["k"], int)
    assert pipeline_from_spec('{"steps": [["remove_precursor_peaks", {"tolerance": 3}]]}').steps[
        0
    ].params == {"tolerance": 3.0}


@pytest.mark.parametrize(
    "spec, message",
    [
        ("gnps2", r"unknown preprocessing 'gnps2'.*none, gnps, msas"),
        ("", "unknown preprocessing"),
        ('{"steps": [["sqrt", {}]]}', r"step 1: unknown filter 'sqrt'; known: select_mz_range"),
        ("{steps: []}", "not valid JSON"),
        ('{"name": "x"}', 'needs a list of "steps"'),
        ('{"steps": [], "colour": 1}', "unknown keys colour"),
        (
            '[["normalize_intensity"], ["window_filter", {"kk": 3}]]',
            r"step 2 \(window_filter\): unknown parameter 'kk'; window_filter takes k, window",
        ),
        ('[["window_filter", {"k": "six"}]]', r"window_filter\): k must be an integer"),
        ('[["window_filter", {"k": 2.5}]]', "k must be an integer"),
        ('[["window_filter", {"window": -1}]]', r"window must be >= 0, not -1.0"),
        ('[["relative_intensity_threshold", {"min_relative": 2}]]', "min_relative must be <= 1"),
        ('[["scale_intensity", {"method": "cube"}]]', "method must be one of sqrt, log, none"),
        ('[["keep_top_k", {}]]', r"keep_top_k\): parameter 'k' is required"),
        ('[["select_mz_range", {"min_mz": 500, "max_mz": 100}]]', "min_mz .500. must not exceed"),
        ('[["normalize_intensity", {"x": 1}]]', "normalize_intensity takes no parameters"),
        ('[["keep_top_k", 5]]', "parameters must be a JSON object"),
        ('[["keep_top_k", {"k": true}]]', "k must be an integer, not True"),
        ("[42]", r"step 1 must be \[filter name, \{parameters\}\]"),
    ],
)
def test_bad_specs_raise_clear_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        pipeline_from_spec(spec)
    with pytest.raises(ValueError, match=message):
        engine.SearchParameters(mode="custom", preprocess=spec)


def test_custom_spec_search_equals_steps_by_hand(pesticides):
    queries = pesticides.subset(range(0, 76, 3))
    spec = pipeline_spec(CUSTOM)
    params = engine.SearchParameters(mode="custom", top_n=5, tolerance=0.02, preprocess=spec)
    got = engine.search(queries, pesticides, params, backend="cpu")
    expected = engine.search(
        by_hand(queries), by_hand(pesticides), params, backend="cpu", preprocess="none"
    )
    assert_identical(got, expected)
    # and it is not what the unprocessed spectra give
    plain = engine.search(queries, pesticides, params, backend="cpu", preprocess="none")
    assert not (len(plain) == len(got) and np.array_equal(plain.score, got.score))
    scores, matches = engine.score_matrix(queries, pesticides, params, backend="cpu")
    ref_scores, ref_matches = engine.score_matrix(
        by_hand(queries),
        by_hand(pesticides),
        engine.SearchParameters(mode="custom", tolerance=0.02),
        backend="cpu",
    )
    np.testing.assert_array_equal(scores, ref_scores)
    np.testing.assert_array_equal(matches, ref_matches)


def test_cli_accepts_json_and_file_specs(data_dir, tmp_path, pesticides):
    path = data_dir / "pesticides.mgf"
    spec = json.dumps(CUSTOM.to_dict())
    expected = engine.search(
        by_hand(pesticides),
        by_hand(pesticides),
        backend="cpu",
        mode="custom",
        top_n=3,
        tolerance=0.02,
    )
    spec_file = tmp_path / "pipeline.json"
    spec_file.write_text(json.dumps(CUSTOM.to_dict(), indent=2), encoding="utf-8")
    for value in (spec, f"@{spec_file}"):
        out = tmp_path / "hits.tsv"
        args = ["search", "--mode", "custom", str(path), str(path), "-o", str(out), "--top", "3",
                "--tolerance", "0.02", "--preprocess", value, "-q", "--no-cache"]  # fmt: skip
        assert main(args) == 0
        cols, provenance = read_hits(out)
        # the same hits (the CLI orders tied hits by engine.search.order_ties' key)
        got = np.lexsort((cols["library_index"], cols["query_index"]))
        want = np.lexsort((expected.library_index, expected.query_index))
        np.testing.assert_array_equal(cols["query_index"][got], expected.query_index[want])
        np.testing.assert_array_equal(cols["library_index"][got], expected.library_index[want])
        np.testing.assert_array_equal(cols["matches"][got], expected.matches[want])
        np.testing.assert_allclose(cols["score"][got], expected.score[want], rtol=0, atol=1e-12)
        line = next(ln for ln in provenance if ln.startswith("parameters:"))
        assert f"preprocess={pipeline_spec(CUSTOM)}" in line


def test_cli_rejects_bad_specs(data_dir, tmp_path, capsys):
    path = str(data_dir / "pesticides.mgf")
    bad = '[["window_filter", {"kk": 3}]]'
    assert (
        main(["search", "--mode", "custom", path, path, "--preprocess", bad, "-q", "--no-cache"])
        == 2
    )
    assert "unknown parameter 'kk'" in capsys.readouterr().err
    missing = tmp_path / "absent.json"
    assert (
        main(["search", "--mode", "custom", path, path, "--preprocess", f"@{missing}", "-q"]) == 2
    )
    assert "absent.json" in capsys.readouterr().err
    assert main(["search", "--mode", "custom", path, path, "--preprocess", "fancy", "-q"]) == 2
    assert "unknown preprocessing 'fancy'" in capsys.readouterr().err
