"""Issue 21's review bullets that had no test of their own (the audit of house5): each test fails
if the defect comes back.

- planning does not change the validated input (calibration once rewrote a Measurements row's
  model/gpu to the Models/GPUs spelling in place, planner/plan/calibrate.py ``rec[col] = target``);
- no two classes of the package share a name (there were two ``Layout`` classes:
  workbook/layout.py and workbook/calibration_sheet.py);
- no module imports another module's ``_private`` name (45 such import lines on main at a46249d).
"""

from __future__ import annotations

import ast
import copy
import functools
from collections import defaultdict
from pathlib import Path

import planner
from planner.inputs.reader import read_input
from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook

PKG = Path(planner.__file__).resolve().parent

MODEL = {"model": "Llama-3.1-8B", "layers": 32, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2, "params_b": 8.03,
         "heads": 32, "hidden_size": 4096, "intermediate_size": 14336}
GPU = {"gpu": "H100", "hbm_gib": 80, "pcie_gen": 5, "hbm_tbps": 3.35, "bf16_tflops": 989.4}
WL = {"workload": "calibrated", "model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": 6000, "osl": 200,
      "hit_target": 0.7, "hit_measured": 0}


def test_planning_leaves_the_validated_input_unchanged(tmp_path):
    """build_plan reads the input's tables; it must not write into them. Measurements rows name the
    model and GPU in another case ("llama-3.1-8b", "h100"): calibration matches them case-blind and
    used to store the Models/GPUs spelling back into the input's records."""
    # TTFT points of t_fixed 15 ms + 1.5e-6 ms/tok^2 N^2 + 0.06 ms/tok N at hit 0 (any smooth law fits)
    meas = [{"model": "llama-3.1-8b", "gpu": "h100", "tp": 1, "isl": n, "hit": 0.0,
             "ttft_ms": 15 + 1.5e-6 * n * n + 0.06 * n, "tpot_ms": 7.5, "concurrency": 1, "osl": 200}
            for n in (1024, 4096, 8192, 16384)]
    src = tmp_path / "in.xlsx"
    write_input_workbook(src, [MODEL], [GPU], [WL], {}, optional={"Measurements": meas})
    p_in = read_input(src)
    before = {name: copy.deepcopy(t.records) for name, t in
              [("Models", p_in.models), ("GPUs", p_in.gpus), ("Workloads", p_in.workloads),
               *sorted(p_in.optional.items())] if t is not None}
    assert before["Measurements"][0]["model"] == "llama-3.1-8b"  # the case as typed
    plan = build_plan(p_in)
    assert plan.calibration is not None and plan.calibration.source == ["calibrated"]
    after = {name: t.records for name, t in
             [("Models", p_in.models), ("GPUs", p_in.gpus), ("Workloads", p_in.workloads),
              *sorted(p_in.optional.items())] if t is not None}
    assert after == before


@functools.cache
def _parsed(path: Path, mtime_ns: int) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _modules():
    """(path, tree) of every module of the package, each parsed once per process (three tests walk
    them all; the trees are only read); a module changed since is parsed again (its mtime)."""
    for path in sorted(PKG.rglob("*.py")):
        yield path, _parsed(path, path.stat().st_mtime_ns)


def test_no_two_classes_share_a_name():
    where = defaultdict(list)
    for path, tree in _modules():
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                where[node.name].append(f"{path.relative_to(PKG.parent)}:{node.lineno}")
    assert {k: v for k, v in where.items() if len(v) > 1} == {}


def test_no_module_imports_another_modules_private_name():
    found = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("planner"):
                found += [f"{path.relative_to(PKG.parent)}:{node.lineno}: from {node.module} import {a.name}"
                          for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    assert found == [], "\n".join(found)


def _module_aliases(tree) -> set[str]:
    """Names a module binds to planner modules: ``import planner.x as y``, ``from planner.a import b as y``
    (``b`` a module)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.asname for a in node.names if a.name.startswith("planner") and a.asname}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("planner"):
            for a in node.names:
                if (PKG.parent / (node.module.replace(".", "/") + "/" + a.name + ".py")).is_file():
                    out.add(a.asname or a.name)
    return out


def test_no_module_reads_another_modules_private_attribute():
    """``fl2._f(x)`` after ``from planner.finance import fleet as fl2``: the same reach into a module's
    privates as an import of ``_f``."""
    found = []
    for path, tree in _modules():
        aliases = _module_aliases(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                    and node.attr.startswith("_") and not node.attr.startswith("__"):
                found.append(f"{path.relative_to(PKG.parent)}:{node.lineno}: {node.value.id}.{node.attr}")
    assert found == [], "\n".join(found)


def test_the_private_rule_fails_on_a_planted_import():
    tree = ast.parse("from planner.workbook.kv_tiers_sheets import _interp_xl\n")
    node = tree.body[0]
    assert isinstance(node, ast.ImportFrom) and node.names[0].name.startswith("_")
