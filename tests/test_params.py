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
        ({"precursor_unit": "ppm"}, "'ppm' needs a precursor_tolerance"),
        ({"precursor_unit": "mDa", "precursor_tolerance": 5}, "precursor_unit must be"),
        ({"top_n": 2.5}, "top_n must be a whole number"),
        ({"top_n": True}, "top_n must be a whole number"),
        ({"top_n": -1}, "top_n must be >= 0"),
        ({"min_matches": -1}, "min_matches must be >= 0"),
        ({"batch_size": 0}, "batch_size must be >= 1"),
        ({"score": "entropy"}, "score must be one of"),
    ],
)
def test_bad_parameters_are_refused_with_their_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SearchParameters(**kwargs)


def test_numbers_are_normalised():
    p = SearchParameters(top_n=5.0, threshold="0.7", precursor_tolerance=10, min_matches=3.0)
    assert (p.top_n, p.threshold, p.precursor_tolerance, p.min_matches) == (5, 0.7, 10.0, 3)
    assert isinstance(p.top_n, int) and isinstance(p.precursor_tolerance, float)
