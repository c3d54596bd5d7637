"""The ``Demand_Calc`` and ``Fleet_By_Period`` sheets (values from :mod:`planner.finance.periods`).

Every derived cell is a live formula over Demand, Resolved, Results and the Settings names,
stored with its value. The rows themselves (which workload in which period, and a grown row's
period index ``k``) are laid out when the planner runs: a period added to Settings ``periods``
in the output needs ``planner run`` again (said in the sheet).
"""

from __future__ import annotations


from planner.equations import fleet as fl
from planner.workbook.chart_data import add_series
from planner.workbook.styles import stored_value
from planner.equations import demand as dm
from planner.equations import tables as tb
from planner.equations import sizing as sz
from planner.equations import decode_first_slo as dslo
from planner.plan import columns as sheets
from planner.workbook.layout import write_rows
from planner.workbook.styles import col_width, write_header
from planner.workbook.xlfast import FastFormulaWorksheet
from planner.finance import periods as pr
from planner.core import schema
from planner.workbook.fleet_sheets import FMT_INT, FMT_MONEY, FMT_MONEY0, NOTE_GAP, currency_of, header_row, cell_or_blank, side_note
from planner.core.refs import cell, range_name, sheet_range, sheet_ref
from planner.finance.aggregations import GroupCell, keys_of

FMT_MS = "#,##0.00"


def period_units(cur: str) -> dict[str, str]:
    return {"period_index": "count", "demand_input": "tokens/unit", "demand_tpm": "tokens/min", "res_row": "row",
            "tp": "count", "hit_target": "fraction", "load_ms": "ms", "compute_ms": "ms", "ttft_ms": "ms",
            "chip_ms": "ms", "tpm_delivered_model": "tokens/min", "tpm_delivered_target": "tokens/min",
            "target_utilization": "fraction", "hourly_cost": f"{cur}/h", "instances": "count",
            "gpus_needed": "count", "cost_per_hour": f"{cur}/h", "tpm_delivered_baseline": "tokens/min",
            "instances_baseline": "count", "gpus_baseline": "count", "cost_per_hour_baseline": f"{cur}/h",
            "cost_per_month": f"{cur}/month", "cost_per_month_baseline": f"{cur}/month",
            "cost_saved_per_month": f"{cur}/month", "instances_throughput": "count", "demand_rps": "requests/s",
            "demand_rps_open": "requests/s", "ttft_rho_max": "fraction", "instances_ttft": "count", "instances_tpot": "count",
            "instances_hbm": "count", "concurrency_rps": "requests/s", "instances_concurrency": "count",
            "gpus_throughput": "count", "gpus_for_latency": "count", "cost_per_hour_for_latency": f"{cur}/h",
            "cost_per_month_for_latency": f"{cur}/month", "isl": "tokens", "osl": "tokens",
            "concurrency": "requests", "t_decode_ms": "ms", "decode_step_ms": "ms", "step_weights_ms": "ms",
            "step_kv_ms": "ms", "ttft_slo_ms": "ms", "tpot_slo_ms": "ms", "slo_q": "fraction",
            "max_batch_fit": "requests"}


def row_formulas(me, df=None, equations=None) -> dict[str, str]:
    """Demand_Calc's formulas of one row (without ``=``), from the declarations
    (:data:`planner.finance.periods.ROW_EQUATIONS`): each column's twin over the row's own
    cells (``me(name)``) and the workload's Resolved/Results cells (``INDEX`` at ``res_row``),
    the sizing chain's steps (:func:`planner.equations.sizing.size_xl`) in its place. ``df(name)``: the
    row's cell of DF_Search_Periods, when the plan has a decode-first row planned open loop: its TTFT counts
    (target and baseline) are then the search's there, the closed form elsewhere."""
    row = me("res_row")

    def arg(a) -> str:
        if isinstance(a, tuple):
            return a[0].xl(*(arg(x) for x in a[1:]))
        if a[:2] in ("R.", "Q."):
            return tb.at_row.xl(range_name("Resolved" if a[0] == "R" else "Results", a[2:]), row)
        return me(a)

    out = {"res_row": tb.position.xl(range_name("Resolved", "workload"), me("workload"))}
    for c in (pr.ROW_EQUATIONS if equations is None else equations):
        if c == pr.SIZING:
            out.update({pr.SIZING_AS.get(k, k): v for k, v in sz.size_xl(lambda n: arg(pr.sizing_input(n))).items()})
            if df is not None:
                _f, *args = sz.step("instances_ttft")
                out["instances_ttft"] = dslo.instances_ttft_open_df.xl(
                    *(arg(pr.sizing_input(a)) for a in args), df("df_workload"), df("df_instances_ttft"))
        elif c == pr.BASELINE:
            out.update(sz.size_baseline_xl(lambda n: arg(pr.sizing_input(n))))
            if df is not None:
                _f, *args = sz.step("instances_ttft_baseline")
                out["instances_ttft_baseline"] = dslo.instances_ttft_open_df.xl(
                    *(arg(pr.sizing_input(a)) for a in args), df("df_workload"), df("df_instances_ttft_baseline"))
        else:
            out[c.name] = c.twin.xl(*(arg(x) for x in c.args))
    return out


def _fmt(c: str) -> str | None:
    c = c.removesuffix("_baseline") if c.startswith(("ttft_", "burst_", "concurrency_", "binding")) else c
    if c in ("hit_target", "target_utilization"):
        return schema.FMT_PCT
    if c in ("load_ms", "compute_ms", "ttft_ms", "chip_ms"):
        return FMT_MS
    if c in ("demand_rps", "demand_rps_open", "concurrency_rps", "t_decode_ms", "decode_step_ms", "step_weights_ms",
             "step_kv_ms", "ttft_slo_ms", "tpot_slo_ms"):
        return FMT_MS
    if c in ("slo_q", "ttft_rho_max"):
        return schema.FMT_PCT
    if c == "ttft_log_x":
        return "0.000"
    if c == "binding":
        return None
    if c in ("hourly_cost", "cost_per_hour", "cost_per_hour_baseline", "cost_per_hour_for_latency"):
        return FMT_MONEY
    if c.startswith("cost"):
        return FMT_MONEY0
    if c in ("workload", "period", "gpu", "demand_unit"):
        return None
    return FMT_INT


DF_SHEET = sheets.DF_SEARCH_PERIODS_SHEET


def _write_df_search(wb, fm, calc, own, plan):
    """The DF_Search_Periods sheet, when a Demand_Calc row is a decode-first workload planned open loop: the
    search of :data:`planner.plan.columns.DF_SEARCH_PERIODS` on that row's own row (the others empty), its
    inputs read from the Demand_Calc row (``ttft_ms_baseline`` from Results at the row's workload). Returns
    its columns' positions, or None (no such row: no sheet, Demand_Calc's formulas as before)."""
    sched = calc["scheduler"].to_numpy(dtype=object)
    conc = sheets.coerced_floats(calc["concurrency"])
    if not len(calc) or not dslo.open_loop_df(sched, conc).any():
        return None
    cols = sheets.DF_SEARCH_PERIODS
    pos = {c.name: j for j, c in enumerate(cols)}
    ws = wb.add_worksheet(DF_SHEET, worksheet_class=FastFormulaWorksheet)
    write_header(ws, fm, [c.header for c in cols], [col_width(c.header, c.text) for c in cols])

    def base_ref(name, row):
        if name == "ttft_ms_baseline":
            return tb.at_row.xl(range_name("Results", name), sheet_ref("Demand_Calc", row, own["res_row"]))
        return sheet_ref("Demand_Calc", row, own[name])

    base = {c: calc[c].to_numpy(dtype=object if c in ("workload", "scheduler") else float)
            for c in calc.columns if c not in ("dem", "period", "gpu", "demand_unit", "binding", "binding_baseline")}
    res_rows = calc["res_row"].to_numpy(dtype=int) - 1
    base["ttft_ms_baseline"] = sheets.coerced_floats(plan.results["ttft_ms_baseline"])[res_rows]
    values = sheets.evaluate(cols, base, len(calc))
    rows = [i for i, w in enumerate(values["df_workload"]) if w not in ("", None)]
    write_rows(ws, fm, 1, pos, cols, values.iloc[rows].reset_index(drop=True), base_ref,
               wl_rows=[i + 1 for i in rows], sheet_rows=rows)
    return pos


def write_by_period(wb, ws, calc_ws, fm, layout, plan) -> None:
    """Demand_Calc (one row per workload and period) and Fleet_By_Period (per period and GPU type)."""
    calc = pr.period_calc(plan)
    frame = pr.by_period(plan, calc)
    cur = currency_of(plan)
    units = period_units(cur)
    dem_pos = {c.name: j for j, c in enumerate(schema.columns(schema.DEM))}  # as write_input_sheet lays it out
    own = {c: j for j, c in enumerate(pr.CALC_COLS)}
    header_row(calc_ws, fm, [f"{c} [{units[c]}]" if c in units else c for c in pr.CALC_COLS],
            [20, 12] + [12] * (len(pr.CALC_COLS) - 2))
    calc_ws.freeze_panes(1, 2)
    df_pos = _write_df_search(wb, fm, calc, own, plan)   # None without a decode-first row planned open loop
    eqs = pr.row_equations(plan.resolved)   # the scheduler copied as text when a workload is decode first
    dem = lambda name, r: sheet_ref(schema.DEM, r, dem_pos[name])  # noqa: E731
    for i in range(len(calc)):
        r = i + 1
        rec = calc.iloc[i]
        d = None if rec["dem"] is None or rec["dem"] != rec["dem"] else int(rec["dem"])  # NaN: a grown row
        me = lambda c: cell(r, own[c], col_abs=True)  # noqa: E731,B023
        df = None if df_pos is None else (lambda c: sheet_ref(DF_SHEET, r, df_pos[c]))  # noqa: E731,B023
        f = row_formulas(me, df, eqs)
        workload_hit = f["hit_target"] = tb.at_row.xl(range_name("Resolved", "hit_target"), me("res_row"))
        if d is not None:  # a Demand row: its cells, live
            dr = int(d) + 1
            f["workload"] = dem("workload", dr)
            f["period"] = dem("period", dr)
            f["demand_input"] = tb.number_or_blank.xl(dem("demand_tpm", dr))
            f["demand_unit"] = dm.unit_or_default.xl(dem("demand_unit", dr))
            f["hit_target"] = fl.given_or.xl(dem("hit_target", dr), workload_hit)
        # a grown row: the workload's own hit ratio and demand, its layout written as values
        for c in pr.CALC_COLS:
            style = fm("calc", _fmt(c))
            # inf: "unreachable", in the baseline's chain too (red team 6: a baseline target no count meets stored
            # the number inf, which is no valid cell value: Excel repairs the file, openpyxl cannot open it)
            v = (stored_value(rec[c], c in ("binding", "binding_baseline")) if c in sz.NAMES or c in sz.BASELINE_NAMES
                 else cell_or_blank(rec[c]))
            if c in f:
                calc_ws.write_formula(r, own[c], "=" + f[c], style, v)
            elif c in ("workload", "period", "demand_unit"):  # the layout of a grown row
                calc_ws.write_string(r, own[c], str(rec[c]), fm("const", None))
            elif c == "demand_input":
                calc_ws.write_blank(r, own[c], None, fm("const", None))
            elif c == "period_index":
                if v == "":
                    calc_ws.write_blank(r, own[c], None, fm("const", None))
                else:
                    calc_ws.write_number(r, own[c], float(v), fm("const", FMT_INT))
    k = len(calc)
    dc = lambda c: sheet_range("Demand_Calc", 1, own[c], max(k, 1), own[c])  # noqa: E731

    # Fleet_By_Period
    p_own = {c: j for j, c in enumerate(pr.PERIOD_COLS)}
    heads = [f"{c} [{units[c]}]" if c in units else c for c in pr.PERIOD_COLS]
    header_row(ws, fm, heads, [12, 18, 14, 14, 18, 14, 18, 18, 14, 14, 14, 18])
    ws.freeze_panes(1, 2)
    periods = pr.plan_periods(plan)
    n_types = len(plan.gpus)
    keys = keys_of(pr.BY_PERIOD)
    for idx in range(len(frame)):
        r = idx + 1
        pi, gi = divmod(idx, n_types)
        rec = frame.iloc[idx]
        me = lambda c: cell(r, p_own[c], col_abs=True)  # noqa: E731,B023
        at = GroupCell(key_source=layout.other("GPUs", "gpu", gi + 1), price=layout.other("GPUs", "hourly_cost", gi + 1),
                       me=me, source=lambda _s, c: dc(c))
        ws.write_string(r, p_own["period"], periods[pi], fm("const", None))
        for a in pr.BY_PERIOD[1:]:  # each column declared once: its formula and, in rec, its Python value
            fmt = None if a.name == "gpu" else fm("calc", _fmt(a.name))
            ws.write_formula(r, p_own[a.name], "=" + a.formula(at, keys), fmt, cell_or_blank(rec[a.name]))
    note_col = len(pr.PERIOD_COLS) + NOTE_GAP
    ws.set_column(note_col, note_col, 80)
    notes = [
        "Each workload is sized per period as in Results, at that period's demand and hit ratio (Demand_Calc), "
        "summed here per period and GPU type (live): instances is the SLO-bound count (throughput at "
        "target_utilization, the TTFT and TPOT targets, the HBM fit at load, a fixed concurrency; Demand_Calc "
        "binding says which), instances_throughput the count on throughput alone.",
        "gpus_for_latency / cost_per_month_for_latency: the GPUs and money per month the latency targets add over "
        "throughput alone (gpus_needed - gpus_throughput; 0 without targets).",
        "Demand: a Demand row's demand_tpm in its demand_unit (tokens/min, /hour, /day), else today's demand_tpm "
        "grown by demand_growth per period over Settings periods (first period: today's demand).",
        "Hit ratio: the Demand row's hit_target, else the workload's. Baseline: the same demand at hit_baseline "
        "(blank: hit_measured); cost_saved_per_month = baseline - target.",
        "Rows are laid out when the planner ran: a period added to Settings periods or a Demand row added here "
        "needs planner run again. A GPU type without hourly_cost has a blank cost.",
    ]
    for i, text in enumerate(notes):
        side_note(ws, fm, 1 + i, note_col, 80, text)

    # pivot for the chart (periods x GPU types of gpus_needed), beside Demand_Calc, then the chart
    left = len(pr.CALC_COLS) + NOTE_GAP
    calc_ws.write_string(0, left, "chart: period", fm("header"))  # not a second "period" header
    for gi, g in enumerate(plan.gpus["gpu"].tolist()):
        calc_ws.write_formula(0, left + 1 + gi, "=" + layout.other("GPUs", "gpu", gi + 1), fm("header"), str(g))
    for pi in range(len(periods)):
        r = pi + 1
        calc_ws.write_formula(r, left, "=" + sheet_ref("Fleet_By_Period", 1 + pi * n_types, p_own["period"], True, True),
                              None, periods[pi])
        for gi in range(n_types):
            src = 1 + pi * n_types + gi
            calc_ws.write_formula(r, left + 1 + gi, "=" + sheet_ref("Fleet_By_Period", src, p_own["gpus_needed"], True,
                                                                True), fm("calc", FMT_INT),
                                  cell_or_blank(frame["gpus_needed"].iat[src - 1]))
    chart = wb.add_chart({"type": "column", "subtype": "stacked"})
    for gi in range(n_types):
        add_series(chart, {"name": ["Demand_Calc", 0, left + 1 + gi],
                           "categories": ["Demand_Calc", 1, left, len(periods), left],
                           "values": ["Demand_Calc", 1, left + 1 + gi, len(periods), left + 1 + gi],
                           "name_data": [str(plan.gpus["gpu"].iat[gi])]},
                   periods, [frame["gpus_needed"].iat[pi * n_types + gi] for pi in range(len(periods))],
                   text_categories=True)
    chart.set_title({"name": "GPUs by period and GPU type", "name_font": {"size": 11}})
    chart.set_y_axis({"name": "GPUs", "num_format": "#,##0", "min": 0})
    chart.set_legend({"position": "bottom"})
    chart.set_size({"width": 620, "height": 340})
    ws.insert_chart(len(notes) + 2, note_col, chart)
