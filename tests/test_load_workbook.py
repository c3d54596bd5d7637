"""Latency at load in the workbook (issue 16): the new Results columns computed BY HAND
(plain arithmetic below, nothing from planner.equations.queueing), then recalculated by LibreOffice, and a
live edit of a demand and an SLO in the output giving the instance count of a fresh run.

One deployment shape throughout: Llama-3.1-8B (32 layers, 8 KV heads, d_head 128, BF16: S =
131,072 B) on one H100 (80 GiB), isl 4000, osl 200, batch 16, hit 0, prefill P = t_attn0 + t_ffn0 =
100 + 300 = 400 ms, decode D = t_decode_ms = 400 ms, so chip time C = 800 ms.
"""

from __future__ import annotations

import math

import numpy as np
import openpyxl
import pytest

from conftest import edit_output_and_input, header_index, value_book
from planner.plan.build import build_plan
from planner.workbook.writer import write_output
from test_hand_calc import write_input

GIB = 2 ** 30
REL = 1e-9
MODELS = [dict(model="L8", layers=32, kv_heads=8, head_dim=128, kv_bytes=2, params_b=8)]
GPUS = [dict(gpu="H100", hbm_gib=80, pcie_gbps=50, hourly_cost=2.5)]
BASE = dict(model="L8", gpu="H100", tp=1, isl=4000, osl=200, batch=16, hit_target=0, t_attn0_ms=100,
            t_ffn0_ms=300, t_decode_ms=400)
WORKLOADS = [
    dict(workload="slo-ttft", demand_tpm=6_000_000, ttft_slo_ms=1000, **BASE),           # p90 by default
    dict(workload="slo-tpot", demand_tpm=6_000_000, tpot_slo_ms=40, **BASE),
    dict(workload="fixed-conc", demand_tpm=6_000_000, concurrency=8, **BASE),
    dict(workload="no-demand", **BASE),
    dict(workload="slo-mean", demand_tpm=6_000_000, ttft_slo_ms=500, slo_percentile="mean", **BASE),
]

# ----------------------------------------------------------------------------- by hand
P, D, OSL, B = 400.0, 400.0, 200, 16
LAM_TOTAL = 6_000_000 / (4000 + 200) / 60          # requests/s of the workload: 23.8095...
N_TP = math.ceil(6_000_000 / (4200 * 60000 / 800))  # TPM 315,000 per instance -> ceil(19.05) = 20
STEP = D * B / OSL                                  # decode step at batch 16: 400*16/200 = 32 ms
W_GIB = 8e9 * 2 / GIB                               # 14.9012 GiB of weights
KV_GIB = 16 * (4000 + 200 / 2) * 131072 / GIB       # 16 requests x 4100 tokens x S = 8.0078125 GiB
S0 = STEP * W_GIB / (W_GIB + KV_GIB)                # weights' share of the step
S1 = (STEP - S0) / 16                               # per request in decode
MAX_FIT = math.floor((80 - W_GIB) * GIB / (4200 * 131072))   # full-length requests that fit: 126


def _wait(lam):                 # λ in requests/ms: Cobham / Pollaczek-Khinchine mean wait
    return lam * (P * P + D * STEP) / (2 * (1 - lam * P))


def _wait_q(lam, q):            # queue tail (atom 1-ρ, exponential) + decode hold-up at its mean
    rho = lam * P
    r = lam * D * STEP / (2 * (1 - rho))
    return r + (P / (2 * (1 - rho)) * math.log(rho / (1 - q)) if rho > 1 - q else 0.0)


def _tpot(lam):                 # hold-up law: prefills queued behind and arriving during the decode
    return (lam * P * (_wait(lam) + P) / OSL + S0 + S1) / (1 - lam * (P + OSL * S1))


def _largest(ok, hi):           # bisection on a monotone predicate of λ [requests/ms]
    lo = 0.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def _count(lam_star):
    return math.ceil(LAM_TOTAL / 1000 / lam_star - 1e-9)


LAM_TTFT = _largest(lambda x: P + _wait_q(x, 0.9) <= 1000, 1 / P)
LAM_TPOT = _largest(lambda x: _tpot(x) <= 40, 1 / (P + OSL * S1))
LAM_MEAN = _largest(lambda x: P + _wait(x) <= 500, 1 / P)
N_TTFT, N_TPOT, N_MEAN = _count(LAM_TTFT), _count(LAM_TPOT), _count(LAM_MEAN)
X_CONC = 8 * 1000 / (8 * P + OSL * (S0 + S1 * 8))  # a wave of 8 every 8P + osl s(8) [requests/s]
N_CONC = math.ceil(LAM_TOTAL / X_CONC)


def _open_row(n):
    lam = LAM_TOTAL / n / 1000
    tpot = _tpot(lam)
    return dict(load_rps=lam * 1000, ttft_load_ms=P + _wait(lam), ttft_load_p90_ms=P + _wait_q(lam, 0.9),
                tpot_load_ms=tpot, decode_batch=lam * OSL * tpot)


EXPECTED = {
    "slo-ttft": dict(instances_throughput=N_TP, instances_ttft=N_TTFT, instances_needed=max(N_TP, N_TTFT),
                     binding="ttft_slo" if N_TTFT > N_TP else "throughput", hbm_fit="yes",
                     **_open_row(max(N_TP, N_TTFT))),
    "slo-tpot": dict(instances_throughput=N_TP, instances_tpot=N_TPOT, instances_needed=max(N_TP, N_TPOT),
                     binding="tpot_slo" if N_TPOT > N_TP else "throughput", **_open_row(max(N_TP, N_TPOT))),
    "fixed-conc": dict(instances_concurrency=N_CONC, instances_needed=max(N_TP, N_CONC),
                       binding="concurrency" if N_CONC > N_TP else "throughput", load_rps=X_CONC,
                       # batched prefill (Settings max_num_batched_tokens 8192, t_fixed 0): the first request
                       # runs alone (400 ms); the other 7 x 4000 tokens fill passes of 8192 tokens, each
                       # 8192/4000 = 2.048 prefills long (819.2 ms): requests 2-3 end pass 1 at 400 + 819.2 =
                       # 1219.2, 4-5 at 2038.4, 6-7 at 2857.6, 8 in the partial last pass at 400 + 7 x 400 = 3200;
                       # mean (400 + 2 x 1219.2 + 2 x 2038.4 + 2 x 2857.6 + 3200) / 8 = 15830.4 / 8 = 1978.8
                       ttft_load_ms=1978.8,
                       # p90: position 0.9 x 7 = 6.3 of the 8 sorted values: 2857.6 + 0.3 x (3200 - 2857.6)
                       ttft_load_p90_ms=2960.32,
                       # a client's cycle 8 / X = TTFT + osl TPOT (Little's law over the loop): the wave's
                       # 8 P = 3200 ms of prefill less the mean first token 1978.8 holds the decode up,
                       # 1221.2 ms over 200 tokens = 6.106 ms a token (the serial (8 - 1) P / 2 = 1400 ms
                       # would be 7 ms: the packed prompts get their first tokens later and wait less)
                       tpot_load_ms=S0 + 8 * S1 + (8 * P - 1978.8) / OSL, decode_batch=8.0),
    "no-demand": dict(instances_needed=None, binding="", load_rps=1000 / 800,     # u = 1 / C
                      ttft_load_ms=400 + 0.00125 * (160000 + 400 * 32) / (2 * 0.5),   # 400 + 216 = 616 ms
                      # ρ = 0.5: 400 + 16 + 400 ln 5 = 1059.78 ms
                      ttft_load_p90_ms=400 + 0.00125 * 400 * 32 / 1.0 + 400 / 1.0 * math.log(5),
                      tpot_load_ms=_tpot(0.00125)),
    "slo-mean": dict(instances_ttft=N_MEAN, instances_needed=max(N_TP, N_MEAN)),
}


def test_hand_numbers_are_what_they_say():
    assert round(LAM_TOTAL, 4) == 23.8095 and N_TP == 20 and STEP == 32 and MAX_FIT == 126
    assert EXPECTED["no-demand"]["ttft_load_ms"] == pytest.approx(616.0)
    assert EXPECTED["no-demand"]["ttft_load_p90_ms"] == pytest.approx(1059.775, abs=1e-3)
    assert N_TTFT > N_TP and N_TPOT > N_TP and N_MEAN > N_TP   # every target binds in this input


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("load")
    src = d / "in.xlsx"
    write_input(src, MODELS, GPUS, WORKLOADS)
    plan = build_plan(src)
    out = d / "out.xlsx"
    write_output(plan, out)
    return src, plan, out


def _check(expected, got, where):
    if expected is None or expected == "" or (isinstance(expected, float) and math.isnan(expected)):
        assert got is None or got == "" or (isinstance(got, float) and math.isnan(got)), where
    elif isinstance(expected, str):
        assert got == expected, where
    elif isinstance(expected, int):
        assert float(got) == expected, where
    else:
        assert math.isclose(float(got), expected, rel_tol=1e-7), where


def test_results_rows_match_hand_calculation(built):
    _src, plan, _out = built
    r = plan.results.set_index("workload")
    for wl, cols in EXPECTED.items():
        for col, v in cols.items():
            _check(v, r.loc[wl, col], f"{wl}.{col}: expected {v!r}, got {r.loc[wl, col]!r}")
    assert r.loc["slo-ttft", "max_batch_fit"] == MAX_FIT
    # the request-alone columns keep their meaning: ttft_ms is the prefill itself
    assert (r["ttft_ms"] == 400).all()


LIVE_EDITS = [("Workloads", 2, "demand_tpm", 9_000_000), ("Workloads", 3, "tpot_slo_ms", 60)]


@pytest.fixture(scope="module")
def recalculated(built, lo_profile, tmp_path_factory) -> dict:
    """The stored output and its live-edited copy (LIVE_EDITS, made in the input alike),
    recalculated by ONE LibreOffice process (libreoffice.recalculate_many; two calls cost
    0.2-1.5 s CPU more): for the two tests below."""
    from libreoffice import recalculate_many

    src, _plan, out = built
    d = tmp_path_factory.mktemp("recalculated")
    e_out, e_in = edit_output_and_input(out, src, LIVE_EDITS, d)
    again, e_again = recalculate_many([out, e_out], d / "recalc", profile=lo_profile)
    return {"again": again, "e_in": e_in, "e_again": e_again}


@pytest.mark.libreoffice
def test_libreoffice_recalculates_every_new_cell(built, recalculated):
    _src, plan, out = built
    from test_recalc import compare_all
    again = recalculated["again"]
    assert compare_all(again, plan) > 0
    wb = value_book(again, "Results", "Summary")
    ws = wb["Results"]
    h = header_index(ws)
    for i, (wl, cols) in enumerate(EXPECTED.items()):
        for col, v in cols.items():
            got = ws.cell(i + 2, h[col]).value
            _check(v, got, f"LibreOffice {wl}.{col}: expected {v!r}, got {got!r}")
    # Summary: what the latency targets add, by hand 28 GPUs and 28 x 2.5 x 730 = 51,100 USD per month
    for book in (value_book(out, "Summary"), wb):
        rows = {r[0].value: r[1].value for r in book["Summary"].iter_rows(max_col=2) if r[0].value}
        assert rows["GPUs over throughput alone"] == 28
        assert rows["Cost per month of those GPUs [USD]"] == pytest.approx(51_100.0, rel=1e-9)


@pytest.mark.libreoffice
def test_live_edit_of_demand_and_slo_matches_fresh_run(built, recalculated):
    src, _plan, out = built
    fresh = build_plan(recalculated["e_in"])  # LIVE_EDITS, made in the output and the input alike
    assert list(fresh.results["instances_needed"][:2]) != list(_plan.results["instances_needed"][:2])
    again = value_book(recalculated["e_again"], "Results")
    ws = again["Results"]
    h = header_index(ws)
    for i in range(len(WORKLOADS)):
        for col in ("instances_needed", "binding", "ttft_load_p90_ms", "tpot_load_ms"):
            _check(fresh.results[col].iat[i], ws.cell(i + 2, h[col]).value, f"row {i} {col}")


def test_memo_says_what_the_latency_targets_add(built):
    _src, plan, _out = built
    from planner.plan import load_notes as load_memo
    text = {f["kind"]: f["text"] for f in load_memo.findings(plan)}
    # by hand: (21-20) + (30-20) + (26-20) + (31-20) = 28 GPUs at tp 1, x 2.5 USD/h x 730 h = 51,100 USD
    extra = sum(EXPECTED[w]["instances_needed"] - N_TP for w in ("slo-ttft", "slo-tpot", "fixed-conc", "slo-mean"))
    assert (N_TTFT, N_TPOT, N_CONC, N_MEAN) == (21, 30, 26, 31) and extra == 28
    assert "takes 28 GPUs more than throughput alone, 51,100 USD per month" in text["slo-cost"]
    assert "slo-ttft: ttft_slo, +1 GPUs" in text["slo-cost"] and "fixed-conc: concurrency" in text["slo-cost"]
    assert "service times" in text["latency-at-load"]


def test_hit_sweep_carries_latency_at_load(built):
    _src, plan, _out = built
    f = plan.sens.frames["Sensitivity_Hit"]
    r = plan.results.set_index("workload")
    for wl in ("slo-ttft", "slo-tpot", "fixed-conc"):
        at0 = f[(f["workload"] == wl) & (f["hit"] == 0)].iloc[0]
        # the target hit of these rows is 0: the sweep's first point is the plan itself
        for col in ("instances_needed", "ttft_load_ms", "ttft_load_p90_ms", "tpot_load_ms"):
            assert at0[col] == pytest.approx(r.loc[wl, col], rel=1e-12), (wl, col)
        rows = f[f["workload"] == wl]
        # hits shorten the prefill and the queue in front of it: the count never grows (TTFT at load
        # may tick up where one instance fewer is planned, but stays within the target)
        assert (rows["instances_needed"].diff().dropna() <= 0).all()
        if wl == "slo-ttft":
            assert (rows["ttft_load_p90_ms"] <= 1000 * (1 + 1e-9)).all()
            assert rows["instances_needed"].iloc[-1] < rows["instances_needed"].iloc[0]


def test_located_warnings_for_targets_no_count_meets(tmp_path):
    src = tmp_path / "w.xlsx"
    wls = [dict(workload="too-tight", demand_tpm=6_000_000, ttft_slo_ms=350, tpot_slo_ms=2, **BASE),
           dict(workload="no-demand-slo", ttft_slo_ms=900, **BASE),
           dict(workload="huge-conc", demand_tpm=6_000_000, concurrency=500, **BASE),
           dict(workload="conc-slo", demand_tpm=6_000_000, concurrency=8, ttft_slo_ms=2000, tpot_slo_ms=20,
                **BASE)]
    write_input(src, MODELS, GPUS, wls)
    plan = build_plan(src)
    text = [str(w) for w in plan.warnings]
    r = plan.results.set_index("workload")
    # 350 ms < the request-alone 400 ms; 2 ms < one request's step s0 + s1 (about 21 ms)
    assert r.loc["too-tight", "binding"] == "unreachable: ttft_slo, tpot_slo"
    assert r.loc["too-tight", "instances_needed"] == N_TP
    assert any(t.startswith("Workloads row 2 (too-tight)") and "ttft_slo_ms 350 is not above the request-alone "
               "TTFT 400.0 ms" in t for t in text)
    assert any("tpot_slo_ms 2 is not above one request's decode step" in t for t in text)
    assert any("Workloads row 3 (no-demand-slo): latency targets without demand_tpm" in t for t in text)
    assert any("Workloads row 4 (huge-conc): concurrency 500 exceeds the 126 full-length requests" in t for t in text)
    # fixed concurrency 8: TTFT p90 = 2,960 ms > 2,000 (the packed burst of "fixed-conc" above: 2857.6 +
    # 0.3 x 342.4); TPOT = s0 + 8 s1 + 7 ms > 20 ms; the count is throughput or concurrency, and binding
    # says no count meets the targets (slofix item 2: it said "concurrency" before, with the misses only
    # in a warning)
    assert any("(conc-slo): at concurrency 8 the TTFT (p90) is 2,960 ms, above ttft_slo_ms 2,000" in t for t in text)
    assert any("(conc-slo): TTFT at concurrency 8 packs the burst's prefills into passes of 8,192 new tokens" in t
               for t in text)
    assert any("(conc-slo): at concurrency 8 the TPOT is" in t and "above tpot_slo_ms 20" in t for t in text)
    assert r.loc["conc-slo", "binding"] == "unreachable: ttft_slo, tpot_slo"
    assert np.isinf(r.loc["conc-slo", "instances_ttft"]) and r.loc["conc-slo", "instances_needed"] == max(N_TP, N_CONC)
