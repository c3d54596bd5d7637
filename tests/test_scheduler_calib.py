"""Measurements ``scheduler``: a load test at concurrency c read through the decode-first law
(planner.plan.load_tests, planner.equations.decode_first), by hand and against the independent
simulation of tests/sim_instance.py (issue 16)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.plan import load_tests
from sim_instance import simulate


def _rec(**kw):
    rec = {"isl": 4000.0, "hit": 0.0, "ttft_ms": 1178.04, "concurrency": 8, "num_requests": 320,
           "ttft_stat": "mean", "scheduler": "decode_first", "tpot_ms": None, "osl": 200.0,
           "max_num_batched_tokens": 8192}
    rec.update(kw)
    return rec


def test_decode_first_row_by_hand():
    # u = 4000 new tokens, M = 8192, c = 8, R = 320; no tpot_ms, so no decode step beside the prompts
    # (s = 0: the constant k0 is 0).
    # The burst (first wave), TTFT_j = a_j P + b_j F: request j ends in pass p_j with D_j tokens done,
    # a_j = D_j/u, b_j = p_j - D_j/u (K = 1): j=0 (1, 4000): 1, 0; j=1,2 (2, 12192): 3.048, -1.048;
    # j=3,4 (3, 20384): 5.096, -2.096; j=5,6 (4, 28576): 7.144, -3.144; j=7 (5, 32000): 8, -3.
    # Sums: a 39.576, b -15.576.
    # The steady loop (b = 7 decodes, room 8185 >= u: a prompt fits in one step, the group law of
    # planner.equations.decode_first): n = 2 prompts a step, the 7 followers in J = 4 groups of
    # 2, 2, 2, 1 (n1 = 2, nB = 4, nC = 1, r = 1). step(x) = x P + (1 - x) F + s; the head takes
    # step(1); the first group step(1) + step(2); the middle ones 2 step(2); the last step(2) + step(1).
    # Counts of P: 1 + 2 x 3 + 4 x 4 + 1 x 3 = 26; steps waited: 1 + 2 x 7 = 15;
    # a = 26/8 = 3.25, b = (15 - 26)/8 = -1.375, k0 = 15 s / 8 (osl 200: not prefill-bound).
    # The test's mean: a = (39.576 + 312 x 3.25)/320 = 3.292425,
    # b = (-15.576 - 312 x 1.375)/320 = -1.3893;
    # at P = 400, F = 100: 1316.97 - 138.93 = 1178.04 ms.
    load = load_tests.read_rows([_rec()], 8192.0)
    assert load["factor"][0] == pytest.approx(3.292425, rel=1e-12)
    assert load["fixed_coef"][0] == pytest.approx(-1.3893, rel=1e-12)
    assert load["const"][0] == 0.0
    assert load_tests.prefill_given_fixed(load, 100.0)[0] == pytest.approx(400.0, rel=1e-12)
    assert load["prefill_ms"][0] == pytest.approx(1178.04 / 3.292425, rel=1e-12)


def test_the_step_beside_the_prompts_by_hand():
    # with tpot_ms 30 the step is 30 - 7 P0 / 200 at the row's P0 (F = 0); the steady constant is
    # 15 s / 8 (15 steps waited over the cycle of 8, above), and P0 = (TTFT - k0) / a settles: P0 = (T - 15/8 (30 - 7 P0/200) x 312/320)
    # / a, linear in P0: P0 (a - 15/8 x 312/320 x 7/200) = T - 15/8 x 312/320 x 30
    t = 1178.04
    a = 3.292425
    w = 15 / 8 * 312 / 320
    p0 = (t - w * 30) / (a - w * 7 / 200)
    load = load_tests.read_rows([_rec(tpot_ms=30.0)], 8192.0)
    # (the reading settles P0 by four substitutions, each shrinking the error by w x 7/200 / a, about
    # 0.02: 2e-6 left)
    assert load["const"][0] == pytest.approx(w * (30 - 7 * p0 / 200), rel=1e-5)
    assert load["prefill_ms"][0] == pytest.approx(p0, rel=1e-5)


def test_prefill_first_rows_are_unchanged():
    # blank scheduler: the wave model as before (const 0), the same numbers as prefill_first typed
    blank = load_tests.read_rows([_rec(scheduler=None)], 8192.0)
    typed = load_tests.read_rows([_rec(scheduler="prefill_first")], 8192.0)
    assert blank["const"][0] == 0.0
    assert blank["factor"][0] == typed["factor"][0] and blank["fixed_coef"][0] == typed["fixed_coef"][0]
    # all 320 requests in waves of 8 bursts: the burst's mean, 39.576 / 8 and -15.576 / 8
    assert blank["factor"][0] == pytest.approx(39.576 / 8, rel=1e-12)
    assert blank["fixed_coef"][0] == pytest.approx(-15.576 / 8, rel=1e-12)


def test_a_single_burst_is_the_wave_under_both():
    one = load_tests.read_rows([_rec(num_requests=8)], 8192.0)
    wave = load_tests.read_rows([_rec(num_requests=8, scheduler=None)], 8192.0)
    assert one["factor"][0] == pytest.approx(wave["factor"][0], rel=1e-12) and one["const"][0] == 0.0


def test_the_blank_scheduler_is_said_where_it_matters():
    recs = [_rec(scheduler=None), _rec(), _rec(scheduler=None, num_requests=8), _rec(scheduler=None, concurrency=1)]
    load = load_tests.read_rows(recs, 8192.0)
    warns = load_tests.read_warnings(recs, [2, 3, 4, 5], load)
    said = [str(p) for p, m in warns if "scheduler is blank" in m]
    assert said == [str(p) for p, m in warns if "scheduler is blank" in m and "Measurements" in str(p)]
    assert len(said) == 1 and "2" in said[0]           # row 2 only: typed, one burst and c = 1 need no note


def test_fewer_requests_than_clients_are_said_as_the_one_wave_they_are():
    """4 requests at concurrency 8 never have more than 4 in flight: burst_coefficients reads one wave of
    4 (the same factor as a test at concurrency 4), and the note says so (red team 5: it said waves of 8)."""
    recs = [_rec(num_requests=4, scheduler="prefill_first"), _rec(num_requests=4, concurrency=4,
                                                                   scheduler="prefill_first")]
    load = load_tests.read_rows(recs, 8192.0)
    assert load["factor"][0] == pytest.approx(load["factor"][1], rel=1e-12)
    said = [m for _, m in load_tests.read_warnings(recs, [2, 3], load)]
    assert "at concurrency 8 is read as one wave of 4 requests (num_requests 4 is below the concurrency" in said[0]
    assert "waves of 8" not in said[0] and "read as waves of 4 requests" in said[1]


def test_recovers_the_simulated_prefill():
    # a vLLM-V1-like engine simulated (decode first, 2 ms client round trip; P = 400, F = 100,
    # s(b) = 10 + 0.3 b, osl 200, c = 8, 320 requests): the mean TTFT and TPOT it measures, read back
    p_true, f = 400.0, 100.0
    ttft, tpot, _b = simulate(p_true, 10.0, 0.3, 200, clients=8, n=320, budget=8192, tokens=4000, pass_fixed=f,
                              stagger=1e-7, decode_first=True, jitter=2.0, seed=5)
    measured = _rec(ttft_ms=float(np.mean(ttft)), tpot_ms=float(np.mean(tpot)))
    p_df = load_tests.prefill_given_fixed(load_tests.read_rows([measured], 8192.0), f)[0]
    p_wave = load_tests.prefill_given_fixed(load_tests.read_rows([dict(measured, scheduler=None)], 8192.0), f)[0]
    print(f"\nrecovered P: decode-first law {p_df:.1f} ms, wave {p_wave:.1f} ms (true {p_true:.0f})")
    assert p_df == pytest.approx(p_true, rel=0.12)
    assert abs(p_wave / p_true - 1) > 2 * abs(p_df / p_true - 1)


def test_a_decode_first_deployment_calibrates_end_to_end(tmp_path):
    """Load tests of a simulated vLLM-V1-like server (decode first, 2 ms client round trip) at
    concurrency 8, 80 requests each, typed with scheduler decode_first: planner run recovers the
    deployment's prefill law far closer than the same rows read with the wave (scheduler blank)."""
    from test_load_calib import B_EFF, K_ATTN, K_FFN, OSL, S0, S1, S_8B, T_FIXED, _plan
    from planner.equations.ttft_fit import ttft_law

    pts = [(4096, 0.0), (8192, 0.0), (16384, 0.0), (8192, 0.5), (16384, 0.5)]
    rows = []
    for isl, hit in pts:
        p = float(ttft_law(isl, hit, T_FIXED, K_ATTN, K_FFN, S_8B, B_EFF))
        ttft, tpot, _b = simulate(p, S0, S1, OSL, clients=8, n=80, budget=8192.0, tokens=isl * (1 - hit),
                                  pass_fixed=0.0, stagger=1e-7, decode_first=True, jitter=2.0, seed=7)
        rows.append({"model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": isl, "hit": hit,
                     "ttft_ms": float(np.mean(ttft)), "tpot_ms": float(np.mean(tpot)), "concurrency": 8,
                     "num_requests": 80, "ttft_stat": "mean", "osl": OSL, "scheduler": "decode_first"})
    (tmp_path / "df").mkdir()
    (tmp_path / "wave").mkdir()
    p_df = float(_plan(tmp_path / "df", rows).results["ttft_ms"].iat[0])
    p_wave = float(_plan(tmp_path / "wave", [dict(r, scheduler=None) for r in rows]).results["ttft_ms"].iat[0])
    # the request-alone TTFT at the workload's shape (6000 tokens, hit 0.3), by the law the tests came from
    true = float(ttft_law(6000, 0.3, T_FIXED, K_ATTN, K_FFN, S_8B, B_EFF))
    print(f"\nrequest-alone TTFT at 6000 tokens, 30% hit: true {true:.1f} ms, decode-first reading {p_df:.1f}, "
          f"wave reading {p_wave:.1f}")
    # measured: true 329 ms, decode-first reading 305.5 ms (-7.2%), wave 196 ms (-41%). The two rows of
    # half a pass (4096 new tokens: one whole prompt beside the 7 decodes, not two) are read with the way
    # from the burst to one prompt a step (planner.equations.decode_first.transient_cycles); before it,
    # with the train for every request after the burst, 37% high per row and the reading 257 ms (-22%)
    assert p_df == pytest.approx(true, rel=0.10)
    assert abs(p_wave / true - 1) > 1.5 * abs(p_df / true - 1)
