"""Issue 20 red team, item 5 end to end: a finance workbook with hit ratios by period and growth,
typed as an analyst types it (quarters as 'Q1 2027..Q4 2027' and '2027 Q2', a date cell for a
quarter, percentages as text, a demand per day spelt 'tok/day'), planned, and every period
checked against a hand calculation; then LibreOffice recalculates Demand_Calc, Fleet_By_Period
and Summary and must find the stored values.

Hand calculation (docs/model.md; Llama-3.1-8B KV 2 x 32 layers x 8 heads x 128 x 2 B = 131,072 B
per token, split over tp GPUs; kv_gbps 50 GB/s; alpha 0, t_fixed 0):

    load(h)  = h x isl x 131,072 / tp / 50e9 x 1,000           [ms]
    chip(h)  = load(h) + t_attn0 (1 - h^2) + t_ffn0 (1 - h) + t_decode
    TPM(h)   = (isl + osl) x 60,000 / chip(h)
    inst     = ceil(demand / (TPM(h) x 0.8)),  GPUs = inst x tp,  cost = GPUs x 2.5 x 730 per month

chat (tp 1, isl 1,000, osl 200, 10 / 90 / decode 200 ms): chip(0.3) = 0.786432 + 9.1 + 63 + 200 =
272.886432; chip(0.6) = 1.572864 + 6.4 + 36 + 200 = 243.972864; chip(0.2) = 0.524288 + 9.6 + 72 + 200 =
282.124288 (its baseline). rag (tp 2, isl 4,000, osl 400, 80 / 300 / decode 3,000 ms): chip(0.5) =
2.62144 + 60 + 150 + 3,000 = 3,212.62144; baseline hit_measured 0.25: chip = 1.31072 + 75 + 225 + 3,000.

    period   chat demand [tok/min]         hit  inst (exact)   base   rag demand        inst  base
    2027-Q1  10,000,000 (today)            0.3  48 (47.38)     49     200,000 (today)   4     4
    2027-Q2  12,000,000 (x 1.2, blank row) 0.6  51 (50.83)     59     220,000 (x 1.1)   4     4
    2027-Q3  2e10 tok/day / 1,440          0.6  59 (58.83)     69     242,000           4     4
    2027-Q4  17,280,000 (x 1.2^3)          0.3  82 (81.87)     85     266,200           5     5
"""

from __future__ import annotations

import datetime as dt

import openpyxl
import pytest

from conftest import run_cli, same_value, sheet_values, value_book
from planner.finance import periods as fp
from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook

MODELS = [{"model": "Llama-3.1-8B", "kv_bytes": 2}]
GPUS = [{"gpu": "H100 SXM", "hourly_cost": 2.5}]
COMMON = {"model": "Llama-3.1-8B", "gpu": "H100 SXM", "t_other0_ms": 0, "t_fixed_ms": 0, "alpha": 0,
          "kv_gbps": 50, "batch": 32}
WORKLOADS = [
    dict(COMMON, workload="chat", tp=1, isl=1000, osl=200, t_attn0_ms=10, t_ffn0_ms=90, t_decode_ms=200,
         hit_target=0.3, hit_baseline=0.2, demand_tpm=10_000_000, demand_growth="20%"),
    dict(COMMON, workload="rag", tp=2, isl=4000, osl=400, t_attn0_ms=80, t_ffn0_ms=300, t_decode_ms=3000,
         hit_target=0.5, hit_measured=0.25, demand_tpm=200_000),
]
SETTINGS = {"periods": "Q1 2027..Q4 2027", "demand_growth": "10%", "target_utilization": "80%"}
DEMAND = [{"workload": "chat", "period": "2027 Q2", "hit_target": "60%"},
          {"workload": "chat", "period": "date", "demand_tpm": 20_000_000_000, "demand_unit": "tok/day",
           "hit_target": 0.6}]

# (GPUs, GPUs at the baseline) per period, from the table of the docstring (rag's GPUs are inst x 2)
HAND = {"2027-Q1": (48 + 8, 49 + 8), "2027-Q2": (51 + 8, 59 + 8), "2027-Q3": (59 + 8, 69 + 8),
        "2027-Q4": (82 + 10, 85 + 10)}
PER_GPU_MONTH = 2.5 * 730  # USD 1,825 per GPU-month


def _workbook(tmp_path):
    path = tmp_path / "finance.xlsx"
    write_input_workbook(path, MODELS, GPUS, [dict(w) for w in WORKLOADS], SETTINGS, optional={"Demand": DEMAND})
    wb = openpyxl.load_workbook(path)
    ws = wb["Demand"]
    ws.cell(1, 2).value = "Period"  # a header typed with a capital
    ws.cell(3, 2).value = dt.datetime(2027, 7, 1)  # Q3 typed as a date cell
    ws.cell(3, 2).number_format = "yyyy-mm-dd"
    for sheet in ("Workloads", "Settings", "Demand"):  # plain cells, as a fresh workbook has
        for row in wb[sheet].iter_rows(min_row=2):
            for c in row:
                c.number_format = "General" if not isinstance(c.value, dt.datetime) else c.number_format
    wb.save(path)
    return path


@pytest.fixture(scope="module")
def finance_out(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("finance")
    src = _workbook(tmp)
    out = tmp / "plan.xlsx"
    r = run_cli("run", src, "-o", out, "--no-memo", cwd=tmp)
    assert r.returncode == 0, r.stderr
    return src, out, r


def test_finance_periods_by_hand(finance_out):
    src, _out, _r = finance_out
    plan = build_plan(src)
    calc = fp.period_calc(plan)
    got = {(w, p): (d, h, g, gb) for w, p, d, h, g, gb in zip(
        calc["workload"], calc["period"], calc["demand_tpm"], calc["hit_target"], calc["gpus_needed"],
        calc["gpus_baseline"])}
    assert set(p for _, p in got) == set(HAND)  # four periods, not '2027 Q2' or a date beside them
    assert got[("chat", "2027-Q2")][:2] == pytest.approx((12_000_000, 0.6))      # 1e7 x 1.2, '60%'
    assert got[("chat", "2027-Q3")][:2] == pytest.approx((2e10 / 1440, 0.6))     # tok/day / 1,440
    assert got[("chat", "2027-Q4")][:2] == pytest.approx((17_280_000, 0.3))      # 1e7 x 1.2^3, hit_target
    assert got[("rag", "2027-Q4")][:2] == pytest.approx((266_200, 0.5))          # 2e5 x 1.1^3
    assert (got[("chat", "2027-Q1")][2:], got[("chat", "2027-Q2")][2:]) == ((48, 49), (51, 59))
    assert (got[("chat", "2027-Q3")][2:], got[("chat", "2027-Q4")][2:]) == ((59, 69), (82, 85))
    assert [got[("rag", p)][2:] for p in sorted(HAND)] == [(8, 8), (8, 8), (8, 8), (10, 10)]
    tot = fp.period_totals(plan)
    for p, g, c, gb, cb, saved in zip(tot["period"], tot["gpus_needed"], tot["cost_per_month"],
                                      tot["gpus_baseline"], tot["cost_per_month_baseline"],
                                      tot["cost_saved_per_month"]):
        assert (g, gb) == HAND[p], p
        assert c == pytest.approx(HAND[p][0] * PER_GPU_MONTH, rel=1e-12)
        assert cb == pytest.approx(HAND[p][1] * PER_GPU_MONTH, rel=1e-12)
        # savings of the hit targets against the baseline: USD 1,825 / 14,600 / 18,250 / 5,475 a month
        assert saved == pytest.approx((HAND[p][1] - HAND[p][0]) * PER_GPU_MONTH, rel=1e-12)


def test_finance_workbook_says_how_it_read_the_typing(finance_out):
    _src, out, r = finance_out
    assert "'2027 Q2' is a quarter: 2027-Q2" in r.stderr
    assert "is a date, read as its calendar quarter: 2027-Q3" in r.stderr
    assert "Traceback" not in r.stderr
    wb = openpyxl.load_workbook(out, data_only=True)
    dem = [row for row in wb["Demand"].iter_rows(min_row=2, values_only=True) if row[0]]
    # the output's Demand sheet holds what was planned (its live formulas read these cells)
    assert [(d[1], d[3]) for d in dem] == [("2027-Q2", None), ("2027-Q3", "tokens/day")]
    fbp = [r for r in sheet_values(out, "Fleet_By_Period") if r.get("period")]
    assert [(r["period"], r["gpus_needed"], r["gpus_baseline"]) for r in fbp] == [
        (p, g, gb) for p, (g, gb) in HAND.items()]


@pytest.mark.libreoffice
def test_finance_workbook_recalculated_equals_stored(finance_out, recalc):
    _src, out, _r = finance_out
    done = recalc(out)
    for sheet in ("Demand_Calc", "Fleet_By_Period"):
        stored, live = sheet_values(out, sheet), sheet_values(done, sheet)
        assert len(stored) == len(live) > 0, sheet
        for a, b in zip(stored, live):
            for k in a:
                assert same_value(a[k], b.get(k), rel=1e-9), (sheet, a.get("workload"), a.get("period"), k, a[k],
                                                               b.get(k))
    s1 = list(value_book(out, "Summary")["Summary"].values)
    s2 = list(value_book(done, "Summary")["Summary"].values)
    assert len(s1) == len(s2)
    for r1, r2 in zip(s1, s2):
        for a, b in zip(r1, r2):
            assert same_value(a, b), ("Summary", r1, r2)
    fbp = [r for r in sheet_values(done, "Fleet_By_Period") if r.get("period")]
    assert [r["cost_saved_per_month"] for r in fbp] == pytest.approx([1825.0, 14600.0, 18250.0, 5475.0], rel=1e-12)
