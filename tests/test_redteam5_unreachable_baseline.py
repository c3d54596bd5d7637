"""A TTFT target met at the target hit ratio but not at the baseline hit (red team 5, found on a
checker's live edit of ``ttft_slo_ms`` in a calibrated workbook, re-planned fresh): the baseline
chain's ``instances_ttft_baseline`` is ``inf`` in Python and ``"unreachable"`` (text) in the
workbook, as its formula says. The Python count of "results free of errors" took the ``inf`` for a
#DIV/0!: the stored Checks said FAIL and the master check ERROR, with exit 0 and nothing on stderr,
while Excel/LibreOffice (``SUMPRODUCT(--ISERROR(Results!...))``) recalculate it to 0 and OK.

The deployment is tests/test_load_workbook.py's (Llama-3.1-8B on one H100, isl 4000, osl 200,
P = 400 ms request alone at 0% hit, t_attn0 100 + t_ffn0 300, no fixed cost). By hand: at the
baseline hit 0 a request alone takes 400 ms > the 300 ms target, so no count meets it; at the
target hit 0.8 it takes, with no overlap (alpha 0), the attention of the new tokens over the whole
context, the FFN of the new tokens and the KV load (docs/model.md: t_attn0 (1 - h^2) + t_ffn0 (1 - h)
+ h isl S / B = 100 x 0.36 + 300 x 0.2 + 3200 x 131,072 B / 50 GB/s = 36 + 60 + 8.388608 =
104.388608 ms), well under 300 ms.
"""

from __future__ import annotations

import openpyxl
import pytest

from planner.plan.build import build_plan
from planner.plan.check_rules import results_errors
from planner.workbook.writer import write_output
from test_hand_calc import write_input
from test_load_workbook import BASE, GPUS, MODELS

WLS = [dict(workload="met-at-target", demand_tpm=6_000_000, ttft_slo_ms=300, hit_baseline=0.0,
            **dict(BASE, hit_target=0.8))]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("rt5base")
    src = d / "in.xlsx"
    write_input(src, MODELS, GPUS, WLS)
    plan = build_plan(src)
    out = d / "out.xlsx"
    write_output(plan, out)
    return plan, out


def _checks(path, data_only=True) -> dict:
    ws = openpyxl.load_workbook(path, data_only=data_only)["Checks"]
    rows = {r[0].value: r for r in ws.iter_rows(max_col=4) if r[0].value}
    return {"master": ws["B1"].value, "errors": rows["results free of errors"][2].value,
            "status": rows["results free of errors"][3].value}


def test_the_hand_numbers(built):
    plan, _out = built
    r = plan.results.iloc[0]
    assert 400 > 300                                                 # baseline: alone slower than the target
    assert float(r["ttft_ms"]) == pytest.approx(36 + 60 + 3200 * 131_072 / 50e9 * 1e3, rel=1e-9)
    assert float(r["ttft_ms"]) < 300                                  # the target hit meets it
    assert str(r["binding_baseline"]).startswith("unreachable")
    assert not str(r["binding"]).startswith("unreachable")


def test_an_unreachable_baseline_count_is_no_results_error(built):
    plan, out = built
    assert results_errors(plan) == 0
    assert _checks(out) == {"master": "OK", "errors": 0, "status": "OK"}


@pytest.mark.libreoffice
def test_libreoffice_agrees(built, recalc):
    _plan, out = built
    assert _checks(recalc(out)) == _checks(out)
