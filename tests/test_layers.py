"""The package's layers (issue 21): subpackages by job, each importing only the layers below it
(the contract is ``[tool.importlinter]`` in pyproject.toml, checked here with import-linter), and
no import circle between any two modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def test_import_linter_contract_is_kept():
    exe = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(exe), "--config", str(ROOT / "pyproject.toml")], capture_output=True, text=True,
                         cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Contracts: 1 kept, 0 broken." in out.stdout, out.stdout


def _cycles(graph) -> list[list[str]]:
    """Every strongly connected set of modules of more than one (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph.modules):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_between_modules():
    graph = grimp.build_graph("planner", exclude_type_checking_imports=True)
    assert _cycles(graph) == []


def test_equations_import_nothing_above_core():
    graph = grimp.build_graph("planner")
    for mod in sorted(m for m in graph.modules if m.startswith("planner.equations")):
        for dep in graph.find_modules_directly_imported_by(mod):
            assert dep.startswith(("planner.equations", "planner.core")), (mod, dep)


def test_every_module_in_a_subpackage():
    flat = sorted(p.name for p in (ROOT / "planner").glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert flat == [], f"modules outside the subpackages: {flat}"
