"""The long sensitivity tables (Sensitivity_*, Tornado_Calc, continued past Excel's row
limit) and the Tornado summary sheet."""

from __future__ import annotations

from typing import Callable

from planner.core import schema
from planner.workbook.layout import (MAX_COLUMNS, MAX_DATA_ROWS, TORNADO_COLS, WRITE_BLOCK, Chunks, Layout,
                                     column_templates, write_rows)
from planner.equations.sensitivity import rank_in_blocks_xl, swing_of
from planner.equations import decode_first_slo as dslo
from planner.plan import columns as sheets
from planner.core.refs import ROW, WL_ROW, RowSlot, cell, cell_range, sheet_ref
from planner.workbook.xlfast import FastFormulaWorksheet, FormulaTemplate
from planner.workbook.styles import Formats, write_header, col_width, values_list

FMT_INT_ = schema.FMT_INT
LO, HI, FIRST, LAST = RowSlot(2), RowSlot(3), RowSlot(4), RowSlot(5)  # Tornado's row slots


def write_long_table(wb, fm: Formats, layout: Layout, table, sens, max_rows: int | None = None,
                     progress: Callable[[int], None] | None = None) -> Chunks:
    """A long sensitivity table, row by row, continued on numbered sheets past Excel's row
    limit. Evaluated a block of workloads at a time (``sens.block``), so memory stays
    bounded however many workloads there are."""
    k = table.k
    n = layout.n
    if table.sheet not in layout.chunks:  # a layout not made by Layout.of
        own = {name: j for j, name in enumerate(table.names)}
        if len(own) > MAX_COLUMNS:
            raise ValueError(f"{table.sheet}: {len(own)} columns exceed Excel's {MAX_COLUMNS}")
        layout.pos[table.sheet] = own
        layout.chunks[table.sheet] = Chunks.of(table.sheet, k, n * k, max_rows)
    chunks, own = layout.chunks[table.sheet], layout.pos[table.sheet]
    widths = [col_width(h, j == 0 or h in ("driver", "case", "link")) for j, h in enumerate(table.headers)]
    base_ref = lambda name, row: layout.base(name, row)
    wl_tmpl = FormulaTemplate(layout.base("workload", WL_ROW))
    plain = table.plain_cols or table.cols
    derived = [(own[c.name], t.fill, fm("calc", c.fmt), c.name, c.text)
               for c, t in zip(plain, column_templates(own, plain, base_ref))]
    searched = sens.searched(table.sheet)  # the rows of the helper sheet's workloads (DF_Search_Hit), or None
    hpos = {c.name: j for j, c in enumerate(table.helpers)}
    if searched is not None:
        layout.pos.setdefault(table.helper_sheet, hpos)
    leads = []
    for ld in table.leads:
        forms = None
        if ld.formulas is not None:
            forms = [None if f is None else FormulaTemplate(base_ref(f[1:], WL_ROW) if f.startswith("@") else f)
                     for f in ld.formulas]
        leads.append((own[ld.name], ld.name, ld.text, forms, fm("const", ld.fmt), fm("calc", ld.fmt)))
    per_block = max(1, WRITE_BLOCK // k)  # workloads evaluated and converted at once
    for sheet, start, rows in chunks.sheets():
        ws = wb.add_worksheet(sheet, worksheet_class=FastFormulaWorksheet)
        write_header(ws, fm, table.headers, widths)
        wf, wn = ws.write_vetted, ws.write_number
        w_first, w_last = start // k, (start + rows) // k
        helper = None  # this sheet's helper sheet, when a workload of it is searched (its rows' own templates)
        if searched is not None and searched[w_first:w_last].any():
            helper = table.helper_sheet + sheet[len(table.sheet):]   # DF_Search_Hit beside Sensitivity_Hit, _2 ...
            ref_h = lambda name, row, h=helper: (sheet_ref(h, ROW, hpos[name]) if name in hpos  # noqa: E731
                                                 else layout.base(name, row))
            fills_h = [t.fill for t in column_templates(own, table.cols, ref_h)]
        for w0 in range(w_first, w_last, per_block):
            w1 = min(w0 + per_block, w_last)
            frame = sens.block(table.sheet, w0, w1)
            d_vals = [(j, f, fmt, values_list(frame[name].to_numpy(), text)) for j, f, fmt, name, text in derived]
            l_vals = [(j, values_list(frame[name].to_numpy(), text), forms, cfmt, ffmt)
                      for j, name, text, forms, cfmt, ffmt in leads]
            w_names = values_list(frame["workload"].to_numpy(), True)
            for x in range(len(frame)):
                g = w0 * k + x
                r = g - start + 1
                rs, ws_ = r + 1, g // k + 2
                wf(r, 0, wl_tmpl.fill(rs, ws_), None, w_names[x])
                for j, vals, forms, cfmt, ffmt in l_vals:
                    f = forms[g % k] if forms is not None else None
                    v = vals[x]
                    if f is not None:
                        wf(r, j, f.fill(rs, ws_), ffmt, v)
                    elif v == "":
                        ws.write_blank(r, j, None, cfmt)
                    elif isinstance(v, str):
                        ws.write_string(r, j, v, cfmt)
                    else:
                        wn(r, j, v, cfmt)
                if helper is not None and searched[g // k]:  # its count and TTFTs at load from the helper
                    for (j, _f, fmt, vals), f in zip(d_vals, fills_h):
                        wf(r, j, f(rs, ws_), fmt, vals[x])
                    continue
                for j, f, fmt, vals in d_vals:
                    wf(r, j, f(rs, ws_), fmt, vals[x])
            if progress is not None:
                progress(len(frame))
        ws.autofilter(0, 0, rows, len(own) - 1)
        if helper is not None:
            _write_helper(wb, fm, layout, table, sens, helper, sheet, own, hpos, searched, start, w_first, w_last)
    return chunks


def _write_helper(wb, fm, layout, table, sens, helper, sheet, own, hpos, searched, start, w_first, w_last):
    """The helper sheet of one sheet of a long table (DF_Search_Hit of the hit sweep's decode-first rows
    planned open loop): row-aligned with ``sheet``, only the rows of the searched workloads written (the others
    empty), its columns (``table.helpers``) reading the sweep row's own cells where the sweep has the name
    (ttft_ms, burst_new_tokens, load_rps at the row's hit), else Resolved/Results of the row's workload."""
    k = table.k
    ws = wb.add_worksheet(helper, worksheet_class=FastFormulaWorksheet)
    cols = table.helpers
    write_header(ws, fm, [c.header for c in cols], [col_width(c.header, c.text) for c in cols])
    for c in cols:
        if c.description:
            ws.write_comment(0, hpos[c.name], c.description, {"x_scale": 1.6})
    ref = lambda name, row: (sheet_ref(sheet, ROW, own[name]) if name in own and name != "workload"  # noqa: E731
                             else layout.base(name, row))
    for w in range(w_first, w_last):
        if not searched[w]:
            continue
        frame = sens.helper_block(table.sheet, w, w + 1).reset_index(drop=True)
        write_rows(ws, fm, 1, hpos, cols, frame, ref, wl_rows=[w + 1] * k,
                   sheet_rows=[w * k + i - start for i in range(k)])



def write_tornado(wb, fm: Formats, layout: Layout, sens, calc: Chunks) -> None:
    """Tornado: per workload x driver, TPM at the driver's low and high value, swing, rank."""
    from planner.plan.sensitivity import DRIVERS

    k = len(DRIVERS)
    n = layout.n
    total = n * k
    if total > MAX_DATA_ROWS:
        raise ValueError(f"Tornado: {total:,} rows ({k} drivers x {n:,} workloads) exceed "
                         f"Excel's {MAX_DATA_ROWS + 1:,}-row sheet; split the workloads over several input workbooks")
    ws = wb.add_worksheet("Tornado", worksheet_class=FastFormulaWorksheet)
    headers = ["workload", "driver", "base_value", "low_value", "high_value", "tpm_base [tokens/min]",
               "tpm_low [tokens/min]", "tpm_high [tokens/min]", "swing [tokens/min]", "rank",
               "ttft_load_base [ms]", "ttft_load_low [ms]", "ttft_load_high [ms]"]
    write_header(ws, fm, headers, [24, 14, 12, 12, 12, 16, 16, 16, 16, 8, 16, 16, 16])
    own = layout.pos.setdefault("Tornado", {name: j for j, name in enumerate(TORNADO_COLS)})
    num, ints, ms = fm("calc", "#,##0.####"), fm("calc", FMT_INT_), fm("calc", "#,##0.00")
    # each column's formula, with row slots: the own row (ROW), the workload's row (WL_ROW),
    # the rows of the driver's low and high case on their Tornado_Calc sheet (LO, HI), and the
    # first and last row of the workload's block (FIRST, LAST); one template per pair of
    # Tornado_Calc sheets the low and high rows are on
    calc_col = layout.pos["Tornado_Calc"]
    me = lambda name: cell(ROW, own[name])  # noqa: E731
    swing_block = cell_range(FIRST, own["swing"], LAST, own["swing"])

    def formulas(lo_sheet: str, hi_sheet: str) -> list:
        lo = lambda name: sheet_ref(lo_sheet, LO, calc_col[name])  # noqa: E731
        hi = lambda name: sheet_ref(hi_sheet, HI, calc_col[name])  # noqa: E731
        text = {"workload": layout.base("workload", WL_ROW), "driver": lo("driver"), "base_value": lo("base_value"),
                "low_value": lo("value"), "high_value": hi("value"),
                "tpm_base": layout.base("tpm_delivered_target", WL_ROW), "tpm_low": lo("tpm_delivered_target"),
                "tpm_high": hi("tpm_delivered_target"), "swing": swing_of.xl(me("tpm_low"), me("tpm_high")),
                "rank": rank_in_blocks_xl(swing_block, me("swing")),
                # TTFT at the planned load: the plan's (the calc rows' at the driver's low/high are below)
                "ttft_load_base": layout.base("ttft_load_ms", WL_ROW)}
        if "df_workload" in layout.pos.get(sheets.DF_SEARCH_SHEET, ()):  # the request-alone queue, as the cases
            text["ttft_load_base"] = dslo.tornado_ttft_base.xl(*(layout.base(c, WL_ROW) for c in (
                "df_workload", "ttft_load_ms", "ttft_ms", "prefill_wait_ms")))
        # FormulaTemplate refuses a formula that needs XlsxWriter's future-function handling,
        # so the cells may be written with write_vetted
        return [FormulaTemplate(text[name]).fill for name, _fmt, _t in plan]

    plan = [("workload", None, True), ("driver", None, True), ("base_value", num, False), ("low_value", num, False),
            ("high_value", num, False), ("tpm_base", ints, False), ("tpm_low", ints, False),
            ("tpm_high", ints, False), ("swing", ints, False), ("rank", fm("calc", "0"), False),
            ("ttft_load_base", ms, False)]
    t_col = calc_col["ttft_load_ms"]
    templates: dict[tuple[str, str], list] = {}
    wf = ws.write_vetted
    per_block = max(1, WRITE_BLOCK // (2 * k))
    for w0 in range(0, n, per_block):
        w1 = min(w0 + per_block, n)
        block = sens.tornado_block(w0, w1)
        jobs = [(own[name], fmt, values_list(block[name].to_numpy(), text)) for name, fmt, text in plan]
        t_low, t_high = (values_list(block[c].to_numpy(), False) for c in ("ttft_load_low", "ttft_load_high"))
        for x in range(len(block)):
            i = w0 * k + x
            r, w = i + 1, i // k
            lo_sheet, lo_row = calc.where(2 * i)
            hi_sheet, hi_row = calc.where(2 * i + 1)
            fills = templates.get((lo_sheet, hi_sheet)) or templates.setdefault((lo_sheet, hi_sheet),
                                                                                 formulas(lo_sheet, hi_sheet))
            rows_ = (r + 1, w + 2, lo_row + 1, hi_row + 1, w * k + 2, (w + 1) * k + 1)
            for (j, fmt, vals), fill in zip(jobs, fills):
                wf(r, j, fill(*rows_), fmt, vals[x])
            wf(r, own["ttft_load_low"], "=" + sheet_ref(lo_sheet, lo_row, t_col), ms, t_low[x])
            wf(r, own["ttft_load_high"], "=" + sheet_ref(hi_sheet, hi_row, t_col), ms, t_high[x])
    ws.autofilter(0, 0, total, len(TORNADO_COLS) - 1)
