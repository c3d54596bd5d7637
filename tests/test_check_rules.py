"""The Checks rows declared once (planner.plan.check_rules): the Python count of each rule,
computed from the plan, equals its Excel formula recalculated by LibreOffice, on a small plan
whose input frames were given offending rows after it was built (the reader would refuse
them), so the error checks count something other than 0.

Hand count of the offences planted by :func:`_tampered` (two workloads, one model, one GPU):
- Models gets a second row "LLAMA-3.1-8B" (the same name in other case: MATCH and COUNTIF
  ignore case) with params_b "n/a": model names unique 2 rows, 1 text in a numeric cell;
- GPUs gets a second row "h100" with hbm_gib "80 GB": gpu names unique 2, 1 text;
- Workloads row 2 (chat): hit_measured "high" (1 text; with tpm_measured given the
  tpm-without-hit warning flags it: 1), tp 1.5 (not whole: 1; 1.5 >= 1 is inside the range);
- Workloads row 3 (batch): alpha 1.5, above alpha's maximum 1 (ratios 1), demand_tpm blank
  (the demand warning 1).
Text in numeric cells: 1 + 1 + 1 = 3. The tp of 1.5 reaches Resolved, and with 8 GQA kv_heads
neither 8/1.5 = 5.33 nor 1.5/8 is whole: the uneven-heads warning 1.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from planner.plan.build import build_plan
from planner.plan.check_rules import RULES, Where
from planner.plan.flags import flags_of
from planner.workbook.input_sheets import write_input_workbook
from planner.workbook.layout import Layout
from planner.workbook.writer import write_output
from test_recalc import checks_counts

MODEL = {"model": "Llama-3.1-8B", "layers": 32, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2, "params_b": 8}
GPU = {"gpu": "H100", "hbm_gib": 80, "pcie_gbps": 25, "hourly_cost": 2.0}
WL = {"workload": "chat", "model": "Llama-3.1-8B", "gpu": "H100", "tp": 1, "isl": 1000, "osl": 100,
      "hit_measured": 0.2, "hit_target": 0.5, "t_attn0_ms": 10, "t_ffn0_ms": 50, "t_decode_ms": 200,
      "tpm_measured": 900_000, "demand_tpm": 1_100_000}
EXPECTED = {"model names unique": 2, "gpu names unique": 2, "numeric cells hold numbers": 3,
            "tp is a whole number >= 1": 1, "ratios within their range": 1, "tpm_measured has hit_measured": 1,
            "workloads have a demand_tpm": 1, "kv_heads and tp divide": 1}


def _plan(tmp_path):
    path = tmp_path / "in.xlsx"
    write_input_workbook(path, [MODEL], [GPU], [WL, dict(WL, workload="batch")], {})
    return build_plan(path)


def _tampered(plan):
    models = pd.concat([plan.models, plan.models.iloc[[0]].assign(model="LLAMA-3.1-8B")], ignore_index=True)
    models["params_b"] = models["params_b"].astype(object)
    models.loc[1, "params_b"] = "n/a"
    gpus = pd.concat([plan.gpus, plan.gpus.iloc[[0]].assign(gpu="h100")], ignore_index=True)
    gpus["hbm_gib"] = gpus["hbm_gib"].astype(object)
    gpus.loc[1, "hbm_gib"] = "80 GB"
    wl = plan.workloads.copy()
    for c in ("hit_measured", "tp", "alpha", "demand_tpm"):
        wl[c] = wl[c].astype(object)
    wl.loc[0, "hit_measured"], wl.loc[0, "tp"] = "high", 1.5
    wl.loc[1, "alpha"], wl.loc[1, "demand_tpm"] = 1.5, None
    # Resolved takes tp from Workloads (a number is used as typed): the recalculated Resolved
    # holds 1.5, and so must the frame the flags read
    resolved = plan.resolved.copy()
    resolved["tp"] = resolved["tp"].astype(float)
    resolved.loc[0, "tp"] = 1.5
    return dataclasses.replace(plan, models=models, gpus=gpus, workloads=wl, resolved=resolved,
                               flags=flags_of(models, wl, resolved, plan.results))


def _counts(plan):
    where = Where.of(plan, Layout.of(plan))
    assert where.rows == {"Workloads": 2, "Models": len(plan.models), "GPUs": len(plan.gpus)}
    return {r.name: int(r.count(plan)) for r in RULES}


def test_python_counts_are_the_hand_counts(tmp_path):
    plan = _plan(tmp_path)
    clean = _counts(plan)
    assert all(v == 0 for k, v in clean.items() if k != "workloads have a demand_tpm"), clean
    counts = _counts(_tampered(plan))
    assert {k: v for k, v in counts.items() if v} == EXPECTED


def test_every_rule_has_a_formula_and_a_computed_count():
    """No rule stores a constant: each count is a function of the plan (two plans, two answers
    for the ones planted above), and each formula is Excel text of its own."""
    assert len({r.name for r in RULES}) == len(RULES)
    for r in RULES:
        assert callable(r.count) and callable(r.formula), r.name
        assert r.kind in ("error", "warning")
    assert [r.kind for r in RULES] == sorted((r.kind for r in RULES), key=lambda k: k != "error")


@pytest.mark.libreoffice
def test_stored_counts_equal_the_recalculated_counts(tmp_path, recalc):
    plan = _tampered(_plan(tmp_path))
    out = tmp_path / "out.xlsx"
    write_output(plan, out)
    stored, again = checks_counts(out), checks_counts(recalc(out))
    assert {k: v[1] for k, v in stored.items() if k != "master" and v[1]} == EXPECTED
    assert again == stored
    assert stored["master"] == ("ERROR",)  # errors found: the master check says so, stored and live
