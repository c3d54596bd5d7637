"""A planning baseline above the hit target (red team 7, issue 20: the last note's gap (a)).

Before: a Workloads ``hit_baseline`` above ``hit_target`` (or a blank one taking a ``hit_measured`` above
it) made the Summary's "Saved by the target" and Fleet_By_Period's ``cost_saved_per_month`` negative with
no word; summed over a fleet, one workload's cost hides under the others' savings. Now a located warning
(stderr, Checks, memo) with what it costs: ``planner.plan.baseline_checks``.

By hand (docs/model.md): Llama-3.1-8B, KV S = 2 x 32 layers x 8 kv heads x 128 x 2 B = 131,072 B/token at
tp 1; H100 SXM's 50 GB/s link; isl 1,000, osl 200, t_attn0 10, t_ffn0 90, t_decode 1,000 ms, alpha 0,
t_fixed 0, utilisation 1, demand 10,000,000 tokens/min, USD 2.50 a GPU-hour, 730 h a month. At hit h:

    load = h x 1,000 x 131,072 / 50e9 x 1,000 = 2.62144 h ms;  compute = 10 (1 - h^2) + 90 (1 - h)
    chip = load + compute + 1,000;  TPM = 1,200 x 60,000 / chip;  instances = ceil(1e7 / TPM)

    h 0.3: chip 1,072.886432, TPM 67,108.69, 149.01 -> 150
    h 0.4: chip 1,063.448576, TPM 67,704.26, 147.70 -> 148
    h 0.5: chip 1,053.810720, TPM 68,323.47, 146.36 -> 147
    h 0.7: chip 1,033.935008, TPM 69,636.87, 143.60 -> 144
    h 0.8: chip 1,023.697152, TPM 70,333.30, 142.18 -> 143
"""

from __future__ import annotations

import pytest

from conftest import value_book
from planner.memo.render import build_memo
from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook
from planner.workbook.writer import write_output

MODELS = [{"model": "Llama-3.1-8B", "kv_bytes": 2}]
GPUS = [{"gpu": "H100 SXM", "hourly_cost": 2.5}]
ROW = {"workload": "chat", "model": "Llama-3.1-8B", "gpu": "H100 SXM", "tp": 1, "isl": 1000, "osl": 200,
       "hit_target": 0.5, "t_attn0_ms": 10, "t_ffn0_ms": 90, "t_decode_ms": 1000, "demand_tpm": 10_000_000}


def _plan(tmp_path, rows, demand=None):
    path = tmp_path / "in.xlsx"
    write_input_workbook(path, MODELS, GPUS, rows, {}, optional={"Demand": demand} if demand else None)
    return build_plan(path)


def _said(plan, word="above hit_target"):
    return [str(w) for w in plan.warnings if word in str(w) or "below the workload's baseline" in str(w)]


def test_a_typed_baseline_above_the_target_is_a_located_cost(tmp_path):
    plan = _plan(tmp_path, [dict(ROW, hit_baseline=0.7)])
    # 147 GPUs at the target 0.5, 144 at the baseline 0.7: -3 GPUs "saved", 3 x 2.5 x 730 = USD 5,475 a month
    assert (plan.results["gpus_needed"].iat[0], plan.results["gpus_baseline"].iat[0]) == (147, 144)
    got = _said(plan)
    assert len(got) == 1, got
    assert got[0].startswith(f"Workloads!{_letter(plan, 'hit_baseline')}2: "), got  # the hit_baseline cell
    assert ("'chat': hit_baseline 70.0% is above hit_target 50.0%: the \"savings\" are a cost of USD 5,475/month "
            "(3 GPUs more at the target: 147 against 144 at the baseline)") in got[0]


def _letter(plan, name):
    from openpyxl.utils import get_column_letter

    return get_column_letter(plan.input.workloads.positions[name] + 1)


def test_a_blank_baseline_taking_a_higher_load_test_hit_is_said(tmp_path):
    # the case: hit_measured (the load test's 0.8) read as today's hit ratio
    plan = _plan(tmp_path, [dict(ROW, hit_measured=0.8)])
    got = _said(plan)
    assert len(got) == 1, got
    # 147 against 143 at 0.8: 4 x 2.5 x 730 = USD 7,300 a month
    assert ("hit_baseline is blank, so the baseline is hit_measured 80.0% (the load test's hit ratio), above "
            "hit_target 50.0%: the \"savings\" are a cost of USD 7,300/month (4 GPUs more") in got[0]
    assert got[0].startswith(f"Workloads!{_letter(plan, 'hit_baseline')}2:")
    assert "type it in hit_baseline" in got[0]


def test_a_baseline_at_or_below_the_target_says_nothing(tmp_path):
    plan = _plan(tmp_path, [dict(ROW, hit_baseline=0.5), dict(ROW, workload="b", hit_baseline=0.3),
                            dict(ROW, workload="c", hit_measured=0.4)])
    assert _said(plan) == []


def test_without_demand_it_is_still_said(tmp_path):
    plan = _plan(tmp_path, [dict(ROW, hit_baseline=0.7, demand_tpm=None)])
    got = _said(plan)
    assert len(got) == 1 and "no demand here, so nothing is sized yet" in got[0], got


def test_a_period_target_below_the_baseline_is_said_at_its_demand_cell(tmp_path):
    # Workloads 0.5 over a baseline 0.4 (a saving), but 2027-Q1's Demand hit_target 0.3 is below it:
    # 150 GPUs at 0.3 against 148 at 0.4, 2 x 2.5 x 730 = USD 3,650 a month in that period
    dem = [{"workload": "chat", "period": "2027-Q1", "demand_tpm": 10_000_000, "hit_target": 0.3},
           {"workload": "chat", "period": "2027-Q2", "demand_tpm": 10_000_000, "hit_target": 0.6}]
    plan = _plan(tmp_path, [dict(ROW, hit_baseline=0.4)], dem)
    got = _said(plan)
    assert len(got) == 1, got
    hit_col = _letter_of(plan.input.optional["Demand"], "hit_target")
    assert got[0].startswith(f"Demand!{hit_col}2: 'chat' in 2027-Q1: hit_target 30.0% is below the workload's "
                             f"baseline hit ratio 40.0%"), got
    assert "its \"saving\" is a cost, shown as a negative cost_saved_per_month on Fleet_By_Period" in got[0]
    # and that row holds the amount: 150 GPUs at 0.3 against 148 at 0.4, 2 x USD 2.5 x 730 h = -3,650 a month
    from planner.finance.periods import by_period

    row = by_period(plan).set_index("period").loc["2027-Q1"]
    assert (row["gpus_needed"], row["gpus_baseline"]) == (150, 148)
    assert row["cost_saved_per_month"] == pytest.approx(-3_650)


def _letter_of(table, name):
    from openpyxl.utils import get_column_letter

    return get_column_letter(table.positions[name] + 1)


def test_checks_sheet_and_memo_carry_it(tmp_path):
    plan = _plan(tmp_path, [dict(ROW, hit_baseline=0.7), dict(ROW, workload="b", hit_baseline=0.3)])
    out = tmp_path / "out.xlsx"
    write_output(plan, out)
    text = "\n".join(str(c) for row in value_book(out, "Checks")["Checks"].iter_rows(values_only=True)
                     for c in row if c is not None)
    assert "hit_baseline 70.0% is above hit_target 50.0%" in text
    assert "USD 5,475/month" in text
    md = build_memo(plan, out, charts=False).markdown
    assert "hit_baseline 70.0% is above hit_target 50.0%" in md
    # the fleet total: 'b' saves 150 - 147 = 3 GPUs (0.3 -> 0.5), 'chat' costs 3: the total saves 0,
    # which is why the one workload's cost must be said on its own
    assert float(plan.results["gpus_baseline"].sum() - plan.results["gpus_needed"].sum()) == pytest.approx(0.0)


def test_the_memo_says_the_savings_are_against_hit_baseline(tmp_path):
    # before: the memo's assumptions said "GPUs at the measured hit = ceil(demand / TPM at measured ...)",
    # while the savings are sized at hit_baseline (typed here: 0.4, not the load test's 0.8); and "save 1 GPUs".
    # By hand (docstring): 147 GPUs at the target 0.5, 148 at the baseline 0.4: 1 GPU saved, USD 1,825 a month
    plan = _plan(tmp_path, [dict(ROW, hit_baseline=0.4, hit_measured=0.8)])
    assert (plan.results["gpus_needed"].iat[0], plan.results["gpus_baseline"].iat[0]) == (147, 148)
    out = tmp_path / "out.xlsx"
    write_output(plan, out)
    md = build_memo(plan, out, charts=False).markdown
    assert "GPUs at the measured hit" not in md
    assert "GPUs at the baseline hit (Workloads hit_baseline, the hit ratio the fleet runs at today" in md
    assert "would need 148 GPUs (USD 270,100 per month): the target hits save 1 GPU (" in md  # 148 x 2.5 x 730
    assert "USD 1,825 per month" in md
