"""The plan by period as finance states it (issue 20, item 5): a planning baseline of its own
(Workloads hit_baseline), the hit ratio by period (Demand hit_target), growth over Settings
periods (demand_growth), demand typed per day (Demand demand_unit), the savings of the hit
target per period (Fleet_By_Period, Summary), and the memo's headline and subject over the
plan's periods in money per month.

Every expected number is a hand calculation written beside it, from the one-layer model of
tests/test_finance.py: S = 2 x 1 x 1 x 500 x 1 B = 1,000 B/token, isl 1,000, osl 200,
t_attn0 400 ms, t_ffn0 600 ms, t_decode 300 ms, kv_gbps 0.005 GB/s (5e6 B/s), alpha 0:

- hit 0.5: load 0.5 x 1,000 x 1,000 / 5e6 s = 100 ms, compute 400 x 0.75 + 600 x 0.5 = 600 ms,
  chip 100 + 600 + 300 = 1,000 ms, TPM 1,200 x 60,000 / 1,000 = 72,000 tokens/min.
- hit 0: chip 1,300 ms, TPM 55,384.6.
- hit 0.8: load 160 ms, compute 400 x 0.36 + 600 x 0.2 = 264 ms, chip 724 ms, TPM 99,447.5.
- hit 0.2: load 40 ms, compute 400 x 0.96 + 600 x 0.8 = 864 ms, chip 1,204 ms, TPM 59,800.7.
"""

from __future__ import annotations

import math
from pathlib import Path

import openpyxl
import pytest

from conftest import run_cli, same_value, sheet_values, value_book
from planner.memo import render as memo
from planner.finance import periods
from planner.plan.build import build_plan
from planner.workbook.writer import write_output
from test_finance import GPUS, MODELS, wl
from planner.workbook.input_sheets import write_input_workbook

HOURS = 730

WORKLOADS = [
    # a: G1 (2.0/h), tp 2, target 0.5, planning baseline 0 (typed), today's demand 700,000
    wl("a", "G1", 2, 0.5, 700_000, hit_baseline=0.0),
    # f: G2 (3.0/h), tp 1, target 0.5, baseline blank -> hit_measured 0.2, grows 50% a period (own rate)
    wl("f", "G2", 1, 0.5, 100_000, hit_measured=0.2, demand_growth=0.5),
]
DEMAND = [
    # a in 2027-Q2: demand blank -> grown; hit 0.8 from the offload tier
    {"workload": "a", "period": "2027-Q2", "hit_target": 0.8},
    # a in 2027-Q3: typed per day, 1,296,000,000 tokens/day / 1,440 = 900,000 tokens/min; hit blank -> 0.5
    {"workload": "a", "period": "2027-Q3", "demand_tpm": 1_296_000_000, "demand_unit": "tokens/day"},
]
SETTINGS = {"periods": "2027-Q1..2027-Q3", "demand_growth": 0.1}

# (workload, period) -> (demand_tpm, hit, instances, gpus, instances_baseline, gpus_baseline)
CALC_EXPECTED = {
    # a Q1 (k=0): 700,000; ceil(700,000 / 72,000) = ceil(9.72) = 10 inst x 2 = 20 GPUs;
    #   baseline (hit 0): ceil(700,000 / 55,384.6) = ceil(12.64) = 13 x 2 = 26
    ("a", "2027-Q1"): (700_000, 0.5, 10, 20, 13, 26),
    # a Q2 (k=1): 700,000 x 1.1 = 770,000 at hit 0.8: ceil(770,000 x 724 / 72e6) = ceil(7.74) = 8 x 2 = 16;
    #   baseline: ceil(770,000 x 1,300 / 72e6) = ceil(13.90) = 14 x 2 = 28
    ("a", "2027-Q2"): (770_000, 0.8, 8, 16, 14, 28),
    # a Q3: 900,000 (per day / 1,440) at 0.5: ceil(12.5) = 13 x 2 = 26; baseline ceil(16.25) = 17 x 2 = 34
    ("a", "2027-Q3"): (900_000, 0.5, 13, 26, 17, 34),
    # f Q1: 100,000: ceil(1.39) = 2; baseline (hit 0.2): ceil(100,000 x 1,204 / 72e6) = ceil(1.67) = 2
    ("f", "2027-Q1"): (100_000, 0.5, 2, 2, 2, 2),
    # f Q2: 100,000 x 1.5 = 150,000: ceil(2.08) = 3; baseline ceil(2.51) = 3
    ("f", "2027-Q2"): (150_000, 0.5, 3, 3, 3, 3),
    # f Q3: 100,000 x 1.5^2 = 225,000: ceil(3.125) = 4; baseline ceil(3.76) = 4
    ("f", "2027-Q3"): (225_000, 0.5, 4, 4, 4, 4),
}

# Fleet_By_Period: (period, gpu, instances, gpus, cost/month, gpus_baseline, cost/month baseline, saved)
PERIOD_EXPECTED = [
    ("2027-Q1", "G1", 10, 20, 20 * 2.0 * HOURS, 26, 26 * 2.0 * HOURS, 6 * 2.0 * HOURS),      # 29,200 vs 37,960
    ("2027-Q1", "G2", 2, 2, 2 * 3.0 * HOURS, 2, 2 * 3.0 * HOURS, 0.0),
    ("2027-Q1", "G3", 0, 0, None, 0, None, None),                                             # no price
    ("2027-Q2", "G1", 8, 16, 16 * 2.0 * HOURS, 28, 28 * 2.0 * HOURS, 12 * 2.0 * HOURS),     # saves 17,520
    ("2027-Q2", "G2", 3, 3, 3 * 3.0 * HOURS, 3, 3 * 3.0 * HOURS, 0.0),
    ("2027-Q2", "G3", 0, 0, None, 0, None, None),
    ("2027-Q3", "G1", 13, 26, 26 * 2.0 * HOURS, 34, 34 * 2.0 * HOURS, 8 * 2.0 * HOURS),
    ("2027-Q3", "G2", 4, 4, 4 * 3.0 * HOURS, 4, 4 * 3.0 * HOURS, 0.0),
    ("2027-Q3", "G3", 0, 0, None, 0, None, None),
]


def make(path: Path, workloads=None, demand=None, settings=None) -> Path:
    write_input_workbook(path, MODELS, GPUS, workloads or WORKLOADS, SETTINGS if settings is None else settings,
                         optional={"Demand": DEMAND if demand is None else demand})
    return path


@pytest.fixture(scope="module")
def plan_out(tmp_path_factory):
    d = tmp_path_factory.mktemp("periods")
    # hit_step 0.5: the tests of this output read the period and finance sheets, not the hit
    # sweep (3 Sensitivity_Hit rows a workload, not 21: less for LibreOffice to recalculate)
    plan = build_plan(make(d / "in.xlsx", settings={**SETTINGS, "hit_step": 0.5}))
    out = d / "out.xlsx"
    write_output(plan, out)
    return plan, out


def _calc_equal(rows):
    got = {(r["workload"], r["period"]): r for r in rows if r.get("workload")}
    assert set(got) == set(CALC_EXPECTED)
    for key, (dem, hit, inst, gpus, inst_b, gpus_b) in CALC_EXPECTED.items():
        r = got[key]
        assert math.isclose(r["demand_tpm"], dem, rel_tol=1e-12), (key, r["demand_tpm"])
        assert math.isclose(r["hit_target"], hit), key
        assert (r["instances"], r["gpus_needed"], r["instances_baseline"], r["gpus_baseline"]) == \
            (inst, gpus, inst_b, gpus_b), (key, r)


def _periods_equal(rows):
    rows = [r for r in rows if r.get("period")]
    assert len(rows) == len(PERIOD_EXPECTED)
    for r, e in zip(rows, PERIOD_EXPECTED):
        for name, want in zip(periods.PERIOD_COLS, e):
            assert same_value(want, r[name]), (e, name, r[name])


def test_parse_periods_and_span():
    assert periods.parse_periods("2027-Q3..2028-Q2")[0] == ["2027-Q3", "2027-Q4", "2028-Q1", "2028-Q2"]
    assert periods.parse_periods("Jan; Feb")[0] == ["Jan", "Feb"]
    assert periods.parse_periods("2027-Q4..2027-Q1")[1]  # backwards: a problem
    assert periods.parse_periods("2027-Q1; 2027-Q1")[1]  # twice: a problem
    assert periods.span_label(["2027-Q1", "2027-Q2", "2027-Q3", "2027-Q4"]) == "2027-Q1–Q4"


def test_demand_per_minute_and_growth_by_hand():
    # 1,440,000 tokens/day = 1,000 tokens/min; 60,000 tokens/hour = 1,000 tokens/min
    got = periods.demand_per_minute([1_440_000, 60_000, 1_000], ["tokens/day", "tokens/hour", "tokens/min"])
    assert list(got) == [1000.0, 1000.0, 1000.0]
    # 1,000 x 1.1^2 = 1,210; a typed demand wins; a period outside Settings periods (k NaN) has none
    g = periods.grown_demand([math.nan, 5.0, math.nan], [1000.0, 1000.0, 1000.0], [0.1, 0.1, 0.1],
                             [2, 2, math.nan])
    assert math.isclose(g[0], 1210.0) and g[1] == 5.0 and math.isnan(g[2])


def test_period_rows_are_the_hand_values(plan_out):
    plan, out = plan_out
    _calc_equal(periods.period_calc(plan).to_dict("records"))
    _calc_equal(sheet_values(out, "Demand_Calc"))
    _periods_equal(periods.by_period(plan).to_dict("records"))
    _periods_equal(sheet_values(out, "Fleet_By_Period"))


def test_baseline_is_its_own_and_defaults_to_hit_measured(plan_out):
    plan, _out = plan_out
    base = dict(zip(plan.resolved["workload"], plan.resolved["hit_baseline"]))
    assert base == {"a": 0.0, "f": 0.2}  # a typed 0; f blank -> its hit_measured 0.2
    r = dict(zip(plan.results["workload"], plan.results["gpus_baseline"]))
    # today's demand at the baseline: a ceil(700,000 / 55,384.6) = 13 x 2 = 26; f ceil(1.67) = 2
    assert r == {"a": 26, "f": 2}


def test_summary_period_block_and_baseline_note(plan_out):
    _plan, out = plan_out
    ws = value_book(out, "Summary")["Summary"]
    rows = [[c.value for c in row] for row in ws.iter_rows(max_col=6)]
    title = next(i for i, r in enumerate(rows) if str(r[0]).startswith("Fleet by period"))
    assert rows[title][0] == "Fleet by period (2027-Q1–Q3)"
    table = {r[0]: r[1:6] for r in rows[title + 2:title + 5]}
    # 2027-Q2: 16 + 3 GPUs; cost (32 + 9) x 730 = 29,930; baseline 28 + 3 GPUs, (56 + 9) x 730 = 47,450;
    # saved 17,520
    assert table["2027-Q2"] == [19, 41 * HOURS, 31, 65 * HOURS, 24 * HOURS]
    notes = " ".join(str(r[0]) for r in rows if r[0])
    assert "hit_baseline typed on 1 of 2 workloads" in notes


def test_headline_and_subject_name_the_periods_in_money_per_month(plan_out):
    plan, out = plan_out
    m = memo.build_memo(plan, out, charts=False)  # the headline and subject are the point (charts: test_memo)
    # Q1 (20 + 2) GPUs, (40 + 6) x 730 = 33,580/month; Q3 (26 + 4) GPUs, (52 + 12) x 730 = 46,720/month
    assert m.subject == "KV-cache capacity plan 2027-Q1–Q3: 22 to 30 GPUs, USD 33,580 to 46,720 per month"
    # saved per month, averaged over the periods: (8,760 + 17,520 + 11,680) / 3 = 12,653.3
    assert ("For 2027-Q1–Q3, the plan needs 22 GPUs (USD 33,580 per month) in 2027-Q1 and 30 GPUs "
            "(USD 46,720 per month) in 2027-Q3; against the baseline hit ratios the hit targets save "
            "USD 12,653 per month on average over the periods.") in m.markdown
    assert "per hour" not in m.subject


def test_bad_periods_and_units_are_located(tmp_path):
    bad = make(tmp_path / "bad.xlsx", settings={"periods": "2027-Q4..2027-Q1"},
               demand=[{"workload": "a", "period": "2027-Q1", "demand_tpm": 5, "demand_unit": "tokens/week"},
                       {"workload": "a", "period": "2027-Q2", "hit_target": 1.5, "demand_tpm": 5}])
    p = run_cli("validate", bad, cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "Settings!B" in p.stderr and "range ends before it starts" in p.stderr
    assert "Demand!D2" in p.stderr and "tokens/week" in p.stderr
    assert "Demand!E3" in p.stderr and "hit_target 1.5" in p.stderr


def test_blank_period_demand_is_an_error_only_outside_settings_periods(tmp_path):
    # a Demand row with a blank demand in a period that is not one of Settings periods: nothing to grow
    src = make(tmp_path / "p.xlsx", settings={}, demand=[{"workload": "a", "period": "2027-Q2", "hit_target": 0.8}])
    p = run_cli("validate", src, cwd=tmp_path)
    assert p.returncode == 2 and "has no demand rows" in p.stderr


def _edit_growth_and_baseline(out: Path, edited: Path) -> None:
    """Settings demand_growth 0.1 -> 0.2 and a's hit_baseline 0 -> 0.5, in a copy of the output."""
    wb = openpyxl.load_workbook(out)
    ws = wb["Settings"]
    row = next(r for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value == "demand_growth")
    ws.cell(row, 2).value = 0.2
    ws = wb["Workloads"]
    head = {str(c.value).split(" [")[0]: c.column for c in ws[1]}
    ws.cell(2, head["hit_baseline"]).value = 0.5
    wb.save(edited)


@pytest.fixture(scope="module")
def recalculated(plan_out, lo_profile, tmp_path_factory) -> dict:
    """The stored output and its edited copy (_edit_growth_and_baseline) recalculated by ONE
    LibreOffice process (libreoffice.recalculate_many): for the two tests below."""
    from libreoffice import recalculate_many

    _plan, out = plan_out
    d = tmp_path_factory.mktemp("recalculated")
    edited = d / "edited.xlsx"
    _edit_growth_and_baseline(out, edited)
    return dict(zip(("out", "edited"), recalculate_many([out, edited], d / "recalc", profile=lo_profile)))


@pytest.mark.libreoffice
def test_recalculated_period_sheets_equal_hand_values(plan_out, recalculated):
    _plan, out = plan_out
    done = recalculated["out"]
    _calc_equal(sheet_values(done, "Demand_Calc"))
    _periods_equal(sheet_values(done, "Fleet_By_Period"))
    s1 = list(value_book(out, "Summary")["Summary"].values)
    s2 = list(value_book(done, "Summary")["Summary"].values)
    for r1, r2 in zip(s1, s2):
        for a, b in zip(r1, r2):
            assert same_value(a, b), ("Summary", r1, r2)


@pytest.mark.libreoffice
def test_live_edit_of_growth_and_baseline(plan_out, recalculated, tmp_path):
    """Settings demand_growth 0.1 -> 0.2 and a's hit_baseline 0 -> 0.5 edited in the output
    (_edit_growth_and_baseline) move Demand_Calc as a fresh run of the equally edited input does."""
    _plan, out = plan_out
    done = recalculated["edited"]
    live = {(r["workload"], r["period"]): r for r in sheet_values(done, "Demand_Calc") if r.get("workload")}
    # a Q2: 700,000 x 1.2 = 840,000 at hit 0.8: ceil(840,000 x 724 / 72e6) = ceil(8.45) = 9 x 2 = 18 GPUs;
    # baseline now 0.5: ceil(840,000 / 72,000) = ceil(11.67) = 12 x 2 = 24
    assert math.isclose(live[("a", "2027-Q2")]["demand_tpm"], 840_000)
    assert (live[("a", "2027-Q2")]["gpus_needed"], live[("a", "2027-Q2")]["gpus_baseline"]) == (18, 24)
    wls = [dict(w) for w in WORKLOADS]
    wls[0]["hit_baseline"] = 0.5
    fresh = periods.period_calc(build_plan(make(tmp_path / "fresh.xlsx", workloads=wls,
                                                settings={**SETTINGS, "demand_growth": 0.2})))
    for rec in fresh.to_dict("records"):
        got = live[(rec["workload"], rec["period"])]
        for k in periods.CALC_COLS:
            assert same_value(rec[k], got[k], rel=1e-9), (rec["workload"], rec["period"], k, rec[k], got[k])
