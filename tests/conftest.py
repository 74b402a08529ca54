"""Shared fixtures: real spectra from ../shared/data, offscreen Qt, private caches."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("SIMMS_NO_COMPILE_AHEAD", "1")  # no child compiling beside the tests

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def pytest_collection_modifyitems(config, items) -> None:
    """The frozen build first (one test of minutes, when it runs): under two workers one
    builds while the other runs the rest, instead of building alone at the end."""
    items.sort(key=lambda item: item.path.name != "test_frozen_build.py")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real test data (``../shared/data`` beside the project)."""
    if not DATA.is_dir():
        pytest.skip("../shared/data is not present")
    return DATA


@pytest.fixture(scope="session")
def library_cache(tmp_path_factory) -> Path:
    """A library cache private to this test session."""
    path = tmp_path_factory.mktemp("simms-cache")
    os.environ["SIMMS_CACHE_DIR"] = str(path)
    return path


@pytest.fixture(scope="session")
def pesticides(data_dir, library_cache):
    """76 real GNPS spectra (negative mode)."""
    from engine import load_library

    return load_library(data_dir / "pesticides.mgf", cache_dir=library_cache)


@pytest.fixture(scope="session")
def massbank_library(data_dir, library_cache):
    """The full 54,390-spectrum MassBank library."""
    from engine import load_library

    return load_library(data_dir / "massbank_ms2.mgf.gz", cache_dir=library_cache)


@pytest.fixture(scope="session")
def massbank_queries(data_dir, library_cache):
    """The 1,000 MassBank query spectra (each also in the library)."""
    from engine import load_library

    return load_library(data_dir / "massbank_ms2_queries.mgf.gz", cache_dir=library_cache)


@pytest.fixture(scope="session")
def massbank_sample(massbank_library):
    """Every 10th MassBank spectrum (5,439 real spectra)."""
    return massbank_library.subset(range(0, len(massbank_library), 10))


@pytest.fixture(autouse=True)
def _private_qt_settings(request, tmp_path_factory):
    """GUI tests: QSettings and the library cache in temporary folders, never the user's."""
    if not request.node.path.name.startswith("test_gui"):
        yield
        return
    from PyQt6.QtCore import QSettings

    folder = tmp_path_factory.mktemp("qsettings")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    for scope in (QSettings.Scope.UserScope, QSettings.Scope.SystemScope):
        QSettings.setPath(QSettings.Format.IniFormat, scope, str(folder))
    request.getfixturevalue("library_cache")
    yield folder


@pytest.fixture
def boxes(monkeypatch):
    """Message boxes are recorded instead of shown: a list of (kind, title, text)."""
    from PyQt6.QtWidgets import QMessageBox

    calls: list[tuple[str, str, str]] = []

    def fake(kind):
        def show(parent, title, text, *args, **kwargs):
            calls.append((kind, title, text))
            return QMessageBox.StandardButton.Ok

        return staticmethod(show)

    for kind in ("critical", "warning", "information", "question"):
        monkeypatch.setattr(QMessageBox, kind, fake(kind))
    return calls


@pytest.fixture
def window(qtbot, boxes):
    """The main window, shown, with message boxes recorded (``boxes``); shut down after."""
    from simms_gui._qt.main_window import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    yield w
    w.shutdown()


@pytest.fixture(scope="module")
def cluster():
    """A local Dask cluster of two one-thread worker processes and its client (per module)."""
    from distributed import Client, LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
        env={"NUMBA_NUM_THREADS": "1"}, preload=["engine.distributed.worker_start"],
    ) as cluster, Client(cluster, set_as_default=False) as client:  # fmt: skip
        yield cluster, client
