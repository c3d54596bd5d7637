"""The public library API (planner/__init__.py) as the README's library example uses it (issue 21)."""

from __future__ import annotations

import re
from pathlib import Path

import openpyxl
import pytest

import planner

ROOT = Path(__file__).resolve().parents[1]


def test_readme_library_example_runs(tmp_path, monkeypatch, small_example):
    block = re.search(r"```python\n(import planner\n.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"),
                      re.S).group(1)
    (tmp_path / "workbooks").mkdir()
    # the README's lines as written, on the example cut to 3 workloads (conftest.small_example): the
    # same calls (read, plan, workbook, memo and its charts) at a third of the whole example's cost
    (tmp_path / "workbooks" / "example.xlsx").write_bytes(small_example.read_bytes())
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {})
    out = tmp_path / "out" / "plan.xlsx"
    wb = openpyxl.load_workbook(out, read_only=True)
    assert "Results" in wb.sheetnames
    assert (tmp_path / "out" / "plan-memo.md").is_file()


def test_read_refuses_with_located_problems(tmp_path):
    bad = tmp_path / "bad.xlsx"
    wb = openpyxl.load_workbook(ROOT / "workbooks" / "example.xlsx")
    ws = wb["Workloads"]
    col = [c.value for c in ws[1]].index(next(c.value for c in ws[1] if str(c.value).startswith("hit_target"))) + 1
    ws.cell(2, col).value = 1.3
    wb.save(bad)
    with pytest.raises(planner.InputError) as err:
        planner.read_input(bad)
    places = [p.place for p in err.value.problems]
    assert any(p.startswith("Workloads!") and p.endswith("2") for p in places), places


def test_api_names_survive_importing_the_subpackages():
    import planner.diff.bridge  # noqa: F401  (binds planner.diff to the subpackage)
    import planner.memo.render  # noqa: F401
    import planner.plan.build  # noqa: F401

    for name in planner.__all__:
        assert hasattr(planner, name), name
    assert callable(planner.build_plan) and callable(planner.write_memo) and callable(planner.diff_plans)


def test_diff_of_a_plan_with_itself_changes_nothing(small_example):
    d = planner.diff_plans(small_example, small_example)
    assert d.changes == []
    assert d.total_change == pytest.approx(0.0)


def test_plan_is_not_changed_after_it_is_built(tmp_path, small_example):
    import dataclasses

    plan = planner.build_plan(small_example)  # every field of a Plan is there on 3 workloads too
    fields = {f.name for f in dataclasses.fields(plan)}
    before = {k: id(v) for k, v in vars(plan).items()}
    planner.write_workbook(plan, tmp_path / "p.xlsx")
    planner.write_memo(plan, tmp_path / "p.xlsx")
    assert set(vars(plan)) == fields  # nothing attached (the fleet cache lives beside the plan)
    assert {k: id(v) for k, v in vars(plan).items()} == before  # no field replaced


def test_bundled_example_is_the_repositorys_workbook():
    from planner.examples.build import REPO_WORKBOOKS, example_path

    assert REPO_WORKBOOKS == ROOT / "workbooks"
    assert example_path() == ROOT / "workbooks" / "example.xlsx"
