"""Search parameters are validated strictly where they are made."""

from __future__ import annotations

import math

import pytest

from engine import SearchParameters


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"threshold": math.nan}, "threshold must be a finite number"),
        ({"threshold": math.inf}, "threshold must be a finite number"),
        ({"threshold": 1.5}, "threshold must be between 0 and 1"),
        ({"threshold": -0.1}, "threshold must be between 0 and 1"),
        ({"tolerance": math.nan}, "tolerance must be a finite number"),
        ({"tolerance": math.inf}, "tolerance must be a finite number"),
        ({"tolerance": -0.1}, "tolerance must be >= 0"),
        ({"mz_power": math.nan}, "mz_power must be a finite number"),
        ({"intensity_power": "x"}, "intensity_power must be a number"),
        ({"precursor_tolerance": math.nan}, "precursor_tolerance must be a finite number"),
        ({"precursor_tolerance": 0}, "precursor_tolerance must be > 0"),
        ({"precursor_unit": "ppm", "mode": "custom"}, "'ppm' needs a precursor_tolerance"),
        ({"precursor_unit": "mDa", "precursor_tolerance": 5}, "precursor_unit must be"),
        ({"top_n": 2.5}, "top_n must be a whole number"),
        ({"top_n": True}, "top_n must be a whole number"),
        ({"top_n": -1}, "top_n must be >= 0"),
        ({"min_matches": -1}, "min_matches must be >= 0"),
        ({"batch_size": 0}, "batch_size must be >= 1"),
        ({"score": "dot"}, "score must be one of"),
        ({"mode": "fast"}, "mode must be one of"),
        ({"match_ion_mode": "yes"}, "match_ion_mode must be True or False"),
        ({"score": "entropy", "tolerance": 0}, "entropy similarity needs a tolerance > 0"),
    ],
)
def test_bad_parameters_are_refused_with_their_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SearchParameters(**kwargs)


def test_numbers_are_normalised():
    p = SearchParameters(top_n=5.0, threshold="0.7", precursor_tolerance=10, min_matches=3.0)
    assert (p.top_n, p.threshold, p.precursor_tolerance, p.min_matches) == (5, 0.7, 10.0, 3)
    assert isinstance(p.top_n, int) and isinstance(p.precursor_tolerance, float)


def test_modes_fill_only_what_is_not_given():
    identity = SearchParameters()
    assert identity.mode == "identity" and identity.score == "entropy"
    assert (identity.tolerance, identity.precursor_tolerance) == (0.02, 0.01)
    assert identity.match_ion_mode and identity.min_matches == 1
    assert SearchParameters(mode="open") == SearchParameters(mode="custom")
    custom = SearchParameters(mode="custom")
    assert (custom.score, custom.tolerance, custom.precursor_tolerance) == ("cosine", 0.1, None)
    assert not custom.match_ion_mode and custom.preprocess == "none"
    analog = SearchParameters(mode="analog", precursor_tolerance=50)
    assert analog.score == "modified_cosine" and analog.precursor_tolerance == 50.0
    # explicit values win, and round-trip through settings
    p = SearchParameters(tolerance=0.05, match_ion_mode=False)
    assert p.score == "entropy" and p.tolerance == 0.05 and not p.match_ion_mode
    assert SearchParameters.from_dict(p.to_dict()) == p
    # settings saved before modes existed keep their meaning
    old = {"tolerance": 0.1, "score": "cosine", "precursor_tolerance": None, "top_n": 10}
    assert SearchParameters.from_dict(old).mode == "custom"
