"""SLO-bound sizing beyond Results (issue 16): Demand_Calc / Fleet_By_Period, Fleet, Scenario_Compare and
the diff bridge size with the same chain as Results (planner.equations.sizing), and say what the latency
targets add over throughput alone. Every expected number is computed BY HAND below.

The deployment shape is the one of tests/test_load_workbook.py (its hand functions are reused: plain
arithmetic, nothing from planner.equations.queueing): Llama-3.1-8B on one H100 (2.5 USD/h), isl 4000,
osl 200, batch 16, hit 0, request-alone prefill P = 400 ms, decode D = 400 ms, chip time C = 800 ms, so
one instance delivers TPM = 4200 x 60000 / 800 = 315,000 tokens/min on throughput.

Workloads:
- ``chat``: demand 6,000,000 tokens/min, ttft_slo_ms 1000 at p90 (the default), grows 50% a period;
- ``batch``: demand 3,000,000 tokens/min, no target (sized on throughput alone), grows 50% a period.
Settings periods 2027-Q1..2027-Q2 (k = 0, 1), hours_per_month 730 (the default).
"""

from __future__ import annotations

import math

import pytest

from conftest import edit_output_and_input, same_value, sheet_values, value_book
from planner.equations import sizing as sz
from planner.finance import fleet, periods, scenarios
from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook
from planner.workbook.writer import write_output
from test_load_workbook import BASE, GPUS, MODELS, P, _largest, _wait_q

HOURS, PRICE = 730, 2.5
TPM = (4000 + 200) * 60000 / 800                    # 315,000 tokens/min per instance


def lam_p90(slo):
    """Largest per-instance rate [requests/ms] whose p90 TTFT P + W_0.9 stays within ``slo`` (bisection
    on the hand formula of tests/test_load_workbook.py)."""
    return _largest(lambda x: P + _wait_q(x, 0.9) <= slo, 1 / P)


def n_ttft(demand_tpm, slo):
    rate = demand_tpm / (4000 + 200) / 60 / 1000     # requests/ms of the whole workload
    return math.ceil(rate / lam_p90(slo) - 1e-9)


def n_tp(demand_tpm):
    return math.ceil(demand_tpm / TPM - 1e-9)


# chat Q1 (k=0): 6,000,000 -> 23.81 requests/s; throughput ceil(19.05) = 20, the p90 target 21 (as
#   tests/test_load_workbook.py finds for the same row): 21 instances, 1 GPU over throughput
# chat Q2 (k=1): 6,000,000 x 1.5 = 9,000,000 -> 35.71 requests/s; throughput ceil(28.57) = 29; the target
#   ceil(35.71 / λ*) with λ* the same per-instance rate as in Q1 (the target and P do not change)
# batch Q1: 3,000,000 -> ceil(9.52) = 10; Q2: 4,500,000 -> ceil(14.29) = 15 (no target: no extra)
CHAT = {"2027-Q1": 6_000_000, "2027-Q2": 9_000_000}
BATCH = {"2027-Q1": 3_000_000, "2027-Q2": 4_500_000}


def hand_rows():
    rows = {}
    for p, d in CHAT.items():
        t, s = n_tp(d), n_ttft(d, 1000)
        rows[("chat", p)] = dict(instances_throughput=t, instances_ttft=s, instances=max(t, s),
                                 binding="ttft_slo" if s > t else "throughput", gpus_for_latency=max(t, s) - t)
    for p, d in BATCH.items():
        rows[("batch", p)] = dict(instances_throughput=n_tp(d), instances=n_tp(d), binding="throughput",
                                  gpus_for_latency=0)
    return rows


def test_hand_numbers():
    r = hand_rows()
    assert [r[("chat", p)]["instances_throughput"] for p in CHAT] == [20, 29]
    assert r[("chat", "2027-Q1")]["instances"] == 21              # as tests/test_load_workbook.py
    assert r[("chat", "2027-Q2")]["instances"] > 29               # the target binds in the grown period too
    assert [r[("batch", p)]["instances"] for p in BATCH] == [10, 15]


WORKLOADS = [dict(workload="chat", demand_tpm=6_000_000, ttft_slo_ms=1000, demand_growth=0.5, **BASE),
             dict(workload="batch", demand_tpm=3_000_000, demand_growth=0.5, **BASE)]
SETTINGS = {"periods": "2027-Q1..2027-Q2"}
GPUS_PRICED = [dict(GPUS[0], hourly_cost=PRICE)]
# chat's 2027-Q2 demand typed on the Demand sheet at the grown value (the same row numbers), so the live
# test below can edit a period's own demand
DEMAND = [{"workload": "chat", "period": "2027-Q2", "demand_tpm": 9_000_000}]


def make(path, workloads=WORKLOADS, optional=None, settings=None):
    write_input_workbook(path, MODELS, GPUS_PRICED, workloads, {**SETTINGS, **(settings or {})},
                         optional={"Demand": DEMAND, **(optional or {})})
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("slofleet")
    # hit_step 0.5: no test of this output reads the hit sweep (Sensitivity_Hit: 3 rows a workload, not
    # 21); the LibreOffice tests read Demand_Calc, Fleet_By_Period, Fleet and Summary
    src = make(d / "in.xlsx", settings={"hit_step": 0.5})
    plan = build_plan(src)
    out = d / "out.xlsx"
    write_output(plan, out)
    return src, plan, out


def test_period_rows_are_the_hand_calculation_and_agree_with_results(built):
    _src, plan, out = built
    calc = periods.period_calc(plan)
    stored = {(r["workload"], r["period"]): r for r in sheet_values(out, "Demand_Calc") if r.get("workload")}
    for key, want in hand_rows().items():
        row = calc[(calc["workload"] == key[0]) & (calc["period"] == key[1])].iloc[0]
        for c, v in want.items():
            assert same_value(v, row[c]), (key, c, v, row[c])
            assert same_value(v, stored[key][c]), ("stored", key, c, v, stored[key][c])
    # the first period carries today's demand at today's hit: Results' own count, column for column
    r = plan.results.set_index("workload")
    first = calc[calc["period"] == "2027-Q1"].set_index("workload")
    for wl in ("chat", "batch"):
        for c in ("instances_throughput", "instances_ttft", "instances_tpot", "instances_hbm", "binding",
                  "gpus_throughput", "gpus_for_latency", "cost_per_hour_for_latency"):
            assert same_value(r.loc[wl, c], first.loc[wl, c], rel=1e-12), (wl, c)
        assert first.loc[wl, "instances"] == r.loc[wl, "instances_needed"]
        assert first.loc[wl, "gpus_needed"] == r.loc[wl, "gpus_needed"]


def test_fleet_by_period_latency_columns(built):
    _src, plan, out = built
    h = hand_rows()
    got = {r["period"]: r for r in sheet_values(out, "Fleet_By_Period") if r.get("period")}
    py = periods.by_period(plan).set_index("period")
    for p in CHAT:
        inst = h[("chat", p)]["instances"] + h[("batch", p)]["instances"]
        thr = h[("chat", p)]["instances_throughput"] + h[("batch", p)]["instances_throughput"]
        want = dict(instances=inst, gpus_needed=inst, instances_throughput=thr, gpus_throughput=thr,
                    gpus_for_latency=inst - thr, cost_per_month=inst * PRICE * HOURS,
                    cost_per_month_for_latency=(inst - thr) * PRICE * HOURS)
        for c, v in want.items():
            assert same_value(v, got[p][c]), (p, c, v, got[p][c])
            assert same_value(v, py.loc[p, c]), (p, c, v, py.loc[p, c])
    # Q1: 1 GPU, 1 x 2.5 x 730 = 1,825 USD per month over throughput alone
    assert got["2027-Q1"]["cost_per_month_for_latency"] == pytest.approx(1825.0)


def test_sizing_chain_is_the_one_results_declares():
    from planner.plan.columns import RESULTS
    by = {c.name: c for c in RESULTS}
    for name, func, args in sz.STEPS:
        assert by[name].func is func and by[name].args == args, name


def test_fleet_latency_columns_and_summary_memo_equal_them(built):
    _src, plan, out = built
    # by hand: chat 21 instances (20 on throughput), batch 10 (10): 31 / 30, +1 GPU, 1 x 2.5 x 730 = 1,825
    want = dict(instances=31, gpus_needed=31, instances_throughput=30, gpus_throughput=30, gpus_for_latency=1,
                cost_per_month=31 * PRICE * HOURS, cost_per_month_for_latency=1825.0)
    rows = {r["gpu"]: r for r in sheet_values(out, "Fleet") if r.get("gpu")}
    py = fleet.fleet_table(plan).set_index("gpu")
    for key in ("H100", fleet.TOTAL):
        for c, v in want.items():
            assert same_value(v, rows[key][c]), (key, c, v, rows[key][c])
            assert same_value(v, py.loc[key, c]), (key, c, v, py.loc[key, c])
    t = fleet.totals(plan)
    assert (t.gpus_for_latency, t.cost_per_month_for_latency) == (1, 1825.0)
    # the Summary reads the Fleet Total row; the memo says the same figures
    import openpyxl
    wb = openpyxl.load_workbook(out, data_only=True)
    summ = {r[0].value: r[1].value for r in wb["Summary"].iter_rows(max_col=2) if r[0].value}
    assert summ["GPUs over throughput alone"] == rows[fleet.TOTAL]["gpus_for_latency"]
    assert summ["Cost per month of those GPUs [USD]"] == rows[fleet.TOTAL]["cost_per_month_for_latency"]
    wbf = openpyxl.load_workbook(out)
    assert wbf["Summary"].cell(*_find(wbf["Summary"], "GPUs over throughput alone")).value.startswith("=Fleet!$")
    from planner.plan import load_notes
    text = {f["kind"]: f["text"] for f in load_notes.findings(plan)}
    assert "takes 1 GPUs more than throughput alone, 1,825 USD per month" in text["slo-cost"]


def _find(ws, label):
    for row in ws.iter_rows(max_col=1):
        if row[0].value == label:
            return row[0].row, 2
    raise AssertionError(label)


# Scenarios: each re-planned through Results, so sized by the same chain
SCENARIOS = [
    # chat's target tightened to 700 ms at p90: the per-instance rate λ* falls (P + W_0.9 <= 700 leaves
    #   300 ms for the wait), so the count is ceil(23.81 requests/s / λ*(700)); batch keeps 10
    {"scenario": "ttft 700", "sheet": "Workloads", "column": "ttft_slo_ms", "match": "chat", "op": "set",
     "value": 700},
    # chat's demand x 1.5 = 9,000,000: the same row as Demand_Calc's 2027-Q2 for chat, 31 instances
    {"scenario": "chat x1.5", "sheet": "Workloads", "column": "demand_tpm", "match": "chat", "op": "multiply",
     "value": 1.5},
]


def test_scenario_overriding_ttft_slo_is_the_hand_calculation(tmp_path):
    src = make(tmp_path / "scn.xlsx", optional={"Scenarios": SCENARIOS})
    plan = build_plan(src)
    out = tmp_path / "scn-out.xlsx"
    write_output(plan, out)
    n700 = n_ttft(6_000_000, 700)
    assert n700 > 21                                      # tighter than the base target's 21
    want = {  # scenario: (gpus_needed, gpus_throughput, gpus_for_latency)
        "base": (31, 30, 1),
        "ttft 700": (n700 + 10, 30, n700 - 20),
        "chat x1.5": (31 + 10, 29 + 10, 2),
    }
    for rows in (scenarios.scenario_compare(plan).to_dict("records"), sheet_values(out, "Scenario_Compare")):
        got = {r["scenario"]: r for r in rows if r.get("scenario")}
        assert set(got) == set(want)
        for name, (g, t, extra) in want.items():
            r = got[name]
            assert (r["gpus_needed"], r["gpus_throughput"], r["gpus_for_latency"]) == (g, t, extra), (name, r)
            assert r["cost_per_month"] == pytest.approx(g * PRICE * HOURS, rel=1e-12)
            assert r["cost_per_month_for_latency"] == pytest.approx(extra * PRICE * HOURS, rel=1e-12)
    # the demand scenario is the grown period: one chain, one count
    q2 = periods.by_period(plan).set_index("period").loc["2027-Q2"]
    assert q2["gpus_for_latency"] == want["chat x1.5"][2]


def test_diff_where_only_a_target_changes(tmp_path):
    from planner.diff.bridge import STEPS, diff_plans
    from planner.diff.workbook import write_diff
    old = make(tmp_path / "old.xlsx")
    wls = [dict(w) for w in WORKLOADS]
    wls[0]["ttft_slo_ms"] = 700
    new = make(tmp_path / "new.xlsx", workloads=wls)
    d = diff_plans(old, new)
    # by hand: OLD 21 + 10 = 31 GPUs, NEW n_ttft(6,000,000, 700 ms) + 10 = 34 + 10 = 44 GPUs; the change is
    #   in `other` (the steps of the contract), all of it the latency targets' part:
    #   +13 GPUs x 2.5 USD/h x 730 h = 23,725 USD per month
    n700 = n_ttft(6_000_000, 700)
    gained = n700 - 21
    assert (n700, gained) == (34, 13)
    b, g = dict(d.bridge), dict(d.gpu_bridge)
    assert (g["old"], g["new"], g["other"]) == (31, 44, 13)
    assert b["other"] == pytest.approx(gained * PRICE * HOURS, rel=1e-12)
    assert all(b[s] == 0 and g[s] == 0 for s in STEPS if s != "other")
    assert d.latency == {"cost_per_month": b["other"], "gpus": 13}
    # each end is that side's Fleet Total
    for plan, end in ((d.old, "old"), (d.new, "new")):
        t = fleet.fleet_table(plan).iloc[-1]
        assert (g[end], b[end]) == (t["gpus_needed"], pytest.approx(t["cost_per_month"], rel=1e-12))
    assert sum(v for s, v in d.gpu_bridge[1:-1]) == g["new"] - g["old"]
    out = tmp_path / "diff.xlsx"
    write_diff(d, out)
    rows = {r["step"]: r for r in sheet_values(out, "Bridge") if r.get("step")}
    assert [s for s in rows] == ["old", *STEPS, "new"]
    assert rows["other"]["gpus"] == 13 and rows["other"]["cost_per_month"] == pytest.approx(23_725.0)
    assert rows["other"]["of_which_latency"] == pytest.approx(23_725.0) and rows["other"]["of_which_latency_gpus"] == 13
    assert rows["price"]["of_which_latency"] is None
    assert (rows["old"]["gpus"], rows["new"]["gpus"]) == (31, 44)
    from planner.diff.memo import bridge_sentences
    assert bridge_sentences(d, "USD") == [
        "Everything else (models, GPUs, parallelism, lengths, times, settings): adds USD 23,725.00 per month, of "
        "which the new latency targets (TTFT/TPOT targets, their percentile, fixed concurrency) USD +23,725.00 "
        "(+13 GPUs)."]


def test_diff_latency_part_of_other_beside_a_model_change(tmp_path):
    from planner.diff.bridge import diff_plans
    # NEW also doubles t_decode_ms of every row (an `other` change): chip time 400 + 800 = 1200 ms, TPM
    #   4200 x 60000 / 1200 = 210,000; chat ceil(6e6 / 210,000) = ceil(28.57) = 29 on throughput and batch
    #   ceil(3e6 / 210,000) = 15; the latency part is planned on the price state (OLD's times): still +13 GPUs
    old = make(tmp_path / "old.xlsx")
    wls = [dict(w, t_decode_ms=800) for w in WORKLOADS]
    wls[0]["ttft_slo_ms"] = 700
    d = diff_plans(old, make(tmp_path / "new.xlsx", workloads=wls))
    assert d.latency["gpus"] == 13 and d.latency["cost_per_month"] == pytest.approx(23_725.0)
    r = d.new.results.set_index("workload")
    assert (r.loc["chat", "instances_throughput"], r.loc["batch", "instances_needed"]) == (29, 15)
    assert dict(d.gpu_bridge)["other"] == r["gpus_needed"].sum() - 31


def _same_rows(py_rows, sheet_rows, key, cols, where):
    got = {tuple(r[k] for k in key): r for r in sheet_rows if r.get(key[0])}
    assert len(got) == len(py_rows), where
    for e in py_rows:
        r = got[tuple(e[k] for k in key)]
        for c in cols:
            assert same_value(e[c], r[c], rel=1e-9), (where, tuple(e[k] for k in key), c, e[c], r[c])


CALC_CHECK = ("demand_tpm", "ttft_ms", "tpm_delivered_target", "instances", "gpus_needed", *(
    c for c in sz.NAMES if c not in periods.SIZING_AS))
PERIOD_CHECK = periods.PERIOD_COLS[2:]
FLEET_CHECK = fleet.FLEET_COLS[1:]


def _compare_sheets(path, plan, where):
    _same_rows(periods.period_calc(plan).to_dict("records"), sheet_values(path, "Demand_Calc"),
               ("workload", "period"), CALC_CHECK, f"{where} Demand_Calc")
    _same_rows(periods.by_period(plan).to_dict("records"), sheet_values(path, "Fleet_By_Period"),
               ("period", "gpu"), PERIOD_CHECK, f"{where} Fleet_By_Period")
    _same_rows(fleet.fleet_table(plan).to_dict("records"), sheet_values(path, "Fleet"), ("gpu",), FLEET_CHECK,
               f"{where} Fleet")


# Demand row 2 (chat 2027-Q2): 9,000,000 -> 12,000,000; Workloads row 2 (chat): ttft_slo_ms 1000 -> 800
LIVE_EDITS = [("Demand", 2, "demand_tpm", 12_000_000), ("Workloads", 2, "ttft_slo_ms", 800)]


@pytest.fixture(scope="module")
def recalculated(built, lo_profile, tmp_path_factory) -> dict:
    """The stored output and its live-edited copy (LIVE_EDITS, made in the input alike),
    recalculated by ONE LibreOffice process (libreoffice.recalculate_many; two calls cost
    0.2-1.5 s CPU more): for the two tests below."""
    from libreoffice import recalculate_many

    src, _plan, out = built
    d = tmp_path_factory.mktemp("recalculated")
    e_out, e_in = edit_output_and_input(out, src, LIVE_EDITS, d)
    again, e_again = recalculate_many([out, e_out], d / "recalc", profile=lo_profile)
    return {"again": again, "e_in": e_in, "e_again": e_again}


@pytest.mark.libreoffice
def test_libreoffice_recalculates_the_new_cells(built, recalculated):
    _src, plan, out = built
    again = recalculated["again"]
    _compare_sheets(again, plan, "LibreOffice")
    import openpyxl
    rows = {r[0].value: r[1].value for r in value_book(again, "Summary")["Summary"].iter_rows(
        max_col=2) if r[0].value}
    assert (rows["GPUs over throughput alone"], rows["Cost per month of those GPUs [USD]"]) == (1, 1825)


@pytest.mark.libreoffice
def test_live_edit_of_a_period_demand_and_the_ttft_target_matches_a_fresh_run(built, recalculated):
    src, plan, out = built
    # LIVE_EDITS, made in the output and the input by :func:`recalculated`
    fresh = build_plan(recalculated["e_in"])
    before = periods.by_period(plan)["instances"].tolist()
    assert periods.by_period(fresh)["instances"].tolist() != before      # the edit moves the counts
    _compare_sheets(recalculated["e_again"], fresh, "live edit")


def test_ttft_count_in_steps_is_the_one_formula():
    # the three chain steps give q.instances_ttft's own count (the closed form checked against the
    # simulation in tests/test_queueing.py) on random rows: mean and quantile targets, unreachable ones
    import numpy as np
    from planner.equations import queueing as q
    rng = np.random.default_rng(16)
    n = 5000
    P, D, s = rng.uniform(50, 2000, n), rng.uniform(10, 3000, n), rng.uniform(1, 80, n)
    slo, qq, lam = P * rng.uniform(0.5, 6, n), rng.choice([0, 0.5, 0.9, 0.95, 0.99], n), rng.uniform(0.1, 300, n)
    steps = q.instances_for_rho(lam, P, slo, q.ttft_rho_max(P, D, s, slo, qq, q.ttft_log_x(P, D, s, slo, qq)))
    assert np.array_equal(steps, q.instances_ttft(lam, P, D, s, slo, qq))
    assert np.isinf(steps).sum() > 0 and np.isfinite(steps).sum() > 0


def test_no_formula_exceeds_the_spreadsheet_limit(built):
    # Excel holds at most 8,192 characters of formula in a cell ("Excel specifications and limits",
    # https://support.microsoft.com/en-us/office/excel-specifications-and-limits-1672b34d-7043-467e-8e27-269d656771c3)
    import openpyxl
    _src, _plan, out = built
    wb = openpyxl.load_workbook(out)
    longest = max((len(c.value), ws.title, c.coordinate) for ws in wb for row in ws.iter_rows() for c in row
                  if isinstance(c.value, str) and c.value.startswith("="))
    assert longest[0] <= 8192, longest
