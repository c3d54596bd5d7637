"""Scenarios the command line refused (red team 6, the issue 19/20 checkers' combined workbook: tiers, periods,
SLOs and Scenarios together), each planned now as ``scenario_compare`` and a fresh run plan it.

1. A ``Tiers`` override (README: "A scenario may override a tier ... tests/test_kv_tiers.py has a
   hand-calculated one") was refused by every ``planner run`` and ``planner validate``: "Scenarios!B2: the
   input has no Tiers sheet to override". The check before writing (``check_scenarios``) looked at
   Models/GPUs/Workloads only; the library path (``build_plan`` then ``scenario_compare``) took it, so the
   test of the README's claim passed.
   By hand (tests/test_kv_tiers.py): without the DRAM tier only HBM's block hits, h = 1/3, 5 GPUs.
2. A scenario tightening a TTFT target below the baseline's request-alone TTFT was refused as "cannot be
   planned: ... ttft_log_x_baseline ... would not be a finite number", although the same target typed in
   Workloads plans (the unreachable baseline count is left out and said, tests/test_redteam5_*).
   By hand (tests/test_redteam5_unreachable_baseline.py's deployment): at the target hit 0.8 a request
   alone takes 104.388608 ms and 400 ms of decode, so one instance delivers 4,200 x 60,000 / 504.388608
   = 499,614.8 tokens/min and 6e6 tokens/min need at least ceil(12.009) = 13 on throughput; at the baseline
   hit 0 it takes 400 ms > 300 ms: unreachable.
"""

from __future__ import annotations

import math

import pytest

from planner.finance.scenarios import scenario_compare
from planner.finance.validation import read_checked
from planner.plan.build import build_plan
from test_hand_calc import write_input
from test_kv_tiers import make
from test_redteam5_unreachable_baseline import GPUS, MODELS, WLS


def test_a_tier_override_passes_the_checks_before_writing(tmp_path):
    scn = [{"scenario": "no DRAM", "sheet": "Tiers", "column": "capacity_gib", "match": "DRAM", "op": "set",
            "value": 0}]
    p_in = read_checked(make(tmp_path, scenarios=scn))       # raised InputError before
    got = scenario_compare(build_plan(p_in)).set_index("scenario")
    assert float(got.loc["no DRAM", "gpus_needed"]) == 5
    assert float(got.loc["base", "gpus_needed"]) == 4


def _slo_input(tmp_path, slo, scenario=None):
    import openpyxl
    p = tmp_path / f"in-{slo}.xlsx"
    write_input(p, MODELS, GPUS, [dict(WLS[0], ttft_slo_ms=slo)])
    if scenario:
        wb = openpyxl.load_workbook(p)
        ws = wb.create_sheet("Scenarios")
        ws.append(["scenario", "sheet", "column", "match", "op", "value"])
        ws.append(scenario)
        wb.save(p)
    return p


def test_a_scenario_making_the_baseline_target_unreachable_is_planned(tmp_path):
    assert math.ceil(6e6 / (4200 * 60000 / (104.388608 + 400))) == 13
    src = _slo_input(tmp_path, 500, ["tight", "Workloads", "ttft_slo_ms", "met-at-target", "set", 300])
    plan = build_plan(read_checked(src))                     # raised InputError before
    got = scenario_compare(plan).set_index("scenario")
    fresh = build_plan(read_checked(_slo_input(tmp_path, 300)))
    r = fresh.results.iloc[0]
    assert str(r["binding_baseline"]).startswith("unreachable")
    assert float(r["gpus_needed"]) >= 13
    assert float(got.loc["tight", "gpus_needed"]) == pytest.approx(float(r["gpus_needed"]))
