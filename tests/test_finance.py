"""The finance view (issue 11, docs/model.md): utilisation headroom, Fleet, Fleet_By_Period,
Scenario_Compare and Summary, against hand calculations, LibreOffice and a live edit.

The small workbook is built so every number can be done by hand:

- model M: 1 layer, 1 KV head, head_dim 500, 1-byte KV: S = 2*1*1*500*1 = 1,000 B per token per
  GPU at any tp (ceil(1/tp) = 1 head per GPU).
- every GPU: pcie_gbps 0.005 (5e6 B/s), so a full 1,000-token KV loads in 1000*1000/5e6 s = 200 ms.
- every workload: isl 1000, osl 200, t_attn0 400 ms, t_ffn0 600 ms, t_decode 300 ms, alpha 0,
  hit_measured 0 (blank).
  At hit 0.5: load = 0.5*200 = 100 ms; compute = 400*(1-0.25) + 600*0.5 = 600 ms; chip = 100+600+300
  = 1,000 ms; TPM = 1200*60000/1000 = 72,000 tokens/min per instance.
  At hit 0: chip = 0+1000+300 = 1,300 ms; TPM = 72,000,000/1300 = 55,384.615... tokens/min.
"""

from __future__ import annotations

import math
from pathlib import Path

import openpyxl
import pytest

from planner.core import schema

from conftest import edit_output, run_cli, same_value, sheet_values, value_book
from planner.finance import demand
from planner.finance import fleet
from planner.finance import scenarios
from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook
from planner.workbook.writer import write_output

TPM_T = 1200 * 60000 / 1000      # 72,000 tokens/min at hit 0.5
TPM_0 = 1200 * 60000 / 1300      # 55,384.6 tokens/min at hit 0

MODELS = [{"model": "M", "layers": 1, "kv_heads": 1, "head_dim": 500, "kv_bytes": 1, "params_b": 1}]
GPUS = [{"gpu": "G1", "hbm_gib": 80, "pcie_gbps": 0.005, "hourly_cost": 2.0},
        {"gpu": "G2", "hbm_gib": 80, "pcie_gbps": 0.005, "hourly_cost": 3.0},
        {"gpu": "G3", "hbm_gib": 80, "pcie_gbps": 0.005}]  # no price


def wl(name, gpu, tp, hit, demand=None, **kw):
    return {"workload": name, "model": "M", "gpu": gpu, "tp": tp, "isl": 1000, "osl": 200, "hit_target": hit,
            "t_attn0_ms": 400, "t_ffn0_ms": 600, "t_decode_ms": 300, "demand_tpm": demand, **kw}


WORKLOADS = [wl("a", "G1", 2, 0.5, 700_000), wl("b", "G1", 1, 0.0, 100_000, target_utilization=0.5),
             wl("c", "G2", 4, 0.5, 300_000), wl("d", "G3", 1, 0.5, 144_000), wl("e", "G2", 1, 0.5)]
DEMAND = [{"workload": "a", "period": "2027-Q1", "demand_tpm": 1_440_000},
          {"workload": "b", "period": "2027-Q1", "demand_tpm": None},
          {"workload": "c", "period": "2027-Q1", "demand_tpm": 72_000},
          {"workload": "a", "period": "2027-Q2", "demand_tpm": 1_500_000},
          {"workload": "d", "period": "2027-Q2", "demand_tpm": 150_000}]
SCENARIOS = [{"scenario": "G1 price -10%", "sheet": "GPUs", "column": "hourly_cost", "match": "G1",
              "op": "multiply", "value": 0.9},
             {"scenario": "util 0.8", "sheet": "Settings", "column": "target_utilization", "op": "set",
              "value": 0.8},
             {"scenario": "a hit +10 points", "sheet": "Workloads", "column": "hit_target", "match": "a",
              "op": "add", "value": 0.1}]


def make_input(path: Path, workloads=None, settings=None, gpus=None, optional=None) -> Path:
    opt = {"Demand": DEMAND, "Scenarios": SCENARIOS} if optional is None else optional
    write_input_workbook(path, MODELS, gpus or GPUS, workloads or WORKLOADS, settings or {}, optional=opt)
    return path


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("finance")
    # hit_step 0.5: no test of this file reads the hit sweep (Sensitivity_Hit: 3 rows a workload,
    # not 21); its recalculation below costs ~0.6 s CPU less a workbook (5 workloads: 4.5 -> 3.9 s)
    src = make_input(d / "in.xlsx", settings={"hit_step": 0.5})
    plan = build_plan(src)
    out = d / "out.xlsx"
    write_output(plan, out)
    return src, plan, out


# --------------------------------------------------------------------------- hand calculations
def test_per_instance_tpm_is_the_hand_value(small):
    _src, plan, _out = small
    tpm = dict(zip(plan.results["workload"], plan.results["tpm_delivered_target"]))
    assert math.isclose(tpm["a"], 72_000) and math.isclose(tpm["b"], 55_384.615384615, rel_tol=1e-9)


def test_instances_with_utilisation_default_and_override(small):
    _src, plan, _out = small
    inst = dict(zip(plan.results["workload"], plan.results["instances_needed"]))
    # a: ceil(700,000 / (72,000 * 1)) = ceil(9.72) = 10 (Settings default 1)
    # b: ceil(100,000 / (55,384.6 * 0.5)) = ceil(3.61) = 4 (its own target_utilization 0.5)
    # c: ceil(300,000 / 72,000) = ceil(4.17) = 5; d: 144,000 / 72,000 = 2 exactly; e: no demand
    assert inst["a"] == 10 and inst["b"] == 4 and inst["c"] == 5 and inst["d"] == 2
    assert math.isnan(inst["e"])
    util = dict(zip(plan.resolved["workload"], plan.resolved["target_utilization"]))
    assert util == {"a": 1.0, "b": 0.5, "c": 1.0, "d": 1.0, "e": 1.0}


def test_settings_utilisation_applies_to_blank_rows(tmp_path):
    plan = build_plan(make_input(tmp_path / "u.xlsx", settings={"target_utilization": 0.8}, optional={}))
    inst = dict(zip(plan.results["workload"], plan.results["instances_needed"]))
    # a: ceil(700,000 / (72,000 * 0.8)) = ceil(700,000 / 57,600) = ceil(12.15) = 13; b keeps 0.5: 4
    assert inst["a"] == 13 and inst["b"] == 4
    # c: ceil(300,000 / 57,600) = ceil(5.21) = 6; d: ceil(144,000 / 57,600) = ceil(2.5) = 3
    assert inst["c"] == 6 and inst["d"] == 3


def test_default_utilisation_keeps_the_old_numbers(tmp_path):
    """Default 1: instances_needed is exactly the pre-issue-11 ceil(demand / tpm), row for row,
    on the bundled example; and a Settings sheet without the key gives 1."""
    import numpy as np

    from conftest import EXAMPLE

    p_in = build_plan(EXAMPLE).input
    p_in.settings["target_utilization"] = 1.0  # the example plans at 0.8: back to the default
    plan = build_plan(p_in)
    assert set(plan.resolved["target_utilization"]) == {1.0}
    r = plan.results
    demand = plan.resolved["demand_tpm"].to_numpy(dtype=float)
    tpm = r["tpm_delivered_target"].to_numpy(dtype=float)
    old = np.ceil(demand / tpm)
    got = r["instances_needed"].to_numpy(dtype=float)
    ok = (np.isnan(old) & np.isnan(got)) | (old == got)
    assert ok.all()


FLEET_EXPECTED = [
    # gpu, instances, gpus, cost/h, cost/month, cost/year, capacity, demand
    # G1: a 10 inst x tp2 = 20 GPUs, b 4 inst x tp1 = 4 GPUs; cost 24 x 2.0 = 48/h; 48 x 730 = 35,040;
    #     x 12 = 420,480; capacity 10 x 72,000 + 4 x 55,384.615 = 941,538.46; demand 700,000 + 100,000
    ("G1", 14, 24, 48.0, 48.0 * 730, 48.0 * 730 * 12, 10 * TPM_T + 4 * TPM_0, 800_000),
    # G2: c 5 inst x tp4 = 20 GPUs (e has no demand); 20 x 3.0 = 60/h; capacity 5 x 72,000
    ("G2", 5, 20, 60.0, 60.0 * 730, 60.0 * 730 * 12, 5 * TPM_T, 300_000),
    # G3: d 2 inst x tp1 = 2 GPUs, no price: cost blank
    ("G3", 2, 2, None, None, None, 2 * TPM_T, 144_000),
    # Total: costs of the priced types only (48 + 60 = 108/h), 2 GPUs uncosted
    # capacity: (10 + 5 + 2) x 72,000 + 4 x 55,384.615 = 1,445,538.46; demand 800,000 + 300,000 + 144,000
    ("Total", 21, 46, 108.0, 108.0 * 730, 108.0 * 730 * 12, 17 * TPM_T + 4 * TPM_0, 1_244_000),
]


def _fleet_rows_equal(rows, expected=FLEET_EXPECTED):
    assert [r["gpu"] for r in rows] == [e[0] for e in expected]
    for r, e in zip(rows, expected):
        for name, want in zip(fleet.FLEET_COLS[1:], e[1:]):
            assert same_value(want, r[name]), (r["gpu"], name, want, r[name])


def test_fleet_python_is_the_hand_calculation(small):
    _src, plan, _out = small
    frame = fleet.fleet_table(plan)
    _fleet_rows_equal(frame.to_dict("records"))
    assert frame.attrs["uncosted_gpus"] == 2


def test_fleet_sheet_header_and_stored_values(small):
    _src, _plan, out = small
    wb = openpyxl.load_workbook(out, read_only=True)
    ws = wb["Fleet"]
    header = [c.value for c in next(ws.iter_rows(min_row=1, max_row=1))][:len(fleet.FLEET_COLS)]
    names = [str(h).split(" [")[0] for h in header]
    assert names == list(fleet.FLEET_COLS)
    assert wb.sheetnames[0] == "Summary" and wb.sheetnames[1] == "Fleet"
    wb.close()
    rows = [r for r in sheet_values(out, "Fleet") if r["gpu"] is not None]
    _fleet_rows_equal(rows)


def test_summary_is_first_and_active(small):
    _src, _plan, out = small
    wb = openpyxl.load_workbook(out)
    assert wb.sheetnames[0] == "Summary" and wb.active.title == "Summary"
    assert sum(1 for ws in wb.worksheets if ws.sheet_view.tabSelected) == 1


BY_PERIOD_EXPECTED = [
    # 2027-Q1: a 1,440,000 / 72,000 = 20 inst x tp2 = 40 GPUs, 40 x 2.0 x 730 = 58,400; b blank demand: none
    ("2027-Q1", "G1", 20, 40, 40 * 2.0 * 730),
    # c: ceil(72,000 / 72,000) = 1 inst x tp4 = 4 GPUs, 4 x 3.0 x 730 = 8,760
    ("2027-Q1", "G2", 1, 4, 4 * 3.0 * 730),
    ("2027-Q1", "G3", 0, 0, None),
    # 2027-Q2: a ceil(1,500,000 / 72,000) = ceil(20.83) = 21 inst, 42 GPUs, 42 x 2.0 x 730 = 61,320
    ("2027-Q2", "G1", 21, 42, 42 * 2.0 * 730),
    ("2027-Q2", "G2", 0, 0, 0.0),  # priced, no demand: 0
    # d: ceil(150,000 / 72,000) = ceil(2.08) = 3 inst, 3 GPUs, no price
    ("2027-Q2", "G3", 3, 3, None),
]


def _period_rows_equal(rows):
    assert len(rows) == len(BY_PERIOD_EXPECTED)
    for r, e in zip(rows, BY_PERIOD_EXPECTED):
        for name, want in zip(demand.PERIOD_COLS, e):
            assert same_value(want, r[name]), (e, name, r[name])


def test_fleet_by_period(small):
    _src, plan, out = small
    _period_rows_equal(demand.fleet_by_period(plan).to_dict("records"))
    _period_rows_equal(sheet_values(out, "Fleet_By_Period"))


SCENARIO_EXPECTED = [
    ("base", 46, 108.0 * 730, 17 * TPM_T + 4 * TPM_0),
    # G1 price x 0.9: G1 24 GPUs x 1.8 = 43.2/h + G2 60/h = 103.2/h x 730 = 75,336
    ("G1 price -10%", 46, (24 * 1.8 + 60) * 730, 17 * TPM_T + 4 * TPM_0),
    # Settings target_utilization 0.8 (b keeps its 0.5): a 13 x 2 = 26, b 4, c 6 x 4 = 24, d 3: 57 GPUs;
    # cost (26 + 4) x 2.0 + 24 x 3.0 = 132/h; capacity 13 x 72,000 + 4 x TPM_0 + 6 x 72,000 + 3 x 72,000
    ("util 0.8", 57, 132.0 * 730, 22 * TPM_T + 4 * TPM_0),
    # a at hit 0.6: load 0.6 x 200 = 120 ms, compute 400 x (1 - 0.36) + 600 x 0.4 = 496 ms, chip 916 ms,
    # TPM 72,000,000 / 916 = 78,602.6; ceil(700,000 / 78,602.6) = ceil(8.91) = 9 inst = 18 GPUs;
    # GPUs 18 + 4 + 20 + 2 = 44; cost (18 + 4) x 2 + 60 = 104/h
    ("a hit +10 points", 44, 104.0 * 730, 9 * 72e6 / 916 + 4 * TPM_0 + 5 * TPM_T + 2 * TPM_T),
]


def _scenario_rows_equal(rows):
    assert [r["scenario"] for r in rows] == [e[0] for e in SCENARIO_EXPECTED]
    for r, e in zip(rows, SCENARIO_EXPECTED):
        for name, want in zip(scenarios.SCENARIO_COLS[1:], e[1:]):
            assert same_value(want, r[name]), (e[0], name, want, r[name])


def test_scenario_compare(small):
    _src, plan, out = small
    _scenario_rows_equal(scenarios.scenario_compare(plan).to_dict("records"))
    _scenario_rows_equal(sheet_values(out, "Scenario_Compare"))


def test_summary_numbers(small):
    _src, plan, out = small
    t = fleet.totals(plan)
    # baseline hits (hit_baseline blank: hit_measured, 0 everywhere): a ceil(700,000 / 55,384.6) = ceil(12.64) = 13 x 2 = 26;
    # b 4; c ceil(300,000 / 55,384.6) = ceil(5.42) = 6 x 4 = 24; d ceil(144,000 / 55,384.6) = 3 -> 57 GPUs
    assert t.gpus_baseline == 57 and t.gpus == 46
    # cost at baseline hits: (26 + 4) x 2.0 + 24 x 3.0 = 132/h x 730 = 96,360 per month
    assert math.isclose(t.cost_per_month_baseline, 132 * 730) and math.isclose(t.cost_per_month, 108 * 730)
    wb = openpyxl.load_workbook(out, data_only=True)
    vals = [(ws_row[0].value, ws_row[1].value) for ws_row in wb["Summary"].iter_rows(max_col=4)]
    labels = {str(a): b for a, b in vals if a}
    assert labels["Cost per quarter [USD]"] == pytest.approx(108 * 730 * 3)
    assert labels["Cost per year [USD]"] == pytest.approx(108 * 730 * 12)
    assert labels["GPUs of types without a price (not in the cost)"] == 2
    assert labels["Model checks (Checks sheet)"] == "OK"


# the Settings sheet lists its keys in schema order from row 2
_UTIL_ROW = 2 + [k.key for k in schema.SETTING_KEYS].index("target_utilization")

# --------------------------------------------------------------------------- bad input
BAD = {
    "unknown workload": ({"Demand": [{"workload": "zz", "period": "P1", "demand_tpm": 5}]},
                         None, ["Demand!A2: workload 'zz' is not in Workloads"]),
    "duplicate period": ({"Demand": [{"workload": "a", "period": "P1", "demand_tpm": 5},
                                     {"workload": "A", "period": "P1", "demand_tpm": 6}]},
                         None, ["Demand!B3: workload 'A' has period 'P1' twice (also row 2)"]),
    "period without demand": ({"Demand": [{"workload": "a", "period": "P1", "demand_tpm": 5},
                                          {"workload": "a", "period": "P2"}, {"workload": "b", "period": "P2"}]},
                              None, ["Demand!B3: period 'P2' has no demand rows"]),
    "scenario unknown sheet": ({"Scenarios": [{"scenario": "s", "sheet": "Foo", "column": "x", "op": "set",
                                               "value": 1}]}, None, ["Scenarios!B2: sheet 'Foo' is not one of"]),
    "scenario unknown column": ({"Scenarios": [{"scenario": "s", "sheet": "GPUs", "column": "price", "op": "set",
                                                "value": 1}]}, None, ["Scenarios!C2: column 'price' is not a column"]),
    "scenario unknown row": ({"Scenarios": [{"scenario": "s", "sheet": "GPUs", "column": "hourly_cost",
                                             "match": "G9", "op": "set", "value": 1}]}, None,
                             ["Scenarios!D2: row 'G9' is not in GPUs"]),
    "scenario bad op": ({"Scenarios": [{"scenario": "s", "sheet": "GPUs", "column": "hourly_cost", "op": "divide",
                                        "value": 1}]}, None, ["Scenarios!E2: op 'divide' is not one of"]),
    "scenario out of range": ({"Scenarios": [{"scenario": "ok", "sheet": "GPUs", "column": "hourly_cost",
                                              "op": "set", "value": 1},
                                             {"scenario": "s", "sheet": "Workloads", "column": "hit_target",
                                              "match": "a", "op": "add", "value": 0.6}]}, None,
                              ["Scenarios!F3: scenario 's' makes Workloads!", "(a) hit_target 1.1 is outside [0, 1]"]),
    "scenario utilisation 0": ({"Scenarios": [{"scenario": "s", "sheet": "Settings", "column": "target_utilization",
                                               "op": "multiply", "value": 0}]}, None,
                               ["Scenarios!F2: scenario 's': Settings target_utilization: target_utilization 0 is "
                                "outside (0, 1]"]),
    "settings utilisation 0": ({}, {"target_utilization": 0}, [f"Settings!B{_UTIL_ROW}: target_utilization 0 is outside (0, 1]"]),
    "settings utilisation above 1": ({}, {"target_utilization": 1.2},
                                     [f"Settings!B{_UTIL_ROW}: target_utilization 1.2 is outside (0, 1]"]),
    "workload utilisation 0": ({}, None, ["Workloads!", "target_utilization 0 is outside (0, 1]"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_located_and_nothing_written(tmp_path, case):
    optional, settings, expected = BAD[case]
    workloads = [dict(w) for w in WORKLOADS]
    if case == "workload utilisation 0":
        workloads[0]["target_utilization"] = 0
    src = make_input(tmp_path / "bad.xlsx", workloads=workloads, settings=settings, optional=optional)
    out = tmp_path / "out.xlsx"
    p = run_cli("run", src, "-o", out, "--no-memo", cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr
    for piece in expected:
        assert piece in p.stderr, p.stderr
    assert not out.exists()


def test_every_problem_listed_at_once(tmp_path):
    optional = {"Demand": [{"workload": "zz", "period": "P1", "demand_tpm": 5}],
                "Scenarios": [{"scenario": "s", "sheet": "Foo", "column": "x", "op": "set", "value": 1}]}
    src = make_input(tmp_path / "bad.xlsx", settings={"target_utilization": 0}, optional=optional)
    p = run_cli("validate", src, cwd=tmp_path)
    assert p.returncode == 2
    for piece in (f"Settings!B{_UTIL_ROW}", "Demand!A2", "Scenarios!B2"):
        assert piece in p.stderr, p.stderr


# --------------------------------------------------------------------------- LibreOffice
NEW_DEMAND, NEW_PRICE = 1_000_000, 3.5  # the first live edit: demand_tpm of 'a', hourly_cost of G2


def _edit_demand_and_price(out: Path, edited: Path) -> None:
    def edit(wb):
        ws = wb["Workloads"]
        head = {str(c.value).split(" [")[0]: c.column for c in ws[1]}
        row = next(r for r in range(2, ws.max_row + 1) if ws.cell(r, head["workload"]).value == "a")
        ws.cell(row, head["demand_tpm"]).value = NEW_DEMAND
        ws = wb["GPUs"]
        head = {str(c.value).split(" [")[0]: c.column for c in ws[1]}
        row = next(r for r in range(2, ws.max_row + 1) if ws.cell(r, head["gpu"]).value == "G2")
        ws.cell(row, head["hourly_cost"]).value = NEW_PRICE

    edit_output(out, edited, edit, "Workloads", "GPUs")


def _edit_utilisation_and_period_demand(out: Path, edited: Path) -> None:
    def edit(wb):
        ws = wb["Settings"]
        row = next(r for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value == "target_utilization")
        ws.cell(row, 2).value = 0.8
        ws = wb["Demand"]
        ws.cell(5, 3).value = 2_000_000  # Demand row 5: a, 2027-Q2

    edit_output(out, edited, edit, "Settings", "Demand")


@pytest.fixture(scope="module")
def recalculated(small, lo_profile, tmp_path_factory) -> dict:
    """The stored output and its two live-edited copies, recalculated by ONE LibreOffice process
    (libreoffice.recalculate_many; 0.2-1.5 s CPU less a workbook than separate calls): for the three tests below."""
    from libreoffice import recalculate_many

    _src, _plan, out = small
    d = tmp_path_factory.mktemp("finance-recalc")
    edited, edited2 = d / "edited.xlsx", d / "edited2.xlsx"
    _edit_demand_and_price(out, edited)
    _edit_utilisation_and_period_demand(out, edited2)
    done = recalculate_many([out, edited, edited2], d / "recalc", profile=lo_profile)
    return dict(zip(("out", "edited", "edited2"), done))


@pytest.mark.libreoffice
def test_recalculated_finance_sheets_equal_python(small, recalculated):
    _src, plan, out = small
    done = recalculated["out"]
    _fleet_rows_equal([r for r in sheet_values(done, "Fleet") if r["gpu"] is not None])
    _period_rows_equal(sheet_values(done, "Fleet_By_Period"))
    _scenario_rows_equal(sheet_values(done, "Scenario_Compare"))
    for sheet in ("Results", "Demand_Calc"):
        stored, again = sheet_values(out, sheet), sheet_values(done, sheet)
        for a, b in zip(stored, again):
            for k in a:
                assert same_value(a[k], b[k]), (sheet, k, a[k], b[k])
    s1 = list(value_book(out, "Summary")["Summary"].values)
    s2 = list(value_book(done, "Summary")["Summary"].values)
    assert len(s1) == len(s2)
    for r1, r2 in zip(s1, s2):
        for a, b in zip(r1, r2):
            assert same_value(a, b), ("Summary", r1, r2)


@pytest.mark.libreoffice
def test_live_edit_moves_fleet_like_a_fresh_run(recalculated, tmp_path):
    """Edit demand_tpm of 'a' and the price of G2 in the OUTPUT (_edit_demand_and_price),
    recalculate: Fleet equals a fresh run of the equally edited input."""
    new_demand, new_price = NEW_DEMAND, NEW_PRICE
    done = recalculated["edited"]
    live = [r for r in sheet_values(done, "Fleet") if r["gpu"] is not None]

    workloads = [dict(w) for w in WORKLOADS]
    workloads[0]["demand_tpm"] = new_demand
    gpus = [dict(g) for g in GPUS]
    gpus[1]["hourly_cost"] = new_price
    fresh = fleet.fleet_table(build_plan(make_input(tmp_path / "fresh.xlsx", workloads=workloads, gpus=gpus)))
    # hand check of the moved cells: a ceil(1,000,000 / 72,000) = ceil(13.9) = 14 inst x 2 = 28 GPUs;
    # G1 28 + 4 = 32 GPUs x 2.0 = 64/h; G2 20 GPUs x 3.5 = 70/h; total 134/h
    assert fresh.iloc[0]["gpus_needed"] == 32 and fresh.iloc[1]["cost_per_hour"] == 70
    assert fresh.iloc[-1]["cost_per_hour"] == 134
    _fleet_rows_equal(live, [tuple(r.values()) for r in fresh.to_dict("records")])


@pytest.mark.libreoffice
def test_live_edit_of_utilisation_and_period_demand(recalculated, tmp_path):
    """Settings target_utilization (via s_target_utilization) and a Demand cell edited in the
    output (_edit_utilisation_and_period_demand) move Fleet and Fleet_By_Period as a fresh
    run of the equally edited input does."""
    done = recalculated["edited2"]
    demand_rows = [dict(d) for d in DEMAND]
    demand_rows[3]["demand_tpm"] = 2_000_000
    fresh = build_plan(make_input(tmp_path / "fresh2.xlsx", settings={"target_utilization": 0.8},
                                  optional={"Demand": demand_rows, "Scenarios": SCENARIOS}))
    fr = fleet.fleet_table(fresh)
    # hand check: a ceil(700,000 / 57,600) = 13 inst x 2 = 26 GPUs (+ b 4 = 30 on G1)
    assert fr.iloc[0]["gpus_needed"] == 30
    _fleet_rows_equal([r for r in sheet_values(done, "Fleet") if r["gpu"] is not None],
                      [tuple(r.values()) for r in fr.to_dict("records")])
    bp = demand.fleet_by_period(fresh)
    # hand check: 2027-Q2 a ceil(2,000,000 / 57,600) = ceil(34.7) = 35 inst x 2 = 70 GPUs
    assert bp.iloc[3]["gpus_needed"] == 70
    live = sheet_values(done, "Fleet_By_Period")
    for r, e in zip(live, bp.to_dict("records")):
        for k in demand.PERIOD_COLS:
            assert same_value(e[k], r[k]), (k, e[k], r[k])


def test_scenario_over_every_row_keeps_blank_demands_blank(tmp_path):
    scen = [{"scenario": "demand x1.5", "sheet": "Workloads", "column": "demand_tpm", "op": "multiply",
             "value": 1.5}]
    plan = build_plan(make_input(tmp_path / "s.xlsx", optional={"Scenarios": scen}))
    rows = scenarios.scenario_compare(plan).to_dict("records")
    assert [r["scenario"] for r in rows] == ["base", "demand x1.5"]
    s = rows[1]
    # a: ceil(1,050,000 / 72,000) = ceil(14.58) = 15 x 2 = 30; b: ceil(150,000 / (55,384.6 x 0.5)) = ceil(5.42)
    # = 6; c: ceil(450,000 / 72,000) = ceil(6.25) = 7 x 4 = 28; d: 216,000 / 72,000 = 3; e: still no demand
    assert s["gpus_needed"] == 30 + 6 + 28 + 3
    # cost (30 + 6) x 2.0 + 28 x 3.0 = 156/h x 730
    assert math.isclose(s["cost_per_month"], 156 * 730)
    assert math.isclose(s["tpm_capacity"], (15 + 7 + 3) * TPM_T + 6 * TPM_0)


def test_settings_without_the_new_keys_take_the_defaults(tmp_path):
    src = make_input(tmp_path / "old.xlsx", settings={"target_utilization": 0.5, "hours_per_month": 700},
                     optional={})
    wb = openpyxl.load_workbook(src)
    ws = wb["Settings"]
    for r in range(ws.max_row, 1, -1):  # an older workbook: the two keys are not there at all
        if ws.cell(r, 1).value in ("target_utilization", "hours_per_month"):
            ws.delete_rows(r)
    wb.save(src)
    plan = build_plan(src)
    assert plan.settings["target_utilization"] == 1.0 and plan.settings["hours_per_month"] == 730.0
    assert dict(zip(plan.results["workload"], plan.results["instances_needed"]))["a"] == 10  # 700,000 / 72,000


def test_references_are_checked_once_workloads_read_cleanly(tmp_path):
    """A duplicate workload is reported; the Demand rows naming other workloads are not echoed
    as unknown until Workloads reads cleanly (duplicates within Demand still are)."""
    workloads = [dict(w) for w in WORKLOADS]
    workloads[1]["workload"] = "a"
    optional = {"Demand": [{"workload": "zz", "period": "P1", "demand_tpm": 5},
                           {"workload": "zz", "period": "P1", "demand_tpm": 6}]}
    src = make_input(tmp_path / "bad.xlsx", workloads=workloads, optional=optional)
    p = run_cli("validate", src, cwd=tmp_path)
    assert p.returncode == 2
    assert "Workloads!A3: workload 'a' duplicates row 2" in p.stderr
    assert "Demand!B3: workload 'zz' has period 'P1' twice (also row 2)" in p.stderr
    assert "is not in Workloads" not in p.stderr


def test_example_scenarios_replan_like_the_base_run():
    """The example's scenarios re-plan the same inputs as the base run (calibrated and estimated
    workloads included): a price-only scenario keeps every GPU and capacity and cuts the cost
    by exactly 10% of the H100 spend; a lower utilisation needs more GPUs, never fewer."""
    from conftest import EXAMPLE

    plan = build_plan(EXAMPLE)
    sc = scenarios.scenario_compare(plan).set_index("scenario")
    base = sc.loc["base"]
    h100 = fleet.plan_fleet(plan).set_index("gpu").loc["H100-SXM"]
    price = sc.loc["H100 price -10%"]
    assert price["gpus_needed"] == base["gpus_needed"]
    assert price["tpm_capacity"] == pytest.approx(base["tpm_capacity"], rel=1e-12)
    # hand: the H100 GPUs cost 2.50 USD/h each for 730 h a month; 10% of that is saved
    assert base["cost_per_month"] - price["cost_per_month"] == pytest.approx(0.1 * h100["gpus_needed"] * 2.50 * 730)
    assert sc.loc["utilisation 70%", "gpus_needed"] > base["gpus_needed"]
