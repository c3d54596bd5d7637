"""Batched prefill under load (planner.equations.prefill_passes): a burst packed into forward passes
of max_num_batched_tokens new tokens, checked by hand, against the independent discrete-event
simulation of tests/sim_instance.py (its scheduler fills each pass token by token, sharing no code),
against the serial burst it reduces to, and its Excel twin recalculated by LibreOffice."""

from __future__ import annotations

import numpy as np
import pytest
import xlsxwriter
import openpyxl

from planner.equations import prefill_passes as pp
from planner.equations import queueing as q
from sim_instance import simulate

# (P [ms], F [ms], u [tokens], c, R): short prompts several per pass, a prompt of exactly one pass,
# prompts longer than a pass (the first prompt's last chunk shares its pass), partial last waves,
# a fixed cost larger than a request's passes allow (V floored at 0)
CASES = [(223.0, 106.8, 4000, 16, 16), (223.0, 106.8, 4000, 16, 64), (1512.0, 106.8, 32000, 8, 24),
         (1512.0, 106.8, 16000, 5, 13), (156.5, 107.0, 800, 16, 32), (400.0, 0.0, 4000, 8, 8),
         (300.0, 50.0, 2000, 5, 13), (300.0, 50.0, 8192, 4, 4), (300.0, 50.0, 16384, 3, 7),
         (100.0, 0.0, 3000, 1, 5)]


@pytest.mark.parametrize("P,F,u,c,R", CASES)
def test_closed_forms_match_the_simulated_scheduler(P, F, u, c, R):
    # the simulation's pass time is F + tokens x (P - K F) / u; it needs V >= 0, as the model floors it
    ttft, _tpot, _b = simulate(P, 10.0, 0.2, 50, clients=c, n=R, budget=8192.0, tokens=u, pass_fixed=F,
                               stagger=1e-7)
    for stat, value in (("mean", np.mean(ttft)), ("median", np.median(ttft)), ("p90", np.quantile(ttft, 0.9)),
                        ("p99", np.quantile(ttft, 0.99))):
        a, b = pp.burst_coefficients(u, c, 8192.0, R, stat)
        # the stagger of 1e-7 ms per request is the only difference
        assert a * P + b * F == pytest.approx(value, rel=1e-8, abs=1e-5), stat
    if R % c == 0:
        assert float(pp.burst_ttft_ms(P, F, u, 0.0, c, 8192.0)) == pytest.approx(np.mean(ttft), rel=1e-8)
        assert float(pp.burst_ttft_ms(P, F, u, 0.0, c, 8192.0, 0.9)) == pytest.approx(
            float(np.quantile(ttft[:c], 0.9)), rel=1e-8)


@pytest.mark.parametrize("P,F,u,c,R", [x for x in CASES if x[4] % x[3] == 0])
def test_wave_time_and_closed_loop_rate_match_the_simulation(P, F, u, c, R):
    s0, s1, osl = 10.0, 0.2, 50
    ttft, _tpot, _b = simulate(P, s0, s1, osl, clients=c, n=R, budget=8192.0, tokens=u, pass_fixed=F, stagger=1e-7)
    # the wave's prefills hold the GPU until its last first token; then osl steps over c requests
    assert float(pp.wave_prefill_ms(P, F, u, 0.0, c, 8192.0)) == pytest.approx(max(ttft[:c]), rel=1e-8)
    end = R / c * (max(ttft[:c]) + osl * (s0 + s1 * c))          # the waves follow one another
    assert float(q.closed_loop_rate(c, P, osl, s0, s1, F, u, 0.0, 8192.0)) == pytest.approx(R * 1000 / end, rel=1e-8)
    # a budget of one prompt per pass: the serial wave c P
    assert float(pp.wave_prefill_ms(P, F, u, 0.0, c, u)) == pytest.approx(c * P, rel=1e-12)


def test_hand_calculated_burst():
    # P = 223 ms, F = 106.8 ms (QwQ-32B on 4x H100 at 4000 tokens, the c = 1 fit of
    # tests/test_published_load.py), c = 16, M = 8192. V = 223 - 106.8 = 116.2 ms, 0.02905 ms/token.
    # Request j ends in pass p = 1 + ceil(4000 j / 8192): 1, then two per pass 2..8, the last in 9;
    # tokens done D = min(4000 + (p-1) 8192, 64000): 4000, 12192, 20384, ..., 61344, 64000;
    # TTFT = p F + D V/u: 223.0; 567.7776, 912.5552, 1257.3328, 1602.1104, 1946.888, 2291.6656,
    # 2636.4432 (two each); 2820.4. Sum 25472.9456, mean / 16 = 1592.0591 ms (serial: 223 x 8.5 = 1895.5).
    # The wave holds the GPU until the last first token: 9 passes x 106.8 + 16 x 116.2 = 2820.4 ms.
    assert float(pp.wave_prefill_ms(223.0, 106.8, 4000, 0.0, 16, 8192)) == pytest.approx(2820.4, rel=1e-12)
    assert float(pp.burst_ttft_ms(223.0, 106.8, 4000, 0.0, 16, 8192)) == pytest.approx(1592.0591, rel=1e-12)
    # p90: sorted, indices 13 and 14 are the two 2636.4432 (index 0: 223, 1-2: 567.7776, ..., 15: 2820.4);
    # position 0.9 x 15 = 13.5 lies between them: 2636.4432
    assert float(pp.burst_ttft_ms(223.0, 106.8, 4000, 0.0, 16, 8192, 0.9)) == pytest.approx(2636.4432, rel=1e-12)
    # hits shrink the new tokens: 80% of 4000 is 800 new tokens, ten and a quarter prompts a pass
    a, b = pp.burst_coefficients(800, 16, 8192)
    # j = 0 alone (800 done); j = 1..10 end in pass 2 (8992 done); j = 11..15 in pass 3 (12800):
    # a = mean(D)/u = (1 + 10 x 11.24 + 5 x 16) / 16 = 193.4 / 16; b = mean(p) - K a = (1 + 20 + 15) / 16 - a
    assert a == pytest.approx(193.4 / 16, rel=1e-12) and b == pytest.approx(36 / 16 - 193.4 / 16, rel=1e-12)


@pytest.mark.parametrize("c,R", [(8, 8), (8, 20), (4, 13), (16, 100), (3, 3)])
def test_blank_budget_is_the_serial_burst(c, R):
    for stat in ("mean", "median", "p90", "p99"):
        a, b = pp.burst_coefficients(4000, c, np.nan, R, stat)
        assert a == pytest.approx(float(q.closed_loop_ttft(1.0, c, R, stat)), rel=1e-12) and b == 0.0
    # a budget of exactly one prompt is serial too, whatever the fixed cost
    assert float(pp.burst_ttft_ms(300.0, 50.0, 4000, 0.0, c, 4000)) == pytest.approx(300.0 * (c + 1) / 2, rel=1e-12)


def test_concurrency_1_is_the_request_alone_prefill():
    for u in (100, 8192, 20000):
        assert pp.burst_coefficients(u, 1, 8192) == (1.0, 0.0)
        assert float(pp.burst_ttft_ms(250.0, 40.0, u, 0.0, 1, 8192)) == 250.0


def test_a_concurrency_beyond_the_cap_is_refused():
    with pytest.raises(ValueError, match="outside"):
        pp.burst_values(1000, pp.MAX_CONCURRENCY + 1, 8192)


@pytest.mark.libreoffice
def test_excel_twin_recalculates_in_libreoffice(tmp_path, recalc):
    rows = [(223.0, 106.8, 4000, 0.0, 16, 8192), (1512.0, 106.8, 32000, 0.0, 8, 8192),
            (223.0, 106.8, 4000, 0.8, 16, 8192), (300.0, 50.0, 2000, 0.0, 5, ""), (250.0, 40.0, 9000, 0.5, 1, 8192),
            (300.0, 400.0, 16384, 0.0, 3, 8192)]
    path = tmp_path / "twin.xlsx"
    wb = xlsxwriter.Workbook(path)
    ws = wb.add_worksheet("T")
    for r, vals in enumerate(rows):
        for k, v in enumerate(vals):
            ws.write(r, k, v)
        cells = [f"{'ABCDEF'[k]}{r + 1}" for k in range(6)]
        ws.write_formula(r, 6, "=" + pp.burst_ttft_ms.xl(*cells), None, 0)
        ws.write_formula(r, 7, "=" + pp.burst_ttft_ms.xl(*cells, q="0.9"), None, 0)
        ws.write_formula(r, 8, "=" + pp.wave_prefill_ms.xl(*cells), None, 0)
    wb.close()
    got = openpyxl.load_workbook(recalc(path), data_only=True)["T"]
    for r, (P, F, n, h, c, m) in enumerate(rows):
        m = np.nan if m == "" else m
        assert got.cell(r + 1, 7).value == pytest.approx(float(pp.burst_ttft_ms(P, F, n, h, c, m)), rel=1e-9)
        assert got.cell(r + 1, 8).value == pytest.approx(float(pp.burst_ttft_ms(P, F, n, h, c, m, 0.9)), rel=1e-9)
        assert got.cell(r + 1, 9).value == pytest.approx(float(pp.wave_prefill_ms(P, F, n, h, c, m)), rel=1e-9)
