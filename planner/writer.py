"""Write workbooks with XlsxWriter: the live output model, the blank template, the example.

Conventions (FAST/ICAEW): inputs on their own sheets and styled as inputs (yellow fill,
blue text); units in every header (``isl [tokens]``, which the reader accepts back);
one formula down each column; no number typed into a formula (constants and defaults
are named cells of the ``Constants`` sheet); a ``Checks`` sheet with a master check.
Every cell reference comes from :func:`xlsxwriter.utility.xl_rowcol_to_cell` or
``xl_range_abs``; text from the input is always written as text, never as a formula.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import platform
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import xlsxwriter
from xlsxwriter.utility import quote_sheetname, xl_range_abs, xl_rowcol_to_cell

from . import __version__, finance_sheets, schema, sheets
from .constants import CONSTANTS
from .sensitivity import rank_in_blocks_xl, swing_of
from .xlfast import ROW, WL_ROW, FastFormulaWorksheet, FormulaTemplate, RowBuffer, needs_upstream
from .schema import CHOICE, FRACTION, INT, NUMBER, TEXT, Column

INPUT_SHEETS = ("Models", "GPUs", "Workloads")
WB_OPTIONS = {"strings_to_formulas": False, "strings_to_numbers": False, "strings_to_urls": False,
              "nan_inf_to_errors": False}

STYLE = {
    "header": {"bold": True, "bg_color": "#D9E1F2", "border": 1, "border_color": "#8EA9DB",
               "text_wrap": True, "valign": "top"},
    "input": {"bg_color": "#FFF2CC", "font_color": "#1F4E79", "border": 1, "border_color": "#D9D9D9"},
    "calc": {},
    "const": {"bg_color": "#EDEDED"},
    "title": {"bold": True, "font_size": 13},
    "ok": {"bold": True, "font_color": "#006100", "bg_color": "#C6EFCE"},
    "bad": {"bold": True, "font_color": "#9C0006", "bg_color": "#FFC7CE"},
    "note": {"italic": True, "font_color": "#595959"},
    "wrap": {"text_wrap": True, "valign": "top"},
}


class Formats:
    """Cached XlsxWriter formats by (style, number format)."""

    def __init__(self, wb: xlsxwriter.Workbook):
        self.wb = wb
        self._cache: dict[tuple[str, str | None], Any] = {}

    def __call__(self, style: str, num: str | None = None):
        key = (style, num)
        if key not in self._cache:
            props = dict(STYLE[style])
            if num:
                props["num_format"] = num
            self._cache[key] = self.wb.add_format(props)
        return self._cache[key]


def sheet_ref(sheet: str, row: int, col: int, row_abs: bool = False, col_abs: bool = True) -> str:
    return f"{quote_sheetname(sheet)}!{xl_rowcol_to_cell(row, col, row_abs, col_abs)}"


def col_range(sheet: str, col: int, n: int) -> str:
    """Absolute range of a table column: data rows 2..n+1."""
    return f"{quote_sheetname(sheet)}!{xl_range_abs(1, col, max(n, 1), col)}"


def range_name(sheet: str, name: str) -> str:
    prefix = {"Models": "models", "GPUs": "gpus", "Workloads": "wl", "Resolved": "res",
              "Results": "results"}[sheet]
    return f"{prefix}_{name}"


def _width(header: str, text: bool) -> float:
    return min(max(len(header) * 0.9 + 2, 24 if text else 11), 44)


# --------------------------------------------------------------------------- input sheets
def _column_comment(c: Column) -> str:
    parts = [c.description]
    if c.range_text():
        parts.append(f"Allowed: {c.range_text()}")
    if c.default is not None:
        parts.append(f"Default when blank: {c.default}")
    req = {True: "required", False: "optional", "gqa": "required for gqa models",
           "mla": "required for mla models", "pcie": "give pcie_gbps or pcie_gen"}[c.required]
    parts.append(req.capitalize())
    return "\n".join(parts)


def _validation(c: Column, ref: str | None = None) -> dict | None:
    if c.kind == CHOICE:
        return {"validate": "list", "source": [str(x) for x in c.choices],
                "error_message": f"{c.name} must be one of {c.range_text()}"}
    if c.kind in (INT, NUMBER, FRACTION) and (c.minimum is not None or c.maximum is not None):
        kind = "integer" if c.kind == INT else "decimal"
        msg = f"{c.name} must be {'a whole number ' if c.kind == INT else ''}in {c.range_text()}"
        if c.maximum is not None:
            return {"validate": kind, "criteria": "between", "minimum": c.minimum, "maximum": c.maximum,
                    "error_message": msg}
        return {"validate": kind, "criteria": ">" if c.min_open else ">=", "value": c.minimum,
                "error_message": msg}
    return None


def write_cell(ws, row: int, col: int, value: Any, fmt) -> None:
    """Write an input value by its type; text always as text (never a formula)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        ws.write_blank(row, col, None, fmt)
    elif isinstance(value, bool):
        ws.write_boolean(row, col, value, fmt)
    elif isinstance(value, (int, float, np.integer, np.floating)):
        ws.write_number(row, col, float(value), fmt)
    elif isinstance(value, (_dt.datetime, _dt.date)):
        ws.write_datetime(row, col, value, fmt)
    else:
        ws.write_string(row, col, str(value), fmt)


def write_input_sheet(wb, fm: Formats, sheet: str, records: list[dict], extras: list[str],
                      validate_rows: int | None = None) -> dict[str, int]:
    """An input sheet: headers with units and notes, styled input cells, data validation.
    Returns the 0-based column of every column name."""
    ws = wb.add_worksheet(sheet)
    cols = schema.columns(sheet)
    pos: dict[str, int] = {}
    for j, c in enumerate(cols):
        pos[c.name] = j
        ws.write_string(0, j, c.header, fm("header"))
        ws.write_comment(0, j, _column_comment(c), {"x_scale": 2, "y_scale": 1.6})
        ws.set_column(j, j, _width(c.header, c.kind == TEXT), fm("input", c.fmt))
    for k, head in enumerate(extras):
        j = len(cols) + k
        pos[head] = j
        ws.write_string(0, j, head, fm("header"))
        ws.set_column(j, j, 30 if head.lower() in ("source", "note", "notes") else 14)
    for i, rec in enumerate(records):
        for c in cols:
            write_cell(ws, i + 1, pos[c.name], rec.get(c.name), fm("input", c.fmt))
        for head in extras:
            write_cell(ws, i + 1, pos[head], rec.get(head), None)
    last = max(len(records), validate_rows or 0)
    for c in cols:
        v = _validation(c)
        if v and last:
            ws.data_validation(1, pos[c.name], last, pos[c.name], v)
    ws.freeze_panes(1, 1)
    ws.set_row(0, 30)
    return pos


def write_settings_sheet(wb, fm: Formats, settings: dict, extra: Iterable[tuple[Any, Any]] = ()) -> dict:
    ws = wb.add_worksheet(schema.SETTINGS)
    for j, h in enumerate(("key", "value", "description")):
        ws.write_string(0, j, h, fm("header"))
    ws.set_column(0, 0, 16)
    ws.set_column(1, 1, 14)
    ws.set_column(2, 2, 60)
    where = {}
    r = 1
    for s in schema.SETTING_KEYS:
        ws.write_string(r, 0, s.key)
        value = settings.get(s.key, s.default)
        if s.kind == schema.NUMBERS and not isinstance(value, str):
            value = "; ".join(f"{v:g}" for v in value) or None
        write_cell(ws, r, 1, value, fm("input", schema.FMT_PCT if s.kind == FRACTION else None))
        ws.write_string(r, 2, s.description, fm("note"))
        where[s.key] = r
        r += 1
    for k, v in extra:
        write_cell(ws, r, 0, k, None)
        write_cell(ws, r, 1, v, fm("input"))
        r += 1
    return where


def write_input_workbook(path: str | Path, models: list[dict], gpus: list[dict], workloads: list[dict],
                         settings: dict, *, validate_rows: int = 500, title: str = "",
                         optional: dict[str, list[dict]] | None = None) -> None:
    """An input workbook (the template or the example): README, Models, GPUs, Workloads, Settings,
    then the optional sheets given in ``optional`` (sheet name -> records)."""
    wb = xlsxwriter.Workbook(str(path), WB_OPTIONS)
    fm = Formats(wb)
    readme = wb.add_worksheet("README")
    readme.set_column(0, 0, 16)
    readme.set_column(1, 1, 14)
    readme.set_column(2, 2, 12)
    readme.set_column(3, 3, 16)
    readme.set_column(4, 4, 12)
    readme.set_column(5, 5, 70)
    readme.write_string(0, 0, title or "KV-hit capacity planner: input workbook", fm("title"))
    readme.write_string(1, 0, "Fill the yellow cells of Models, GPUs and Workloads (one row each), then run: "
                              "planner run THIS.xlsx", fm("note"))
    readme.write_string(2, 0, "Headers may carry a unit in brackets; extra columns are kept; blank rows are "
                              "skipped; hit ratios are fractions (0.85 or 85%).", fm("note"))
    r = 4
    for sheet in INPUT_SHEETS + schema.OPTIONAL_SHEETS:
        readme.write_string(r, 0, sheet + (" (optional sheet)" if sheet in schema.OPTIONAL_SHEETS else ""),
                            fm("title"))
        r += 1
        for j, h in enumerate(("column", "unit", "type", "range", "default", "description")):
            readme.write_string(r, j, h, fm("header"))
        r += 1
        for c in schema.columns(sheet):
            req = "" if c.required is False else (" (required)" if c.required is True else
                                                 f" (required: {c.required})")
            for j, v in enumerate((c.name, c.unit, c.kind, c.range_text(),
                                   "" if c.default is None else str(c.default), c.description + req)):
                readme.write_string(r, j, v)
            r += 1
        r += 1
    for sheet, recs in (("Models", models), ("GPUs", gpus), ("Workloads", workloads)):
        extras = []
        for rec in recs:
            extras += [k for k in rec if k not in extras and k not in {c.name for c in schema.columns(sheet)}]
        write_input_sheet(wb, fm, sheet, recs, extras, validate_rows)
    write_settings_sheet(wb, fm, settings)
    for sheet in schema.OPTIONAL_SHEETS:
        if optional and sheet in optional:
            recs = optional[sheet]
            extras = []
            for rec in recs:
                extras += [k for k in rec if k not in extras and k not in {c.name for c in schema.columns(sheet)}]
            write_input_sheet(wb, fm, sheet, recs, extras, validate_rows)
    wb.close()


# --------------------------------------------------------------------------- output model
MAX_DATA_ROWS = 1_048_575      # Excel: 1,048,576 rows a sheet, less the header row
MAX_COLUMNS = 16_384
MAX_CHART_WORKLOADS = 20       # per-workload charts up to this count; beyond it the Explorer
WRITE_BLOCK = 65_536           # rows whose stored values are converted to Python objects at once
ZIP64_ROWS = 1_000_000         # above this many rows in all, members may pass 4 GiB: write ZIP64


@dataclass
class Layout:
    """Where every column of every sheet is, so references come from one place."""

    n: int                                   # workloads
    pos: dict[str, dict[str, int]]           # sheet -> column name -> 0-based column

    def own(self, sheet: str, name: str, row: int) -> str:
        return xl_rowcol_to_cell(row, self.pos[sheet][name], col_abs=True)

    def other(self, sheet: str, name: str, row: int) -> str:
        return sheet_ref(sheet, row, self.pos[sheet][name])

    def base(self, name: str, wl_row: int) -> str:
        """A Resolved or Results cell of the workload on sheet row ``wl_row``."""
        for other in ("Resolved", "Results"):
            if name in self.pos[other]:
                return self.other(other, name, wl_row)
        raise KeyError(name)


def _value(x: Any, text: bool) -> Any:
    if text:
        return "" if x is None else str(x)
    x = float(x)
    return "" if math.isnan(x) else x


def column_templates(own: dict[str, int], cols: tuple, base_ref: Callable[[str, int], str]) -> list:
    """One :class:`FormulaTemplate` per derived column of a block.

    An argument resolves to: a literal; ``@name`` -> ``base_ref(name, row)``; a column of
    the block (``own``, except the column itself) in the same row; a named value of the
    Constants sheet; else ``base_ref(name, row)`` (Resolved/Results of the row's
    workload, or the Explorer's input cells).
    """
    out = []
    for c in cols:
        def ref(a, col=c.name):
            if isinstance(a, sheets.Lit):
                return a.xl
            if a.startswith("@"):
                return base_ref(a[1:], WL_ROW)
            if a in own and a != col:
                return xl_rowcol_to_cell(ROW, own[a], col_abs=True)
            if a in sheets.NAMED_VALUES:
                return sheets.NAMED_VALUES[a][0]
            return base_ref(a, WL_ROW)

        out.append(FormulaTemplate(c.func.xl(*(ref(a) for a in c.args))))
    return out


def values_list(arr, text: bool) -> list:
    """Stored values of a column: text as str, NaN as '' (a blank result)."""
    if text:
        return ["" if v is None else str(v) for v in arr.tolist()]
    return ["" if v != v else v for v in np.asarray(arr, dtype=float).tolist()]


def write_rows(ws, fm: Formats, first_row: int, own: dict[str, int], cols: tuple, frame,
               base_ref: Callable[[str, int], str], wl_rows=None) -> None:
    """Write the derived columns ``cols`` of ``frame`` row by row from sheet row
    ``first_row``; ``wl_rows[i]`` is the Resolved/Results row of row i's workload."""
    tmpls = column_templates(own, cols, base_ref)
    jobs = [(own[c.name], t, fm("calc", c.fmt), values_list(frame[c.name].to_numpy(), c.text))
            for c, t in zip(cols, tmpls)]
    n = len(frame)
    wl = range(1, n + 1) if wl_rows is None else wl_rows
    write = ws.write_vetted
    for i in range(n):
        r, w = first_row + i, wl[i]
        for j, t, fmt, vals in jobs:
            write(r, j, t.fmt.format(r + 1, w + 1), fmt, vals[i])


def _header(ws, fm: Formats, headers: list[str], widths: list[float], top: int = 0, left: int = 0,
            freeze: bool = True) -> None:
    for j, h in enumerate(headers):
        ws.write_string(top, left + j, h, fm("header"))
        ws.set_column(left + j, left + j, widths[j])
    ws.set_row(top, 30)
    if freeze:
        ws.freeze_panes(top + 1, left + 1)


def _print_setup(ws, landscape: bool = True) -> None:
    if landscape:
        ws.set_landscape()
    ws.set_paper(9)  # A4
    ws.fit_to_pages(1, 0)
    ws.repeat_rows(0)


@dataclass
class Chunks:
    """A long table cut into sheets of at most MAX_DATA_ROWS rows, on workload boundaries."""

    base: str
    k: int          # rows per workload
    total: int      # rows in all
    per_sheet: int  # rows per sheet

    @classmethod
    def of(cls, base: str, k: int, total: int, max_rows: int | None = None) -> "Chunks":
        max_rows = MAX_DATA_ROWS if max_rows is None else max_rows
        per = (max_rows // k) * k
        if per == 0:
            raise ValueError(f"{base}: {k} rows per workload exceed a sheet")
        return cls(base, k, total, per)

    def name(self, idx: int) -> str:
        return self.base if idx == 0 else f"{self.base}_{idx + 1}"

    def where(self, i: int) -> tuple[str, int]:
        """Sheet name and sheet row of global data row i."""
        return self.name(i // self.per_sheet), i % self.per_sheet + 1

    def sheets(self) -> list[tuple[str, int, int]]:
        """(name, first global row, rows) of each sheet."""
        out = []
        for idx, start in enumerate(range(0, max(self.total, 1), self.per_sheet)):
            out.append((self.name(idx), start, min(self.per_sheet, self.total - start)))
        return out


def write_long_table(wb, fm: Formats, layout: Layout, table, sens, max_rows: int | None = None,
                     progress: Callable[[int], None] | None = None) -> Chunks:
    """A long sensitivity table, row by row, continued on numbered sheets past Excel's row
    limit. Evaluated a block of workloads at a time (``sens.block``), so memory stays
    bounded however many workloads there are."""
    k = table.k
    n = layout.n
    chunks = Chunks.of(table.sheet, k, n * k, max_rows)
    own = {name: j for j, name in enumerate(table.names)}
    if len(own) > MAX_COLUMNS:
        raise ValueError(f"{table.sheet}: {len(own)} columns exceed Excel's {MAX_COLUMNS}")
    layout.pos[table.sheet] = own
    widths = [_width(h, j == 0 or h in ("driver", "case", "link")) for j, h in enumerate(table.headers)]
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
        _header(ws, fm, table.headers, widths)
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


TORNADO_COLS = ("workload", "driver", "base_value", "low_value", "high_value", "tpm_base", "tpm_low",
                "tpm_high", "swing", "rank")


def write_tornado(wb, fm: Formats, layout: Layout, sens, calc: Chunks) -> None:
    """Tornado: per workload x driver, TPM at the driver's low and high value, swing, rank."""
    from xlsxwriter.utility import xl_col_to_name

    from .sensitivity import DRIVERS

    k = len(DRIVERS)
    n = layout.n
    total = n * k
    if total > MAX_DATA_ROWS:
        raise ValueError(f"Tornado: {total:,} rows ({k} drivers x {n:,} workloads) exceed "
                         f"Excel's {MAX_DATA_ROWS + 1:,}-row sheet; split the workloads over several input workbooks")
    ws = wb.add_worksheet("Tornado", worksheet_class=FastFormulaWorksheet)
    headers = ["workload", "driver", "base_value", "low_value", "high_value", "tpm_base [tokens/min]",
               "tpm_low [tokens/min]", "tpm_high [tokens/min]", "swing [tokens/min]", "rank"]
    _header(ws, fm, headers, [24, 14, 12, 12, 12, 16, 16, 16, 16, 8])
    own = {name: j for j, name in enumerate(TORNADO_COLS)}
    layout.pos["Tornado"] = own
    num, ints = fm("calc", "#,##0.####"), fm("calc", FMT_INT_)
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
    ]
    sample = (2, 2, "Tornado_Calc", 2, "Tornado_Calc", 3, 2, 9, "I")
    if any(needs_upstream(("=" + f).format(*sample)) for _n, f, _fmt, _t in plan):  # pragma: no cover
        raise AssertionError("Tornado formulas must use classic functions only")
    wf = ws.write_vetted  # the formats above name only classic functions (checked just above)
    per_block = max(1, WRITE_BLOCK // (2 * k))
    for w0 in range(0, n, per_block):
        w1 = min(w0 + per_block, n)
        block = sens.tornado_block(w0, w1)
        jobs = [(own[name], "=" + f, fmt, values_list(block[name].to_numpy(), text)) for name, f, fmt, text in plan]
        for x in range(len(block)):
            i = w0 * k + x
            r, w = i + 1, i // k
            lo_sheet, lo_row = calc.where(2 * i)
            hi_sheet, hi_row = calc.where(2 * i + 1)
            args = (r + 1, w + 2, quote_sheetname(lo_sheet), lo_row + 1, quote_sheetname(hi_sheet), hi_row + 1,
                    w * k + 2, (w + 1) * k + 1, swing_col)
            for j, f, fmt, vals in jobs:
                wf(r, j, f.format(*args), fmt, vals[x])
    ws.autofilter(0, 0, total, len(TORNADO_COLS) - 1)


FMT_INT_ = schema.FMT_INT


def output_rows(plan) -> int:
    """Rows the output workbook holds in its per-workload sheets (the progress total)."""
    n = len(plan.results)
    return 2 * n + sum(plan.sens.rows(t.sheet) for t in plan.sens.tables) + plan.sens.rows("Tornado")


def write_output(plan, path: str | Path, *, run_info: dict | None = None, max_rows: int | None = None,
                 progress: Callable[[int], None] | None = None) -> list[str]:
    """Write the live output workbook of ``plan`` to ``path`` (not atomic: see save_atomic).

    Written in XlsxWriter's constant_memory mode: every sheet row by row (the small,
    freely laid-out sheets go through a :class:`RowBuffer`), so memory stays flat however
    many workloads there are. ``max_rows`` lowers the rows-per-sheet limit (tests of the
    continuation sheets); ``progress(rows)`` is called as rows are written. Returns the
    sheet names.
    """
    from .checks import checks_for  # local: checks need the layout defined here

    tick = progress or (lambda rows: None)
    n = len(plan.results)
    wb = xlsxwriter.Workbook(str(path), {**WB_OPTIONS, "constant_memory": True})
    if output_rows(plan) > ZIP64_ROWS:
        wb.use_zip64()  # a sheet's XML can pass 4 GiB (Excel reads ZIP64 workbooks)
    wb.set_properties({"title": f"KV-hit capacity plan {plan.settings.get('quarter') or ''}".strip(),
                       "subject": f"planned from {plan.input.path.name}", "comments": f"planner {__version__}"})
    fm = Formats(wb)
    add = lambda name: wb.add_worksheet(name, worksheet_class=FastFormulaWorksheet)
    fin = finance_sheets.add_sheets(wb, plan)  # Summary first, then Fleet and the other finance sheets
    ws_results = add("Results")
    ws_checks = RowBuffer(add("Checks"))
    ws_explorer = RowBuffer(add("Explorer"))
    ws_charts = RowBuffer(add("Charts")) if 0 < n <= MAX_CHART_WORKLOADS else None
    pos: dict[str, dict[str, int]] = {}
    p_in = plan.input
    layout = Layout(n, pos)
    pos["Resolved"] = {rc.name: j for j, rc in enumerate(sheets.RESOLVED)}
    pos["Results"] = {c.name: j for j, c in enumerate(sheets.RESULTS)}

    # sensitivity sheets (written first: Tornado, Explorer and charts refer to them)
    chunks: dict[str, Chunks] = {}
    for table in plan.sens.tables:
        chunks[table.sheet] = write_long_table(wb, fm, layout, table, plan.sens, max_rows, progress=tick)
    write_tornado(wb, fm, layout, plan.sens, chunks["Tornado_Calc"])
    tick(plan.sens.rows("Tornado"))

    for sheet, table in (("Workloads", p_in.workloads), ("Models", p_in.models), ("GPUs", p_in.gpus)):
        frame = {"Workloads": plan.workloads, "Models": plan.models, "GPUs": plan.gpus}[sheet]
        pos[sheet] = write_input_sheet(wb, fm, sheet, frame.to_dict("records"), list(table.extras))
    settings_rows = write_settings_sheet(wb, fm, plan.settings, p_in.settings_extra)
    for sheet, table in p_in.optional.items():  # Measurements, Demand, Scenarios: carried as inputs
        write_input_sheet(wb, fm, sheet, table.records, list(table.extras))
    ws_const = RowBuffer(add("Constants"))
    ws_res = add("Resolved")
    ws_run = RowBuffer(add("Run"))

    # named ranges of the input table columns (Models/GPUs for lookups, Workloads for checks)
    counts = {"Models": len(plan.models), "GPUs": len(plan.gpus), "Workloads": n}
    for sheet in INPUT_SHEETS:
        for c in schema.columns(sheet):
            wb.define_name(range_name(sheet, c.name), "=" + col_range(sheet, pos[sheet][c.name], counts[sheet]))

    _write_constants(wb, ws_const, fm)

    # Resolved: inputs with defaults applied and lookups done, row-aligned with Workloads
    _header(ws_res, fm, [f"{rc.name} [{rc.unit}]" if rc.unit else rc.name for rc in sheets.RESOLVED],
            [_width(rc.name, rc.text) for rc in sheets.RESOLVED])
    jobs = []
    for rc in sheets.RESOLVED:
        f = sheets.resolved_formula(rc, ref=lambda name: layout.own("Resolved", name, ROW),
                                    wl=lambda name: layout.other("Workloads", name, ROW), table=range_name)
        jobs.append((pos["Resolved"][rc.name], FormulaTemplate(f).fmt, fm("calc", rc.fmt),
                     values_list(plan.resolved[rc.name].to_numpy(), rc.text)))
        wb.define_name(range_name("Resolved", rc.name), "=" + col_range("Resolved", pos["Resolved"][rc.name], n))
    for i in range(n):
        for j, f, fmt, vals in jobs:
            ws_res.write_vetted(i + 1, j, f.format(i + 2, i + 2), fmt, vals[i])
    tick(n)

    # Results
    _header(ws_results, fm, [c.header for c in sheets.RESULTS], [_width(c.header, c.text) for c in sheets.RESULTS])
    for c in sheets.RESULTS:
        wb.define_name(range_name("Results", c.name), "=" + col_range("Results", pos["Results"][c.name], n))
        if c.description:
            ws_results.write_comment(0, pos["Results"][c.name], c.description, {"x_scale": 1.6})
    write_rows(ws_results, fm, 1, pos["Results"], sheets.RESULTS, plan.results, lambda name, row: layout.base(name, row))
    ws_results.autofilter(0, 0, n, len(sheets.RESULTS) - 1)
    _print_setup(ws_results)
    tick(n)

    checks_for(plan, layout).write(wb, ws_checks, fm)
    _print_setup(ws_checks)
    write_explorer(wb, ws_explorer, fm, layout, plan)
    if ws_charts is not None:
        write_charts(wb, ws_charts, fm, layout, plan, chunks)
    _write_run(ws_run, fm, plan, run_info or {})
    for buffered in (ws_checks, ws_explorer, ws_charts, ws_const, ws_run):
        if buffered is not None:
            buffered.flush()
    finance_sheets.write_finance(wb, fm, layout, plan, fin, settings_rows)  # activates Summary
    wb.close()
    return [ws.get_name() for ws in wb.worksheets()]


def _write_constants(wb, ws, fm: Formats) -> None:
    """Unit conversions, PCIe defaults, schema defaults and sweep constants as named cells."""
    _header(ws, fm, ["name", "value", "unit", "description"], [22, 16, 12, 80])
    rows = [(c.name, c.value, c.unit, c.description, c.editable) for c in CONSTANTS]
    rows += list(sheets.NAMED_VALUES.values())
    for c in schema.COLUMNS:
        if c.sheet in schema.SHEETS and c.default is not None and not (isinstance(c.default, str) and "+" in c.default):
            rows.append((c.default_name, c.default, c.unit, f"default of {c.sheet}.{c.name} when blank", True))
    for i, (name, value, unit, desc, editable) in enumerate(rows):
        ws.write_string(i + 1, 0, name)
        write_cell(ws, i + 1, 1, value, fm("input" if editable else "const"))
        ws.write_string(i + 1, 2, unit)
        ws.write_string(i + 1, 3, desc, fm("note"))
        wb.define_name(name, "=" + sheet_ref("Constants", i + 1, 1, row_abs=True))


# --------------------------------------------------------------------------- explorer and charts
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
    from .sensitivity import DRIVERS, hit_table, tornado_calc_table

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
    ws.write_formula(*EXPLORER_INDEX, f"=MATCH({sel},{range_name('Resolved', 'workload')},0)", None, 1)
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
                         _value(frame[name].iat[0], text))
        cell_of[name] = xl_rowcol_to_cell(r, 1, True, True)
    base_ref = lambda name, i: cell_of[name]

    # hit sweep of the chosen workload
    ht = hit_table(plan.hit_grid)
    k = ht.k
    top, left = 2, 3
    names = ["hit"] + [c.name for c in ht.cols]
    own = {nm: left + j for j, nm in enumerate(names)}
    _header(ws, fm, ["hit [fraction]"] + [c.header for c in ht.cols], [11] * len(names), top, left, freeze=False)
    frame = plan.sens.block("Sensitivity_Hit", 0, 1)
    for i, h in enumerate(plan.hit_grid):
        ws.write_number(top + 1 + i, left, float(h), fm("const", schema.FMT_PCT))
    write_rows(ws, fm, top + 1, own, ht.cols, frame, base_ref)
    hit_rows = (top + 1, top + k)
    # markers for h* and the target, and the tornado, below the sweep
    mk_top = top + k + 3
    ttft_col = own["ttft_alpha0_ms"]
    _markers(ws, fm, mk_top, left, xl_range_abs(hit_rows[0], ttft_col, hit_rows[1], ttft_col),
             cell_of["h_star"], cell_of["hit_target"], float(plan.results["h_star"].iat[0]),
             float(plan.resolved["hit_target"].iat[0]), float(np.nanmax(frame["ttft_alpha0_ms"].to_numpy(dtype=float))))
    tc = tornado_calc_table()
    t_top = mk_top + 8
    tnames = ["driver", "case", "driver_no", "direction", "upper"] + [c.name for c in tc.cols]
    t_own = {nm: left + j for j, nm in enumerate(tnames)}
    ws.write_string(t_top - 1, left, "Tornado of the chosen workload (each driver moved by c_tornado_swing)",
                    fm("title"))
    _header(ws, fm, tnames, [11] * len(tnames), t_top, left, freeze=False)
    calc = plan.sens.block("Tornado_Calc", 0, 1)
    for ld in tc.leads:
        for i, v in enumerate(ld.values):
            write_cell(ws, t_top + 1 + i, t_own[ld.name], v, fm("const", ld.fmt))
    write_rows(ws, fm, t_top + 1, t_own, tc.cols, calc, base_ref)
    summary = plan.sens.tornado_block(0, 1)
    s_top = t_top + tc.k + 3
    sorted_block = _tornado_sorted(ws, fm, s_top, left, summary, cell_of["tpm_delivered_target"],
                                   lambda d, case, name: xl_rowcol_to_cell(t_top + 1 + 2 * d + case, t_own[name]),
                                   "Explorer")
    # charts beside the tables
    charts = _charts_for(wb, "Explorer", own, hit_rows, mk_top, left, sorted_block, "chosen workload")
    for j, ch in enumerate(charts):
        ws.insert_chart(2 + (j // 2) * 18, left + len(names) + 1 + (j % 2) * 8, ch)
    ws.freeze_panes(4, 0)
    last_col = left + len(names) + 1 + 16
    ws.print_area(0, 0, s_top + len(DRIVERS) + 1, last_col)
    ws.set_landscape()
    ws.set_paper(9)
    ws.fit_to_pages(1, 1)


def _markers(ws, fm: Formats, top: int, left: int, ttft_range: str, h_star: str, target: str,
             h_star_v: float, target_v: float, y_top_v: float) -> None:
    """Vertical marker lines (h* and the target) for the TTFT chart: x twice, y 0 and the top
    of the TTFT curve (``ttft_range``)."""
    for j, h in enumerate(("marker", "x", "y")):
        ws.write_string(top, left + j, h, fm("header"))
    for i, (label, x, xv) in enumerate((("h* (break-even)", h_star, h_star_v), ("target", target, target_v))):
        for end in (0, 1):
            r = top + 1 + 2 * i + end
            ws.write_string(r, left, label)
            ws.write_formula(r, left + 1, "=" + x, fm("calc", schema.FMT_PCT), xv)
            if end == 0:
                ws.write_number(r, left + 2, 0.0, fm("const"))
            else:
                ws.write_formula(r, left + 2, f"=MAX({ttft_range})", fm("calc", "#,##0.0"), y_top_v)


def _tornado_sorted(ws, fm: Formats, top: int, left: int, summary, base_cell: str,
                    calc_cell: Callable[[int, int, str], str], sheet: str) -> tuple[int, int, int]:
    """Drivers in rank order (widest bar first): driver, TPM change at low and high.
    Returns (first row, last row, first column)."""
    k = len(summary)
    headers = ["rank", "driver", "low - base [tokens/min]", "high - base [tokens/min]", "swing [tokens/min]"]
    _header(ws, fm, headers, [8, 14, 16, 16, 16], top, left, freeze=False)
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
    order = np.argsort(summary["rank"].to_numpy())
    drivers = [f"{calc_cell(d, 0, 'driver')}" for d in range(k)]
    for p in range(k):
        r = top + 1 + p
        d = int(order[p])
        ws.write_number(r, left, p + 1, fm("const", "0"))
        match = f"MATCH({xl_rowcol_to_cell(r, left, col_abs=True)},{rk_rng},0)"
        drv_rng = xl_range_abs(top + 1, sw_col + 2, top + k, sw_col + 2)
        ws.write_formula(r, left + 1, f"=INDEX({drv_rng},{match})", None, str(summary["driver"].iat[d]))
        lo_rng = xl_range_abs(top + 1, sw_col + 3, top + k, sw_col + 3)
        hi_rng = xl_range_abs(top + 1, sw_col + 4, top + k, sw_col + 4)
        base_v = float(summary["tpm_base"].iat[d])
        ws.write_formula(r, left + 2, f"=INDEX({lo_rng},{match})-{base_cell}", fm("calc", FMT_INT_),
                         float(summary["tpm_low"].iat[d]) - base_v)
        ws.write_formula(r, left + 3, f"=INDEX({hi_rng},{match})-{base_cell}", fm("calc", FMT_INT_),
                         float(summary["tpm_high"].iat[d]) - base_v)
        ws.write_formula(r, left + 4, f"=INDEX({sw_rng},{match})", fm("calc", FMT_INT_), float(summary["swing"].iat[d]))
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


def _charts_for(wb, sheet: str, own: dict, hit_rows: tuple[int, int], mk_top: int, mk_left: int,
                sorted_block: tuple[int, int, int], label: str, data_sheet: str | None = None,
                mk_sheet: str | None = None) -> list:
    """The four charts of one workload: TTFT vs hit (α=0/1, h* and target marked), load vs
    compute, delivered vs physical TPM vs hit, tornado bars."""
    data_sheet = data_sheet or sheet
    mk_sheet = mk_sheet or sheet
    r0, r1 = hit_rows
    x = [data_sheet, r0, own["hit"], r1, own["hit"]]
    col = lambda name: [data_sheet, r0, own[name], r1, own[name]]
    title = f"{label}"

    def line_chart(name: str, series: list[tuple[str, str, str]], ytitle: str):
        ch = wb.add_chart({"type": "scatter", "subtype": "straight"})
        for sname, cname, color in series:
            ch.add_series({"name": sname, "categories": x, "values": col(cname),
                           "line": {"color": color, "width": 2}})
        ch.set_title({"name": f"{name}: {title}", "name_font": {"size": 10}})
        ch.set_x_axis({"name": "hit ratio", "min": 0, "max": 1, "num_format": "0%", "major_gridlines": {"visible": False}})
        ch.set_y_axis({"name": ytitle, "num_format": "#,##0"})
        ch.set_legend({"position": "bottom"})
        ch.set_size({"width": 520, "height": 320})
        return ch

    ttft = line_chart("TTFT vs hit", [("TTFT α=0 [ms]", "ttft_alpha0_ms", "#C00000"),
                                      ("TTFT α=1 [ms]", "ttft_alpha1_ms", "#2F5597")], "ms")
    for i, (name, color) in enumerate((("h* (break-even)", "#7F7F7F"), ("target", "#00B050"))):
        rr = mk_top + 1 + 2 * i
        ttft.add_series({"name": name, "categories": [mk_sheet, rr, mk_left + 1, rr + 1, mk_left + 1],
                         "values": [mk_sheet, rr, mk_left + 2, rr + 1, mk_left + 2],
                         "line": {"color": color, "width": 1.5, "dash_type": "dash"}, "marker": {"type": "none"}})
    load = line_chart("Load vs compute", [("KV load [ms]", "load_ms", "#ED7D31"),
                                          ("compute [ms]", "compute_ms", "#4472C4")], "ms")
    tpm = line_chart("TPM vs hit", [("delivered [tokens/min]", "tpm_delivered", "#2F5597"),
                                    ("physical [tokens/min]", "tpm_physical", "#70AD47")], "tokens/min")
    t0, t1, tl = sorted_block
    bars = wb.add_chart({"type": "bar"})
    for j, (name, color) in enumerate((("driver low", "#C00000"), ("driver high", "#2F5597"))):
        bars.add_series({"name": name, "categories": [mk_sheet, t0, tl + 1, t1, tl + 1],
                         "values": [mk_sheet, t0, tl + 2 + j, t1, tl + 2 + j], "fill": {"color": color},
                         "gap": 40, "overlap": 100})
    bars.set_title({"name": f"Tornado: delivered TPM change, {title}", "name_font": {"size": 10}})
    bars.set_y_axis({"reverse": True, "label_position": "low"})
    bars.set_x_axis({"num_format": "#,##0", "name": "tokens/min vs plan"})
    bars.set_legend({"position": "bottom"})
    bars.set_size({"width": 520, "height": 320})
    return [ttft, load, tpm, bars]


def write_charts(wb, ws, fm: Formats, layout: Layout, plan, chunks: dict) -> None:
    """Per-workload charts (up to MAX_CHART_WORKLOADS workloads), data helpers beside them."""
    from .sensitivity import DRIVERS

    hit = chunks["Sensitivity_Hit"]
    own = layout.pos["Sensitivity_Hit"]
    k = hit.k
    kd = len(DRIVERS)
    ws.write_string(0, 0, "Charts per workload (live: they read Sensitivity_Hit and Tornado); "
                          "for any workload use the Explorer", fm("title"))
    helper_left = 40  # helper tables to the right of the charts
    ws.set_column(helper_left, helper_left + 12, 12)
    for w in range(layout.n):
        name = plan.results["workload"].iat[w]
        band = 2 + w * 18
        ws.write_string(band - 1, 0, str(name), fm("title"))
        sheet, row = hit.where(w * k)
        frame = plan.sens.frames["Sensitivity_Hit"].iloc[w * k:(w + 1) * k]
        ttft_rng = f"{quote_sheetname(sheet)}!" + xl_range_abs(row, own["ttft_alpha0_ms"], row + k - 1,
                                                                own["ttft_alpha0_ms"])
        _markers(ws, fm, band, helper_left, ttft_rng, layout.base("h_star", w + 1),
                 layout.base("hit_target", w + 1), float(plan.results["h_star"].iat[w]),
                 float(plan.resolved["hit_target"].iat[w]), float(np.nanmax(frame["ttft_alpha0_ms"].to_numpy(dtype=float))))
        summary = plan.sens.tornado.iloc[w * kd:(w + 1) * kd].reset_index(drop=True)
        t_own = layout.pos["Tornado"]
        sorted_block = _tornado_sorted_from_summary(ws, fm, band, helper_left + 4, summary, w, t_own)
        charts = _charts_for(wb, "Charts", own, (row, row + k - 1), band, helper_left, sorted_block, str(name),
                             data_sheet=sheet, mk_sheet="Charts")
        for j, ch in enumerate(charts):
            ch.set_size({"width": 470, "height": 300})
            ws.insert_chart(band, j * 8, ch)
    ws.print_area(0, 0, 2 + layout.n * 18, 31)
    ws.set_landscape()
    ws.set_paper(9)
    ws.fit_to_pages(1, 0)


def _tornado_sorted_from_summary(ws, fm: Formats, top: int, left: int, summary, w: int, t_own: dict):
    """Drivers of workload w in rank order, read from the Tornado sheet by rank."""
    k = len(summary)
    rows = (1 + w * k, (w + 1) * k)
    rng = lambda name: "Tornado!" + xl_range_abs(rows[0], t_own[name], rows[1], t_own[name])
    for j, h in enumerate(("rank", "driver", "low - base", "high - base")):
        ws.write_string(top, left + j, h, fm("header"))
    order = np.argsort(summary["rank"].to_numpy())
    for p in range(k):
        r = top + 1 + p
        d = int(order[p])
        ws.write_number(r, left, p + 1, fm("const", "0"))
        match = f"MATCH({xl_rowcol_to_cell(r, left, col_abs=True)},{rng('rank')},0)"
        ws.write_formula(r, left + 1, f"=INDEX({rng('driver')},{match})", None, str(summary["driver"].iat[d]))
        base = float(summary["tpm_base"].iat[d])
        ws.write_formula(r, left + 2, f"=INDEX({rng('tpm_low')},{match})-INDEX({rng('tpm_base')},{match})",
                         fm("calc", FMT_INT_), float(summary["tpm_low"].iat[d]) - base)
        ws.write_formula(r, left + 3, f"=INDEX({rng('tpm_high')},{match})-INDEX({rng('tpm_base')},{match})",
                         fm("calc", FMT_INT_), float(summary["tpm_high"].iat[d]) - base)
    return top + 1, top + k, left


def _write_run(ws, fm: Formats, plan, info: dict) -> None:
    import openpyxl
    import pandas

    p_in = plan.input
    created = info.get("created", plan.created.strftime("%Y-%m-%dT%H:%M:%SZ"))
    rows = [
        ("planner version", __version__),
        ("input file", p_in.path.name),
        ("input SHA-256", p_in.sha256),
        ("created (UTC)", created),
        ("quarter", str(plan.settings.get("quarter") or "")),
        ("currency", str(plan.settings.get("currency") or "")),
        ("hit_step", float(plan.settings["hit_step"])),
        ("workloads", len(plan.results)),
        ("warnings", len(plan.warnings)),
        ("python", platform.python_version()),
        ("xlsxwriter", xlsxwriter.__version__),
        ("openpyxl", openpyxl.__version__),
        ("pandas", pandas.__version__),
        ("numpy", np.__version__),
    ] + [(k, v) for k, v in info.items() if k != "created"]
    _header(ws, fm, ["key", "value"], [20, 70])
    for i, (k, v) in enumerate(rows):
        ws.write_string(i + 1, 0, k)
        write_cell(ws, i + 1, 1, v, None)
    for j, note in enumerate(p_in.notes):
        ws.write_string(len(rows) + 2 + j, 0, "note", fm("note"))
        ws.write_string(len(rows) + 2 + j, 1, note, fm("note"))


# --------------------------------------------------------------------------- atomic save
def _file_mode(target: Path) -> int:
    if target.exists():
        return target.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def save_atomic(target: str | Path, write: Callable[[Path], None]) -> Path:
    """Run ``write(tmp)`` on a temporary file beside ``target``, then rename it into place.

    An existing ``target`` is replaced only once the new file is complete; on any
    failure (or interruption) the temporary file is removed and ``target`` is untouched.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=target.suffix + ".tmp",
                                    dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        os.chmod(tmp, _file_mode(target))  # mkstemp makes 0600; follow the umask or the old file
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target
