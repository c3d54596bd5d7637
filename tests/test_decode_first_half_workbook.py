"""The decode-first steady law where one whole prompt fits beside the decodes but two do not
(planner.equations.decode_first, issue 16), in the workbook: Results computed BY HAND below, then
recalculated by LibreOffice. The shape is tests/test_scheduler_workbook.py's (Llama-3.1-8B on one H100,
isl 4000, osl 200, P = 400 ms, F = 0, decode step S0 + S1 b) with the server's budget lowered to
max_num_batched_tokens 6000, so that at c = 8 one 4000-token prompt fits beside the 7 decodes
(room 5993) and two do not: the steady state is one prompt a step.
"""

from __future__ import annotations

import math

import pytest

from conftest import header_index, value_book
from planner.plan.build import build_plan
from planner.workbook.writer import write_output
from test_hand_calc import write_input
from test_load_workbook import BASE, GPUS, MODELS, S0, S1

WORKLOADS = [dict(workload="df-half", demand_tpm=6_000_000, concurrency=8, ttft_slo_ms=2000, scheduler="decode_first",
                  max_num_batched_tokens=6000, **BASE)]

# by hand: b = 7, s(7) = S0 + 7 S1, step(1) = s(7) + F + V = s(7) + 400 (F = 0, V = P = 400 ms);
# the head step(1), each of the 7 followers the step in progress and its own, 2 step(1):
# mean = (step(1) + 7 x 2 step(1)) / 8 = 15/8 step(1); p90: the value at position ceil(0.9 x 7) = 7, 2 step(1)
STEP1 = S0 + 7 * S1 + 400.0
MEAN = 15 / 8 * STEP1
P90 = 2 * STEP1
EXPECTED = dict(ttft_steady_ms=MEAN, ttft_steady_p90_ms=P90, ttft_load_ms=MEAN, ttft_load_p90_ms=P90)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("half")
    src = d / "in.xlsx"
    write_input(src, MODELS, GPUS, WORKLOADS)
    plan = build_plan(src)
    out = d / "out.xlsx"
    write_output(plan, out)
    return plan, out


def test_hand_numbers():
    # s(16) = S0 + 16 S1 = 32 ms (tests/test_load_workbook.py), so s(7) lies between S0 and 32
    assert S0 < S0 + 7 * S1 < 32.0 and MEAN == pytest.approx(1.875 * STEP1)


def test_results_match_hand_calculation(built):
    plan, _out = built
    r = plan.results.set_index("workload").loc["df-half"]
    assert float(r["ttft_ms"]) == 400.0
    for col, v in EXPECTED.items():
        assert math.isclose(float(r[col]), v, rel_tol=1e-9), (col, r[col], v)


@pytest.mark.libreoffice
def test_libreoffice_recalculates_the_half_budget_cells(built, recalc):
    plan, out = built
    from test_recalc import compare_all
    again = recalc(out)
    assert compare_all(again, plan) > 0
    ws = value_book(again, "Results")["Results"]
    h = header_index(ws)
    for col, v in EXPECTED.items():
        assert math.isclose(float(ws.cell(2, h[col]).value), v, rel_tol=1e-9), (col, ws.cell(2, h[col]).value, v)
