"""Search parameters, validated once where they are made."""

from __future__ import annotations

import difflib
import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

import numpy as np

from engine.preprocess import pipeline_from_spec, pipeline_spec

__all__ = ["DECOY_SCHEMES", "MODES", "SCORES", "SearchParameters"]

#: Score names accepted by :class:`SearchParameters`.
SCORES = ("cosine", "modified_cosine", "entropy", "unweighted_entropy")

#: How q-values are estimated (:mod:`engine.search.fdr`); the first is the default.
#: ``second`` is the default: the best calibrated on MassBank
#: (``benchmarks/bench_fdr_calibration.py``; decoy spectra underestimate the FDR).
DECOY_SCHEMES = ("second", "fragments", "shifted")


class _ModeDefault:
    """Marks a field left to its search mode's preset."""

    def __repr__(self) -> str:
        return "<mode default>"


_MODE_DEFAULT: Any = _ModeDefault()

#: The presets of each search mode; a field given explicitly overrides its preset.
#:
#: * ``identity`` (the default) - which library compound is this?  Spectral
#:   entropy similarity (Li et al. 2021), fragments 0.02 Da, precursor within
#:   0.01 Da (Flash entropy identity search's settings), same ion mode, any
#:   matched peak.  Measured on the leave-one-out MassBank benchmark
#:   (``benchmarks/bench_identification.py``): this recalls as many compounds
#:   as Flash entropy identity search with fewer wrong best hits.  Minimum
#:   matched peaks re-measured on held-out queries (``bench_ambiguity.py``):
#:   requiring 2 loses 9 % of the right best hits (876 -> 787 of 1,000; small
#:   molecules with one fragment left after the precursor is removed) to drop 10
#:   wrong ones; 1-peak best hits are right 89 % of the time.  So 1 is kept and
#:   best hits with <= 2 matched peaks are flagged (``few_peaks``) instead.
#: * ``analog`` - which library compounds are related (a modification away)?
#:   Modified cosine (matchms ``ModifiedCosineGreedy``) on GNPS-style peaks
#:   (square-root intensities, GNPS cleaning), fragments 0.02 Da, precursor
#:   shift up to 100 Da (GNPS' analog search default), at least 6 matched
#:   peaks and a score of 0.7 (GNPS' molecular-networking defaults), same ion
#:   mode.
#: * ``custom`` (also ``open``) - every parameter as given; unset ones as SimMS
#:   always had them: greedy cosine, 0.1 Da, no precursor window, no filters,
#:   peaks as in the files, which is matchms ``CosineGreedy`` exactly.
MODES: dict[str, dict[str, object]] = {
    "identity": {
        "tolerance": 0.02,
        "mz_power": 0.0,
        "intensity_power": 1.0,
        "score": "entropy",
        "precursor_tolerance": 0.01,
        "precursor_unit": "Da",
        "match_ion_mode": True,
        "min_matches": 1,
        "threshold": 0.0,
        "preprocess": "none",
    },
    "analog": {
        "tolerance": 0.02,
        "mz_power": 0.0,
        "intensity_power": 1.0,
        "score": "modified_cosine",
        "precursor_tolerance": 100.0,
        "precursor_unit": "Da",
        "match_ion_mode": True,
        "min_matches": 6,
        "threshold": 0.7,
        "preprocess": "gnps",
    },
    "custom": {
        "tolerance": 0.1,
        "mz_power": 0.0,
        "intensity_power": 1.0,
        "score": "cosine",
        "precursor_tolerance": None,
        "precursor_unit": "Da",
        "match_ion_mode": False,
        "min_matches": 0,
        "threshold": 0.0,
        "preprocess": "none",
    },
}
_MODE_ALIASES = {"open": "custom"}


@dataclass(frozen=True)
class SearchParameters:
    """Everything that decides which hits a search returns.

    Every field left out takes the value of the search ``mode``'s preset
    (:data:`MODES`); a field given explicitly always wins.

    Parameters
    ----------
    mode : {"identity", "analog", "custom"}
        ``identity`` (default): identify a compound in the library (entropy
        similarity, narrow precursor window, same ion mode); ``analog``:
        modified cosine with a precursor shift of up to ``precursor_tolerance``
        Da; ``custom`` (or ``open``): the classic greedy-cosine settings.
    tolerance : float
        Peak m/z tolerance in Da (matchms ``tolerance``, ms_entropy
        ``ms2_tolerance_in_da``).
    mz_power, intensity_power : float
        Cosine peak weight ``mz**mz_power * intensity**intensity_power``.
    score : {"cosine", "modified_cosine", "entropy", "unweighted_entropy"}
        Greedy cosine (matchms ``CosineGreedy``), modified cosine (matchms
        ``ModifiedCosineGreedy``), spectral entropy similarity, entropy-weighted
        or not (ms_entropy ``calculate_entropy_similarity`` /
        ``calculate_unweighted_entropy_similarity``; peaks cleaned as Flash
        entropy search cleans them).
    precursor_tolerance : float or None
        Only library spectra whose precursor m/z is within this of the query's
        are scored (in analog mode: the largest precursor shift).  ``None``
        scores every pair.
    precursor_unit : {"Da", "ppm"}
        Unit of ``precursor_tolerance`` (ppm of the query precursor m/z).
    match_ion_mode : bool
        Skip library spectra of the opposite ion mode (a spectrum of unknown
        mode matches either; :meth:`SpectrumLibrary.polarity`).
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
    fdr : float or None
        Estimate a q-value per hit (column ``q_value``) and keep only hits with
        ``q_value <= fdr`` (``1.0`` keeps all, with their q-values).  ``None``
        (default): no estimate, ``q_value`` is NaN.
    decoys : {"second", "fragments", "shifted"}
        How the q-values are estimated (:mod:`engine.search.fdr`): each query's best
        hit of another compound as its decoy (default), or target-decoy competition
        with decoy spectra of fragments drawn from the library, or with library
        spectra whose precursor is shifted.

    Examples
    --------
    >>> SearchParameters().score
    'entropy'
    >>> SearchParameters(mode="custom").tolerance
    0.1
    >>> SearchParameters(mode="analog", precursor_tolerance=50).precursor_tolerance
    50.0
    """

    mode: str = "identity"
    tolerance: float = _MODE_DEFAULT
    mz_power: float = _MODE_DEFAULT
    intensity_power: float = _MODE_DEFAULT
    score: str = _MODE_DEFAULT
    precursor_tolerance: float | None = _MODE_DEFAULT
    precursor_unit: Literal["Da", "ppm"] = _MODE_DEFAULT
    match_ion_mode: bool = _MODE_DEFAULT
    min_matches: int = _MODE_DEFAULT
    threshold: float = _MODE_DEFAULT
    top_n: int = 10
    batch_size: int = 2048
    preprocess: str = _MODE_DEFAULT
    fdr: float | None = None
    decoys: str = DECOY_SCHEMES[0]

    def __post_init__(self) -> None:
        mode = _MODE_ALIASES.get(str(self.mode), str(self.mode))
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)} or open, not {self.mode!r}")
        object.__setattr__(self, "mode", mode)
        for name, value in MODES[mode].items():
            if getattr(self, name) is _MODE_DEFAULT:
                object.__setattr__(self, name, value)
        if not isinstance(self.match_ion_mode, bool | np.bool_):
            raise ValueError(f"match_ion_mode must be True or False, not {self.match_ion_mode!r}")
        object.__setattr__(self, "match_ion_mode", bool(self.match_ion_mode))
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
        if self.entropy and not self.tolerance > 0:
            raise ValueError("entropy similarity needs a tolerance > 0 Da")
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
        if self.fdr is not None:
            object.__setattr__(self, "fdr", _real("fdr", self.fdr))
            if not 0.0 < self.fdr <= 1.0:
                raise ValueError(f"fdr must be in (0, 1] (or None for no q-values), not {self.fdr}")
        if self.decoys not in DECOY_SCHEMES:
            raise ValueError(
                f"decoys must be one of {', '.join(DECOY_SCHEMES)}, not {self.decoys!r}"
            )

    @property
    def modified(self) -> bool:
        """True for the modified cosine."""
        return self.score == "modified_cosine"

    @property
    def entropy(self) -> bool:
        """True for the spectral entropy similarity (weighted or not)."""
        return self.score in ("entropy", "unweighted_entropy")

    @property
    def score_label(self) -> str:
        """The score in words, e.g. ``"entropy similarity"``."""
        return {
            "cosine": "cosine",
            "modified_cosine": "modified cosine",
            "entropy": "entropy similarity",
            "unweighted_entropy": "unweighted entropy similarity",
        }[self.score]

    def to_dict(self) -> dict[str, object]:
        """Plain dict (for provenance headers and settings)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> SearchParameters:
        """Build from a dict, ignoring unknown keys (e.g. settings of an older version).

        Settings saved before search modes existed (no ``mode`` key) keep their
        meaning: they are read as ``custom``.
        """
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        values.setdefault("mode", "custom")
        return cls(**values)


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


def check_keywords(cls: type, overrides: dict[str, object], caller: str, what: str) -> None:
    """Raise ``TypeError`` naming every key of ``overrides`` that is no field of ``cls``.

    Each unknown keyword gets the closest field name as a hint, and the message
    lists the fields (``what`` names them, e.g. ``"search parameters"``).
    """
    names = [f.name for f in fields(cls)]
    unknown = [k for k in overrides if k not in names]
    if not unknown:
        return
    hints = []
    for k in unknown:
        close = difflib.get_close_matches(k, names, n=1)
        hints.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise TypeError(
        f"{caller}() got unexpected keyword argument{'s' if len(unknown) > 1 else ''} "
        f"{', '.join(hints)}; {what} are: {', '.join(names)}"
    )
