"""planner diff, issue 17: the bridge's intermediate states are real inputs (OLD changed step by
step, with OLD's Measurements), an added workload carries all of its NEW cost in the `added`
step, and problems of either file or of a state are named by file."""

from __future__ import annotations

import math

import pytest

from conftest import edited_example, problem_lines, run_cli
from planner.diff.bridge import diff_plans

HOURS = 730.0  # the example's hours_per_month


def _drop_vision(wb):
    """OLD: the example without its two vision workloads (Workloads rows 14-15) and without the
    Measurements that calibrate one of them."""
    wb["Workloads"].delete_rows(14, 2)
    del wb["Measurements"]


def _new_cost(d, names) -> float:
    r = d.new.results.set_index("workload")
    return math.fsum(float(r.loc[n, "cost_per_hour"]) * HOURS for n in names)


def test_added_calibrated_workload_is_planned_from_new_and_carries_its_cost(tmp_path):
    old, _ = edited_example(tmp_path / "old.xlsx", _drop_vision)
    new, _ = edited_example(tmp_path / "new.xlsx")
    d = diff_plans(old, new)  # used to fail: "Workloads!K..: no Measurements" in a state nobody wrote
    b = dict(d.bridge)
    vision = ["vision-llama90b-h100", "vision-llama90b-h100-tp8"]
    assert d.new.resolved.set_index("workload").loc[vision[0], "breakdown_source"] == "calibrated"
    # 80,300 + 73,000 per month: Results cost_per_hour of the two rows x 730 h (the NEW plan alone);
    # the tp8 row is roofline-estimated: 40 H100s x 2.50 USD/h x 730 h = 73,000 (48 GPUs, 87,600, with
    # the roofline's earlier 1.05 ms per-layer fixed cost; 32 GPUs before its memory-traffic terms, issue 20)
    assert b["added"] == pytest.approx(_new_cost(d, vision), rel=1e-12)
    assert b["added"] == pytest.approx(80_300 + 73_000, rel=1e-9)
    assert all(b[s] == 0 for s in ("removed", "demand", "hit", "price", "other"))


def test_added_workload_keeps_its_whole_cost_when_settings_change_too(tmp_path):
    """NEW adds the vision workloads and also lowers target_utilization: the added step is the
    added workloads' whole NEW cost; the utilisation change of the common ones is `other`."""
    def new_edit(wb):
        ws = wb["Settings"]
        for row in ws.iter_rows(min_row=2):
            if row[0].value == "target_utilization":
                row[1].value = 0.8
    old, _ = edited_example(tmp_path / "old.xlsx", _drop_vision)
    new, _ = edited_example(tmp_path / "new.xlsx", new_edit)
    d = diff_plans(old, new)
    b = dict(d.bridge)
    vision = ["vision-llama90b-h100", "vision-llama90b-h100-tp8"]
    assert b["added"] == pytest.approx(_new_cost(d, vision), rel=1e-12)
    common = [w for w in d.new.results["workload"] if w not in vision]
    old_cost = math.fsum(float(c) * HOURS for c in d.old.results["cost_per_hour"] if c == c)
    assert b["other"] == pytest.approx(_new_cost(d, common) - old_cost, rel=1e-9, abs=1e-6)


def test_a_problem_of_one_file_is_named_by_that_file(tmp_path):
    old, _ = edited_example(tmp_path / "old.xlsx")
    new, _ = edited_example(tmp_path / "new.xlsx", lambda wb: wb["Workloads"].cell(2, 4, -3))
    r = run_cli("diff", old, new, "-o", tmp_path / "d.xlsx", cwd=tmp_path)
    assert r.returncode == 2
    lines = problem_lines(r.stderr)
    assert lines and all(x.startswith(f"NEW {new}: ") for x in lines), lines
    assert not (tmp_path / "d.xlsx").exists()
