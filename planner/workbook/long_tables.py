"""The long sensitivity tables (Sensitivity_*, Tornado_Calc, continued past Excel's row
limit) and the Tornado summary sheet."""

from __future__ import annotations

from typing import Callable

from xlsxwriter.utility import quote_sheetname

from planner.core import schema
from planner.core.refs import sheet_ref
from planner.workbook.layout import MAX_COLUMNS, MAX_DATA_ROWS, TORNADO_COLS, WRITE_BLOCK, Chunks, Layout, column_templates
from planner.plan.sensitivity import rank_in_blocks_xl, swing_of
from planner.workbook.xlfast import WL_ROW, FastFormulaWorksheet, FormulaTemplate, needs_upstream
from planner.workbook.styles import Formats, write_header, col_width, values_list

FMT_INT_ = schema.FMT_INT


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
    derived = [(own[c.name], t.fmt, fm("calc", c.fmt), c.name, c.text)
               for c, t in zip(table.cols, column_templates(own, table.cols, base_ref))]
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
                wf(r, 0, wl_tmpl.fmt.format(rs, ws_), None, w_names[x])
                for j, vals, forms, cfmt, ffmt in l_vals:
                    f = forms[g % k] if forms is not None else None
                    v = vals[x]
                    if f is not None:
                        wf(r, j, f.fmt.format(rs, ws_), ffmt, v)
                    elif v == "":
                        ws.write_blank(r, j, None, cfmt)
                    elif isinstance(v, str):
                        ws.write_string(r, j, v, cfmt)
                    else:
                        wn(r, j, v, cfmt)
                for j, f, fmt, vals in d_vals:
                    wf(r, j, f.format(rs, ws_), fmt, vals[x])
            if progress is not None:
                progress(len(frame))
        ws.autofilter(0, 0, rows, len(own) - 1)
    return chunks



def write_tornado(wb, fm: Formats, layout: Layout, sens, calc: Chunks) -> None:
    """Tornado: per workload x driver, TPM at the driver's low and high value, swing, rank."""
    from xlsxwriter.utility import xl_col_to_name

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
    # formulas per column: {0} own row, {1} workload row, {2} calc sheet of the low row,
    # {3} its row, {4} sheet of the high row, {5} its row, {6}/{7} first/last row of the block
    c_col = {name: xl_col_to_name(layout.pos["Tornado_Calc"][name], col_abs=True)
             for name in ("driver", "base_value", "value", "tpm_delivered_target")}
    me = lambda name: xl_col_to_name(own[name]) + "{0}"
    block = "${8}${6}:${8}${7}"
    swing_col = xl_col_to_name(own["swing"])
    plan = [
        ("workload", FormulaTemplate(layout.base("workload", WL_ROW)).fmt[1:], None, True),
        ("driver", "{2}!" + c_col["driver"] + "{3}", None, True),
        ("base_value", "{2}!" + c_col["base_value"] + "{3}", num, False),
        ("low_value", "{2}!" + c_col["value"] + "{3}", num, False),
        ("high_value", "{4}!" + c_col["value"] + "{5}", num, False),
        ("tpm_base", FormulaTemplate(layout.base("tpm_delivered_target", WL_ROW)).fmt[1:], ints, False),
        ("tpm_low", "{2}!" + c_col["tpm_delivered_target"] + "{3}", ints, False),
        ("tpm_high", "{4}!" + c_col["tpm_delivered_target"] + "{5}", ints, False),
        ("swing", swing_of.xl(me("tpm_low"), me("tpm_high")), ints, False),
        ("rank", rank_in_blocks_xl(block, me("swing")), fm("calc", "0"), False),
        # TTFT at the planned load (slofix item 5): the plan's, and the calc rows' at the driver's low/high
        ("ttft_load_base", FormulaTemplate(layout.base("ttft_load_ms", WL_ROW)).fmt[1:], ms, False),
    ]
    t_col = layout.pos["Tornado_Calc"]["ttft_load_ms"]   # low/high: planner.core.refs.sheet_ref per row, below
    sample = (2, 2, "Tornado_Calc", 2, "Tornado_Calc", 3, 2, 9, "I")
    if any(needs_upstream(("=" + f).format(*sample)) for _n, f, _fmt, _t in plan):  # pragma: no cover
        raise AssertionError("Tornado formulas must use classic functions only")
    wf = ws.write_vetted  # the formats above name only classic functions (checked just above)
    per_block = max(1, WRITE_BLOCK // (2 * k))
    for w0 in range(0, n, per_block):
        w1 = min(w0 + per_block, n)
        block = sens.tornado_block(w0, w1)
        jobs = [(own[name], "=" + f, fmt, values_list(block[name].to_numpy(), text)) for name, f, fmt, text in plan]
        t_low, t_high = (values_list(block[c].to_numpy(), False) for c in ("ttft_load_low", "ttft_load_high"))
        for x in range(len(block)):
            i = w0 * k + x
            r, w = i + 1, i // k
            lo_sheet, lo_row = calc.where(2 * i)
            hi_sheet, hi_row = calc.where(2 * i + 1)
            args = (r + 1, w + 2, quote_sheetname(lo_sheet), lo_row + 1, quote_sheetname(hi_sheet), hi_row + 1,
                    w * k + 2, (w + 1) * k + 1, swing_col)
            for j, f, fmt, vals in jobs:
                wf(r, j, f.format(*args), fmt, vals[x])
            wf(r, own["ttft_load_low"], "=" + sheet_ref(lo_sheet, lo_row, t_col), ms, t_low[x])
            wf(r, own["ttft_load_high"], "=" + sheet_ref(hi_sheet, hi_row, t_col), ms, t_high[x])
    ws.autofilter(0, 0, total, len(TORNADO_COLS) - 1)
