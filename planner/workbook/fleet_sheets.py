"""The fleet sheets of the output workbook: Fleet, Fleet_By_Period (with its Demand_Calc
helper) and Scenario_Compare, and the cell helpers the Summary shares
(:mod:`planner.workbook.summary_sheet` writes the Summary and calls these).

Every derived cell is a live formula over Results/Resolved/GPUs/Demand (SUMIFS, INDEX/MATCH)
stored with the value :mod:`planner.equations.fleet` (:mod:`planner.finance.demand`, :mod:`planner.inputs.scenario_checks`)
computed; Scenario_Compare's scenario rows are the exception (re-planned at run time, said
in the sheet).
"""

from __future__ import annotations

import functools
import math

from planner.finance import fleet as fl2
from planner.finance import scenarios as sc
from planner.core import schema
from planner.core.refs import cell, cell_range, setting_name, sheet_ref
from planner.equations import tables as tb
from planner.finance.aggregations import GroupCell, keys_of
from planner.finance.cells import Both, of, ref
from planner.workbook.chart_data import add_series
from planner.workbook.styles import WRAP, header_lines, write_header

SETTING_NAMES = {key: setting_name(key) for key in ("target_utilization", "hours_per_month", "demand_growth",
                                                    "prefill_mfu", "decode_mbu", "prefill_matmul_eff",
                                                    "prefill_layer_ms", "prefill_request_ms", "prefill_w4a16_eff",
                                                    "max_num_batched_tokens")}
FMT_INT = schema.FMT_INT
FMT_MONEY = "#,##0.00"
FMT_MONEY0 = "#,##0"


NOTE_GAP = 1               # blank columns between a table and its notes
NOTE_WIDTH = 90            # width of the notes' column [characters]; the notes wrap within it


def cell_or_blank(x) -> object:
    """Stored value: NaN as '' (a blank result)."""
    if x is None:
        return ""
    if isinstance(x, str):
        return x
    x = float(x)
    return "" if math.isnan(x) else x


def side_note(ws, fm, row: int, col: int, width: float, text: str, formula: str | None = None) -> None:
    """A note in the column beside a table (``width`` characters wide), wrapped within it and its
    row as high as the wrapped text (15 pt a line), so it prints whole on the sheet's pages: a long
    note left unwrapped ran past the print area and was cut. ``formula``: a live note whose stored
    value is ``text``."""
    if formula is None:
        ws.write_string(row, col, text, fm("side_note"))
    else:
        ws.write_formula(row, col, formula, fm("side_note"), text)
    lines = header_lines(text, width)
    if lines > 1:
        ws.set_row(row, 15 * lines)


# the header of the finance sheets: as high as its longest wrapped header, no frozen panes
header_row = functools.partial(write_header, freeze=False, height=WRAP)


def _named_header(ws, fm, names, units: dict, widths) -> None:
    """The contract's header row: each column's name with its unit in brackets in the header text
    (``gpus_needed [count]``, as Results: a reader strips the trailing unit, and the unit prints,
    which a comment does not)."""
    header_row(ws, fm, [f"{n} [{units[n]}]" if units.get(n) else n for n in names], widths)


def currency_of(plan) -> str:
    return str(plan.settings.get("currency") or "currency")


def define_setting_names(wb, settings_rows: dict[str, int]) -> None:
    """Defined names ``s_<key>`` on the Settings value cells the finance formulas use."""
    for key, name in SETTING_NAMES.items():
        wb.define_name(name, "=" + sheet_ref(schema.SETTINGS, settings_rows[key], 1, True, True))


# --------------------------------------------------------------------------- Fleet
def fleet_cells(n_types: int) -> dict[str, int]:
    """Fleet rows: types 1..n_types, Total at n_types + 1 (0-based sheet rows)."""
    return {"first": 1, "last": n_types, "total": n_types + 1}


def write_fleet(wb, ws, fm, layout, plan, frame) -> None:
    cur = currency_of(plan)
    units = {"instances": "count", "gpus_needed": "count", "cost_per_hour": f"{cur}/h",
             "cost_per_month": f"{cur}/month", "cost_per_year": f"{cur}/year", "tpm_capacity": "tokens/min",
             "tpm_demand": "tokens/min", "instances_throughput": "count", "gpus_throughput": "count",
             "gpus_for_latency": "count", "cost_per_month_for_latency": f"{cur}/month"}
    _named_header(ws, fm, fl2.FLEET_COLS, units, [22, 12, 12, 16, 18, 18, 18, 18, 14, 14, 14, 18])
    ws.freeze_panes(1, 1)
    own = {c: j for j, c in enumerate(fl2.FLEET_COLS)}
    fmts = {"instances": fm("calc", FMT_INT), "gpus_needed": fm("calc", FMT_INT),
            "cost_per_hour": fm("calc", FMT_MONEY), "cost_per_month": fm("calc", FMT_MONEY0),
            "cost_per_year": fm("calc", FMT_MONEY0), "tpm_capacity": fm("calc", FMT_INT),
            "tpm_demand": fm("calc", FMT_INT), "instances_throughput": fm("calc", FMT_INT),
            "gpus_throughput": fm("calc", FMT_INT), "gpus_for_latency": fm("calc", FMT_INT),
            "cost_per_month_for_latency": fm("calc", FMT_MONEY0)}
    n_types = len(frame) - 1
    rows = fleet_cells(n_types)
    keys = keys_of(fl2.FLEET)
    for i in range(n_types):
        r = rows["first"] + i
        rec = frame.iloc[i]
        at = GroupCell(key_source=layout.other("GPUs", "gpu", i + 1), price=layout.other("GPUs", "hourly_cost", i + 1),
                       me=lambda c, r=r: cell(r, own[c], col_abs=True))
        for a in fl2.FLEET:  # each column declared once: its formula and, in rec, its Python value
            ws.write_formula(r, own[a.name], "=" + a.formula(at, keys), fmts.get(a.name), cell_or_blank(rec[a.name]))
    t = rows["total"]
    tot = frame.iloc[-1]
    ws.write_string(t, own["gpu"], fl2.TOTAL, fm("header"))
    for a in fl2.FLEET[1:]:
        rng = cell_range(rows["first"], own[a.name], rows["last"], own[a.name])
        ws.write_formula(t, own[a.name], "=" + a.total_formula(rng), fmts[a.name], cell_or_blank(tot[a.name]))
    # the note beside the total: GPUs of unpriced types are not in the total cost
    note_col = len(fl2.FLEET_COLS) + NOTE_GAP
    ws.set_column(note_col, note_col, NOTE_WIDTH)
    note = of(tb.uncosted_note, uncosted_cell(frame, own, rows))
    side_note(ws, fm, t, note_col, NOTE_WIDTH, note.value, note.formula)
    side_note(ws, fm, 1, note_col, NOTE_WIDTH,
              "Per GPU type, over the workloads with a demand_tpm (live: SUMIFS over Results). "
              "cost_per_hour = sum of gpus_needed x hourly_cost; cost_per_month x "
              f"{SETTING_NAMES['hours_per_month']} (Settings hours_per_month); cost_per_year x 12.")
    side_note(ws, fm, 2, note_col, NOTE_WIDTH,
              "A GPU type without hourly_cost has a blank cost; the Total cost is the total of the "
              "priced types only (see the note on the Total row).")
    side_note(ws, fm, t + 1, note_col, NOTE_WIDTH,
              "instances_throughput / gpus_throughput: the count on throughput alone (Results); "
              "gpus_for_latency and cost_per_month_for_latency: what the latency targets (TTFT, "
              "TPOT, HBM fit at load, fixed concurrency) add over it (0 without targets).")
    ws.autofilter(0, 0, rows["last"], len(fl2.FLEET_COLS) - 1)


def uncosted_cell(frame, own: dict[str, int], rows: dict[str, int]) -> Both:
    """The Fleet types' GPUs whose cost is blank (no hourly_cost), declared: the Python count
    (``fleet_table``'s) and its formula over the Fleet table's own rows."""
    rng = lambda c: ref(frame[c].to_numpy()[: rows["last"]],  # noqa: E731
                        cell_range(rows["first"], own[c], rows["last"], own[c]))
    return of(tb.uncosted, rng("gpus_needed"), rng("cost_per_hour"), value=frame.attrs.get("uncosted_gpus", 0.0))


# Demand by period: Demand_Calc and Fleet_By_Period are written by planner.workbook.periods_sheet


# --------------------------------------------------------------------------- Scenarios
def write_scenarios(wb, ws, fm, plan, fleet_rows: int) -> None:
    frame = sc.scenario_compare(plan)
    cur = currency_of(plan)
    _named_header(ws, fm, sc.SCENARIO_COLS, {"gpus_needed": "count", "cost_per_month": f"{cur}/month",
                                             "tpm_capacity": "tokens/min", "gpus_throughput": "count",
                                             "gpus_for_latency": "count",
                                             "cost_per_month_for_latency": f"{cur}/month"}, [28, 14, 20, 20, 14, 14, 20])
    total = fleet_cells(fleet_rows - 1)["total"]
    fleet_col = {c: j for j, c in enumerate(fl2.FLEET_COLS)}
    fmts = {"gpus_needed": fm("calc", FMT_INT), "cost_per_month": fm("calc", FMT_MONEY0),
            "tpm_capacity": fm("calc", FMT_INT), "gpus_throughput": fm("calc", FMT_INT),
            "gpus_for_latency": fm("calc", FMT_INT), "cost_per_month_for_latency": fm("calc", FMT_MONEY0)}
    for i in range(len(frame)):
        r = i + 1
        rec = frame.iloc[i]
        ws.write_string(r, 0, str(rec["scenario"]))
        for j, c in enumerate(sc.SCENARIO_COLS[1:], start=1):
            if i == 0:  # base: live, from the Fleet total
                ws.write_formula(r, j, "=" + sheet_ref("Fleet", total, fleet_col[c], True, True), fmts[c],
                                 cell_or_blank(rec[c]))
            elif isinstance(cell_or_blank(rec[c]), str):
                ws.write_blank(r, j, None, fm("const", None))
            else:
                ws.write_number(r, j, float(rec[c]), fm("const", FMT_MONEY0 if c.startswith("cost") else FMT_INT))
    note_col = len(sc.SCENARIO_COLS) + NOTE_GAP
    ws.set_column(note_col, note_col, NOTE_WIDTH)
    for r, text in enumerate((
            "Scenario totals are computed at run time (not live): the planner re-plans a copy of the inputs "
            "with each scenario's overrides from the Scenarios sheet. Edit Scenarios and run the planner again "
            "to update them.",
            "The base row is live: it reads the Total row of Fleet. cost_per_month is the total of the priced "
            "GPU types.",
            "Each scenario is sized as Results sizes the base (the SLO-bound count: throughput, TTFT/TPOT "
            "targets, HBM fit at load, fixed concurrency); gpus_throughput is its count on throughput alone, "
            "gpus_for_latency / cost_per_month_for_latency what its latency targets add."), start=1):
        side_note(ws, fm, r, note_col, NOTE_WIDTH, text)
    n = len(frame)
    for j, (c, title, fmt) in enumerate((("gpus_needed", "GPUs by scenario", "#,##0"),
                                         ("cost_per_month", f"Cost per month [{cur}] by scenario", "#,##0"))):
        ch = wb.add_chart({"type": "column"})
        col = sc.SCENARIO_COLS.index(c)
        add_series(ch, {"name": c, "categories": ["Scenario_Compare", 1, 0, n, 0],
                        "values": ["Scenario_Compare", 1, col, n, col], "data_labels": {"value": True}},
                   frame["scenario"], frame[c], text_categories=True)
        ch.set_title({"name": title, "name_font": {"size": 11}})
        ch.set_y_axis({"num_format": fmt, "min": 0})
        ch.set_legend({"none": True})
        ch.set_size({"width": 480, "height": 300})
        ws.insert_chart(4 + j * 16, note_col, ch)
