"""A fleet larger than the memo table: the largest demands are shown, the rest are counted."""

from conftest import edited_example, repeat_workloads
from planner.memo.render import build_context
from planner.memo.numbers import MEMO_TABLE_MAX
from planner.plan.build import build_plan


def test_memo_table_is_capped_at_the_largest_demands(tmp_path):
    def add_60_copies(wb):
        ws = wb["Workloads"]
        d = [str(c.value).split(" [")[0] for c in ws[1]].index("demand_tpm")

        def larger_demand(row, i):
            row[d] = 1000 + i  # later copies have the larger demand among the copies

        repeat_workloads(wb, ws.max_row - 1 + 60, "{name}-x{i}", larger_demand)

    src, _ = edited_example(tmp_path / "many.xlsx", add_60_copies)
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
