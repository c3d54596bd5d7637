"""The decode time a load test's measured throughput pins, with the wave's prefills packed into
forward passes (issue 16; planner.plan.load_tests.decode_per_token).

A closed loop of c clients completes a wave every ``T + osl s(c)``, ``T`` the GPU time of the wave's
prefills; with passes of ``M`` new tokens and a fixed cost ``F`` per pass, ``T`` is less than the
serial ``c P``. The decode share per output token and request is ``d = (1000/X - T/c) / osl``; the
serial statement ``(1000/X - P) / osl`` overstated the prefill's share and understated the decode, so
the planner's own closed-loop throughput at the test's concurrency came out above the measured one.

Every number BY HAND (plain arithmetic, nothing from planner.equations):
the deployment of tests/test_load_workbook.py (8B on one H100), Measurements at concurrency 1 on the
law TTFT = 100 + 0.075 isl [ms] (t_fixed F = 100 ms, P(4000) = 400 ms), and a load test at
concurrency 8, isl 4000, osl 200, 8 requests, measured 1.6 requests/s, max_num_batched_tokens 8192.

The wave (u = 4000 new tokens, M = 8192): request 0 runs alone in pass 1; request j >= 1 ends in pass
p_j = 1 + ceil(4000 j / 8192) with D_j = min(4000 + 8192 (p_j - 1), 32000) tokens done; V = P - F = 300;
TTFT_j = 100 p_j + 0.075 D_j:
  j=0: 400; j=1,2: 200 + 914.4 = 1114.4; j=3,4: 300 + 1528.8 = 1828.8; j=5,6: 400 + 2143.2 = 2543.2;
  j=7: 500 + 2400 = 2900, so T = 2900 ms (serial: 8 x 400 = 3200) and the mean TTFT is 14,272.8 / 8 =
  1,784.1 ms (the load test's ttft_ms, so that the fit is exact).
Decode: 1000 / 1.6 = 625 ms per request; d = (625 - 2900 / 8) / 200 = 262.5 / 200 = 1.3125 ms, so
t_decode_ms = 200 x 1.3125 = 262.5 at t_decode_batch 8 (serial statement: (625 - 400) / 200 x 200 = 225).
Back: the step at batch 8 is 262.5 x 8 / 200 = 10.5 ms and the closed loop completes 8 requests every
2900 + 200 x 10.5 = 5000 ms: 1.6 requests/s, the measured throughput (with 225: 8000 / 4700 = 1.702).

And against the independent simulation of tests/sim_instance.py (which shares no code with the
planner): its closed loop's throughput, read back, gives its own decode step's share per request.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.plan import load_tests
from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook
from sim_instance import simulate
from test_load_workbook import GPUS, MODELS

MEAN_C8 = (400 + 2 * 1114.4 + 2 * 1828.8 + 2 * 2543.2 + 2900) / 8
assert math.isclose(MEAN_C8, 1784.1)


def _plan(tmp_path, x=1.6):
    meas = [dict(model="L8", gpu="H100", tp=1, isl=i, hit=0, ttft_ms=100 + 0.075 * i) for i in (2000, 4000, 8000)]
    meas.append(dict(model="L8", gpu="H100", tp=1, isl=4000, hit=0, osl=200, ttft_ms=MEAN_C8, ttft_stat="mean",
                     concurrency=8, num_requests=8, request_throughput=x, max_num_batched_tokens=8192))
    wl = [dict(workload="w", model="L8", gpu="H100", tp=1, isl=4000, osl=200, hit_target=0, concurrency=8,
               max_num_batched_tokens=8192)]
    src = tmp_path / "in.xlsx"
    write_input_workbook(src, MODELS, GPUS, wl, {}, optional={"Measurements": meas})
    plan = build_plan(src)
    return {**plan.resolved.set_index("workload").loc["w"].to_dict(), **plan.results.set_index("workload").loc["w"].to_dict()}


def test_throughput_pins_the_decode_through_the_packed_wave(tmp_path):
    r = _plan(tmp_path)
    assert math.isclose(float(r["t_fixed_ms"]), 100.0, rel_tol=1e-6)
    assert math.isclose(float(r["ttft_ms"]), 400.0, rel_tol=1e-6)
    assert float(r["t_decode_batch"]) == 8
    assert math.isclose(float(r["t_decode_ms"]), 262.5, rel_tol=1e-6)        # serial statement: 225
    assert math.isclose(float(r["decode_step_ms"]), 10.5, rel_tol=1e-6)
    # the planner's closed-loop throughput at the test's concurrency is the measured one
    assert math.isclose(float(r["concurrency_rps"]), 1.6, rel_tol=1e-6)


@pytest.mark.parametrize("P,F,u,c,R", [(400.0, 100.0, 4000.0, 8, 32), (300.0, 40.0, 1500.0, 16, 48),
                                       (900.0, 0.0, 9000.0, 4, 12), (250.0, 60.0, 2000.0, 1, 5)])
def test_the_decode_statement_inverts_the_simulated_closed_loop(P, F, u, c, R):
    # the independent simulation (tests/sim_instance.py): c clients, R requests, prefills packed into passes
    # of 8192 tokens with a fixed cost F per pass, then osl decode steps of s0 + s1 b; its measured
    # throughput, read back through decode_per_token, gives the step's share per request s(c) / c
    s0, s1, osl = 10.0, 0.2, 50
    _t, _tp, _b, end = simulate(P, s0, s1, osl, clients=c, n=R, budget=8192.0, tokens=u, pass_fixed=F,
                                stagger=1e-7, with_end=True)
    rec = dict(isl=u, hit=0.0, osl=osl, concurrency=c, request_throughput=R * 1000.0 / end)
    d, warns, at = load_tests.decode_per_token([rec], [2], np.array([P]), F, np.array([8192.0]))
    assert not warns and at == c
    assert d == pytest.approx((s0 + s1 * c) / c, rel=1e-6)
    # the serial statement (1000/X - P)/osl misses it whenever the wave packs prompts with F > 0
    serial = (end / R - P) / osl
    if c > 1 and F > 0 and u < 8192:
        assert abs(serial / ((s0 + s1 * c) / c) - 1) > 0.05
