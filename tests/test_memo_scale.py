"""A fleet larger than the memo table: the largest demands are shown, the rest are counted."""

import openpyxl

from conftest import EXAMPLE
from planner.memo import build_context
from planner.memo_numbers import MEMO_TABLE_MAX
from planner.plan import build_plan


def test_memo_table_is_capped_at_the_largest_demands(tmp_path):
    wb = openpyxl.load_workbook(EXAMPLE)
    ws = wb["Workloads"]
    rows = [[c.value for c in r] for r in ws.iter_rows(min_row=2)]
    head = [str(c.value).split(" [")[0] for c in ws[1]]
    d = head.index("demand_tpm")
    for i in range(60):
        r = list(rows[i % len(rows)])
        r[0] = f"{r[0]}-x{i}"
        r[d] = 1000 + i  # later copies have the larger demand among the copies
        ws.append(r)
    src = tmp_path / "many.xlsx"
    wb.save(src)
    plan = build_plan(src)
    ctx = build_context(plan, workbook="many-plan.xlsx")
    n = len(plan.results)
    assert len(ctx["rows"]) == MEMO_TABLE_MAX and ctx["rows_omitted"] == n - MEMO_TABLE_MAX
    demand = plan.resolved.set_index("workload")["demand_tpm"]
    shown = [r["workload"] for r in ctx["rows"]]
    cutoff = min(demand[w] for w in shown)
    assert all(demand[w] <= cutoff for w in demand.index if w not in shown)   # the largest demands
    order = list(plan.results["workload"])
    assert shown == sorted(shown, key=order.index)                             # in input order
