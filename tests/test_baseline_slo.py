"""The baseline of the savings sized through the same SLO chain as the target (issue 16).

``instances_baseline`` (and so ``gpus_baseline``, ``cost_per_hour_baseline`` and Fleet's
``cost_saved_per_month``) sizes the same demand at the planning baseline hit ratio ``hit_baseline``
through :data:`planner.equations.sizing.STEPS`, as ``instances_needed`` does at ``hit_target``; before,
the baseline was sized on throughput alone, so a TTFT target that bound at both ends counted at the
target only and the "saving" of a hit could come out negative.

Every expected number is computed BY HAND below (plain arithmetic, nothing from
planner.equations.queueing). The deployment is the one of tests/test_load_workbook.py: Llama-class 8B
(S = 2 x 32 x 8 x 128 x 2 = 131,072 B/token) on one H100 (PCIe 50 GB/s, 2.5 USD/h), isl 4000, osl 200,
batch 16, t_attn0 100 ms, t_ffn0 300 ms, t_fixed 0, decode D = 400 ms, decode step s = D x 16 / 200 =
32 ms. alpha = 1 (load fully hidden under compute, so the KV load drops out of the prefill).

- target hit 0.2: compute = 100 (1 - 0.2^2) + 300 (1 - 0.2) = 96 + 240 = 336 ms; load = 0.2 x 4000 x
  131072 / 50e9 s = 2.097 ms < compute, so P = 336 + 2.097 - 2.097 = 336 ms; chip C = 736 ms;
  TPM = 4200 x 60000 / 736 = 342,391.3 tokens/min.
- baseline hit 0: P = 400 ms, C = 800 ms, TPM = 315,000 tokens/min.

The mean TTFT target 450 ms: mean TTFT at a per-instance rate λ [requests/ms] is P + W with the
M/G/1 wait of prefills served before decode steps (Cobham; the hand formula of
tests/test_load_workbook.py) W = λ (P^2 + D s) / (2 (1 - λ P)). P + W = T solves to
λ* = 2 (T - P) / (P^2 + D s + 2 P (T - P)):
- target: 2 x 114 / (112,896 + 12,800 + 76,608) = 228 / 202,304 = 1.127017e-3 /ms = 1.127017 requests/s
  (throughput alone allows 1000 / 736 = 1.3587): the target binds;
- baseline: 2 x 50 / (160,000 + 12,800 + 40,000) = 100 / 212,800 = 0.469925 requests/s (throughput:
  1.25): it binds harder.

Demand 3,000,000 tokens/min = 3e6 / 4200 / 60 = 11.9048 requests/s:
- target: throughput ceil(3e6 / 342,391.3 = 8.762) = 9, TTFT ceil(11.9048 / 1.12702 = 10.563) = 11;
- baseline: throughput ceil(3e6 / 315,000 = 9.524) = 10 (what instances_baseline was),
  TTFT ceil(11.9048 / 0.469925 = 25.334) = 26.
Saving: (26 - 11) x 2.5 USD/h x 730 h = 27,375 USD/month; the throughput-only baseline said
(10 - 11) x 2.5 x 730 = -1,825 (a hit ratio that "costs" money).

A second workload without a target keeps the throughput baseline (the example's case: it has no targets).
"""

from __future__ import annotations

import math

import pytest

from conftest import edit_output_and_input, same_value, sheet_values
from planner.finance import fleet, periods
from planner.plan.build import build_plan
from planner.workbook.input_sheets import write_input_workbook
from planner.workbook.writer import write_output
from test_load_workbook import BASE, GPUS, MODELS

D, STEP, ISL, OSL = 400.0, 32.0, 4000, 200
HOURS, PRICE = 730, 2.5
P_T, P_B = 100 * (1 - 0.2 ** 2) + 300 * (1 - 0.2), 400.0        # 336 ms, 400 ms
assert P_T == 336.0
DEMAND = 3_000_000
RATE = DEMAND / (ISL + OSL) / 60                                 # 11.9048 requests/s


def wait_mean(lam, p):          # requests/ms, ms: Cobham / Pollaczek-Khinchine with the decode hold-up
    return lam * (p * p + D * STEP) / (2 * (1 - lam * p))


def lam_star(p, slo):           # the closed form of the docstring, checked against the hand formula
    lam = 2 * (slo - p) / (p * p + D * STEP + 2 * p * (slo - p))
    assert math.isclose(p + wait_mean(lam, p), slo, rel_tol=1e-12)
    return lam * 1000           # requests/s


def n_tp(p):
    return math.ceil(DEMAND / ((ISL + OSL) * 60000 / (p + D)) - 1e-9)


def n_ttft(p, slo=450.0):
    return math.ceil(RATE / lam_star(p, slo) - 1e-9)


def test_hand_numbers():
    assert math.isclose(lam_star(P_T, 450), 1.127016767, rel_tol=1e-8)
    assert math.isclose(lam_star(P_B, 450), 0.4699248120, rel_tol=1e-8)
    assert (n_tp(P_T), n_ttft(P_T), n_tp(P_B), n_ttft(P_B)) == (9, 11, 10, 26)


ROW = dict(BASE, hit_target=0.2, hit_baseline=0, alpha=1, demand_tpm=DEMAND)
WORKLOADS = [dict(workload="slo-both", ttft_slo_ms=450, slo_percentile="mean", **ROW),
             dict(workload="no-target", **ROW)]
GPUS_PRICED = [dict(GPUS[0], hourly_cost=PRICE)]
EXPECTED = {
    "slo-both": dict(instances_needed=11, instances_throughput=9, binding="ttft_slo",
                     instances_throughput_baseline=10, instances_ttft_baseline=26, instances_baseline=26,
                     binding_baseline="ttft_slo", gpus_baseline=26, cost_per_hour_baseline=26 * PRICE),
    "no-target": dict(instances_needed=9, instances_throughput=9, binding="throughput",
                      instances_throughput_baseline=10, instances_ttft_baseline=None, instances_baseline=10,
                      binding_baseline="throughput", gpus_baseline=10, cost_per_hour_baseline=10 * PRICE),
}
SAVED = (26 - 11 + 10 - 9) * PRICE * HOURS                       # 27,375 + 1,825 = 29,200 USD/month


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("baseline")
    src = d / "in.xlsx"
    # one period: Demand_Calc; hit_step 0.5: no test of this output reads the hit sweep (Sensitivity_Hit:
    # 3 rows a workload, not 21); the LibreOffice test reads Results and Demand_Calc
    write_input_workbook(src, MODELS, GPUS_PRICED, WORKLOADS, {"periods": "2027-Q1", "hit_step": 0.5})
    plan = build_plan(src)
    out = d / "out.xlsx"
    write_output(plan, out)
    return src, plan, out


def _check_results(rows, where):
    for wl, want in EXPECTED.items():
        for c, v in want.items():
            assert same_value(v, rows[wl][c]), (where, wl, c, v, rows[wl][c])


def _check_periods(rows, where):
    # Demand_Calc sizes each (workload, period) row through the same baseline chain (one period: Results' own)
    for wl, want in EXPECTED.items():
        for c in ("instances_baseline", "instances_ttft_baseline", "gpus_baseline", "cost_per_hour_baseline"):
            assert same_value(want[c], rows[wl][c]), (where, wl, c, want[c], rows[wl][c])


def test_the_baseline_is_sized_through_the_slo_chain(built):
    _src, plan, out = built
    res = plan.results.set_index("workload")
    _check_results({wl: res.loc[wl] for wl in EXPECTED}, "python")
    _check_results({r["workload"]: r for r in sheet_values(out, "Results") if r.get("workload")}, "stored")
    _check_periods(periods.period_calc(plan).set_index("workload").to_dict("index"), "python")
    _check_periods({r["workload"]: r for r in sheet_values(out, "Demand_Calc") if r.get("workload")}, "stored")
    # the fleet totals the Summary and the memo read (planner.finance.fleet.totals)
    t = fleet.totals(plan)
    assert (t.gpus_baseline, t.gpus) == (36, 20)
    assert math.isclose(t.cost_per_month_baseline - t.cost_per_month, SAVED, rel_tol=1e-12)


@pytest.mark.libreoffice
def test_libreoffice_recalculates_the_baseline_cells(built, recalc, tmp_path):
    src, _plan, out = built
    # the edited copy is made first so that both are recalculated by one LibreOffice process
    e_out, e_in = edit_output_and_input(out, src, [("Workloads", 2, "ttft_slo_ms", 430)], tmp_path)
    again, e_again = recalc(out, e_out)
    _check_results({r["workload"]: r for r in sheet_values(again, "Results") if r.get("workload")}, "LibreOffice")
    _check_periods({r["workload"]: r for r in sheet_values(again, "Demand_Calc") if r.get("workload")}, "LibreOffice")
    # a live edit of the target (450 -> 430 ms) recalculates to a fresh run's baseline count
    fresh = build_plan(e_in).results.set_index("workload")
    lo = {r["workload"]: r for r in sheet_values(e_again, "Results") if r.get("workload")}
    assert fresh.loc["slo-both", "instances_baseline"] == n_ttft(P_B, 430) != 26
    for c in ("instances_baseline", "instances_ttft_baseline", "instances_needed"):
        assert same_value(fresh.loc["slo-both", c], lo["slo-both"][c]), c


def test_a_target_only_the_hits_meet(tmp_path):
    # ttft_slo_ms 380 (mean): above the target's P = 336 ms, below the baseline's P = 400 ms, so no
    # count meets it at the baseline. Target: lambda* = 2 x 44 / (112,896 + 12,800 + 672 x 44) = 88 / 155,264
    # = 0.566776 requests/s, ceil(11.9048 / 0.566776 = 21.004) = 22 instances. The baseline leaves the
    # target out (throughput: 10), binding_baseline says so, and the memo says the saving is understated.
    from planner.plan import load_notes
    assert n_ttft(P_T, 380) == 22
    src = tmp_path / "in.xlsx"
    write_input_workbook(src, MODELS, GPUS_PRICED, [dict(workload="tight", ttft_slo_ms=380, slo_percentile="mean",
                                                         **ROW)], {})
    plan = build_plan(src)
    r = plan.results.set_index("workload").loc["tight"]
    assert (r["instances_needed"], r["binding"]) == (22, "ttft_slo")
    assert (r["instances_baseline"], r["binding_baseline"]) == (10, "unreachable: ttft_slo")
    kinds = {f["kind"]: f["text"] for f in load_notes.findings(plan)}
    assert "tight" in kinds["baseline-unreachable"] and "unreachable" not in kinds
