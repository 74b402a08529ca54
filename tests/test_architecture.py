"""Layering rules: the engine stays headless; the GUI uses only the engine's public API."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_import_contracts_hold():
    """The import-linter contracts of pyproject.toml (layers, a headless engine and session)."""
    code = "from importlinter.cli import lint_imports; raise SystemExit(lint_imports(no_cache=1))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def _module_graph() -> dict[str, set[str]]:
    import grimp

    graph = grimp.build_graph("engine", "simms_gui")
    modules = set(graph.modules)
    return {m: set(graph.find_modules_directly_imported_by(m)) & modules for m in modules}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles_in_engine_or_gui():
    assert _cycles(_module_graph()) == []


def test_private_names_are_not_imported_across_modules():
    """``from engine.x import _name`` couples modules through what one of them hides."""
    bad = []
    for package in ("engine", "simms_gui"):
        for path in (ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (
                    node.level or (node.module or "").split(".")[0] in ("engine", "simms_gui")
                ):
                    bad += [
                        f"{path.relative_to(ROOT)}: {alias.name}"
                        for alias in node.names
                        if alias.name.startswith("_") and not alias.name.startswith("__")
                    ]
    assert not bad, bad


def test_no_contract_is_waived():
    """The layer contracts hold as written: no ``ignore_imports`` anywhere."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    assert contracts and not [c["name"] for c in contracts if c.get("ignore_imports")]


@pytest.mark.slow
def test_session_searches_without_qt(tmp_path):
    """The desktop's model runs a search in a plain interpreter: no Qt is loaded."""
    code = f"""
import sys
from simms_gui.session import Session
import engine
s = Session()
events = []
s.events.search_finished.connect(events.append)
s.events.hits.connect(events.append)
s.open({str(ROOT.parent / "shared" / "data" / "pesticides.mgf")!r}, "library")
s.open({str(ROOT.parent / "shared" / "data" / "pesticides.mgf")!r}, "queries")
hits = s.run_search(engine.SearchParameters(mode="custom", top_n=3), "cpu")
expected = engine.search(s.queries.spectra, s.library, s.params, backend="cpu")
assert len(hits) == len(expected) > 0 and (hits.library_index == expected.library_index).all()
finished = [e for e in events if type(e).__name__ == "SearchFinished"]
assert s.state == "idle" and len(finished) == 1 and finished[0].n_hits == len(hits)
assert sum(len(e.hits) for e in events if type(e).__name__ == "HitsChanged") == len(hits)
out = s.export({str(tmp_path / "hits.tsv")!r}, "best")
assert out.exists()
qt = sorted(m for m in sys.modules if m.split(".")[0] in {QT!r})
assert not qt, qt
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-3000:]


def test_modules_stay_small():
    """One job per module: none grows far past 500 lines."""
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for package in ("engine", "simms_gui")
        for path in (ROOT / package).rglob("*.py")
    }
    assert not {name: n for name, n in sizes.items() if n > 520}
