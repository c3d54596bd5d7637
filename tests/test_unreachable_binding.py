"""A latency target no instance count meets (slofix item 2) is said by ``binding``
("unreachable: ..."), counted by an error row of Checks that turns the master check to ERROR (a
live COUNTIF with its Python count), a located warning, and a memo finding.

The deployment is tests/test_load_workbook.py's (Llama-3.1-8B on one H100, isl 4000, osl 200,
batch 16, P = 400 ms request alone, D = 400 ms, so 20 instances on throughput for 6M tokens/min).
"""

from __future__ import annotations

import math

import openpyxl
import pytest

from conftest import header_index, value_book
from planner.plan import load_notes
from planner.plan.build import build_plan
from planner.workbook.writer import write_output
from test_hand_calc import write_input
from test_load_workbook import BASE, GPUS, MODELS, N_TP, S0, S1

WLS = [dict(workload="ok", demand_tpm=6_000_000, ttft_slo_ms=5000, **BASE),          # met: 20 instances
       dict(workload="below-alone", demand_tpm=6_000_000, ttft_slo_ms=300, **BASE),  # 300 < P = 400 ms
       # fixed concurrency 8, mean target: the burst packed into passes of 8,192 tokens (Settings
       # max_num_batched_tokens, t_fixed 0) has mean TTFT (400 + 2 x 1219.2 + 2 x 2038.4 + 2 x 2857.6 + 3200) / 8
       # = 1,978.8 ms (tests/test_load_workbook.py "fixed-conc" derives it) > 1,500 ms, whatever the count
       dict(workload="conc-ttft", demand_tpm=6_000_000, concurrency=8, ttft_slo_ms=1500, slo_percentile="mean",
            **BASE),
       # fixed concurrency 4: TPOT = s0 + 4 s1 + 3 P / (2 osl) = s0 + 4 s1 + 3 ms, met by a 40 ms target
       dict(workload="conc-ok", demand_tpm=6_000_000, concurrency=4, tpot_slo_ms=40, **BASE)]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("unreach")
    src = d / "in.xlsx"
    write_input(src, MODELS, GPUS, WLS)
    # hit_step 0.5: the hit sweep at 3 points (0, 0.5, 1), not 21; compare_all still holds every sweep
    # column of every workload to Python, at fewer rows
    wb = openpyxl.load_workbook(src)
    wb["Settings"].append(["hit_step", 0.5])
    wb.save(src)
    plan = build_plan(src)
    out = d / "out.xlsx"
    write_output(plan, out)
    return plan, out


def test_binding_says_unreachable(built):
    plan, _ = built
    r = plan.results.set_index("workload")
    assert S0 + 4 * S1 + 3 < 40                       # hand: the conc-ok target is met at concurrency 4
    assert r.loc["ok", "binding"] == "throughput" and r.loc["ok", "instances_needed"] == N_TP
    assert r.loc["below-alone", "binding"] == "unreachable: ttft_slo"
    assert r.loc["conc-ttft", "binding"] == "unreachable: ttft_slo"
    assert math.isinf(r.loc["conc-ttft", "instances_ttft"])
    assert r.loc["conc-ok", "binding"] in ("throughput", "concurrency")
    assert math.isnan(r.loc["conc-ok", "instances_tpot"])


def test_checks_row_makes_the_master_check_not_ok(built):
    plan, out = built
    wb = openpyxl.load_workbook(out)
    ws = wb["Checks"]
    row = next(r for r in ws.iter_rows() if r[0].value == "latency targets reachable")
    assert row[1].value == "error"
    f = row[2].value
    assert 'COUNTIF(' in getattr(f, "text", f) and '"unreachable*")' in getattr(f, "text", f)   # live
    cached = value_book(out, "Checks")["Checks"]
    crow = next(r for r in cached.iter_rows() if r[0].value == "latency targets reachable")
    assert crow[2].value == 2 and crow[3].value == "FAIL"             # below-alone and conc-ttft
    assert cached.cell(1, 2).value == "ERROR"
    assert "Workloads row 3: below-alone" in [c.value for c in crow]     # the first row in question
    # no inf stored: the cell says "unreachable"
    res = value_book(out, "Results")["Results"]
    h = header_index(res)
    assert res.cell(4, h["instances_ttft"]).value == "unreachable"
    assert res.cell(4, h["binding"]).value == "unreachable: ttft_slo"


def test_warning_and_memo_say_it(built):
    plan, _ = built
    text = [str(w) for w in plan.warnings]
    assert any(t.startswith("Workloads row 3 (below-alone): ttft_slo_ms 300 is not above the request-alone "
                            "TTFT 400.0 ms") for t in text)
    assert any(t.startswith("Workloads row 4 (conc-ttft): at concurrency 8 the TTFT (mean) is 1,979 ms, above "
                            "ttft_slo_ms 1,500") for t in text)
    memo = {f["kind"]: f["text"] for f in load_notes.findings(plan)}
    assert memo["unreachable"].startswith("2 workload(s) have a target that no number of GPUs meets: below-alone "
                                          "(the TTFT target, below what one request alone takes); conc-ttft (the "
                                          "TTFT target, at its fixed concurrency 8)")


@pytest.mark.libreoffice
def test_libreoffice_recounts_the_unreachable_rows(built, recalc):
    from test_recalc import compare_all

    plan, out = built
    path = recalc(out)
    assert compare_all(path, plan) > 0                        # every formula cell against its stored value
    again = value_book(path, "Checks", "Results")
    ws = again["Checks"]
    row = next(r for r in ws.iter_rows() if r[0].value == "latency targets reachable")
    assert row[2].value == 2 and ws.cell(1, 2).value == "ERROR"
    res = again["Results"]
    h = header_index(res)
    got = [res.cell(i + 2, h["binding"]).value for i in range(len(WLS))]
    assert got == list(plan.results["binding"])
