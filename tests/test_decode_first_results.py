"""The decode-first open loop in the Results (issue 16, "under load"): a workload with scheduler decode_first
and no Workloads concurrency has its ttft_load_ms / ttft_load_p90_ms and its TTFT target's count
(instances_ttft, hence instances_needed and binding) from the decode-first queue
(planner.equations.decode_first_slo), live in the workbook through the DF_Search sheet's search
(planner.workbook.df_search): by hand, against the bisection of instances_ttft_df on random rows, against the
independent simulation (tests/sim_instance.py), recalculated by LibreOffice cell by cell, and by a live edit.

One engine throughout, the hand row of tests/test_decode_first_slo.py: P = 300 ms (t_fixed 75 + t_attn0 75 +
t_ffn0 150), F = pass_fixed 75 ms, isl 2000 at hit 0 (u = 2000), M = 8192, osl 200, and the decode step
s(16) = t_decode 310 x 16 / 200 = 24.8 ms split by the bytes read into s0 = 20, 16 s1 = 4.8 (s1 = 0.3):
weights 2 x params_b, params_b = 131,072 x 2,100 / (0.015 x 2e9) so that the batch's KV (16 x 2,100 tokens x
131,072 B) is 0.24 of the weights.
"""

from __future__ import annotations

import math

import numpy as np
import openpyxl
import pytest

from conftest import EXAMPLE, edit_output_and_input, header_index, value_book
from planner.equations import decode_first_slo as dslo
from planner.plan import columns as sheets
from planner.plan.build import build_plan
from planner.workbook.writer import write_output
from sim_instance import simulate
from test_decode_first_slo import ROW, _random_rows
from test_hand_calc import write_input

MODELS = [dict(model="L9", layers=32, kv_heads=8, head_dim=128, kv_bytes=2, params_b=131072 * 2100 / (0.015 * 2e9))]
GPUS = [dict(gpu="H100", hbm_gib=80, pcie_gbps=50, hourly_cost=2.5)]
BASE = dict(model="L9", gpu="H100", tp=1, isl=2000, osl=200, batch=16, hit_target=0, t_fixed_ms=75, pass_fixed_ms=75,
            t_attn0_ms=75, t_ffn0_ms=150, t_decode_ms=310, max_num_batched_tokens=8192, scheduler="decode_first")
TPM_10 = 10 * 2200 * 60          # 10 requests/s of 2,000 + 200 tokens
WORKLOADS = [
    dict(workload="df-open", demand_tpm=TPM_10, ttft_slo_ms=500, slo_percentile="mean", **BASE),
    dict(workload="pf-open", demand_tpm=TPM_10, ttft_slo_ms=500, slo_percentile="mean",
         **{**BASE, "scheduler": "prefill_first"}),
    dict(workload="df-conc", demand_tpm=TPM_10, ttft_slo_ms=2000, concurrency=8, **BASE),
    # the prompt does not fit beside the batch: 2,000 new tokens in steps of 2,005 - b (two chunks; one alone)
    dict(workload="df-chunk", demand_tpm=TPM_10, ttft_slo_ms=900, **{**BASE, "max_num_batched_tokens": 2005}),
    dict(workload="df-one", demand_tpm=TPM_10 / 20, ttft_slo_ms=450, slo_percentile="mean", **BASE),   # count 1
    dict(workload="df-unreach", demand_tpm=TPM_10, ttft_slo_ms=250, slo_percentile="mean", **BASE),    # < P
    dict(workload="df-notarget", demand_tpm=TPM_10, **BASE),
    # a hit target above the baseline (0): the baseline chain's count is the same search at hit 0
    dict(workload="df-hit", demand_tpm=TPM_10, ttft_slo_ms=350, slo_percentile="mean", **{**BASE, "hit_target": 0.5}),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("dfres")
    src = d / "in.xlsx"
    write_input(src, MODELS, GPUS, WORKLOADS)
    # a coarse hit sweep (3 points: hit 0, 0.5, 1): the sweep's own search is tests/test_decode_first_sweep.py
    # and no test here reads Sensitivity_Hit or DF_Search_Hit; at the default 21 points each decode-first
    # workload adds about 2.3 MB of DF_Search_Hit to every recalculation (at 5 points they were 5,240 of the
    # workbook's 16,815 formulas, recalculated twice below)
    wb = openpyxl.load_workbook(src)
    wb["Settings"].append(["hit_step", 0.5])
    wb.save(src)
    plan = build_plan(src)
    out = d / "out.xlsx"
    write_output(plan, out)
    return src, plan, out


def _row(plan, name):
    return plan.results.set_index("workload").loc[name]


def _law_args(plan, name):
    """(P, F, u, M, s0, s1, osl) of a row, as the Results and Resolved hold them."""
    r, res = _row(plan, name), plan.resolved.set_index("workload").loc[name]
    return (float(r["ttft_ms"]), float(res["pass_fixed_ms"]), float(r["burst_new_tokens"]),
            float(res["max_num_batched_tokens"]), float(r["step_weights_ms"]), float(r["step_kv_ms"]),
            float(res["osl"]))


def test_the_engine_is_the_hand_row(built):
    _src, plan, _out = built
    assert _law_args(plan, "df-open") == pytest.approx(ROW, rel=1e-12)


def test_results_by_hand(built):
    # tests/test_decode_first_slo.py, by hand: a 500 ms mean target at Λ = 10 requests/s needs 7 instances
    # under decode first (475.045 ms at 10/7 requests/s each; 6 give 530.68 ms), 6 by the request-alone
    # queue (ρ* = 400/700 with P = 300 and no decode term ... the closed form with the row's decode term).
    # At 7 instances (the throughput count is 7 too: 10 x 0.61 s / target_utilization): the load is 10/7 /s,
    # b = 200/17, P_df = 323.53 ms, TTFT 475.045 ms mean and 796.46 ms p90.
    _src, plan, _out = built
    df, pf = _row(plan, "df-open"), _row(plan, "pf-open")
    assert float(df["instances_ttft"]) == 7 and float(pf["instances_ttft"]) == 6
    assert float(df["instances_needed"]) == 7 and float(df["load_rps"]) == pytest.approx(10 / 7, rel=1e-12)
    assert float(df["ttft_load_ms"]) == pytest.approx(475.045, rel=1e-5)
    assert float(df["ttft_load_p90_ms"]) == pytest.approx(796.46, rel=1e-5)
    # the prefill-first row of the same shape keeps the request-alone queue: P + W at the same load
    assert float(pf["ttft_load_ms"]) == pytest.approx(float(pf["ttft_ms"] + pf["prefill_wait_ms"]), rel=1e-12)
    assert float(pf["ttft_load_ms"]) < float(df["ttft_load_ms"])
    # count 1; unreachable (the target below P): the binding says so, as for the closed form
    one, un = _row(plan, "df-one"), _row(plan, "df-unreach")
    assert float(one["instances_ttft"]) == 1
    assert float(un["instances_ttft"]) == np.inf and un["binding"] == "unreachable: ttft_slo"
    # no target: no count, the TTFTs at load still the decode-first queue
    nt = _row(plan, "df-notarget")
    assert math.isnan(float(nt["instances_ttft"]))
    want = dslo.open_ttft_stat_ms(float(nt["load_rps"]), *_law_args(plan, "df-notarget"), 0.0)
    assert float(nt["ttft_load_ms"]) == pytest.approx(float(want), rel=1e-12)
    # the Tornado's TTFT of such a row is the request-alone queue at its base as at its cases (Tornado_Calc):
    # hit_target at 0 cannot move down, so its low case is the base
    t = plan.sens.tornado.set_index(["workload", "driver"])
    base = float(t.loc[("df-open", "hit_target"), "ttft_load_base"])
    assert base == pytest.approx(float(df["ttft_ms"] + df["prefill_wait_ms"]), rel=1e-12)
    assert base == pytest.approx(float(t.loc[("df-open", "hit_target"), "ttft_load_low"]), rel=1e-12)
    assert float(t.loc[("pf-open", "hit_target"), "ttft_load_base"]) == float(pf["ttft_load_ms"])
    # a fixed concurrency keeps the steady closed loop
    assert float(_row(plan, "df-conc")["ttft_load_ms"]) == float(_row(plan, "df-conc")["ttft_steady_ms"])


def test_every_decode_first_count_is_the_bisection(built):
    _src, plan, _out = built
    for name in ("df-open", "df-chunk", "df-one", "df-unreach", "df-notarget", "df-hit"):
        r = _row(plan, name)
        slo = float(plan.resolved.set_index("workload").loc[name, "ttft_slo_ms"] or np.nan)
        want = float(dslo.instances_ttft_df(float(r["demand_rps_open"]), *_law_args(plan, name), slo,
                                            float(r["slo_q"])))
        got = float(r["instances_ttft"])
        assert got == want or (math.isnan(got) and math.isnan(want)), name
    # at hit_baseline (0) the same search with the baseline's prefill and new tokens: the hit row needs fewer
    r, res = _row(plan, "df-hit"), plan.resolved.set_index("workload").loc["df-hit"]
    base = (float(r["ttft_ms_baseline"]), float(res["pass_fixed_ms"]), float(r["burst_new_tokens_baseline"]),
            *_law_args(plan, "df-hit")[3:])
    assert base == pytest.approx(ROW, rel=1e-12)
    want = float(dslo.instances_ttft_df(10.0, *base, 350.0, 0.0))
    assert float(r["instances_ttft_baseline"]) == want and float(r["instances_baseline"]) >= want
    assert float(r["instances_ttft"]) < want
    for name in ("df-open", "df-one", "df-unreach"):           # hit 0: the baseline is the target's count
        assert float(_row(plan, name)["instances_ttft_baseline"]) == float(_row(plan, name)["instances_ttft"])
    # the chunked row's prompt takes two steps beside its batch at the load
    b = dslo.load_batch_df("decode_first", np.nan, float(_row(plan, "df-chunk")["load_rps"]),
                           *_law_args(plan, "df-chunk"))
    assert 2005 - float(b) < 2000


def test_the_search_is_the_bisection_on_random_rows():
    # 3 x 300 random rows (tests/test_decode_first_slo.py's generator: mixed lengths, budgets blank or
    # 2,048-16,384, quantiles, targets 1.05-6 P), demands spread over counts 1-3,000, a tenth at count 1,
    # a tenth with the target below P (unreachable), a few without a target or demand
    for seed in (3, 7, 11):
        r = _random_rows(300, seed)
        args = (r["P"], r["F"], r["u"], r["M"], r["s0"], r["s1"], r["osl"])
        rng = np.random.default_rng(seed + 1)
        lam = dslo.max_rate_df(*args, r["slo"], r["q"])
        demand = lam * (rng.integers(1, 3000, 300) - rng.uniform(0.01, 0.99, 300))
        demand[:30] = rng.uniform(0, 0.9, 30) * lam[:30]
        slo = r["slo"].copy()
        slo[30:60] = r["P"][30:60] * rng.uniform(0.5, 1.0, 30)
        slo[60:63], demand[63:66] = np.nan, np.nan
        demand[66:69] = 0.0          # no demand: no instance, as the closed form (ROUNDUP(0)); the bisection gave 1
        want = dslo.instances_ttft_df(demand, *args, slo, r["q"])
        got = dslo.search_instances(demand, *args, slo, r["q"])
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        assert same.all(), (seed, np.flatnonzero(~same)[:5])
        assert (want[:30] == 1).all() and np.isinf(want[30:60]).all() and np.isnan(want[60:66]).all()
        assert (want[66:69] == 0).all() or np.isinf(want[66:69]).any()
        # the chunked rows (a prompt that does not fit beside the batch at the count) are among them
        with np.errstate(divide="ignore", invalid="ignore"):
            b = dslo.dfs.open_batch(demand / want, *args)
        assert (np.isfinite(r["M"]) & (r["u"] > r["M"] - np.nan_to_num(b))).sum() > 30


def test_the_split_ttft_is_the_one_formula():
    # ttft_at_service_ms (the search's and the load's TTFT, with P_df in a cell of its own) is
    # open_ttft_stat_ms exactly
    r = _random_rows(200, 9)
    args = (r["P"], r["F"], r["u"], r["M"], r["s0"], r["s1"], r["osl"])
    b = dslo.dfs.open_batch(r["rate"] / 50, *args)
    p = dslo.service_df_ms(*args[:6], b)
    for q in (r["q"], np.zeros(200)):
        got = dslo.ttft_at_service_ms(r["rate"] / 50, r["s0"], r["s1"], r["osl"], q, b, p)
        want = dslo.open_ttft_stat_ms(r["rate"] / 50, *args, q)
        assert np.array_equal(got, want, equal_nan=True)


def test_against_the_simulation(tmp_path):
    # the Results' TTFTs at load of decode-first rows at utilisations 0.3-0.7 (λ (P + osl s1), as
    # tests/test_decode_first_open.py) against the independent simulation, within that file's and
    # tests/test_decode_first_slo.py's tolerances (each point: mean 20%, p90 30%), and nearer than the
    # request-alone queue the Results read before (P + the M/G/1 wait with P). The throughput count (chip
    # time 610 ms a request) holds the load at or below 1.64 requests/s an instance, utilisation 0.59
    wl = [dict(workload=f"df-{k}", demand_tpm=TPM_10 * k / 10, **BASE) for k in (0.9, 5, 10, 20)]
    wl.append(dict(workload="df-1.6", demand_tpm=TPM_10 * 0.16, target_utilization=1.0, **BASE))
    src = tmp_path / "in.xlsx"
    write_input(src, MODELS, GPUS, wl)
    plan = build_plan(src)
    for name in plan.results["workload"]:
        r = _row(plan, name)
        P, F, u, M, s0, s1, osl = _law_args(plan, name)
        rate = float(r["load_rps"])
        util = rate / 1000 * (P + osl * s1)
        assert 0.3 < util < 0.6, (name, util)
        ttft, tpot, batch = simulate(P, s0, s1, int(osl), rate=rate / 1000, n=4000, seed=7, budget=M, tokens=u,
                                     pass_fixed=F, decode_first=True)
        sim = np.array(ttft[400:])
        mean, p90 = float(np.mean(sim)), float(np.percentile(sim, 90))
        new_m, new_p = float(r["ttft_load_ms"]) / mean - 1, float(r["ttft_load_p90_ms"]) / p90 - 1
        old_m = float(r["ttft_ms"] + r["prefill_wait_ms"]) / mean - 1
        old_p = float(r["ttft_ms"] + r["prefill_wait_p90_ms"]) / p90 - 1
        print(f"\n{name}: utilisation {util:.2f}, mean {new_m:+.1%} (request-alone {old_m:+.1%}), "
              f"p90 {new_p:+.1%} (request-alone {old_p:+.1%})", end="")
        assert abs(new_m) < 0.20 and abs(new_p) < 0.30
        assert abs(new_m) < abs(old_m) and abs(new_p) < abs(old_p)
        # the TPOT at load kept on the prefill-first law (tpot_load_ms, decode_batch), against the decode-first
        # batch's Little TPOT = 1000 b / (λ osl) (DF_Search df_load_batch): the kept one is the nearer here
        tp_sim = float(np.mean(tpot[400:]))
        b_df = float(dslo.load_batch_df("decode_first", np.nan, rate, P, F, u, M, s0, s1, osl))
        kept, little = float(r["tpot_load_ms"]) / tp_sim - 1, 1000 * b_df / (rate * osl) / tp_sim - 1
        print(f"; TPOT kept {kept:+.1%} (decode-first batch's {little:+.1%}), batch {float(r['decode_batch']):.2f}"
              f" / {b_df:.2f} / simulated {batch:.2f}", end="")
        assert abs(kept) < 0.05 and abs(kept) < abs(little)


def test_a_plan_without_such_a_row_has_no_search(tmp_path):
    wl = [w for w in WORKLOADS if w["workload"] in ("pf-open", "df-conc")]
    src = tmp_path / "in.xlsx"
    write_input(src, MODELS, GPUS, wl)
    plan = build_plan(src)
    assert not sheets.has_open_df(plan.resolved) and sheets.results_columns(plan.resolved) is sheets.RESULTS
    out = tmp_path / "out.xlsx"
    names = write_output(plan, out)
    assert "DF_Search" not in names
    assert not any("df_" in str(c.value) for row in openpyxl.load_workbook(out)["Results"].iter_rows(max_row=3)
                   for c in row)


def test_formulas_stay_short(built):
    _src, _plan, out = built
    wb = openpyxl.load_workbook(out)
    longest = max(len(c.value) for sh in ("DF_Search", "Results") for row in wb[sh].iter_rows() for c in row
                  if isinstance(c.value, str) and c.value.startswith("="))
    assert longest < 8192
    ws = wb["DF_Search"]
    h = header_index(ws)
    assert len(h) == len(sheets.DF_SEARCH)
    # only the searched rows are written (df-open, df-chunk, df-one, df-unreach, df-notarget, df-hit), in
    # their Results rows; pf-open (row 3) and df-conc (row 4) stay empty
    written = [r for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value is not None]
    assert written == [2, 5, 6, 7, 8, 9], written
    assert f"df_miss_{dslo.SEARCH_BITS - 1}" in h and "df_miss_0" in h


def _values(path, sheet):
    ws = value_book(path, sheet)[sheet]  # that sheet's cached values only (a full load parses every sheet)
    return [[c.value for c in row] for row in ws.iter_rows(min_row=2)], header_index(ws)


def _same(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return (a in (None, "")) == (b in (None, "")) and (a in (None, "") or a == b)


@pytest.mark.libreoffice
def test_libreoffice_recalculates_every_cell_and_a_live_edit(built, recalc, tmp_path):
    src, plan, out = built
    # the live edit: df-open's demand from 10 to 25 requests/s and its target from 500 to 450 ms, in the
    # output's input cells and in the input (planned afresh)
    # pf-open made decode first in the output: its DF_Search row is empty, so its Results keep the closed form
    # (6 instances) rather than reading a blank search (a fresh run of that input searches it: not compared)
    edits = [("Workloads", 2, "demand_tpm", TPM_10 * 2.5), ("Workloads", 2, "ttft_slo_ms", 450),
             ("Workloads", 3, "scheduler", "decode_first")]
    e_out, e_in = edit_output_and_input(out, src, edits, tmp_path)
    got, got_e = recalc(out, e_out)
    # every cell of DF_Search, Results, Fleet and Summary as Python stored it
    for sheet in ("DF_Search", "Results", "Fleet", "Summary", "Tornado"):
        want, _h = _values(out, sheet)
        have, _h = _values(got, sheet)
        for i, (rw, rh) in enumerate(zip(want, have)):
            for j, (a, b) in enumerate(zip(rw, rh)):
                assert _same(a, b), (sheet, i + 2, j + 1, a, b)
    fresh_dir = tmp_path / "fresh"
    fresh_dir.mkdir()
    fresh = build_plan(e_in)
    f = fresh.results.set_index("workload").loc["df-open"]
    assert f["binding"] == "ttft_slo" and float(f["instances_ttft"]) > float(f["instances_throughput"])
    rows, h = _values(got_e, "Results")
    row = next(r for r in rows if r[h["workload"] - 1] == "df-open")
    for name in ("instances_ttft", "instances_needed", "ttft_load_ms", "ttft_load_p90_ms"):
        assert float(row[h[name] - 1]) == pytest.approx(float(f[name]), rel=1e-9), name
    assert row[h["binding"] - 1] == f["binding"]
    pf = next(r for r in rows if r[h["workload"] - 1] == "pf-open")
    assert float(pf[h["instances_ttft"] - 1]) == 6 and float(pf[h["ttft_load_ms"] - 1]) == pytest.approx(
        float(_row(plan, "pf-open")["ttft_load_ms"]), rel=1e-9)
    assert float(f["instances_ttft"]) == float(dslo.instances_ttft_df(25.0, *ROW, 450.0, 0.0))


def test_the_decode_first_declaration_is_the_closed_form_elsewhere():
    # on the example (no decode_first row) RESULTS_DF with DF_Search's helpers gives every Results value of
    # RESULTS bit for bit, so skipping the search there (planner.plan.build.evaluate_results) changes nothing
    from planner.plan.frames import column_arrays

    plan = build_plan(EXAMPLE)
    base = column_arrays(plan.resolved)
    a = sheets.evaluate(sheets.RESULTS, base, len(plan.resolved))
    b = sheets.evaluate(sheets.RESULTS_DF, base, len(plan.resolved), helpers=sheets.DF_SEARCH)
    assert not sheets.has_open_df(plan.resolved)
    for c in a.columns:
        x, y = a[c].to_numpy(), b[c].to_numpy()
        assert (list(x) == list(y)) if x.dtype == object else np.array_equal(x, y, equal_nan=True), c
