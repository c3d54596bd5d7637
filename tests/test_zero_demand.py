"""A workload whose demand_tpm is 0 (typed, not blank): it is sized 0 instances, and with no instance it
serves no request. Before, its load rate was 0/0: blank in Python, but #DIV/0! in Excel and LibreOffice,
which then spread to the wait, the TTFT and TPOT at load, the decode batch and the HBM fit of that row
(found by the decode-first helper of this stop). Now the rate is 0 in both (planner.equations.queueing.
load_rate), so the row reads as a workload at no load: no wait, the request-alone TTFT."""

from __future__ import annotations

import pytest

from conftest import edited_example, same_value, sheet_values
from planner.plan.build import build_plan
from planner.workbook.writer import write_output


def _zero_first(wb):
    ws = wb["Workloads"]
    head = {str(c.value).split(" [")[0]: c.column for c in ws[1]}
    ws.cell(2, head["demand_tpm"]).value = 0
    ws = wb["Settings"]
    row = next((r for r in range(2, ws.max_row + 1) if ws.cell(r, 1).value == "hit_step"), ws.max_row + 1)
    ws.cell(row, 1).value, ws.cell(row, 2).value = "hit_step", 0.25  # a short sweep: its rows are not the point


@pytest.fixture(scope="module")
def zero(tmp_path_factory):
    d = tmp_path_factory.mktemp("zero-demand")
    src, _ = edited_example(d / "in.xlsx", _zero_first, workloads=2)
    plan = build_plan(src)
    out = d / "out.xlsx"
    write_output(plan, out)
    return plan, out


def test_no_instance_means_no_load(zero):
    plan, _out = zero
    r = plan.results.iloc[0]
    # by hand: demand 0 -> 0 instances (ROUNDUP of 0) -> no request per instance -> no wait; the TTFT users
    # would see is the request-alone ttft_ms, and nothing is in decode
    assert float(r["instances_needed"]) == 0
    assert float(r["load_rps"]) == 0 and float(r["prefill_wait_ms"]) == 0 and float(r["decode_batch"]) == 0
    assert float(r["ttft_load_ms"]) == float(r["ttft_ms"]) == float(r["ttft_load_p90_ms"])
    assert r["hbm_fit"] == "yes"
    assert float(plan.results.iloc[1]["load_rps"]) > 0  # the other workload keeps its demand


@pytest.mark.libreoffice
def test_libreoffice_agrees_on_the_zero_demand_row(zero, recalc):
    _plan, out = zero
    got = recalc(out)
    for sheet in ("Results", "Sensitivity_Hit"):
        want, have = sheet_values(out, sheet), sheet_values(got, sheet)
        assert len(want) == len(have)
        for i, (a, b) in enumerate(zip(want, have)):
            for k in a:
                assert same_value(a[k], b[k]) or a[k] == b[k], (sheet, i, k, a[k], b[k])
