"""The tornado gains the mean TTFT at the planned load (slofix item 5): each driver moved low and
high by the 20% swing, the planned instance count held, through the M/G/1 prefill queue.

By hand on tests/test_load_workbook.py's "slo-ttft" row (P = 100 + 300 = 400 ms alone, D = 400 ms,
decode step 32 ms, 21 instances for 23.81 requests/s: lambda = 1.1338 requests/s per instance).
"""

from __future__ import annotations

import math

import openpyxl
import pytest

from conftest import header_index, value_book
from test_load_workbook import D, LAM_TOTAL, N_TP, N_TTFT, STEP


def _ttft(p, d=D, step=STEP, n=max(N_TP, N_TTFT)):   # P + E[W], E[W] = λ(P² + D s)/(2(1-λP)), λ per ms
    lam = LAM_TOTAL / n / 1000
    return p + lam * (p * p + d * step) / (2 * (1 - lam * p))


EXPECTED = {   # driver -> (ttft low, ttft high)
    "t_attn0_ms": (_ttft(400 - 20), _ttft(400 + 20)),          # t_attn0 100 -> 80 / 120
    "t_ffn0_ms": (_ttft(400 - 60), _ttft(400 + 60)),           # t_ffn0 300 -> 240 / 360
    # D 400 -> 320 / 480 moves the step too (s = D B / osl): 25.6 / 38.4 ms
    "t_decode_ms": (_ttft(400, 320, 25.6), _ttft(400, 480, 38.4)),
    "hit_target": (_ttft(400), _ttft(400)),                    # hit 0 moved by 20% stays 0
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from planner.plan.build import build_plan
    from planner.workbook.writer import write_output
    from test_hand_calc import write_input
    from test_load_workbook import GPUS, MODELS, WORKLOADS

    d = tmp_path_factory.mktemp("tornado")
    src = d / "in.xlsx"
    write_input(src, MODELS, GPUS, WORKLOADS[:1])
    plan = build_plan(src)
    out = d / "out.xlsx"
    write_output(plan, out)
    return plan, out


def test_tornado_ttft_at_load_by_hand(built):
    plan, _ = built
    t = plan.sens.tornado.set_index("driver")
    assert t["ttft_load_base"].iloc[0] == pytest.approx(_ttft(400), rel=1e-12)
    for driver, (lo, hi) in EXPECTED.items():
        assert t.loc[driver, "ttft_load_low"] == pytest.approx(lo, rel=1e-12), driver
        assert t.loc[driver, "ttft_load_high"] == pytest.approx(hi, rel=1e-12), driver
    assert EXPECTED["t_ffn0_ms"][1] > EXPECTED["t_attn0_ms"][1] > _ttft(400)   # the larger part moves TTFT more


def test_tornado_sheet_stores_them_live(built):
    plan, out = built
    ws = openpyxl.load_workbook(out)["Tornado"]
    h = header_index(ws)
    f = ws.cell(2, h["ttft_load_low"]).value
    assert f.startswith("=Tornado_Calc!") and ws.cell(2, h["ttft_load_base"]).value.startswith("=Results!")
    cached = value_book(out, "Tornado")["Tornado"]
    row = {cached.cell(r, h["driver"]).value: r for r in range(2, cached.max_row + 1)}
    assert cached.cell(row["t_ffn0_ms"], h["ttft_load_high"]).value == pytest.approx(EXPECTED["t_ffn0_ms"][1],
                                                                                      rel=1e-12)


@pytest.mark.libreoffice
def test_libreoffice_recalculates_the_tornado_ttft(built, recalc):
    from test_recalc import compare_all

    plan, out = built
    again = recalc(out)
    assert compare_all(again, plan) > 0            # Tornado and Tornado_Calc included
    ws = value_book(again, "Tornado")["Tornado"]
    h = header_index(ws)
    row = {ws.cell(r, h["driver"]).value: r for r in range(2, ws.max_row + 1)}
    for driver, (lo, hi) in EXPECTED.items():
        assert ws.cell(row[driver], h["ttft_load_low"]).value == pytest.approx(lo, rel=1e-9)
        assert ws.cell(row[driver], h["ttft_load_high"]).value == pytest.approx(hi, rel=1e-9)
    assert not math.isnan(ws.cell(2, h["ttft_load_base"]).value)
