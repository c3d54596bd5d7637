"""Flags computed once (planner.plan.flags): the run's warnings, the Checks sheet's Python counts and
the memo's findings read the same arrays. The example is edited so that every flag fires on
rows chosen by hand; the expected rows below are those edits, not the code's output."""

from __future__ import annotations

import openpyxl
import pytest

from conftest import EXAMPLE
from planner.workbook.checks_sheet import checks_for
from planner.core.errors import Problem
from planner.workbook.layout import Layout
from planner.memo.numbers import findings
from planner.plan.build import build_plan


def _col(ws, name: str) -> int:
    return next(c.column for c in ws[1] if str(c.value).split(" [")[0].strip().lower() == name)


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    wb = openpyxl.load_workbook(EXAMPLE)
    wl, gpus, models = wb["Workloads"], wb["GPUs"], wb["Models"]
    # L40S with 1 GiB of HBM: its two workloads (sheet rows 5 and 10) cannot hold weights + KV
    # (hand: Qwen2.5-7B weights alone are 7.61e9 x 2 B / 2^30 = 14.2 GiB on one GPU; Llama-3.1-8B 15.0 GiB)
    gpus.cell(5, _col(gpus, "hbm_gib")).value = 1
    # tp 3 for code-qwen7b-l40s (sheet row 5): kv_heads 4, 4 mod 3 = 1 and 3 mod 4 = 3: uneven
    wl.cell(5, _col(wl, "tp")).value = 3
    # rag-qwen72b-h200 (sheet row 3): tpm_measured kept, hit_measured cleared
    wl.cell(3, _col(wl, "hit_measured")).value = None
    # a model the catalog does not know, typed without params_b (Models sheet row 9, no workload uses it)
    row = models.max_row + 1
    for name, value in (("model", "team-model"), ("layers", 32), ("kv_heads", 8), ("head_dim", 128), ("kv_bytes", 2)):
        models.cell(row, _col(models, name)).value = value
    path = tmp_path_factory.mktemp("flags") / "flags.xlsx"
    wb.save(path)
    return build_plan(path)


def test_flags_mark_the_edited_rows(plan):
    fl = plan.flags
    rows = lambda a: [plan.input.workloads.rows[i] for i in a.nonzero()[0]]  # noqa: E731
    assert rows(fl.hbm_no_fit) == [5, 10]
    assert rows(fl.uneven_heads) == [5]
    assert rows(fl.tpm_without_hit) == [3]
    assert rows(fl.beyond_h_star) == [9]  # the example's own: hit_target 97% > h* 94.8%
    assert [plan.input.models.rows[i] for i in fl.params_missing.nonzero()[0]] == [9]


def test_warnings_are_problems_in_row_order(plan):
    assert all(isinstance(w, Problem) for w in plan.warnings)
    # the estimate's own warning comes first (calibrate: the example's estimated row 15 says which
    # batch its decode was estimated at, issue 20); the flags' warnings follow in row order
    assert str(plan.warnings[0]).startswith("Workloads row 15 (vision-llama90b-h100-tp8): t_decode_ms is estimated "
                                            "by the roofline at batch 8 (typed)")
    flagged = plan.warnings[1:]
    places = [w.place for w in flagged]
    assert places == ["Workloads row 3 (rag-qwen72b-h200)", "Workloads row 5 (code-qwen7b-l40s)",
                      "Workloads row 5 (code-qwen7b-l40s)", "Workloads row 9 (agent-llama8b-a100-long)",
                      "Workloads row 10 (chat-llama8b-l40s)", "Models row 9 (team-model)"]
    text = [str(w) for w in flagged]
    assert text[0] == ("Workloads row 3 (rag-qwen72b-h200): tpm_measured is given without hit_measured: "
                       "taken as measured at 0 hit")
    assert text[1].startswith("Workloads row 5 (code-qwen7b-l40s): KV does not fit in HBM: weights ")
    assert text[2] == ("Workloads row 5 (code-qwen7b-l40s): kv_heads 4 and tp 3 do not divide either way: "
                       "KV heads are spread unevenly over GPUs")
    assert text[-1] == "Models row 9 (team-model): params_b is blank: weights taken as 0 GiB in the HBM check"


def test_checks_counts_are_the_flags(plan):
    counts = {c.name: c.count for c in checks_for(plan, Layout.of(plan)).checks if c.kind == "warning"}
    assert counts == {"KV fits in HBM": 2, "hit_target within break-even h*": 1, "kv_heads and tp divide": 1,
                      "params_b given": 1, "tpm_measured has hit_measured": 1,
                      "workloads have a demand_tpm": 0}  # every example workload has a demand


def test_memo_findings_name_the_flagged_rows(plan):
    by_kind = {f["kind"]: f for f in findings(plan)}
    assert by_kind["hbm"]["title"] == "KV does not fit in HBM"
    assert "code-qwen7b-l40s" in by_kind["hbm"]["text"] and "chat-llama8b-l40s" in by_kind["hbm"]["text"]
    assert by_kind["h-star"]["title"] == "Target beyond break-even h*"
    assert by_kind["h-star"]["text"].startswith("agent-llama8b-a100-long (target 97.0%")
    assert by_kind["load-bound"]["title"] == "Load-bound at target"
