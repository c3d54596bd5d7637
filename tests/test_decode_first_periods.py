"""Demand_Calc's per-period sizing of decode-first workloads (issue 16): the workload's scheduler is copied into
each period row as text. It was copied as a number (planner.finance.periods, tb.number_or_blank), i.e. always
blank, so a decode_first workload at a fixed concurrency was sized per period as a prefill-first burst
(here: 2,025 ms against a 2,000 ms target, "unreachable") while Results read the steady loop (1,769 ms, met).
A decode_first workload planned open loop is sized per period by the decode-first search, as Results (its
Demand_Calc row's count from the DF_Search_Periods sheet, written only when the plan has such a row; a period
at today's demand gets Results' count), recalculated by LibreOffice and by a live edit of its target.
The engine of tests/test_decode_first_results.py (P = 300 ms, F = 75, u = 2000, M = 8192, s0 = 20, s1 = 0.3).
"""

from __future__ import annotations

import math

import openpyxl
import pytest

from conftest import edit_output, header_index, value_book

from planner.finance import periods as pr
from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook
from planner.workbook.writer import write_output
from test_decode_first_results import BASE, GPUS, MODELS, TPM_10

WORKLOADS = [
    dict(workload="df-conc", demand_tpm=TPM_10, ttft_slo_ms=2000, concurrency=8, **BASE),
    dict(workload="blank-conc", demand_tpm=TPM_10, ttft_slo_ms=2000, concurrency=8,
         **{k: v for k, v in BASE.items() if k != "scheduler"}),
    dict(workload="df-open", demand_tpm=TPM_10, ttft_slo_ms=500, slo_percentile="mean", **BASE),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("dfper")
    src = d / "in.xlsx"
    # one period at today's demand; a coarse hit sweep (3 points, hit 0, 0.5, 1: the sweep's search is
    # test_decode_first_sweep's; no test here reads Sensitivity_Hit or DF_Search_Hit)
    write_input_workbook(src, MODELS, GPUS, WORKLOADS, {"periods": "2027-Q1", "hit_step": 0.5})
    plan = build_plan(src)
    out = d / "out.xlsx"
    write_output(plan, out)
    return plan, out


def test_a_period_at_todays_demand_is_sized_as_results(built):
    plan, _out = built
    calc = pr.period_calc(plan).set_index("workload")
    r = plan.results.set_index("workload")
    assert calc.loc["df-conc", "scheduler"] == "decode_first"
    for name in ("df-conc", "blank-conc"):
        for col in ("ttft_at_c_slo_ms", "instances_throughput"):
            assert float(calc.loc[name, col]) == pytest.approx(float(r.loc[name, col]), rel=1e-12), (name, col)
        for col in ("instances_ttft",):
            a, b = float(calc.loc[name, col]), float(r.loc[name, col])
            assert a == b or (math.isnan(a) and math.isnan(b)), (name, col)
        assert float(calc.loc[name, "instances"]) == float(r.loc[name, "instances_needed"])
    # the steady loop meets the target, the burst (what the blank scheduler reads) does not
    assert float(calc.loc["df-conc", "ttft_at_c_slo_ms"]) < 2000 < float(calc.loc["blank-conc", "ttft_at_c_slo_ms"])
    assert math.isnan(float(calc.loc["df-conc", "instances_ttft"]))
    # the open-loop decode-first row: the search, as Results (7; the request-alone closed form gives 6)
    assert float(calc.loc["df-open", "instances_ttft"]) == 7 == float(r.loc["df-open", "instances_ttft"])
    assert float(calc.loc["df-open", "instances_ttft_baseline"]) == 7 == float(calc.loc["df-open", "instances"])


@pytest.mark.libreoffice
def test_libreoffice_recalculates_demand_calc(built, recalc, tmp_path):
    _plan, out = built
    # a live edit: df-open's target from 500 to 420 ms (Workloads row 4), in the output and in a copy of its input
    def target(wb):
        ws = wb["Workloads"]
        assert ws.cell(4, 1).value == "df-open"
        ws.cell(4, header_index(ws)["ttft_slo_ms"]).value = 420

    edited = edit_output(out, tmp_path / "edited.xlsx", target, "Workloads")
    got, got_e = recalc(out, edited)
    fresh = pr.period_calc(build_plan(edited)).set_index("workload")
    have = value_book(got_e, "Demand_Calc")["Demand_Calc"]
    h = header_index(have)
    row = next(r for r in have.iter_rows(min_row=2, values_only=True) if r[h["workload"] - 1] == "df-open")
    for name in ("instances_ttft", "instances", "instances_baseline"):
        assert float(row[h[name] - 1]) == float(fresh.loc["df-open", name]), name
    assert float(fresh.loc["df-open", "instances_ttft"]) > 7
    for sheet in ("Demand_Calc", "Fleet_By_Period", "DF_Search_Periods"):
        want, have = value_book(out, sheet)[sheet], value_book(got, sheet)[sheet]
        for rw, rh in zip(want.iter_rows(values_only=True), have.iter_rows(values_only=True)):
            for a, b in zip(rw, rh):
                if isinstance(a, (int, float)) and isinstance(b, (int, float)):
                    assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9), (sheet, rw[0], a, b)
                else:
                    assert (a in (None, "")) == (b in (None, "")) and (a in (None, "") or a == b), (sheet, rw[0], a, b)
