"""TTFT at the planned load and the TTFT target's count under decode first, open loop (issue 16 items 3-4):
planner.equations.decode_first_slo, by hand, against the independent simulation of tests/sim_instance.py
(decode_first=True, open Poisson arrivals), and against a brute-force search of the count.

Tolerances (stated and justified), for the mean and the p90 TTFT over utilisations 0.1-0.7 (busy fraction
of prefill and KV reads, as tests/test_decode_first_open.py): median |error| under 5% (mean) and 10% (p90),
each point within 20% (mean) and 30% (p90). The simulated mean of 4,000-10,000 requests (a tenth dropped
for warm-up) is uncertain by 1-3% at 0.7, its p90 by about twice that; the p90 takes the M/G/1 wait's
exponential tail (planner.equations.queueing.wait_quantile_ms), a form and not a fit. At 0.8-0.9 printed
only: the queue with P_df breaks there (tests/test_decode_first_open.py; docs/model.md "The scheduler").
"""

from __future__ import annotations

import math

import numpy as np
import openpyxl
import pytest
import xlsxwriter

from planner.equations import decode_first as df
from planner.equations import decode_first_slo as dslo
from test_queueing import _model

from test_decode_first_open import UTILS, simulated_grid  # one simulation of the grid
ROW = (300.0, 75.0, 2000.0, 8192.0, 20.0, 0.3, 200.0)               # P, F, u, M, s0, s1, osl


def test_ttft_at_a_rate_by_hand():
    # λ = 10/7 requests/s = 1/700 per ms. K = ceil(2000/8192) = 1, V = 300 - 75 = 225.
    # b = λ osl s0 / (1 - λ(F + V) - λ osl s1) = (4000/700) / (1 - 300/700 - 60/700) = 200/17 = 11.764706;
    # k = ceil(2000 / (8192 - 11.76)) = 1; s̄ = (1 - e^-11.7647) 20 + 0.3 x 11.7647 = 23.529256;
    # P_df = 23.529256 + 75 + 225 = 323.529256; D = 200 s̄ / b = 399.99735;
    # W = λ (P_df² + D s̄) / (2 (1 - λ P_df)) = (104,671.2 + 9,411.64) / 700 / (2 x 0.537815) = 151.516;
    # TTFT = 475.045 ms.
    b = 200 / 17
    s = (1 - math.exp(-b)) * 20 + 0.3 * b
    p_df = s + 300
    d = 200 * s / b
    lam = 1 / 700
    w = lam * (p_df ** 2 + d * s) / (2 * (1 - lam * p_df))
    assert s == pytest.approx(23.529256, rel=1e-7) and w == pytest.approx(151.516, rel=1e-5)
    got = float(dslo.open_ttft_stat_ms(10 / 7, *ROW, 0.0))
    assert got == pytest.approx(p_df + w, rel=1e-12) and got == pytest.approx(475.045, rel=1e-5)
    # p90: ρ = λ P_df = 0.462185; the decode part r = λ D s̄ / (2(1-ρ)) = 9,411.64 / 700 / 1.075630 = 12.4998;
    # the tail P_df / (2(1-ρ)) ln(ρ / 0.1) = 300.78 x 1.53080 = 460.43 (ρ > 1 - q); TTFT p90 = 796.46 ms
    rho = lam * p_df
    r = lam * d * s / (2 * (1 - rho))
    tail = p_df / (2 * (1 - rho)) * math.log(rho / 0.1)
    assert r == pytest.approx(12.4998, rel=1e-5) and tail == pytest.approx(460.43, rel=1e-5)
    assert float(dslo.open_ttft_stat_ms(10 / 7, *ROW, 0.9)) == pytest.approx(p_df + r + tail, rel=1e-12)
    assert p_df + r + tail == pytest.approx(796.46, rel=1e-5)


def test_the_count_at_a_target_by_hand():
    # Λ = 10 requests/s, mean TTFT target 500 ms. At 7 instances (λ = 10/7 /s): 475.045 ms (above), meets.
    # At 6 (λ = 1/600 per ms): b = (4000/600) / (1 - 300/600 - 60/600) = 16.6667, s̄ = 25.0 (e^-16.7 = 6e-8),
    # P_df = 325.0, D = 200 x 25 / 16.6667 = 300.0, W = (105,625 + 7,500) / 600 / (2 (1 - 325/600)) = 205.68,
    # TTFT = 530.68 ms > 500: misses. So 7.
    b6 = (4000 / 600) / (1 - 300 / 600 - 60 / 600)
    s6 = (1 - math.exp(-b6)) * 20 + 0.3 * b6
    t6 = s6 + 300 + (s6 + 300) ** 2 / 600 / (2 * (1 - (s6 + 300) / 600)) + 200 * s6 / b6 * s6 / 600 / (
        2 * (1 - (s6 + 300) / 600))
    assert b6 == pytest.approx(16.6667, rel=1e-5) and t6 == pytest.approx(530.68, rel=1e-5)
    assert float(dslo.open_ttft_stat_ms(10 / 6, *ROW, 0.0)) == pytest.approx(t6, rel=1e-12)
    assert float(dslo.instances_ttft_df(10.0, *ROW, 500.0, 0.0)) == 7
    # the M/G/1 with P that the Results use today sizes this for fewer: P = 300, D s = osl s(b)... the
    # bound of the decode-free queue alone, ρ* = 2w/(P + 2w) = 400/700, gives ceil(10 x 0.3 / (4/7)) = 6
    assert float(dslo._upper_rate(300.0, 500.0, 0.0)) == pytest.approx(1000 * (400 / 700) / 300, rel=1e-12)
    # no target, no demand: blank; a target not above P: unreachable
    assert math.isnan(float(dslo.instances_ttft_df(10.0, *ROW, np.nan, 0.0)))
    assert math.isnan(float(dslo.instances_ttft_df(np.nan, *ROW, 500.0, 0.0)))
    assert float(dslo.instances_ttft_df(10.0, *ROW, 300.0, 0.9)) == np.inf


def _random_rows(k, seed):
    rng = np.random.default_rng(seed)
    P, u = rng.uniform(50, 1500, k), rng.uniform(200, 16000, k)
    M = rng.choice([2048.0, 8192.0, 16384.0, np.nan], k)
    K = np.where(np.isfinite(M), np.ceil(u / np.where(np.isfinite(M), M, 1.0)), 1.0)   # passes alone
    return dict(P=P, F=P * rng.uniform(0, 0.4, k) / K, u=u, M=M, s0=rng.uniform(3, 40, k),
                s1=rng.uniform(0.01, 0.5, k), osl=rng.choice([10.0, 100.0, 300.0, 1000.0], k),
                q=rng.choice([0.0, 0.5, 0.9, 0.99], k), slo=P * rng.uniform(1.05, 6, k),
                rate=rng.uniform(0.5, 400, k))


def test_the_count_is_the_smallest_that_meets_the_target_brute_force():
    # every count from 1 to n + 1, by the forward value, on 120 random rows (mixed lengths, budgets,
    # quantiles); the demand is set so that the counts spread over 1-300
    r = _random_rows(120, 3)
    args = (r["P"], r["F"], r["u"], r["M"], r["s0"], r["s1"], r["osl"])
    rng = np.random.default_rng(4)
    lam = dslo.max_rate_df(*args, r["slo"], r["q"])
    demand = lam * (rng.integers(1, 300, 120) - rng.uniform(0.01, 0.99, 120))
    n = dslo.instances_ttft_df(demand, *args, r["slo"], r["q"])
    assert np.all(np.isfinite(n))
    for i in range(len(n)):
        row = tuple(a[i] for a in args)
        k = np.arange(1, int(n[i]) + 2, dtype=float)
        t = dslo.open_ttft_stat_ms(demand[i] / k, *row, r["q"][i])
        first = int(k[np.argmax(np.isfinite(t) & (t <= r["slo"][i]))])
        assert n[i] == first, (i, n[i], first)


def test_the_ttft_increases_with_the_rate():
    # the bisection's premise, on the same kind of rows: at 200 rates up to saturation
    r = _random_rows(60, 5)
    for i in range(60):
        row = (r["P"][i], r["F"][i], r["u"][i], r["M"][i], r["s0"][i], r["s1"][i], r["osl"][i])
        rates = np.linspace(1e-3, 1000 / r["P"][i], 200)
        t = dslo.open_ttft_stat_ms(rates, *row, r["q"][i])
        t = t[np.isfinite(t)]
        assert np.all(np.diff(t) >= -1e-9 * t[1:]), i


def _closed_step(rate, P, F, u, M, s0, s1, osl, q, slo):
    """One step of the rejected fixed-step scheme: the M/G/1 inverse with P_df, D, s̄ frozen at the
    batch of ``rate`` (planner.equations.queueing.ttft_rho_max)."""
    from planner.equations import queueing as qu
    b = df.open_batch(rate, P, F, u, M, s0, s1, osl)
    p = df.open_prefill_ms(P, F, u, M, s0, s1, b)
    s = df.open_step_ms(s0, s1, b)
    d = osl * s / b
    return qu.ttft_rho_max(p, d, s, slo, q, qu.ttft_log_x(p, d, s, slo, q)) / p * 1000


def test_why_no_fixed_number_of_closed_form_steps():
    # the docstring's measurement: 2-4 frozen-batch M/G/1 inverses from λ_up are off by an instance or more
    # on a fifth or more of random rows (counts 1-300), where the bisection is exact (test above)
    rng = np.random.default_rng(2)
    r = _random_rows(150, 2)
    off = np.zeros(3)
    for i in range(150):
        row = (r["P"][i], r["F"][i], r["u"][i], r["M"][i], r["s0"][i], r["s1"][i], r["osl"][i])
        lam_true = float(dslo.max_rate_df(*row, r["slo"][i], r["q"][i]))
        n_true = int(rng.integers(1, 300))
        lam_tot = lam_true * (n_true - rng.uniform(0.01, 0.99))
        k = np.ceil(r["u"][i] / r["M"][i]) if np.isfinite(r["M"][i]) else 1.0
        sat = 0.95 * 1000 / (k * r["F"][i] + max(r["P"][i] - k * r["F"][i], 0) + r["osl"][i] * r["s1"][i])
        lam = min(float(dslo._upper_rate(r["P"][i], r["slo"][i], r["q"][i])), sat)
        with np.errstate(all="ignore"):
            for j in range(4):
                lam = float(_closed_step(min(lam, sat), *row, r["q"][i], r["slo"][i]))
                if j >= 1:
                    n = math.ceil(lam_tot / lam) if lam > 0 and math.isfinite(lam) else math.inf
                    off[j - 1] += n != math.ceil(lam_tot / lam_true)
    print(f"\nfixed-step M/G/1 inverses, share of counts off: after 2, 3, 4 steps {np.round(off / 150, 3)}")
    assert np.all(off / 150 > 0.1)


def _grid():
    rows = []
    for P, s0, s1, osl, u, m, f, util, lam, t in simulated_grid():   # the open-loop test's runs
        sim_mean, sim_p90 = float(t.mean()), float(np.quantile(t, 0.9))
        after_mean = float(dslo.open_ttft_stat_ms(lam * 1000, P, f, u, m, s0, s1, osl, 0.0))
        after_p90 = float(dslo.open_ttft_stat_ms(lam * 1000, P, f, u, m, s0, s1, osl, 0.9))
        before_mean, before_p90 = _model(P, s0, s1, osl, lam * 1000)[:2]
        rows.append((util, after_mean / sim_mean - 1, after_p90 / sim_p90 - 1,
                     before_mean / sim_mean - 1, before_p90 / sim_p90 - 1))
    return np.array(rows)


@pytest.fixture(scope="module")
def grid():
    return _grid()


def test_mean_and_p90_against_the_simulation(grid):
    g = grid
    for util in UTILS:
        at = g[g[:, 0] == util]
        cell = lambda e: (f"{np.nanmedian(np.abs(e)):.1%} (worst {e[np.nanargmax(np.abs(e))]:+.1%})"
                          if np.isfinite(e).any() else "saturated")
        print(f"\nutilisation {util}: P_df mean {cell(at[:, 1])}, p90 {cell(at[:, 2])}; "
              f"M/G/1 with P mean {cell(at[:, 3])}, p90 {cell(at[:, 4])}", end="")
    held = g[g[:, 0] <= 0.7]
    assert np.median(np.abs(held[:, 1])) < 0.05 and np.abs(held[:, 1]).max() < 0.20
    assert np.median(np.abs(held[:, 2])) < 0.10 and np.abs(held[:, 2]).max() < 0.30
    # better than the M/G/1 with P at the mean and at p90
    assert np.median(np.abs(held[:, 1])) < np.median(np.abs(held[:, 3]))
    assert np.median(np.abs(held[:, 2])) < np.median(np.abs(held[:, 4]))


@pytest.mark.libreoffice
def test_the_twin_recalculates_in_libreoffice(tmp_path, recalc):
    rows = [(10 / 7, *ROW, 0.0), (10 / 7, *ROW, 0.9), (5.0, 100, 25, 6000, 8192, 4, 0.2, 10, 0.99),
            (1.5, 300, 75, 4000, 2048, 20, 0.3, 200, 0.5), (3.0, 300, 75, 2000, 8192, 20, 0.3, 200, 0.9)]
    path = tmp_path / "twin.xlsx"
    wb = xlsxwriter.Workbook(path)
    ws = wb.add_worksheet("T")
    from planner.equations.constants import CONSTANTS
    for k in CONSTANTS:
        wb.define_name(k.name, f"={k.value!r}")
    cols = "ABCDEFGHI"
    for r, vals in enumerate(rows):
        for k, v in enumerate(vals):
            ws.write(r, k, v)
        c = [f"{cols[k]}{r + 1}" for k in range(9)]
        ws.write_formula(r, 9, "=" + df.open_batch.xl(*c[:8]), None, 0)
        ws.write_formula(r, 10, "=" + dslo.open_ttft_stat_ms.xl(*c, f"J{r + 1}"), None, 0)
    wb.close()
    got = openpyxl.load_workbook(recalc(path), data_only=True)["T"]
    for r, vals in enumerate(rows):
        want = float(dslo.open_ttft_stat_ms(*vals))
        v = got.cell(r + 1, 11).value
        v = math.nan if v in (None, "") else float(v)
        assert v == pytest.approx(want, rel=1e-9, nan_ok=True), r
