"""Search parameters, validated once where they are made."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Literal

from engine.preprocess import pipeline_from_spec, pipeline_spec

__all__ = ["SearchParameters", "SCORES"]

#: Score names accepted by :class:`SearchParameters`.
SCORES = ("cosine", "modified_cosine")


@dataclass(frozen=True)
class SearchParameters:
    """Everything that decides which hits a search returns.

    Parameters
    ----------
    tolerance : float
        Peak m/z tolerance in Da (matchms ``tolerance``).
    mz_power, intensity_power : float
        Peak weight ``mz**mz_power * intensity**intensity_power``.
    score : {"cosine", "modified_cosine"}
        Greedy cosine (matchms ``CosineGreedy``) or modified cosine
        (matchms ``ModifiedCosineGreedy``).
    precursor_tolerance : float or None
        Only library spectra whose precursor m/z is within this of the query's
        are scored.  ``None`` (default) scores every pair.
    precursor_unit : {"Da", "ppm"}
        Unit of ``precursor_tolerance`` (ppm of the query precursor m/z).
    min_matches : int
        A hit needs at least this many matched peaks (and always at least one).
    threshold : float
        A hit needs a score of at least this.
    top_n : int
        Keep each query's ``top_n`` best hits; 0 keeps all.
    batch_size : int
        Queries and library spectra per batch (2048 × 2048 by default).
    preprocess : str
        Preprocessing applied to both sides: a preset name (``"none"``: peaks
        as in the files, so scores equal matchms; ``"gnps"``, ``"msas"``) or a
        pipeline spec in JSON (:func:`engine.preprocess.pipeline_spec`).  A JSON
        spec is checked and stored in its canonical one-line form.
    """

    tolerance: float = 0.1
    mz_power: float = 0.0
    intensity_power: float = 1.0
    score: Literal["cosine", "modified_cosine"] = "cosine"
    precursor_tolerance: float | None = None
    precursor_unit: Literal["Da", "ppm"] = "Da"
    min_matches: int = 0
    threshold: float = 0.0
    top_n: int = 10
    batch_size: int = 2048
    preprocess: str = "none"

    def __post_init__(self) -> None:
        score = str(self.score).replace("-", "_")
        object.__setattr__(self, "score", score)
        if score not in SCORES:
            raise ValueError(f"score must be one of {', '.join(SCORES)}, not {self.score!r}")
        for name in ("tolerance", "mz_power", "intensity_power", "threshold"):
            object.__setattr__(self, name, _real(name, getattr(self, name)))
        for name in ("min_matches", "top_n", "batch_size"):
            object.__setattr__(self, name, _integer(name, getattr(self, name)))
        if not self.tolerance >= 0:
            raise ValueError(f"tolerance must be >= 0 Da, not {self.tolerance}")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must be between 0 and 1, not {self.threshold}")
        if self.precursor_tolerance is not None:
            ptol = _real("precursor_tolerance", self.precursor_tolerance)
            object.__setattr__(self, "precursor_tolerance", ptol)
            if not ptol > 0:
                raise ValueError("precursor_tolerance must be > 0 (or None to switch it off)")
        if self.precursor_unit not in ("Da", "ppm"):
            raise ValueError(f"precursor_unit must be 'Da' or 'ppm', not {self.precursor_unit!r}")
        if self.precursor_unit == "ppm" and self.precursor_tolerance is None:
            raise ValueError("precursor_unit 'ppm' needs a precursor_tolerance")
        if self.min_matches < 0:
            raise ValueError("min_matches must be >= 0")
        if self.top_n < 0:
            raise ValueError("top_n must be >= 0 (0 keeps all hits)")
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        canonical = pipeline_spec(pipeline_from_spec(self.preprocess))
        object.__setattr__(self, "preprocess", canonical)

    @property
    def modified(self) -> bool:
        """True for the modified cosine."""
        return self.score == "modified_cosine"

    def to_dict(self) -> dict[str, object]:
        """Plain dict (for provenance headers and settings)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> SearchParameters:
        """Build from a dict, ignoring unknown keys (e.g. settings of an older version)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def _real(name: str, value: object) -> float:
    """``value`` as a finite float, else a ValueError naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        try:
            value = float(value)  # numpy scalars, numeric strings from settings
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number, not {value!r}") from None
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, not {value}")
    return value


def _integer(name: str, value: object) -> int:
    """``value`` as an int (whole floats accepted), else a ValueError naming the parameter."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a whole number, not {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number, not {value!r}") from None
    if not math.isfinite(number) or number != int(number):
        raise ValueError(f"{name} must be a whole number, not {value!r}")
    return int(number)
