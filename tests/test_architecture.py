"""Layering rules: the engine stays headless; the GUI uses only the engine's public API."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QT = ("PyQt6", "PyQt5", "PySide6", "pyqtgraph", "qtpy", "superqt")


def imported_modules(package: str) -> set[str]:
    names = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
    return names


def test_engine_source_never_imports_qt():
    bad = {m for m in imported_modules("engine") if m.split(".")[0] in QT}
    assert not bad, f"engine imports {bad}"


def test_importing_the_engine_loads_no_qt():
    code = "import sys, engine, engine.cli, engine.search; print(sorted(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    loaded = {m.split(".")[0] for m in eval(out.stdout)}
    assert not loaded & set(QT)


def test_gui_uses_only_public_engine_modules():
    private = {
        m
        for m in imported_modules("simms_gui")
        if m.startswith("engine") and any(part.startswith("_") for part in m.split("."))
    }
    assert not private, f"simms_gui imports private engine modules {private}"
