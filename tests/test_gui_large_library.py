"""Opening a 1.5 M-spectrum library in the window: the progress dialog, Cancel, then more work."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from PyQt6.QtWidgets import QApplication, QFileDialog, QPushButton

#: Spectra in the written library (the scale of the largest public libraries).
N_SPECTRA = 1_500_000

_RECORD = (
    "BEGIN IONS\nTITLE=S0000000\nPEPMASS=5000.0000\nCHARGE=1+\n"
    "1000.0000 100\n2000.0000 50\n3000.0000 20\nEND IONS\n"
)


def write_mgf(path: Path, n: int) -> int:
    """Write ``n`` three-peak spectra as an MGF file, vectorised (one fixed-width record each).

    Titles ``S0000000`` on, precursors 1000-9000 and peaks 100-900 m/z that
    vary from record to record.  Returns the file's size in bytes.
    """
    template = _RECORD.encode()
    records = np.tile(np.frombuffer(template, dtype=np.uint8), (n, 1))
    index = np.arange(n, dtype=np.int64)

    def digits(at: int, values: np.ndarray, width: int) -> None:
        for d in range(width):
            records[:, at + width - 1 - d] = ord("0") + (values // 10**d) % 10

    digits(template.index(b"S0000000") + 1, index, 7)
    precursor = template.index(b"5000.0000")
    digits(precursor, 1000 + index % 8000, 4)
    digits(precursor + 5, (index * 7919) % 10_000, 4)
    for peak in (b"1000.0000", b"2000.0000", b"3000.0000"):
        at = template.index(peak)
        digits(at, 100 + (index * 31 + at) % 800, 4)
        digits(at + 5, (index * 104_729 + at) % 10_000, 4)
    records.tofile(path)
    return records.size


@pytest.fixture(scope="module")
def large_mgf(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("large") / "large_library.mgf"
    write_mgf(path, N_SPECTRA)
    return path


def test_written_library_is_valid_mgf(tmp_path):
    """The writer's records read back as the spectra they describe (a small file)."""
    import engine

    path = tmp_path / "small.mgf"
    write_mgf(path, 1234)
    lib = engine.load_library(path, cache_dir=tmp_path / "cache")
    assert len(lib) == 1234
    assert list(lib.ids[:2]) == ["S0000000", "S0000001"]
    np.testing.assert_array_equal(lib.peak_counts, 3)
    assert lib.precursor_mz[1] == pytest.approx(1001.7919)
    assert np.all((lib.mz >= 100) & (lib.mz < 900))


def test_opening_a_1_5_million_spectrum_library_shows_progress_and_cancels(
    qtbot, window, large_mgf, data_dir, monkeypatch, tmp_path, boxes
):
    """File → Open library on 1.5 M spectra: the dialog shows and advances; Cancel adds nothing."""
    monkeypatch.setenv("SIMMS_CACHE_DIR", str(tmp_path / "cache"))  # a cold read
    chosen = [str(large_mgf)]
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: (chosen, ""))
    libraries = len(window.session.libraries)
    started = time.perf_counter()
    with qtbot.waitSignal(window.loadFailed, timeout=120_000) as failed:
        window.open_library_action.trigger()  # as File → Open library… does
        dialog = window.files.load_dialogs[-1]
        assert dialog.labelText() == f"Reading {large_mgf.name}…"
        qtbot.waitUntil(dialog.isVisible, timeout=20_000)  # shown after half a second
        values: list[int] = []
        dialog.progressed.connect(lambda _fraction: values.append(dialog.value()))
        # the bar advances while the reader goes through the file
        qtbot.waitUntil(lambda: len({v for v in values if v > 0}) >= 2, timeout=90_000)
        assert values == sorted(values) and values[-1] < dialog.maximum()
        assert window.slow_steps.text().startswith(f"Reading {large_mgf.name}…")
        cancel = next(b for b in dialog.findChildren(QPushButton) if b.text() == "Cancel")
        cancel.click()
    seconds = time.perf_counter() - started
    print(f"\n1.5 M spectra: opened, advanced and cancelled in {seconds:.1f} s")
    assert failed.args == [f"{large_mgf}: cancelled"]
    assert len(window.session.libraries) == libraries  # nothing added
    assert window.files.load_dialogs == []  # the dialog closed
    assert QApplication.overrideCursor() is None  # the busy cursor is gone
    assert not window.slow_steps.text().startswith("Reading")
    assert boxes == []  # a cancel is no error
    # the window goes on working: the next file opens through the same action
    chosen[:] = [str(data_dir / "pesticides.mgf")]
    with qtbot.waitSignal(window.fileLoaded, timeout=60_000):
        window.open_library_action.trigger()
    assert len(window.session.libraries) == libraries + 1
    assert len(window.session.library) == 76
    assert window.files.load_dialogs == []


@pytest.mark.slow
def test_a_1_5_million_spectrum_library_opens_whole_then_from_the_cache(
    qtbot, window, large_mgf, monkeypatch, tmp_path, boxes
):
    """Read to the end, the library holds every spectrum; opened again, the cache serves it."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SIMMS_CACHE_DIR", str(cache))
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: ([str(large_mgf)], ""))
    for attempt in ("cold", "cached"):
        started = time.perf_counter()
        with qtbot.waitSignal(window.fileLoaded, timeout=180_000):
            window.open_library_action.trigger()
        print(f"\n1.5 M spectra, {attempt}: opened in {time.perf_counter() - started:.1f} s")
        library = window.session.library
        assert len(library) == N_SPECTRA and library.n_peaks == 3 * N_SPECTRA
        assert library.ids[N_SPECTRA - 1] == f"S{N_SPECTRA - 1:07d}"
        assert window.files.load_dialogs == [] and boxes == []
        assert any(p.is_file() for p in cache.rglob("*"))  # the read left its cache
        window.session.remove_library(len(window.session.libraries) - 1)
