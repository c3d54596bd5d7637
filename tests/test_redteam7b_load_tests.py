"""Issue 16, red team 7b: load tests typed as an analyst types them that planned silently wrong.

Each test fails on the code before it (main 8a63f7a).

* a test run with fewer requests than its concurrency (``vllm bench serve --max-concurrency 16
  --num-prompts 8``: 8 were in flight, never 16) held its decode at batch 16: the step planned twice
  the measured one.
"""

from __future__ import annotations

import pytest

from test_load_calib import OSL, S0, S1, _plan, _sim_rows


def test_fewer_requests_than_concurrency_hold_the_decode_at_the_requests(tmp_path):
    # the simulated deployment at 8 in flight, one wave of 8 requests, with its throughput; typed once
    # with its true concurrency 8 and once as run, --max-concurrency 16 with 8 prompts
    rows8 = _sim_rows(8, 8, with_throughput=True)
    rows16 = [dict(r, concurrency=16) for r in rows8]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for plan in (_plan(tmp_path / "a", rows8), _plan(tmp_path / "b", rows16)):
        r, res = plan.resolved.iloc[0], plan.results.iloc[0]
        # hand calc: the decode step over the 8 in flight s(8) = s0 + 8 s1 = 10 + 1.6 = 11.6 ms, so the
        # share per request t_decode = osl s(8) / 8 = 100 x 11.6 / 8 = 145 ms, held at batch 8
        assert S0 + 8 * S1 == pytest.approx(11.6) and OSL == 100
        assert r["t_decode_ms"] == pytest.approx(145.0, rel=1e-6)
        assert r["t_decode_batch"] == 8     # was 16 for the second: the step 145 x 16 / 100 = 23.2 ms
        assert res["decode_step_ms"] == pytest.approx(11.6, rel=1e-6)


# ----------------------------------------------------------------------------- TPOT at a fixed concurrency
import numpy as np  # noqa: E402

from planner.plan.build import build_plan  # noqa: E402
from planner.workbook.input_sheets import write_input_workbook  # noqa: E402
from sim_instance import simulate  # noqa: E402

M8 = [{"model": "L8", "layers": 32, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2, "params_b": 8}]
G8 = [{"gpu": "H100", "hbm_gib": 80, "pcie_gbps": 50, "hbm_tbps": 3.35}]


@pytest.mark.parametrize("sched,isl,c,osl,tol", [
    ("prefill_first", 1024, 8, 100, 0.002),   # 8 prompts a pass of 8,192: serial law +14.9%
    ("prefill_first", 6000, 16, 100, 0.002),  # serial +5.7%
    ("decode_first", 1024, 8, 100, 0.03),     # serial +14.9%; now -1.8%
    ("decode_first", 6000, 16, 100, 0.03),    # serial -35.9%; now +1.3%
])
def test_tpot_at_a_fixed_concurrency_against_the_simulation(tmp_path, sched, isl, c, osl, tol):
    """The independent simulation (tests/sim_instance.py: passes of 8,192 new tokens, F = 0; decode first
    with a 0-2 ms client round trip) of the workload's own closed loop, 40 waves. The planner's TPOT at a
    fixed concurrency is what a client's cycle c / X leaves after its TTFT (Little's law over the loop);
    the serial burst s(c) + (c-1) P / (2 osl) it used missed by the amounts in the comments. Tolerances:
    prefill first the waves are deterministic (0.2%: the simulation's 1e-7 ms stagger); decode first 3%
    (the planner's own X and TTFT of the steady loop are within 1-2% of the simulation's)."""
    wl = dict(workload="w", model="L8", gpu="H100", tp=1, isl=isl, osl=osl, hit_target=0, t_attn0_ms=isl * 0.01,
              t_ffn0_ms=isl * 0.06, t_decode_ms=osl * 12.0 / 8, t_decode_batch=8, concurrency=c, scheduler=sched,
              batch=c)
    path = tmp_path / "in.xlsx"
    write_input_workbook(path, M8, G8, [wl], {})
    r = build_plan(path).results.iloc[0]
    p, s0, s1 = r["ttft_ms"], r["step_weights_ms"], r["step_kv_ms"]
    assert p == pytest.approx(isl * 0.07, rel=1e-12)       # request-alone: attention + FFN as typed
    _ttft, tpot, _b = simulate(p, s0, s1, osl, clients=c, n=40 * c, tokens=isl, budget=8192.0, pass_fixed=0.0,
                               stagger=1e-7, decode_first=sched == "decode_first",
                               jitter=2.0 if sched == "decode_first" else 0.0)
    assert r["tpot_load_ms"] == pytest.approx(float(np.mean(tpot)), rel=tol)


def test_decode_from_a_tpot_alone_at_concurrency_is_the_step(tmp_path):
    # the simulated deployment's tests at concurrency 8, one wave, TPOT but no throughput: the calibration
    # takes the burst's hold-up off the TPOT (the inverse of the planner's TPOT at c, Little's law); by hand
    # the decode per request is osl s(8) / 8 = 100 x (10 + 0.2 x 8) / 8 = 145 ms at batch 8. The serial
    # hold-up (c-1) P / (2 osl) took too much off where prompts share a pass: 138.3 ms (and 107.5 ms over
    # 20 requests)
    from test_load_calib import PTS, T_FIXED, K_ATTN, K_FFN, S_8B, B_EFF, SIM
    from planner.equations.ttft_fit import ttft_law

    for reqs in (8, 24):
        rows = []
        for isl, hit in PTS:
            p = float(ttft_law(isl, hit, T_FIXED, K_ATTN, K_FFN, S_8B, B_EFF))
            ttft, tpot, _b = simulate(p, S0, S1, OSL, clients=8, n=reqs, tokens=isl * (1 - hit), **SIM)
            rows.append({"model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": isl, "hit": hit,
                         "ttft_ms": float(np.mean(ttft)), "concurrency": 8, "num_requests": reqs, "osl": OSL,
                         "tpot_ms": float(np.mean(tpot))})
        d = tmp_path / str(reqs)
        d.mkdir()
        r = _plan(d, rows).resolved.iloc[0]
        assert r["t_decode_batch"] == 8
        assert r["t_decode_ms"] == pytest.approx(145.0, rel=1e-3)


def test_a_throughput_typed_as_requests_and_duration_pins_the_decode(tmp_path):
    # vllm bench serve prints "Successful requests" and "Benchmark duration (s)" beside its request
    # throughput, which is their quotient; an analyst who pasted the two (duration_s is a Measurements
    # column) but not the throughput line had the run's throughput ignored and the decode estimated by the
    # roofline. By hand (test_load_calib.test_throughput_pins_the_decode_chip_time): a wave of 8 takes
    # 8 P + osl s(8), so the decode per output token is s(8) / 8 = (10 + 0.2 x 8) / 8 = 1.45 ms: 145 ms
    rows = _sim_rows(8, 16, with_throughput=True)
    for r in rows:
        r["duration_s"] = r["num_requests"] / r.pop("request_throughput")
    r = _plan(tmp_path, rows).resolved.iloc[0]
    assert r["t_decode_ms"] == pytest.approx(145.0, rel=1e-6)
    assert r["t_decode_batch"] == 8


def test_the_tpot_check_that_disagrees_with_tpot_load_is_said(tmp_path):
    """At a fixed concurrency instances_tpot still reads the serial burst, s(c) + (c-1) P / (2 osl), while
    tpot_load_ms is the loop's cycle (Little's law): a target between the two gets a located warning (lead,
    after red team 7b). Prefill first, 8 prompts of 1,024 tokens sharing passes of 8,192."""
    wl = dict(workload="w", model="L8", gpu="H100", tp=1, isl=1024, osl=100, hit_target=0, t_attn0_ms=10.24,
              t_ffn0_ms=61.44, t_decode_ms=150.0, t_decode_batch=8, concurrency=8, scheduler="prefill_first",
              batch=8, demand_tpm=1e6)
    path = tmp_path / "probe.xlsx"
    write_input_workbook(path, M8, G8, [wl], {})
    r = build_plan(path).results.iloc[0]
    p, s0, s1, little = r["ttft_ms"], r["step_weights_ms"], r["step_kv_ms"], r["tpot_load_ms"]
    serial = s0 + s1 * 8 + 7 * p / (2 * 100)      # by hand: P = 71.68 ms, so the hold-up alone is 2.51 ms a token
    assert p == pytest.approx(71.68) and serial > little * 1.05
    slo = (serial + little) / 2
    path2 = tmp_path / "in.xlsx"
    write_input_workbook(path2, M8, G8, [dict(wl, tpot_slo_ms=slo)], {})
    plan = build_plan(path2)
    assert str(plan.results["binding"].iat[0]).startswith("unreachable")      # the check's verdict
    said = [w.message for w in plan.warnings if "TPOT target's check" in w.message]
    assert len(said) == 1 and f"reads the serial burst, {serial:,.1f} ms" in said[0] and "unreachable" in said[0]
    assert f"tpot_load_ms, the loop's own cycle, is {little:,.1f} ms" in said[0]
    # a target above both: no such warning
    path3 = tmp_path / "in3.xlsx"
    write_input_workbook(path3, M8, G8, [dict(wl, tpot_slo_ms=serial * 2)], {})
    assert not [w for w in build_plan(path3).warnings if "TPOT target's check" in w.message]
