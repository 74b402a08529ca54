"""Tooltips of the search form: what each parameter means and the values to start from.

Recommended values come from the literature and from this project's
leave-one-out identification benchmark on MassBank (``benchmarks/RESULTS.md``);
``docs/guide.md`` (Help → Guide) explains them at length.
"""

from __future__ import annotations

from PyQt6.QtWidgets import QFormLayout, QWidget

__all__ = ["PARAMETER_TIPS", "apply_parameter_tips"]

#: Tooltip of each search-panel widget, by attribute name.
PARAMETER_TIPS: dict[str, str] = {
    "mode": (
        "Identity: which library compound is this? Entropy similarity, fragments ±0.02 Da, "
        "precursor ±0.01 Da, same ion mode (Flash entropy identity search's settings; "
        "88 % right best hits, 5 % wrong on MassBank).\n"
        "Analog: related compounds, a modification away. Modified cosine, precursor shift "
        "up to 100 Da, ≥ 6 matched peaks, score ≥ 0.7 (GNPS defaults).\n"
        "Custom: every setting as you set it."
    ),
    "score": (
        "Entropy similarity (Li et al. 2021): fewest wrong hits in identity search "
        "(recommended).\nCosine: the classic dot product (matchms CosineGreedy).\n"
        "Modified cosine: also pairs fragments shifted by the precursor difference "
        "(analogues, molecular networking)."
    ),
    "tolerance": (
        "Fragment m/z tolerance: two peaks closer than this match.\n"
        "Recommended: 0.01–0.02 Da for Orbitrap / Q-TOF (default 0.02 Da), "
        "0.3–0.5 Da for ion traps and low-resolution data."
    ),
    "precursor_unit": (
        "Precursor window unit: Da, or ppm of the query precursor m/z (10 ppm at m/z 500 = "
        "0.005 Da). Off scores every library spectrum (open search)."
    ),
    "precursor_tolerance": (
        "Only library spectra whose precursor m/z is this close to the query's are scored.\n"
        "Identity: 0.01 Da or 10–20 ppm (recommended). Analog: the largest mass shift "
        "allowed, 100 Da (GNPS)."
    ),
    "match_ion_mode": (
        "Skip library spectra of the opposite ion mode. Recommended: on (costs no right "
        "answers on MassBank and removes cross-polarity wrong hits)."
    ),
    "min_matches": (
        "A hit needs at least this many matched peak pairs.\nIdentity: 1 (each further "
        "required peak lost about 9 % of the right answers on MassBank). Analog and "
        "networking: 6 (GNPS)."
    ),
    "threshold": (
        "A hit needs at least this score (0–1).\nIdentity: 0 and read the sorted table "
        "(4 % of best hits scoring ≥ 0.7 were still wrong). Analog: 0.7 (GNPS)."
    ),
    "top_n": "Keep each query's N best hits: 10 to review, 1 for a report; 0 keeps all.",
}


def apply_parameter_tips(panel: QWidget) -> None:
    """Put :data:`PARAMETER_TIPS` on the panel's widgets and their form labels."""
    form = getattr(panel, "form", None)
    for name, tip in PARAMETER_TIPS.items():
        widget = getattr(panel, name, None)
        if widget is None:
            continue
        widget.setToolTip(tip)
        label = form.labelForField(widget) if isinstance(form, QFormLayout) else None
        if label is not None:
            label.setToolTip(tip)
