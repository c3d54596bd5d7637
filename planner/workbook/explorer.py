"""The Explorer sheet: one workload at a time, chosen from a dropdown; its inputs, hit sweep,
tornado and charts follow the choice."""

from __future__ import annotations

from typing import Callable

import numpy as np

from planner.equations import tables as tb
from planner.core import schema

from planner.plan import columns as sheets
from planner.workbook.charts import chart_cache, charts_for, write_markers, write_sorted_tornado
from planner.workbook.checks_sheet import wrapped_lines
from planner.workbook.layout import Layout, write_rows
from planner.core import refs
from planner.core.refs import EXPLORER_WORKLOAD, range_name, sheet_ref
from planner.equations.sensitivity import block_row, block_sheet, choose, rank_in_blocks_xl, swing_of
from planner.workbook.styles import Formats, write_header, stored_value, write_cell

FMT_INT_ = schema.FMT_INT

EXPLORER_SELECT = (2, 1)     # B3: the chosen workload
EXPLORER_INDEX = (3, 1)      # B4: its row in Resolved/Results
EXPLORER_INPUTS_TOP = 6      # first row of the name/value block


def _explorer_inputs() -> list[tuple[str, str, str | None, bool]]:
    """(sheet, name, number format, is text) of every Resolved and Results value the
    Explorer pulls, from the sheets' declarations."""
    out = [("Resolved", rc.name, rc.fmt, rc.text) for rc in sheets.RESOLVED
           if rc.name not in ("workload", "model_row", "gpu_row")]
    have = {n for _s, n, _f, _t in out}
    out += [("Results", c.name, c.fmt, c.text) for c in sheets.without_terms(sheets.RESULTS) if c.name not in have]
    return out


def explorer_label(sheet: str, name: str, currency=None) -> str:
    """Readable label of a quantity of the name/value block, with its unit: from the Results
    declaration (``Out.title``) or the input column's (``Column.title``)."""
    from planner.core.refs import with_currency

    if sheet == "Results":
        c = next(c for c in sheets.RESULTS if c.name == name)
        title, unit = c.title, c.unit
    else:
        rc = next(rc for rc in sheets.RESOLVED if rc.name == name)
        title, unit = (schema.column(rc.source, name).title if rc.source else name), rc.unit
    return with_currency(f"{title} [{unit}]", currency) if unit and unit not in ("count",) else title


def applies_when(sheet: str, name: str) -> str | None:
    """The attention kind a model quantity applies to (``gqa``/``mla``), None when it always applies:
    kv_heads and head_dim are GQA inputs, mla_kv_dim an MLA one (blank, not 0, for the other)."""
    if sheet != "Resolved":
        return None
    rc = next(rc for rc in sheets.RESOLVED if rc.name == name)
    if rc.source != "Models":
        return None
    req = schema.column("Models", name).required
    return req if req in ("gqa", "mla") else None


HIDDEN_LEVEL = 1  # outline level of the helper columns (hidden, collapsed, still live)


def write_explorer(wb, ws, fm: Formats, layout: Layout, plan) -> None:
    """One workload at a time: a dropdown of workload names drives the tables and charts.

    Layout, left to right: the name/value block (identifier, value, readable label), the hit
    sweep with the sorted tornado below it, the four charts placed to the right of every table
    (anchors computed from the tables' extents), then the helper tables the charts and the
    tornado read (chart markers, per-driver tornado calculation, swings and ranks by driver) on
    columns hidden in a collapsed outline group: live, out of sight, not printed.
    """
    from planner.plan.sensitivity import DRIVERS

    first = plan.results["workload"].iat[0]
    currency = plan.settings.get("currency")
    ws.write_string(0, 0, "Explorer: choose a workload in the yellow cell; the tables and charts follow",
                    fm("title"))
    ws.write_string(EXPLORER_SELECT[0], 0, "workload", fm("header"))
    ws.write_string(*EXPLORER_SELECT, str(first), fm("input"))
    ws.data_validation(*EXPLORER_SELECT, *EXPLORER_SELECT,
                       {"validate": "list", "source": "=" + range_name("Workloads", "workload"),
                        "error_message": "choose one of the workloads"})
    wb.define_name(EXPLORER_WORKLOAD, "=" + sheet_ref("Explorer", *EXPLORER_SELECT, True, True))
    ws.write_string(EXPLORER_INDEX[0], 0, "row", fm("header"))
    sel = refs.cell(*EXPLORER_SELECT, True, True)
    idx = refs.cell(*EXPLORER_INDEX, True, True)
    ws.write_formula(*EXPLORER_INDEX, "=" + tb.position.xl(range_name("Resolved", "workload"), sel), None, 1)
    ws.set_column(0, 0, 24)
    ws.set_column(1, 1, 14)
    ws.set_column(2, 2, LABEL_WIDTH)
    # the chosen workload's inputs and results (absolute cells the tables refer to), each with
    # its readable label; a model quantity of the other attention kind shows blank, not 0
    cell_of: dict[str, str] = {"workload": sel}
    ws.write_string(EXPLORER_INPUTS_TOP - 1, 0, "quantity", fm("header"))
    ws.write_string(EXPLORER_INPUTS_TOP - 1, 1, "value", fm("header"))
    ws.write_string(EXPLORER_INPUTS_TOP - 1, 2, "what it is", fm("header"))
    inputs = _explorer_inputs()
    row_of = {name: EXPLORER_INPUTS_TOP + i for i, (_s, name, _f, _t) in enumerate(inputs)}
    attention = refs.cell(row_of["attention"], 1, True, True)
    blank_unless: dict[str, str] = {}
    for i, (sheet, name, fmt, text) in enumerate(inputs):
        r = EXPLORER_INPUTS_TOP + i
        frame = plan.resolved if sheet == "Resolved" else plan.results
        ws.write_string(r, 0, name)
        f = tb.at_row.xl(range_name(sheet, name), idx)
        value = stored_value(frame[name].iat[0], text)
        kind = applies_when(sheet, name)
        if kind is not None:
            blank_unless[name] = kind
            f = tb.shown_when.xl(attention, f'"{kind}"', f)
            if str(plan.resolved["attention"].iat[0]) != kind:
                value = ""
        ws.write_formula(r, 1, "=" + f, fm("calc", fmt), value)
        label = explorer_label(sheet, name, currency)
        lines = wrapped_lines(label, LABEL_WIDTH)
        if lines > 1:
            ws.set_row(r, 15 * lines)
        ws.write_string(r, 2, label, fm("wrap"))  # wraps, never spills
        cell_of[name] = refs.cell(r, 1, True, True)

    def base_ref(name, i):
        if name in blank_unless:  # pragma: no cover - no table formula reads these
            raise AssertionError(f"Explorer tables must not read {name} (blank when it does not apply)")
        return cell_of[name]

    # hit sweep of the chosen workload
    ht = plan.sens.table("Sensitivity_Hit")
    k = ht.k
    top, left = 2, 3
    # the sweep's term columns (planner.plan.columns.sweep_terms) stay off this one-workload sheet: its
    # formulas hold their terms' text, as the layout and print of the sheet did before them
    hcols = sheets.without_terms(ht.cols)
    names = ["hit"] + [c.name for c in hcols]
    own = {nm: left + j for j, nm in enumerate(names)}
    write_header(ws, fm, ["hit [fraction]"] + [c.header for c in hcols], [11] * len(names), top, left, freeze=False)
    frame = plan.sens.block("Sensitivity_Hit", 0, 1)
    for i, h in enumerate(plan.hit_grid):
        ws.write_number(top + 1 + i, left, float(h), fm("const", schema.FMT_PCT))
    searched = plan.sens.searched("Sensitivity_Hit")  # a decode-first row planned open loop: its DF_Search_Hit rows
    write_rows(ws, fm, top + 1, own, hcols, frame,
               base_ref if searched is None else helper_ref(layout, ht, searched, idx, base_ref))
    hit_rows = (top + 1, top + k)
    visible_right = left + len(names) - 1

    # charts: two by two, to the right of every visible table (their anchors follow from the
    # columns' widths: each chart starts on the first column right of the one before)
    chart_left = visible_right + 2
    ws.set_column(visible_right + 1, visible_right + 1, 2)
    chart_cols = [chart_left, chart_left + cols_for(CHART_W + CHART_GAP, DEFAULT_COL_PX)]
    chart_right = chart_cols[1] + cols_for(CHART_W + CHART_GAP, DEFAULT_COL_PX)  # first column after
    # the print set-up's "charts" column group starts at the first chart (planner.workbook.print_setup
    # SPECS), so no page break falls inside the charts however wide the hit sweep is
    layout.pos.setdefault("Explorer", {})["charts"] = chart_cols[0]
    # helper tables, hidden: the sorted tornado's by-driver helpers, the markers, the tornado calc
    helper = chart_right + 1
    tc = plan.sens.table("Tornado_Calc")
    sw_left, mk_left, t_left = helper, helper + 6, helper + 10
    tcols = sheets.without_terms(tc.cols)
    tnames = ["driver", "case", "driver_no", "direction", "upper"] + [c.name for c in tcols]
    helper_right = t_left + len(tnames) - 1

    # the sorted tornado (what a reader needs), below the hit sweep
    s_top = top + k + 3
    ws.write_string(s_top - 1, left, f"Tornado of the chosen workload (each driver moved by {sheets.NAMED_VALUES['tornado_swing'][0]})",
                    fm("title"))
    t_top = top  # the calculation, on the hidden helper columns
    t_own = {nm: t_left + j for j, nm in enumerate(tnames)}
    ws.write_string(t_top - 1, t_left, "Tornado calculation (helper: each driver low and high)", fm("title"))
    write_header(ws, fm, tnames, [11] * len(tnames), t_top, t_left, freeze=False)
    calc = plan.sens.block("Tornado_Calc", 0, 1)
    for ld in tc.leads:
        for i, v in enumerate(ld.values):
            write_cell(ws, t_top + 1 + i, t_own[ld.name], v, fm("const", ld.fmt))
    write_rows(ws, fm, t_top + 1, t_own, tcols, calc, base_ref)
    summary = plan.sens.tornado_block(0, 1)
    sorted_block = tornado_sorted(ws, fm, s_top, left, summary, cell_of["tpm_delivered_target"],
                                   lambda d, case, name: refs.cell(t_top + 1 + 2 * d + case, t_own[name]),
                                   "Explorer", helper_left=sw_left)
    # markers for h* and the target (chart helper)
    mk_top = top
    ttft_col = own["ttft_alpha0_ms"]
    write_markers(ws, fm, mk_top, mk_left, refs.cell_range(hit_rows[0], ttft_col, hit_rows[1], ttft_col),
             cell_of["h_star"], cell_of["hit_target"], float(plan.results["h_star"].iat[0]),
             float(plan.resolved["hit_target"].iat[0]), float(np.nanmax(frame["ttft_alpha0_ms"].to_numpy(dtype=float))))
    charts = charts_for(wb, "Explorer", own, hit_rows, mk_top, mk_left, sorted_block, "chosen workload",
                        cache=chart_cache(frame, summary, float(plan.results["h_star"].iat[0]),
                                          float(plan.resolved["hit_target"].iat[0])))
    chart_rows = [top, top + rows_for(CHART_H + CHART_GAP)]
    for j, ch in enumerate(charts):
        ch.set_size({"width": CHART_W, "height": CHART_H})
        ws.insert_chart(chart_rows[j // 2], chart_cols[j % 2], ch)
    ws.set_column(helper, helper_right, 11, None, {"level": HIDDEN_LEVEL, "hidden": True})
    ws.set_column(helper_right + 1, helper_right + 1, None, None, {"collapsed": True})
    ws.freeze_panes(4, 0)
    last_row = max(EXPLORER_INPUTS_TOP + len(inputs), s_top + len(DRIVERS) + 1,
                   chart_rows[1] + rows_for(CHART_H))
    ws.print_area(0, 0, last_row, chart_right - 1)


def helper_ref(layout: Layout, table, searched, idx: str, base_ref: Callable[[str, object], str]) -> Callable:
    """``base_ref`` with the names of the hit sweep's helper sheet (DF_Search_Hit) read at the chosen
    workload's rows of it: row ``(idx - 1) k + i + 2`` of the sweep's sheets for the sweep's point i (the row
    slot WL_ROW is i + 2 on the Explorer), on the numbered sheet that row falls on when the sweep is split
    (CHOOSE; a sheet without a searched workload is not written: blank, the closed form)."""
    chunks, k = layout.chunks[table.sheet], table.k
    hpos = {c.name: j for j, c in enumerate(table.helpers)}
    parts = chunks.sheets()
    names = [table.helper_sheet + name[len(table.sheet):] for name, _s, _r in parts]
    has = [bool(searched[start // k:(start + rows) // k].any()) for _n, start, rows in parts]
    at = block_row.xl(idx, k, chunks.per_sheet, refs.WL_ROW.marker)
    blank = sheets.Lit("").xl

    def ref(name, row):
        if name not in hpos:
            return base_ref(name, row)
        pick = [tb.at_row.xl(refs.whole_column(h, hpos[name]), at) if ok else blank for h, ok in zip(names, has)]
        return pick[0] if len(parts) == 1 else choose.xl(block_sheet.xl(idx, k, chunks.per_sheet), *pick)
    return ref


LABEL_WIDTH = 46
CHART_W, CHART_H, CHART_GAP = 480, 300, 16   # chart size and the space between charts [px]
DEFAULT_COL_PX, DEFAULT_ROW_PX = 64, 20       # default column width and row height [px]


def cols_for(px: int, col_px: int) -> int:
    """Columns of ``col_px`` pixels that hold ``px`` pixels."""
    return -(-px // col_px)


def rows_for(px: int) -> int:
    return -(-px // DEFAULT_ROW_PX)


def tornado_sorted(ws, fm: Formats, top: int, left: int, summary, base_cell: str,
                    calc_cell: Callable[[int, int, str], str], sheet: str,
                    helper_left: int | None = None) -> tuple[int, int, int]:
    """Drivers in rank order (widest bar first): driver, TPM change at low and high; the
    swings, ranks, names and TPMs by driver they are looked up from go in the five columns
    from ``helper_left`` (default: beside the table). Returns (first row, last row, first column)."""
    k = len(summary)
    headers = ["rank", "driver", "low - base [tokens/min]", "high - base [tokens/min]", "swing [tokens/min]"]
    write_header(ws, fm, headers, [8, 14, 16, 16, 16], top, left, freeze=False)
    swings = [swing_of.xl(calc_cell(d, 0, "tpm_delivered_target"), calc_cell(d, 1, "tpm_delivered_target"))
              for d in range(k)]
    # swing per driver in driver order (col left+4 of rows top+1..top+k) ...
    sw_col = left + 6 if helper_left is None else helper_left
    ws.write_string(top, sw_col, "swing by driver", fm("header"))
    ws.write_string(top, sw_col + 1, "rank by driver", fm("header"))
    ws.set_column(sw_col, sw_col + 1, 14)
    sw_rng = refs.cell_range(top + 1, sw_col, top + k, sw_col)
    rk_rng = refs.cell_range(top + 1, sw_col + 1, top + k, sw_col + 1)
    for d in range(k):
        r = top + 1 + d
        ws.write_formula(r, sw_col, "=" + swings[d], fm("calc", FMT_INT_), float(summary["swing"].iat[d]))
        me = refs.cell(r, sw_col)
        ws.write_formula(r, sw_col + 1, "=" + rank_in_blocks_xl(sw_rng, me),
                         fm("calc", "0"), float(summary["rank"].iat[d]))
    drivers = [f"{calc_cell(d, 0, 'driver')}" for d in range(k)]
    rng = lambda j: refs.cell_range(top + 1, sw_col + j, top + k, sw_col + j)  # noqa: E731
    write_sorted_tornado(ws, fm, top, left, summary,
                         {"rank": rk_rng, "driver": rng(2), "tpm_low": rng(3), "tpm_high": rng(4), "swing": sw_rng},
                         lambda match: base_cell)
    # driver names, TPM low and high in driver order (what the INDEX/MATCH above reads)
    for j, h in enumerate(("driver", "tpm_low", "tpm_high")):
        ws.write_string(top, sw_col + 2 + j, h, fm("header"))
    for d in range(k):
        r = top + 1 + d
        ws.write_formula(r, sw_col + 2, "=" + drivers[d], None, str(summary["driver"].iat[d]))
        ws.write_formula(r, sw_col + 3, "=" + calc_cell(d, 0, "tpm_delivered_target"), fm("calc", FMT_INT_),
                         float(summary["tpm_low"].iat[d]))
        ws.write_formula(r, sw_col + 4, "=" + calc_cell(d, 1, "tpm_delivered_target"), fm("calc", FMT_INT_),
                         float(summary["tpm_high"].iat[d]))
    return top + 1, top + k, left
