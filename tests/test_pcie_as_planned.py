"""Sensitivity_PCIe's "as planned" row is the plan: it sweeps the link at the workload's planned
KV bandwidth kv_gbps, not its GPU's pcie_gbps (issue 21: the example had the two equal everywhere,
so the old test could not tell)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openpyxl
import pytest

from planner.plan.build import build_plan

ROOT = Path(__file__).resolve().parents[1]


def test_as_planned_row_uses_kv_gbps(tmp_path):
    wb = openpyxl.load_workbook(ROOT / "workbooks" / "example.xlsx")
    ws = wb["Workloads"]
    heads = [str(c.value or "").split(" [")[0].split(" (")[0] for c in ws[1]]
    ws.cell(2, heads.index("kv_gbps") + 1).value = 7.5  # a slow KV tier, far below PCIe
    src = tmp_path / "in.xlsx"
    wb.save(src)
    plan = build_plan(src)
    res, r = plan.resolved.iloc[0], plan.results.iloc[0]
    assert res["kv_gbps"] == 7.5 and res["pcie_gbps"] != 7.5
    p = plan.sens.frames["Sensitivity_PCIe"]
    planned = p[(p["link"] == "as planned") & (p["workload"] == r["workload"])].iloc[0]
    # hand check: load = h N S / B [bytes / (GB/s) -> ms: / 1e6]
    assert planned["load_ms"] == pytest.approx(res["hit_target"] * res["isl"] * r["kv_bytes_per_token_gpu"]
                                               / (7.5e6), rel=1e-12)
    for c in ("load_ms", "ttft_ms", "delta", "h_star"):
        assert planned[c] == pytest.approx(r[c], rel=1e-12)
    assert np.isfinite(planned["ttft_ms"])
