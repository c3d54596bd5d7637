"""The finance sheets of the output workbook: Summary (first, active), Fleet, Fleet_By_Period
(with its Demand_Calc helper) and Scenario_Compare; the Summary is written here, the others
in :mod:`planner.workbook.fleet_sheets`.

Every derived cell is a live formula over Results/Resolved/GPUs/Demand (SUMIFS, INDEX/MATCH)
stored with the value :mod:`planner.equations.fleet` (:mod:`planner.finance.demand`, :mod:`planner.inputs.scenario_checks`) computed; Scenario_Compare's scenario rows are
the exception (re-planned at run time, said in the sheet). Notes sit to the right of the
tables (never below), so a table read with pandas ends with its last data row.

Hooks in :func:`planner.workbook.writer.write_output`: :func:`add_sheets` before the other sheets
(Summary opens the workbook), :func:`write_finance` after Results is laid out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from planner.equations import fleet as fl
from planner.equations import tables as tb
from planner.finance.cells import Both, of, ref
from planner.finance import fleet as fl2
from planner.finance import periods as pr
from planner.workbook.chart_data import add_series
from planner.core import schema
from planner.equations.constants import C, N
from planner.workbook.fleet_sheets import (FMT_INT, FMT_MONEY, FMT_MONEY0, SETTING_NAMES, currency_of, header_row, cell_or_blank,
                                           define_setting_names, fleet_cells, write_fleet,
                                           write_scenarios)
from planner.core.refs import MASTER_CHECK, cell, range_name, sheet_range, sheet_ref
from planner.workbook.xlfast import FastFormulaWorksheet, RowBuffer

TOP_WORKLOADS = 5          # largest workloads by cost on the Summary


@dataclass
class FinanceSheets:
    summary: object
    fleet: object
    by_period: object | None
    scenarios: object | None
    buffers: list = field(default_factory=list)


def add_sheets(wb, plan) -> FinanceSheets:
    """Create Summary (first), Fleet, Fleet_By_Period and Scenario_Compare (when their input
    sheets are given), in that order, before the other sheets."""
    add = lambda name: RowBuffer(wb.add_worksheet(name, worksheet_class=FastFormulaWorksheet))  # noqa: E731
    summary = add("Summary")
    fleet = add("Fleet")
    by_period = add("Fleet_By_Period") if pr.plan_periods(plan) else None
    scen = add("Scenario_Compare") if schema.SCN in plan.input.optional else None
    return FinanceSheets(summary, fleet, by_period, scen)


def write_finance(wb, fm, layout, plan, fs: FinanceSheets, settings_rows: dict[str, int]) -> None:
    """Write every finance sheet (buffered rows flushed here) and make Summary the active sheet."""
    define_setting_names(wb, settings_rows)
    fleet_frame = fl2.plan_fleet(plan)
    write_fleet(wb, fs.fleet, fm, layout, plan, fleet_frame)
    if fs.by_period is not None:
        calc_ws = RowBuffer(wb.add_worksheet("Demand_Calc", worksheet_class=FastFormulaWorksheet))
        from planner.workbook.periods_sheet import write_by_period

        write_by_period(wb, fs.by_period, calc_ws, fm, layout, plan)
        calc_ws.flush()
    if fs.scenarios is not None:
        write_scenarios(wb, fs.scenarios, fm, plan, len(fleet_frame))
    write_summary(wb, fs.summary, fm, layout, plan, fleet_frame, fs)
    for ws in (fs.summary, fs.fleet, fs.by_period, fs.scenarios):
        if ws is not None:
            ws.flush()
    fs.summary.activate()




# --------------------------------------------------------------------------- Summary
def write_summary(wb, ws, fm, layout, plan, frame, fs: FinanceSheets) -> None:
    cur = currency_of(plan)
    tot = fl2.totals(plan)
    fleet_col = {c: j for j, c in enumerate(fl2.FLEET_COLS)}
    n_types = len(frame) - 1
    rows = fleet_cells(n_types)
    fleet_ref = lambda r, c: sheet_ref("Fleet", r, fleet_col[c], True, True)  # noqa: E731
    T = rows["total"]
    ws.set_column(0, 0, 46)
    ws.set_column(1, 4, 17)
    quarter = str(plan.settings.get("quarter") or "")
    ws.write_string(0, 0, f"Capacity plan {quarter}: fleet summary".replace("  ", " "), fm("title"))
    ws.write_string(1, 0, "Live: every number is a formula over the Fleet, Results and input sheets; edit the "
                          "inputs and recalculate.", fm("note"))
    master_ok = _master_ok(plan, layout)
    ws.write_string(2, 0, "Model checks (Checks sheet)", fm("header"))
    ws.write_formula(2, 1, "=" + MASTER_CHECK, fm("ok" if master_ok else "bad"), "OK" if master_ok else "ERROR")
    ws.conditional_format(2, 1, 2, 1, {"type": "cell", "criteria": "==", "value": '"OK"', "format": fm("ok")})
    ws.conditional_format(2, 1, 2, 1, {"type": "cell", "criteria": "!=", "value": '"OK"', "format": fm("bad")})
    ws.write_string(3, 0, "Workloads with a demand (of all workloads)")
    with_demand = of(tb.count_numbers, _results(plan, "instances_needed"))
    workloads = of(tb.count_filled, ref(plan.results["workload"], range_name("Results", "workload")))
    _put(ws, 3, 1, with_demand, fm("calc", FMT_INT))
    _put(ws, 3, 2, workloads, fm("calc", FMT_INT))
    # an absent demand is a warning, not a silent 0 GPUs (issue 20); live like the counts beside it
    warning = of(tb.demand_warning, with_demand, workloads)
    _put(ws, 3, 3, warning, fm("bad" if warning.value else "note"))

    # GPUs by type
    r0 = 5
    ws.write_string(r0, 0, "GPUs by type", fm("title"))
    heads = ["GPU type", "Serving instances", "GPUs", f"Cost per month [{cur}]", "Capacity [tokens/min]"]
    header_row(ws, fm, heads, [46, 17, 17, 17, 17], top=r0 + 1)
    src = [("gpu", None), ("instances", FMT_INT), ("gpus_needed", FMT_INT), ("cost_per_month", FMT_MONEY0),
           ("tpm_capacity", FMT_INT)]
    for i in range(n_types + 1):
        r = r0 + 2 + i
        fr = rows["first"] + i
        for j, (c, fmt) in enumerate(src):
            style = "header" if i == n_types and j == 0 else "calc"
            ws.write_formula(r, j, "=" + fleet_ref(fr, c), fm(style, fmt), cell_or_blank(frame[c].iat[i]))
    types_top, types_bottom = r0 + 2, r0 + 1 + n_types

    # cost
    r = types_top + n_types + 2
    ws.write_string(r, 0, "Cost of the fleet", fm("title"))
    per_month = ref(tot.cost_per_month, fleet_ref(T, "cost_per_month"))
    cost_rows = [
        (f"Cost per hour [{cur}]", ref(tot.cost_per_hour, fleet_ref(T, "cost_per_hour")), FMT_MONEY),
        (f"Cost per month [{cur}] ({_g(plan.settings['hours_per_month'])} h)", per_month, FMT_MONEY0),
        (f"Cost per quarter [{cur}]",
         of(fl.per_year, per_month, ref(C.MONTHS_PER_QUARTER, N.MONTHS_PER_QUARTER)), FMT_MONEY0),
        (f"Cost per year [{cur}]", ref(float(frame["cost_per_year"].iat[-1]), fleet_ref(T, "cost_per_year")),
         FMT_MONEY0),  # the Fleet total's cell and its value
    ]
    for k, (label, b, fmt) in enumerate(cost_rows):
        ws.write_string(r + 1 + k, 0, label)
        _put(ws, r + 1 + k, 1, b, fm("calc", fmt))
    r = r + 1 + len(cost_rows)
    ws.write_string(r, 0, "GPUs of types without a price (not in the cost)")
    fleet_types = lambda c: ref(frame[c].to_numpy()[:n_types],  # noqa: E731
                                sheet_range("Fleet", rows["first"], fleet_col[c], rows["last"], fleet_col[c]))
    _put(ws, r, 1, of(tb.uncosted, fleet_types("gpus_needed"), fleet_types("cost_per_hour")),
         fm("calc", FMT_INT))

    # savings of the hit-ratio target
    r += 2
    ws.write_string(r, 0, "What the hit-ratio target saves", fm("title"))
    header_row(ws, fm, ["", "At the baseline hit ratios", "At the target hit ratios", "Saved by the target"],
            [46, 17, 17, 17], top=r + 1)
    hours = ref(float(plan.settings["hours_per_month"]), SETTING_NAMES["hours_per_month"])
    sav = [("GPUs", of(tb.total, _results(plan, "gpus_baseline")),
            ref(tot.gpus, fleet_ref(T, "gpus_needed")), FMT_INT),
           (f"Cost per month [{cur}]", of(tb.priced_total_per_month, _results(plan, "cost_per_hour_baseline"), hours),
            ref(tot.cost_per_month, fleet_ref(T, "cost_per_month")), FMT_MONEY0)]
    for k, (label, at_baseline, at_target, fmt) in enumerate(sav):
        rr = r + 2 + k
        ws.write_string(rr, 0, label)
        _put(ws, rr, 1, at_baseline, fm("calc", fmt))
        _put(ws, rr, 2, at_target, fm("calc", fmt))
        _put(ws, rr, 3, of(tb.saved, ref(at_baseline.value, cell(rr, 1)), ref(at_target.value, cell(rr, 2))),
             fm("calc", fmt))
    r += 2 + len(sav)
    # short enough to end before the charts of column G (a longer line prints under them)
    ws.write_string(r, 0, "Same demand and utilisation, sized at hit_baseline instead of hit_target (re-hit "
                          "corrected from tpm_measured when given).", fm("note"))
    n_typed = int(sum(1 for rec in plan.input.workloads.records if rec.get("hit_baseline") is not None))
    ws.write_string(r + 1, 0, _baseline_note(n_typed, len(plan.results)), fm("note"))
    r += 1

    # capacity
    r += 2
    ws.write_string(r, 0, "Capacity against demand", fm("title"))
    capacity = ref(tot.tpm_capacity, fleet_ref(T, "tpm_capacity"))
    demand = ref(tot.tpm_demand, fleet_ref(T, "tpm_demand"))
    cap_rows = [("Delivered capacity of the sized fleet [tokens/min]", capacity),
                ("Demand [tokens/min]", demand)]
    for k, (label, b) in enumerate(cap_rows):
        ws.write_string(r + 1 + k, 0, label)
        _put(ws, r + 1 + k, 1, b, fm("calc", FMT_INT))
    ws.write_string(r + 3, 0, "Headroom (capacity / demand - 1)")
    _put(ws, r + 3, 1, of(tb.headroom, ref(capacity.value, cell(r + 1, 1)), ref(demand.value, cell(r + 2, 1))),
         fm("calc", schema.FMT_PCT))
    r += 5

    # largest workloads by cost
    ws.write_string(r, 0, f"Largest workloads by cost per month (top {TOP_WORKLOADS}, ranked when the planner ran)",
                    fm("title"))
    header_row(ws, fm, ["Workload", "GPU type", "GPUs", f"Cost per month [{cur}]"], [46, 17, 17, 17], top=r + 1)
    res = plan.results
    cost_h = fl2.to_floats(res["cost_per_hour"])
    gpus = fl2.to_floats(res["gpus_needed"])
    # cost first (unpriced last), then GPUs, then input order; vectorised for large fleets
    keep = np.flatnonzero(~np.isnan(gpus))
    order = keep[np.lexsort((keep, -gpus[keep], -np.nan_to_num(cost_h[keep], nan=-1.0)))].tolist()
    names = ref(res["workload"].to_numpy(), range_name("Results", "workload"))
    column = {"gpu": ref(res["gpu"].to_numpy(), range_name("Results", "gpu")),
              "gpus_needed": ref(gpus, range_name("Results", "gpus_needed")),
              "cost_per_hour": ref(cost_h, range_name("Results", "cost_per_hour"))}
    for k, i in enumerate(order[:TOP_WORKLOADS]):
        rr = r + 2 + k
        name = str(res["workload"].iat[i])
        ws.write_string(rr, 0, name)
        me = ref(name, cell(rr, 0, col_abs=True))
        find = lambda c: of(tb.lookup, column[c], names, me)  # noqa: E731,B023
        _put(ws, rr, 1, find("gpu"), None)
        _put(ws, rr, 2, find("gpus_needed"), fm("calc", FMT_INT))
        _put(ws, rr, 3, of(fl.per_month, find("cost_per_hour"), hours), fm("calc", FMT_MONEY0))
    r += 2 + max(min(len(order), TOP_WORKLOADS), 1) + 1

    # demand by period (when given): the plan, the baseline and what the target saves, per period
    if fs.by_period is not None:
        r = write_period_block(ws, fm, plan, r, cur)
    if fs.scenarios is not None:
        ws.write_string(r, 0, "What-if scenarios: see Scenario_Compare (computed when the planner ran)", fm("note"))
        r += 1
    r = _latency_block(ws, fm, plan, r, cur)   # issue 16: what the latency targets add
    from planner.workbook.tier_worth import summary_lines  # KV tiers (issue 19): nothing without a traced workload

    r = summary_lines(wb, ws, fm, plan, r)
    last_row = r

    # charts: GPUs by type, cost per month by type
    for j, (col, title) in enumerate(((2, "GPUs by type"), (3, f"Cost per month by type [{cur}]"))):
        ch = wb.add_chart({"type": "column"})
        add_series(ch, {"name": title, "categories": ["Summary", types_top, 0, types_bottom, 0],
                        "values": ["Summary", types_top, col, types_bottom, col], "data_labels": {"value": True},
                        "fill": {"color": "#2F5597" if j == 0 else "#70AD47"}},
                   frame["gpu"].iloc[:n_types], frame[src[col][0]].iloc[:n_types], text_categories=True)
        ch.set_title({"name": title, "name_font": {"size": 11}})
        ch.set_y_axis({"num_format": "#,##0", "min": 0})  # counts and money from zero (never a cut axis)
        ch.set_legend({"none": True})
        ch.set_size({"width": 440, "height": 260})
        ws.insert_chart(5 + j * 14, 6, ch)
    ws.print_area(0, 0, max(last_row, 32), 12)


def _put(ws, row: int, col: int, b: Both, style) -> None:
    """Write a declared cell: its formula and its Python value (NaN stored as a blank, a count as an int)."""
    ws.write_formula(row, col, b.formula, style, b.value if isinstance(b.value, int) else cell_or_blank(b.value))


def _results(plan, name: str) -> Both:
    """A Results column: its values (NaN when blank) and its defined name."""
    return ref(fl2.to_floats(plan.results[name]), range_name("Results", name))


def _latency_block(ws, fm, plan, r: int, cur: str) -> int:
    """GPUs and money per month the latency targets add over throughput alone (live: the Fleet Total
    row's gpus_for_latency / cost_per_month_for_latency, sums over Results); only when a workload has a target or a
    fixed concurrency. Returns the next free row."""
    res = plan.resolved
    has = (~np.isnan(res["ttft_slo_ms"].to_numpy(dtype=float)) | ~np.isnan(res["tpot_slo_ms"].to_numpy(dtype=float))
           | ~np.isnan(res["concurrency"].to_numpy(dtype=float)))
    if not has.any():
        return r
    r += 1
    ws.write_string(r, 0, "What the latency targets add (TTFT/TPOT targets, HBM fit at load, fixed concurrency)",
                    fm("title"))
    ws.write_string(r + 1, 0, "GPUs over throughput alone")
    # the Fleet Total row's latency columns (the same sums, one place: Summary = Fleet by construction)
    f_own = {c: j for j, c in enumerate(fl2.FLEET_COLS)}
    total = fleet_cells(len(plan.gpus))["total"]
    tot = fl2.plan_fleet(plan).iloc[-1]
    ws.write_formula(r + 1, 1, "=" + sheet_ref("Fleet", total, f_own["gpus_for_latency"], True, True),
                     fm("calc", FMT_INT), cell_or_blank(tot["gpus_for_latency"]))
    ws.write_string(r + 2, 0, f"Cost per month of those GPUs [{cur}]")
    ws.write_formula(r + 2, 1, "=" + sheet_ref("Fleet", total, f_own["cost_per_month_for_latency"], True, True),
                     fm("calc", FMT_MONEY0), cell_or_blank(tot["cost_per_month_for_latency"]))
    ws.write_string(r + 3, 0, "Per workload: Results instances_throughput, instances_needed and binding", fm("note"))
    return r + 4


def _g(x) -> str:
    return f"{float(x):g}"


def _master_ok(plan, layout) -> bool:
    from planner.workbook.checks_sheet import checks_for

    return all(c.count == 0 for c in checks_for(plan, layout).checks if c.kind == "error")


def _baseline_note(n_typed: int, n: int) -> str:
    """Which baseline the savings use (a blank hit_baseline is never silent)."""
    if n_typed == n:
        return "Baseline: every workload's hit_baseline as typed."
    if n_typed == 0:
        return ("Baseline: hit_baseline is blank on every workload, so the load test's hit_measured is taken as "
                "today's hit ratio; type hit_baseline to plan against another baseline.")
    return (f"Baseline: hit_baseline typed on {n_typed} of {n} workloads; the others take their hit_measured "
            f"(the load test's hit ratio).")


PERIOD_BLOCK = ("gpus_needed", "cost_per_month", "gpus_baseline", "cost_per_month_baseline", "cost_saved_per_month")


def write_period_block(ws, fm, plan, r: int, cur: str) -> int:
    """The Summary's 'Fleet by period' table: per period the GPUs and cost per month at the target
    hits, at the baseline hits, and the cost the target saves (live SUMIFS over Fleet_By_Period).
    Returns the next free row."""
    tot = pr.period_totals(plan)
    n = len(pr.by_period(plan))
    span = pr.span_label(pr.plan_periods(plan))
    ws.write_string(r, 0, f"Fleet by period ({span})", fm("title"))
    heads = ["Period", "GPUs", f"Cost per month [{cur}]", "GPUs at baseline hits",
             f"Cost per month at baseline [{cur}]", f"Saved by the target [{cur}/month]"]
    header_row(ws, fm, heads, [46, 17, 17, 17, 17, 17], top=r + 1)
    bp = pr.by_period(plan)
    rng = lambda c: ref(bp[c].to_numpy(), sheet_range("Fleet_By_Period", 1, pr.PERIOD_COLS.index(c),  # noqa: E731
                                                       max(n, 1), pr.PERIOD_COLS.index(c)))
    for k, rec in enumerate(tot.itertuples()):
        rr = r + 2 + k
        ws.write_string(rr, 0, rec.period)
        me = ref(rec.period, cell(rr, 0, col_abs=True))
        for j, c in enumerate(PERIOD_BLOCK, start=1):
            fmt = FMT_INT if c.startswith("gpus") else FMT_MONEY0
            # a cost is blank when no type of the period is priced (a blank, not a 0)
            twin = tb.sum_where if c.startswith("gpus") else tb.priced_sum_where
            _put(ws, rr, j, of(twin, rng(c), rng("period"), me), fm("calc", fmt))
    r += 2 + len(tot)
    ws.write_string(r, 0, "Per period at that period's demand and hit ratio (Demand sheet, or grown by "
                          "demand_growth over Settings periods); baseline at hit_baseline.", fm("note"))
    return r + 2
