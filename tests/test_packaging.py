"""Packaging checks: the PyInstaller spec, the desktop entry, the icons, the frozen-app hook.

Fast checks run everywhere. The full frozen build (packaging/build.sh, several
minutes: see packaging/README.md) is ``test_frozen_build.py``.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
import tomllib
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGING = ROOT / "packaging"
SPEC = PACKAGING / "simms.spec"
DESKTOP = PACKAGING / "simms-desktop.desktop"
MIME = PACKAGING / "simms-mime.xml"
ICON_SVG = ROOT / "resources" / "icons" / "simms.svg"
ICON_PNG = ROOT / "resources" / "icons" / "simms.png"
APP_DIR = ROOT / "dist" / "simms-desktop"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


# --- the PyInstaller spec -----------------------------------------------------------


@pytest.mark.parametrize("name", ["simms.spec", "entry_gui.py", "entry_cli.py", "rthook_simms.py"])
def test_spec_and_scripts_compile(name):
    path = PACKAGING / name
    compile(path.read_text(encoding="utf-8"), str(path), "exec")


@pytest.mark.parametrize("has_cuda", [False, True])
def test_spec_builds_one_folder_with_both_executables(monkeypatch, has_cuda):
    """Execute the spec against stand-ins of PyInstaller's build classes."""
    calls: dict[str, list] = {"Analysis": [], "EXE": [], "COLLECT": [], "BUNDLE": []}

    class Analysis:
        def __init__(self, scripts, **kw):
            calls["Analysis"].append((scripts, kw))
            self.scripts = [(Path(s).stem, s, "PYSOURCE") for s in scripts]
            self.pure, self.binaries, self.datas = [], [], []

    def recorder(kind):
        def make(*args, **kw):
            calls[kind].append((args, kw))
            return types.SimpleNamespace(args=args, kw=kw)

        return make

    hooks = types.ModuleType("PyInstaller.utils.hooks")
    hooks.collect_submodules = lambda *a, **k: []
    hooks.collect_data_files = lambda *a, **k: []
    hooks.collect_dynamic_libs = lambda *a, **k: []
    pyi = types.ModuleType("PyInstaller")
    utils = types.ModuleType("PyInstaller.utils")
    monkeypatch.setitem(sys.modules, "PyInstaller", pyi)
    monkeypatch.setitem(sys.modules, "PyInstaller.utils", utils)
    monkeypatch.setitem(sys.modules, "PyInstaller.utils.hooks", hooks)

    namespace = {
        "__name__": "__main__",
        "__file__": str(SPEC),
        "SPECPATH": str(PACKAGING),
        "Analysis": Analysis,
        "PYZ": recorder("PYZ"),
        "EXE": recorder("EXE"),
        "COLLECT": recorder("COLLECT"),
        "BUNDLE": recorder("BUNDLE"),
    }
    calls["PYZ"] = []
    import importlib.util

    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args):
        if name == "numba_cuda":
            return types.SimpleNamespace(name=name) if has_cuda else None
        return real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    exec(compile(SPEC.read_text(encoding="utf-8"), str(SPEC), "exec"), namespace)

    ((scripts, kw),) = calls["Analysis"]
    assert [Path(s).name for s in scripts] == ["entry_gui.py", "entry_cli.py"]
    assert kw["module_collection_mode"] == {"engine": "pyz+py"}
    assert any(Path(h).name == "rthook_simms.py" for h in kw["runtime_hooks"])
    for heavy in ("matchms", "rdkit", "pytest", "matplotlib", "torch"):
        assert heavy in kw["excludes"]
    assert "pandas" not in kw["excludes"]  # sessions, exports and reports need it
    if has_cuda:
        assert "_numba_cuda_redirector" in kw["hiddenimports"]
        assert "numba_cuda" not in kw["excludes"]
    else:
        assert "numba_cuda" in kw["excludes"]
    bundled = {(Path(src).name, dest) for src, dest in kw["datas"]}
    assert ("demo_library.mgf", "resources") in bundled
    assert ("demo_queries.mgf", "resources") in bundled
    assert ("simms.png", "resources/icons") in bundled
    assert ("guide.md", "resources") in bundled  # Help → Guide in the frozen app

    names = {exe_kw["name"]: args for args, exe_kw in calls["EXE"]}
    assert set(names) == {"simms-gui", "simms"}
    assert [s[0] for s in names["simms-gui"][1]] == ["entry_gui"]
    assert [s[0] for s in names["simms"][1]] == ["entry_cli"]
    ((_, coll_kw),) = calls["COLLECT"]
    assert coll_kw["name"] == "simms-desktop"
    # the executables are the console/GUI scripts the project declares
    project = _pyproject()["project"]
    assert "simms" in project["scripts"] and "simms-gui" in project["gui-scripts"]


def test_entry_scripts_call_the_declared_entry_points():
    project = _pyproject()["project"]
    gui_module, gui_func = project["gui-scripts"]["simms-gui"].split(":")
    cli_module, cli_func = project["scripts"]["simms"].split(":")
    assert f"from {gui_module} import {gui_func}" in (PACKAGING / "entry_gui.py").read_text()
    assert f"from {cli_module} import {cli_func}" in (PACKAGING / "entry_cli.py").read_text()


def test_build_script_is_executable_bash():
    build = PACKAGING / "build.sh"
    assert os.access(build, os.X_OK)
    bash = shutil.which("bash")
    if bash:
        subprocess.run([bash, "-n", str(build)], check=True)
        subprocess.run([bash, "-n", str(PACKAGING / "install-desktop.sh")], check=True)


# --- desktop entry and icons -------------------------------------------------------


def _desktop_entry() -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # keys are case-sensitive
    parser.read(DESKTOP, encoding="utf-8")
    return dict(parser["Desktop Entry"])


def test_desktop_entry_required_keys():
    entry = _desktop_entry()
    assert entry["Type"] == "Application"
    assert entry["Name"]
    assert entry["Exec"].split()[0] == "simms-gui"
    assert entry["Exec"].split()[1:] == ["%F"]
    assert entry["Exec"].split()[0] in _pyproject()["project"]["gui-scripts"]
    assert entry["Icon"] == "simms-desktop"
    assert entry["Terminal"] == "false"
    categories = entry["Categories"].split(";")
    assert entry["Categories"].endswith(";")
    assert {"Science", "Chemistry"} <= set(categories)


def test_desktop_mime_types_are_defined():
    entry = _desktop_entry()
    declared = {t for t in entry["MimeType"].split(";") if t}
    ns = {"m": "http://www.freedesktop.org/standards/shared-mime-info"}
    root = ET.parse(MIME).getroot()
    defined = {node.get("type"): node for node in root.findall("m:mime-type", ns)}
    assert declared <= set(defined)
    globs = {g.get("pattern") for node in defined.values() for g in node.findall("m:glob", ns)}
    assert {"*.mgf", "*.msp", "*.mzML"} <= globs


@pytest.mark.skipif(
    shutil.which("desktop-file-validate") is None,
    reason="desktop-file-validate not installed (apt: desktop-file-utils)",
)
def test_desktop_file_validate():
    result = subprocess.run(["desktop-file-validate", str(DESKTOP)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_icon_files():
    root = ET.parse(ICON_SVG).getroot()
    assert root.tag.endswith("svg")
    assert ICON_PNG.stat().st_size < 100_000


def test_icon_png_loads_and_svg_renders():
    pytest.importorskip("PyQt6")
    from PyQt6.QtGui import QImage
    from PyQt6.QtSvg import QSvgRenderer

    image = QImage(str(ICON_PNG))
    assert not image.isNull()
    assert (image.width(), image.height()) == (256, 256)
    assert image.hasAlphaChannel()
    assert QSvgRenderer(str(ICON_SVG)).isValid()


# --- the runtime hook's helper -----------------------------------------------------


def test_numba_cache_dir_only_when_frozen(monkeypatch):
    from simms_gui import frozen

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.delattr(sys, "frozen", raising=False)
    assert not frozen.is_frozen()
    assert frozen.configure_numba_cache() is None
    assert "NUMBA_CACHE_DIR" not in os.environ


def test_numba_cache_dir_per_user_and_executable(monkeypatch, tmp_path):
    from simms_gui import frozen

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", "/opt/simms-desktop/simms-gui")
    path = frozen.configure_numba_cache()
    assert path == str(tmp_path / "simms" / "numba" / "simms-gui")
    assert os.environ["NUMBA_CACHE_DIR"] == path
    assert Path(path).is_dir()


def test_cuda_redirect_and_locale_only_when_frozen(monkeypatch):
    from simms_gui import frozen

    monkeypatch.delattr(sys, "frozen", raising=False)
    assert frozen.enable_numba_cuda_redirect() is False
    assert frozen.configure_locale() is None


def test_locale_set_only_when_the_environment_has_none(monkeypatch):
    from simms_gui import frozen

    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    for name in ("LC_ALL", "LC_CTYPE", "LANG"):
        monkeypatch.delenv(name, raising=False)
    assert frozen.configure_locale() == "C.UTF-8"
    assert os.environ["LC_CTYPE"] == "C.UTF-8"
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    monkeypatch.delenv("LC_CTYPE")
    assert frozen.configure_locale() is None


def test_numba_cache_dir_keeps_the_users_choice(monkeypatch, tmp_path):
    from simms_gui import frozen

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert frozen.configure_numba_cache() == str(tmp_path / "mine")


_KERNEL_MODULE = """
from numba import njit

@njit(cache=True)
def doubled(x):
    return 2 * x

print(doubled(21))
"""


def _run_kernel(bundle: Path, cache: Path) -> str:
    """Import the bundle's kernel in a fresh process with the frozen app's locators;
    numba's cache report."""
    from simms_gui.frozen import LOCATORS

    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "NUMBA_DEBUG_CACHE": "1",
           "NUMBA_CACHE_LOCATOR_CLASSES": LOCATORS,
           "PYTHONPATH": os.pathsep.join([str(bundle), str(ROOT)])}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", "import kernels.demo"], env=env,
                          capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    assert done.stdout.strip().endswith("42")
    return done.stdout + done.stderr


@pytest.mark.slow
def test_kernels_compiled_at_packaging_load_where_the_app_is_installed(tmp_path):
    from simms_gui.frozen import BUILD_STAMP, seed_numba_cache

    built = tmp_path / "build" / "_internal"  # where the packaging step ran the app
    (built / "kernels").mkdir(parents=True)
    (built / "kernels" / "__init__.py").write_text("")
    (built / "kernels" / "demo.py").write_text(_KERNEL_MODULE)
    shipped = built / "numba_cache" / "simms"
    assert "data saved" in _run_kernel(built, shipped)
    assert any((shipped / "kernels").glob("demo.doubled-*.nbi"))  # filed by module
    (shipped / BUILD_STAMP).write_text("build 1")
    # installed elsewhere, the build folder gone (its path is in the code objects)
    installed = tmp_path / "opt" / "app" / "_internal"
    shutil.copytree(built, installed)
    shutil.rmtree(tmp_path / "build")
    user = tmp_path / "home" / "cache"
    assert seed_numba_cache(user, installed / "numba_cache" / "simms") >= 2  # index, code
    report = _run_kernel(installed, user)
    assert "data loaded" in report and "data saved" not in report
    assert seed_numba_cache(user, installed / "numba_cache" / "simms") == 0  # once a build


def test_no_shipped_kernels_is_no_error(tmp_path):
    from simms_gui.frozen import seed_numba_cache

    assert seed_numba_cache(tmp_path / "user", tmp_path / "absent") == 0
