"""The hit pane: analog shifts in Da (never as ppm), labels never broken mid-word."""

from __future__ import annotations

import numpy as np
import pytest

from engine import SearchParameters, search
from simms_gui._qt.hit_details import DETAIL_FIELDS, HitDetails
from simms_gui.session import HitList


@pytest.fixture(scope="module")
def analog_rows(pesticides):
    params = SearchParameters(mode="analog", top_n=5)
    hits = search(pesticides, pesticides, params, backend="cpu")
    columns = HitList(hits, pesticides, pesticides, params).columns
    delta = np.asarray(columns["precursor_mz_delta"], dtype=float)
    shifted = int(np.flatnonzero(np.abs(delta) > 1.0)[0])
    same = int(np.flatnonzero(np.abs(delta) < 0.001)[0])
    return [{k: v[i] for k, v in columns.items()} for i in (shifted, same)]


def _show(qtbot, row, width: int) -> HitDetails:
    pane = HitDetails()
    qtbot.addWidget(pane)
    pane.resize(width, 600)
    pane.show()
    qtbot.waitExposed(pane)
    pane.show_row(row)
    return pane


def test_analog_shift_in_dalton_not_ppm(qtbot, analog_rows):
    shifted, same = analog_rows
    text = _show(qtbot, shifted, 420).toPlainText().replace("\n", "")
    delta = float(shifted["precursor_mz_delta"])
    assert abs(delta) > 1.0
    assert f"Δ m/z (Da){delta:+.4f}" in text
    assert "ppm" not in text  # tens of thousands of ppm say nothing about a mass shift
    text = _show(qtbot, same, 420).toPlainText().replace("\n", "")
    ppm = float(same["precursor_mz_delta"]) / float(same["query_precursor_mz"]) * 1e6
    assert f"Δ m/z (ppm){ppm:+.1f}" in text


@pytest.mark.parametrize("width", [260, 520])  # narrow as at 1366 x 768, and wide
def test_labels_and_ids_are_never_broken_mid_word(qtbot, analog_rows, width):
    row = analog_rows[0]
    pane = _show(qtbot, row, width)
    labels = {label for _key, label, _fmt in DETAIL_FIELDS}
    whole = {str(row[k]) for k in ("library_id", "query_id", "library_inchikey") if row.get(k)}
    seen = 0
    block = pane.document().begin()
    while block.isValid():
        text = block.text().replace("\xa0", " ")
        if text in labels or text in whole:
            seen += 1
            assert block.layout().lineCount() == 1, f"{text!r} is broken over lines"
        block = block.next()
    assert seen >= 12
