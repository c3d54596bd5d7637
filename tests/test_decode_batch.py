"""Issue 16 follow-up (notes/16.md, "Found after the merge"): a decode calibrated from a load test
holds at the test's concurrency, and no decode step is faster than the HBM roofline.

Before: the throughput- or TPOT-pinned ``t_decode_ms`` (per-request chip time at concurrency c)
was read by the step law at the row's ``batch`` (blank: 1), so the analyst's 70B on 4xH100 at
concurrency 8, TPOT 9.2 ms, gave a 1.02 ms step and tpot_load_ms 1.11 ms. Every expected number
below is worked by hand from the inputs (comments), nothing from planner.equations.queueing.
"""

from __future__ import annotations

import math

import pytest

from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook

GIB = 2 ** 30
GPUS = [{"gpu": "H100", "hbm_gib": 80, "pcie_gen": 5, "hbm_tbps": 3.35, "bf16_tflops": 989.4}]

# ----------------------------------------------------------------------------- the analyst's case
M70 = [{"model": "L70", "layers": 80, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2, "params_b": 70}]
W70 = dict(model="L70", gpu="H100", tp=4, isl=2000, osl=200, hit_target=0.0, t_attn0_ms=30.0, t_ffn0_ms=170.0)
MEAS70 = [{"model": "L70", "gpu": "H100", "tp": 4, "isl": n, "osl": 200, "hit": 0.0, "ttft_ms": t,
           "concurrency": 8, "num_requests": 8, "tpot_ms": 9.2} for n, t in ((1000, 400.0), (2000, 900.0))]
# by hand: S = 2 (K,V) x 80 layers x 8 heads x 128 x 2 B / tp 4 = 81,920 B per token per GPU
S70 = 2 * 80 * 8 * 128 * 2 / 4
W70_B = 70e9 * 2 / 4                                   # weights per GPU: 35e9 B
KV8_B = 8 * (2000 + 200 / 2) * S70                     # 8 requests x 2,100 tokens held on average x S
FLOOR8 = (W70_B + KV8_B) / 3.35e12 * 1000              # 10.8582 ms: no step over 8 can be faster
P70 = 30.0 + 170.0                                     # typed breakdown at hit 0: ttft_ms = 200 ms
HOLD8 = 8 - (1 + 4 * 10192 / 2000 + 3 * 8) / 8         # the burst's hold-up of a decode [prefills], below
W_GIB, KV_GIB = W70_B / GIB, KV8_B / GIB
S0 = FLOOR8 * W_GIB / (W_GIB + KV_GIB)                 # weights' share of the step (bytes split)
S1 = (FLOOR8 - S0) / 8


@pytest.fixture(scope="module")
def analyst(tmp_path_factory):
    path = tmp_path_factory.mktemp("dec") / "analyst.xlsx"
    wls = [dict(workload="open", demand_tpm=5_000_000, tpot_slo_ms=9.5, **W70),
           dict(workload="at-c8", concurrency=8, demand_tpm=5_000_000, **W70)]
    write_input_workbook(path, M70, GPUS, wls, {}, optional={"Measurements": MEAS70})
    return build_plan(path)


def test_calibrated_decode_holds_at_the_test_concurrency(analyst):
    res, r = analyst.resolved, analyst.results
    assert list(res["t_decode_batch"]) == [8.0, 8.0]        # filled from Measurements concurrency
    assert r["step_floor_ms"].iat[0] == pytest.approx(FLOOR8, rel=1e-12)
    # the measured step at c=8 is below 9.2 ms (< FLOOR8): the step is the roofline, not 1.02 ms
    assert r["decode_step_ms"].iat[0] == pytest.approx(FLOOR8, rel=1e-12)
    assert r["step_weights_ms"].iat[0] == pytest.approx(S0, rel=1e-12)
    assert r["step_kv_ms"].iat[0] == pytest.approx(S1, rel=1e-12)
    # at the test's own concurrency (a burst of 8 prompts of 2,000 tokens in passes of 8,192, F = 0): the
    # first alone (P), requests 2-5 and 192 tokens of 6 in pass 2 (done 10,192 tokens: 5.096 P), 6-8 in
    # pass 3 (16,000: 8 P); mean TTFT (1 + 4 x 5.096 + 3 x 8) / 8 P = 5.673 P. The wave's 8 P less it holds
    # each decode up (Little: cycle 8 / X = TTFT + osl TPOT): s0 + 8 s1 + 2.327 P / osl = 10.858 + 2.327 ms
    # (the serial 7 P / 2 read 3.5 ms)
    assert HOLD8 == pytest.approx(8 - 5.673, abs=1e-12)
    assert r["ttft_load_ms"].iat[1] == pytest.approx((8 - HOLD8) * P70, rel=1e-12)
    assert r["tpot_load_ms"].iat[1] == pytest.approx(FLOOR8 + HOLD8 * P70 / 200, rel=1e-12)
    assert r["tpot_load_ms"].iat[1] > 9.2


def test_a_tpot_target_the_test_breaks_is_not_met(analyst):
    r = analyst.results
    # one request alone steps at s0 + s1 = 10.47 ms > the 9.5 ms target: no count meets it
    assert S0 + S1 > 9.5
    assert r["binding"].iat[0] == "unreachable: tpot_slo"
    assert r["tpot_load_ms"].iat[0] > 9.5


def test_the_raised_step_is_a_located_warning(analyst):
    text = [str(w) for w in analyst.warnings if "HBM bandwidth" in str(w) and "t_decode_batch" in str(w)]
    assert len(text) == 2 and "Workloads row 2" in text[0] and f"{FLOOR8:,.3g} ms" in text[0]


# ----------------------------------------------------------------------------- measured TPOT reproduced
M8 = [{"model": "L8", "layers": 32, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2, "params_b": 8}]
MEAS8 = [{"model": "L8", "gpu": "H100", "tp": 1, "isl": 1024, "osl": 200, "hit": 0.0, "ttft_ms": 150.0,
          "concurrency": 8, "num_requests": 8},
         {"model": "L8", "gpu": "H100", "tp": 1, "isl": 4096, "osl": 200, "hit": 0.0, "ttft_ms": 1200.0,
          "concurrency": 8, "num_requests": 8, "tpot_ms": 25.0}]


def test_tpot_at_the_test_concurrency_reproduces_the_measured_tpot(tmp_path):
    # the same shape as the tpot row (isl 4096, osl 200, hit 0) at its concurrency 8: two prompts a pass of
    # 8,192 (F = 0), so the first tokens come at P (the first alone), 3P (2-3), 5P (4-5), 7P (6-7), 8P (8),
    # mean 39/8 P, and the wave's 8 P less it, 25/8 P, holds each decode up: the calibration reads
    # s(8) = 25 - (25/8) P / 200 off the measured TPOT, and the burst gives back s(8) + (25/8) P / 200
    # = 25 ms whatever the fitted P is (it read the serial 7 P / 2 before). Floor: (16e9 + 8 x 4196 x 131072) / 3.35e12 s = 6.09 ms < s(8).
    path = tmp_path / "in.xlsx"
    wl = dict(workload="w", model="L8", gpu="H100", tp=1, isl=4096, osl=200, hit_target=0.0, batch=32)
    write_input_workbook(path, M8, GPUS, [dict(concurrency=8, **wl), dict(wl, workload="open")], {},
                         optional={"Measurements": MEAS8})
    plan = build_plan(path)
    r = plan.results
    assert list(plan.resolved["t_decode_batch"]) == [8.0, 8.0]     # not the typed batch 32
    floor = (16e9 + 8 * 4196 * 131072) / 3.35e12 * 1000
    assert r["step_floor_ms"].iat[0] == pytest.approx(floor, rel=1e-12) and floor < 20
    assert r["tpot_load_ms"].iat[0] == pytest.approx(25.0, rel=1e-9)
    # the chip time per request is the calibrated one (osl x s(8) / 8), unchanged by the batch
    p = r["ttft_ms"].iat[0]
    assert plan.resolved["t_decode_ms"].iat[0] == pytest.approx(200 * (25.0 - 25 / 8 * p / 200) / 8, rel=1e-9)
    assert not math.isnan(r["tpot_load_ms"].iat[1])


@pytest.mark.libreoffice
def test_libreoffice_recalculates_the_step_law(analyst, recalc, tmp_path):
    from planner.workbook.writer import write_output
    from test_recalc import compare_all

    out = tmp_path / "analyst-out.xlsx"
    write_output(analyst, out)
    again = recalc(out)
    assert compare_all(again, analyst) > 0                       # every formula cell against its stored value
    import openpyxl
    from conftest import header_index, value_book
    wb = value_book(again, "Resolved", "Results")
    ws, wr = wb["Resolved"], wb["Results"]
    h, hr = header_index(ws), header_index(wr)
    assert [ws.cell(i, h["t_decode_batch"]).value for i in (2, 3)] == [8, 8]
    assert wr.cell(2, hr["step_floor_ms"]).value == pytest.approx(FLOOR8, rel=1e-9)
    assert wr.cell(2, hr["decode_step_ms"]).value == pytest.approx(FLOOR8, rel=1e-9)
    assert wr.cell(3, hr["tpot_load_ms"]).value == pytest.approx(FLOOR8 + HOLD8 * P70 / 200, rel=1e-9)
    assert wr.cell(2, hr["binding"]).value == "unreachable: tpot_slo"
