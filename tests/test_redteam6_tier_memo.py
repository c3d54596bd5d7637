"""A Tiers row of capacity 0 is swept from the trace's ceiling: the memo must say so, and split the hit of
the row it reports, not the plan's (red team 6, the issue 19 checker's "a tier with zero capacity").

Found on a checker's trace with Tiers hbm 8 GiB + dram 0 GiB (node): the memo said "a 294 GiB dram tier
per node raises the hit ratio from 16% to 93% (hbm 16%, dram 0%) and saves 50 GPUs": the 294 GiB is the
sweep's base for a tier that declares nothing (every distinct block, ``tiers.declared_or_ceiling``), while
the split was the plan's, which has no dram tier (dram 0%), and the plan itself needs the 50 GPUs.

By hand, on tests/test_kv_tiers.py's trace ([1 2], [1 3], [1 2] of 16-token blocks, 32 tokens each, no
warm-up; a block is 1/512 GiB): the ceiling is the 3 distinct blocks = 3/512 GiB = 0.00586 GiB. The plan
(DRAM 0) hits only HBM's block: h = 1/3, 5 GPUs. At the sweep's base, HBM 1 block + DRAM 3 blocks >= every
distinct block: H = 1/2, so HBM serves 1/3 (33%) and DRAM 1/2 - 1/3 = 1/6 (17%), 4 GPUs (the hand numbers
of test_kv_tiers.test_tier_worth_hand_calculated), one saved.
"""

from __future__ import annotations

import pytest

from planner.memo.render import build_memo
from planner.plan.build import build_plan
from planner.workbook.writer import write_output
from test_kv_tiers import TIERS, make

ZERO = [TIERS[0], dict(TIERS[1], capacity_gib=0)]


@pytest.fixture(scope="module")
def memo(tmp_path_factory):
    d = tmp_path_factory.mktemp("rt6tier")
    plan = build_plan(make(d, tiers=ZERO))
    out = d / "out.xlsx"
    write_output(plan, out)
    return plan, build_memo(plan, out, charts=False).markdown


def test_the_plan_has_no_dram_tier(memo):
    plan, _ = memo
    assert plan.input.kv_tiers.workloads[0].hits.tolist() == pytest.approx([1 / 3, 0], abs=1e-15)
    assert float(plan.results["gpus_needed"].iat[0]) == 5


def test_the_memo_says_the_capacity_is_the_ceiling_and_splits_its_own_row(memo):
    _, text = memo
    line = next(ln for ln in text.splitlines() if "What the DRAM tier is worth" in ln)
    assert "a DRAM tier per instance of 0.00586 GiB (the trace's every distinct block; Tiers declares 0 GiB" in line
    assert "would raise the hit ratio from 33% to 50% (HBM 33%, DRAM 17%) and would save 1 GPU" in line
    assert "DRAM 0%" not in line


def test_a_declared_tier_reads_as_before(tmp_path):
    plan = build_plan(make(tmp_path))
    out = tmp_path / "out.xlsx"
    write_output(plan, out)
    text = build_memo(plan, out, charts=False).markdown
    assert ("a 0.00391 GiB DRAM tier per instance raises the hit ratio from 33% to 50% (HBM 33%, DRAM 17%) and "
            "saves 1 GPU") in text
