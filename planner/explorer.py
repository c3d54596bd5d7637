"""The Explorer sheet: one workload at a time, chosen from a dropdown; its inputs, hit sweep,
tornado and charts follow the choice."""

from __future__ import annotations

from typing import Callable

import numpy as np
from xlsxwriter.utility import xl_range_abs, xl_rowcol_to_cell

from . import schema, sheets
from .charts import charts_for, write_markers, write_sorted_tornado
from .layout import Layout, write_rows
from .names import exact_text, range_name
from .sensitivity import rank_in_blocks_xl, swing_of
from .xlstyle import Formats, write_header, stored_value, write_cell

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
    out += [("Results", c.name, c.fmt, c.text) for c in sheets.RESULTS if c.name not in have]
    return out


def write_explorer(wb, ws, fm: Formats, layout: Layout, plan) -> None:
    """One workload at a time: a dropdown of workload names drives the tables and charts."""
    from .sensitivity import DRIVERS

    first = plan.results["workload"].iat[0]
    ws.write_string(0, 0, "Explorer: choose a workload in the yellow cell; the tables and charts follow",
                    fm("title"))
    ws.write_string(EXPLORER_SELECT[0], 0, "workload", fm("header"))
    ws.write_string(*EXPLORER_SELECT, str(first), fm("input"))
    ws.data_validation(*EXPLORER_SELECT, *EXPLORER_SELECT,
                       {"validate": "list", "source": "=" + range_name("Workloads", "workload"),
                        "error_message": "choose one of the workloads"})
    wb.define_name("explorer_workload", "=Explorer!" + xl_rowcol_to_cell(*EXPLORER_SELECT, True, True))
    ws.write_string(EXPLORER_INDEX[0], 0, "row", fm("header"))
    sel = xl_rowcol_to_cell(*EXPLORER_SELECT, True, True)
    idx = xl_rowcol_to_cell(*EXPLORER_INDEX, True, True)
    ws.write_formula(*EXPLORER_INDEX, f"=MATCH({exact_text(sel)},{range_name('Resolved', 'workload')},0)", None, 1)
    ws.set_column(0, 0, 26)
    ws.set_column(1, 1, 16)
    # the chosen workload's inputs and results (absolute cells the tables refer to)
    cell_of: dict[str, str] = {"workload": sel}
    ws.write_string(EXPLORER_INPUTS_TOP - 1, 0, "quantity", fm("header"))
    ws.write_string(EXPLORER_INPUTS_TOP - 1, 1, "value", fm("header"))
    for i, (sheet, name, fmt, text) in enumerate(_explorer_inputs()):
        r = EXPLORER_INPUTS_TOP + i
        frame = plan.resolved if sheet == "Resolved" else plan.results
        ws.write_string(r, 0, name)
        ws.write_formula(r, 1, f"=INDEX({range_name(sheet, name)},{idx})", fm("calc", fmt),
                         stored_value(frame[name].iat[0], text))
        cell_of[name] = xl_rowcol_to_cell(r, 1, True, True)
    base_ref = lambda name, i: cell_of[name]

    # hit sweep of the chosen workload
    ht = plan.sens.table("Sensitivity_Hit")  # the declarations the long tables were written from
    k = ht.k
    top, left = 2, 3
    names = ["hit"] + [c.name for c in ht.cols]
    own = {nm: left + j for j, nm in enumerate(names)}
    write_header(ws, fm, ["hit [fraction]"] + [c.header for c in ht.cols], [11] * len(names), top, left, freeze=False)
    frame = plan.sens.block("Sensitivity_Hit", 0, 1)
    for i, h in enumerate(plan.hit_grid):
        ws.write_number(top + 1 + i, left, float(h), fm("const", schema.FMT_PCT))
    write_rows(ws, fm, top + 1, own, ht.cols, frame, base_ref)
    hit_rows = (top + 1, top + k)
    # markers for h* and the target, and the tornado, below the sweep
    mk_top = top + k + 3
    ttft_col = own["ttft_alpha0_ms"]
    write_markers(ws, fm, mk_top, left, xl_range_abs(hit_rows[0], ttft_col, hit_rows[1], ttft_col),
             cell_of["h_star"], cell_of["hit_target"], float(plan.results["h_star"].iat[0]),
             float(plan.resolved["hit_target"].iat[0]), float(np.nanmax(frame["ttft_alpha0_ms"].to_numpy(dtype=float))))
    tc = plan.sens.table("Tornado_Calc")
    t_top = mk_top + 8
    tnames = ["driver", "case", "driver_no", "direction", "upper"] + [c.name for c in tc.cols]
    t_own = {nm: left + j for j, nm in enumerate(tnames)}
    ws.write_string(t_top - 1, left, "Tornado of the chosen workload (each driver moved by c_tornado_swing)",
                    fm("title"))
    write_header(ws, fm, tnames, [11] * len(tnames), t_top, left, freeze=False)
    calc = plan.sens.block("Tornado_Calc", 0, 1)
    for ld in tc.leads:
        for i, v in enumerate(ld.values):
            write_cell(ws, t_top + 1 + i, t_own[ld.name], v, fm("const", ld.fmt))
    write_rows(ws, fm, t_top + 1, t_own, tc.cols, calc, base_ref)
    summary = plan.sens.tornado_block(0, 1)
    s_top = t_top + tc.k + 3
    sorted_block = tornado_sorted(ws, fm, s_top, left, summary, cell_of["tpm_delivered_target"],
                                   lambda d, case, name: xl_rowcol_to_cell(t_top + 1 + 2 * d + case, t_own[name]),
                                   "Explorer")
    # charts beside the tables
    charts = charts_for(wb, "Explorer", own, hit_rows, mk_top, left, sorted_block, "chosen workload")
    for j, ch in enumerate(charts):
        ws.insert_chart(2 + (j // 2) * 18, left + len(names) + 1 + (j % 2) * 8, ch)
    ws.freeze_panes(4, 0)
    last_col = left + len(names) + 1 + 16
    ws.print_area(0, 0, s_top + len(DRIVERS) + 1, last_col)
    ws.set_landscape()
    ws.set_paper(9)
    ws.fit_to_pages(1, 1)


def tornado_sorted(ws, fm: Formats, top: int, left: int, summary, base_cell: str,
                    calc_cell: Callable[[int, int, str], str], sheet: str) -> tuple[int, int, int]:
    """Drivers in rank order (widest bar first): driver, TPM change at low and high.
    Returns (first row, last row, first column)."""
    k = len(summary)
    headers = ["rank", "driver", "low - base [tokens/min]", "high - base [tokens/min]", "swing [tokens/min]"]
    write_header(ws, fm, headers, [8, 14, 16, 16, 16], top, left, freeze=False)
    swings = [swing_of.xl(calc_cell(d, 0, "tpm_delivered_target"), calc_cell(d, 1, "tpm_delivered_target"))
              for d in range(k)]
    # swing per driver in driver order (col left+4 of rows top+1..top+k) ...
    sw_col = left + 6
    ws.write_string(top, sw_col, "swing by driver", fm("header"))
    ws.write_string(top, sw_col + 1, "rank by driver", fm("header"))
    ws.set_column(sw_col, sw_col + 1, 14)
    sw_rng = xl_range_abs(top + 1, sw_col, top + k, sw_col)
    rk_rng = xl_range_abs(top + 1, sw_col + 1, top + k, sw_col + 1)
    for d in range(k):
        r = top + 1 + d
        ws.write_formula(r, sw_col, "=" + swings[d], fm("calc", FMT_INT_), float(summary["swing"].iat[d]))
        me = xl_rowcol_to_cell(r, sw_col)
        ws.write_formula(r, sw_col + 1, "=" + rank_in_blocks_xl(sw_rng, me),
                         fm("calc", "0"), float(summary["rank"].iat[d]))
    drivers = [f"{calc_cell(d, 0, 'driver')}" for d in range(k)]
    rng = lambda j: xl_range_abs(top + 1, sw_col + j, top + k, sw_col + j)  # noqa: E731
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
