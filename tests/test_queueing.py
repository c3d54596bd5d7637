"""The closed forms of planner.equations.queueing against an independent discrete-event simulation
(tests/sim_instance.py: plain Python, written for the purpose, sharing no code with the planner),
and the SLO inverses against their forward laws.

Tolerances (stated and justified):
* open-loop mean TTFT: within 3 standard errors of the simulated mean (batch means over 40 blocks,
  which absorbs the autocorrelation of the queue) plus 3% for the model's approximations (the decode
  residual s(B)/2 weighted by the decode busy fraction); observed within 1% at every utilisation;
* open-loop TTFT p90: within 8% up to utilisation 0.9, 15% at 0.95 (the exponential tail with an
  atom at 0 is exact for M/M/1; the prefills here are deterministic, M/D/1; and the sample p90 of a
  queue at 0.95 is itself uncertain by several percent at these sizes): observed -7% to +6% up to
  0.9, +4% and +12% at 0.95;
* open-loop mean TPOT and decode batch: within 10% up to 0.8, 30% above (the hold-up law counts the
  prefills queued behind the request and those arriving during its decode, each with its busy
  period; it misses the correlation of long waits with large batches): observed within 9% up to
  0.8, -18% at 0.9 and -24% at 0.95 with long outputs, the model low: a known limit near
  saturation, stated in the README;
* closed loops: exact (deterministic lengths: every wave is a burst), to 1e-9.
Sample sizes: 4,000-20,000 requests per point, seeded; each point runs in well under a second.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.equations import queueing as q
from sim_instance import simulate

CASES = [  # P [ms], s0 [ms], s1 [ms/request], osl [tokens]: short and long outputs
    (100.0, 4.0, 0.2, 10),
    (300.0, 20.0, 0.3, 200),
]
UTILS = (0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95)


def _model(P, s0, s1, osl, rate_s):
    """Closed forms at the simulated load; the decode residual at the predicted batch."""
    lam = rate_s / 1000
    # fixed point of b = λ osl TPOT (TPOT depends on b only through W, which does not): TPOT first
    step_guess, d_guess = s0 + s1, osl * (s0 + s1)
    for _ in range(20):
        w = float(q.wait_mean_ms(rate_s, P, d_guess, step_guess))
        tpot = float(q.tpot_load_ms(rate_s, P, osl, s0, s1, w))
        b = max(1.0, float(q.decode_batch(rate_s, osl, tpot)))
        step_guess, d_guess = s0 + s1 * b, osl * (s0 + s1 * b) / b
    w90 = float(q.wait_quantile_ms(rate_s, P, d_guess, step_guess, 0.9))
    assert lam * (P + osl * s1) < 1
    return P + w, P + w90, tpot, float(q.decode_batch(rate_s, osl, tpot))


@pytest.mark.parametrize("case", CASES, ids=["short-out", "long-out"])
@pytest.mark.parametrize("u", UTILS)
def test_open_loop_against_simulation(case, u):
    P, s0, s1, osl = case
    lam = u / (P + osl * s1)                       # u: busy fraction of prefill + KV reads
    n = 20_000 if osl < 50 else 4_000
    ttft, tpot, b_sim = simulate(P, s0, s1, osl, rate=lam, n=n, seed=7)
    ttft, tpot = np.array(ttft[n // 10:]), np.array(tpot[n // 10:])   # warm-up dropped
    blocks = ttft[: len(ttft) // 40 * 40].reshape(40, -1).mean(axis=1)
    se = blocks.std(ddof=1) / math.sqrt(40)
    m_ttft, m_p90, m_tpot, m_b = _model(P, s0, s1, osl, lam * 1000)
    assert abs(m_ttft - ttft.mean()) <= 3 * se + 0.03 * ttft.mean(), (m_ttft, ttft.mean(), se)
    assert m_p90 == pytest.approx(np.quantile(ttft, 0.9), rel=0.08 if u <= 0.9 else 0.15)
    assert m_tpot == pytest.approx(tpot.mean(), rel=0.10 if u <= 0.8 else 0.30)
    assert m_b == pytest.approx(b_sim, rel=0.10 if u <= 0.8 else 0.30)    # Little with the model TPOT


@pytest.mark.parametrize("c,R", [(1, 50), (4, 4), (8, 8), (8, 20), (16, 16), (16, 480)])
def test_closed_loop_waves_against_simulation(c, R):
    P, s0, s1, osl = 200.0, 15.0, 0.3, 100
    ttft, tpot, _ = simulate(P, s0, s1, osl, clients=c, n=R)
    assert float(q.closed_loop_ttft(P, c, R)) == pytest.approx(np.mean(ttft), rel=1e-9)
    for stat, qq in (("median", 0.5), ("p90", 0.9), ("p99", 0.99)):
        assert float(q.closed_loop_ttft(P, c, R, stat)) == pytest.approx(np.quantile(ttft, qq), rel=1e-9)
    if R % c == 0:   # full waves: the burst TPOT law, s(c) + (c-1)P/(2 osl)
        expect = s0 + s1 * c + (c - 1) * P / (2 * osl)
        assert np.mean(tpot) == pytest.approx(expect, rel=1e-9)
        assert float(q.tpot_load_ms(np.nan, P, osl, s0, s1, np.nan, c)) == pytest.approx(expect, rel=1e-12)
        # throughput of the loop: c requests per cycle c P + osl s(c)
        assert float(q.closed_loop_rate(c, P, osl, s0, s1)) == pytest.approx(
            c * 1000 / (c * P + osl * (s0 + s1 * c)), rel=1e-12)


def test_burst_by_hand():
    # 8 clients, P = 250 ms: waits 0, 250, ..., 1750 -> TTFT 250..2000, mean 250 * 9/2 = 1125 ms
    assert float(q.closed_loop_ttft(250.0, 8, 8)) == 1125.0
    # 20 requests at c = 8: two waves (mean 1125 each) and a last wave of 4 (250..1000, mean 625):
    # (16 * 1125 + 4 * 625) / 20 = 1025 ms
    assert float(q.closed_loop_ttft(250.0, 8, 20)) == pytest.approx(1025.0, rel=1e-12)
    # the inverse recovers P, and concurrency 1 is the TTFT itself (the request-alone value)
    assert float(q.prefill_from_load_test(1025.0, 8, 20)) == pytest.approx(250.0, rel=1e-12)
    assert float(q.prefill_from_load_test(321.5, 1, 40, "p90")) == 321.5


def test_ttft_slo_inverse_meets_the_target_and_one_fewer_does_not():
    P, D, s = 400.0, 600.0, 30.0
    Lam = 25.0                                  # requests/s of the workload
    for stat, qq in (("mean", 0.0), ("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        for slo in (450.0, 800.0, 2000.0, 10_000.0):
            n = float(q.instances_ttft(Lam, P, D, s, slo, qq))
            assert n >= 1 and n == int(n)

            def ttft_at(k):
                rate = Lam / k
                if rate / 1000 * P >= 1:
                    return math.inf
                w = float(q.wait_mean_ms(rate, P, D, s))
                return P + (w if qq == 0 else float(q.wait_quantile_ms(rate, P, D, s, qq)))
            assert ttft_at(n) <= slo * (1 + 1e-9), (stat, slo, n)
            if n > 1:
                assert ttft_at(n - 1) > slo, (stat, slo, n)
    assert math.isinf(float(q.instances_ttft(Lam, P, D, s, 399.0, 0.9)))       # below a request alone


def test_lambert_step_is_accurate():
    # u solves ln(u/(1-q)) = a (1 - φ u); compare the closed form with bisection to 1e-8
    for qq in (0.5, 0.9, 0.99):
        for a in (1e-3, 0.1, 1.0, 10.0, 100.0, 1e4):
            for phi in (0.01, 0.4, 1.0):
                u = float(q._lambert_u(a, phi, qq))
                f = lambda x: math.log(x / (1 - qq)) - a * (1 - phi * x)  # noqa: E731
                if f(1.0) <= 0:
                    assert u == 1.0
                    continue
                lo, hi = 1 - qq, 1.0
                for _ in range(200):
                    mid = (lo + hi) / 2
                    lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
                assert u == pytest.approx(lo, rel=1e-8)


def test_tpot_slo_inverse_is_the_root_of_the_forward_law():
    P, osl, s0, s1, D, s = 150.0, 400, 18.0, 0.4, 500.0, 30.0
    for T in (20.0, 30.0, 60.0, 200.0):
        lam = float(q.rate_for_tpot(P, osl, s0, s1, D, s, T))      # requests/ms
        rate = lam * 1000
        w = float(q.wait_mean_ms(rate, P, D, s))
        assert float(q.tpot_load_ms(rate, P, osl, s0, s1, w)) == pytest.approx(T, rel=1e-9)
        w2 = float(q.wait_mean_ms(rate * 1.01, P, D, s))
        assert float(q.tpot_load_ms(rate * 1.01, P, osl, s0, s1, w2)) > T      # the first crossing
    assert math.isinf(float(q.instances_tpot(10.0, P, osl, s0, s1, D, s, 18.3)))   # s0 + s1 = 18.4


def test_hbm_inverse_is_conservative_and_close():
    P, osl, s0, s1, D, s = 150.0, 400, 18.0, 0.4, 500.0, 30.0
    Lam = 40.0
    for bm in (8, 32, 128):
        n = float(q.instances_hbm(Lam, P, osl, s0, s1, D, s, bm, ttft_slo=1e9))
        rate = Lam / n
        w = float(q.wait_mean_ms(rate, P, D, s))
        b = float(q.decode_batch(rate, osl, float(q.tpot_load_ms(rate, P, osl, s0, s1, w))))
        assert b <= bm
        if n > 1:   # never more than a couple of instances above the exact smallest count
            def batch(k):
                tp = float(q.tpot_load_ms(Lam / k, P, osl, s0, s1, float(q.wait_mean_ms(Lam / k, P, D, s))))
                return math.inf if math.isnan(tp) else float(q.decode_batch(Lam / k, osl, tp))
            exact = next(k for k in range(1, int(n) + 1) if batch(k) <= bm)
            assert n - exact <= max(1, 0.1 * exact)
    # without a latency target the HBM bound does not enter (throughput sizing assumes batch)
    assert math.isnan(float(q.instances_hbm(Lam, P, osl, s0, s1, D, s, 8)))


def test_binding_names_the_constraint_and_unreachable():
    n = q.instances_slo([3, 3, 3, np.nan], [5, np.nan, np.inf, np.nan], [np.nan, 4, np.nan, np.nan],
                        [np.nan, 4, np.nan, np.nan], [np.nan] * 4)
    assert list(n[:3]) == [5, 4, 3] and np.isnan(n[3])
    b = q.binding(n, [3, 3, 3, np.nan], [5, np.nan, np.inf, np.nan], [np.nan, 4, np.nan, np.nan],
                  [np.nan, 4, np.nan, np.nan], [np.nan] * 4)
    assert list(b) == ["ttft_slo", "tpot_slo", "unreachable: ttft_slo", ""]


def test_decode_step_law_by_hand():
    # t_decode 400 ms at batch 16 over 200 tokens: step 400*16/200 = 32 ms; weights 8e9 x 2 B = 14.9012 GiB,
    # KV of the batch 16 x (4000 + 100) x 131,072 B = 8.0078125 GiB: s0 = 32 x 14.90116 / 22.90897 = 20.8144 ms,
    # s1 = (32 - 20.8144) / 16 = 0.69910 ms per request
    step = float(q.decode_step_ms(400, 16, 200))
    assert step == 32.0
    w = 8e9 * 2 / 2**30
    s0 = float(q.step_fixed_ms(step, w, 16, 4000, 200, 131072))
    assert s0 == pytest.approx(32 * w / (w + 8.0078125), rel=1e-12) and s0 == pytest.approx(20.8144, abs=1e-4)
    assert float(q.step_per_request_ms(step, s0, 16)) == pytest.approx((32 - s0) / 16, rel=1e-12)
    assert float(q.step_fixed_ms(step, 0.0, 16, 0, 0, 0)) == step     # nothing read: all fixed
    assert float(q.decode_step_ms(400, 16, 0)) == 0.0                  # no output, no decode
