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

from . import __version__, schema, sheets
from .constants import CONSTANTS
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
        write_cell(ws, r, 1, settings.get(s.key, s.default), fm("input", schema.FMT_PCT if s.kind == FRACTION else None))
        ws.write_string(r, 2, s.description, fm("note"))
        where[s.key] = r
        r += 1
    for k, v in extra:
        write_cell(ws, r, 0, k, None)
        write_cell(ws, r, 1, v, fm("input"))
        r += 1
    return where


def write_input_workbook(path: str | Path, models: list[dict], gpus: list[dict], workloads: list[dict],
                         settings: dict, *, validate_rows: int = 500, title: str = "") -> None:
    """An input workbook (the template or the example): README, Models, GPUs, Workloads, Settings."""
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
    for sheet in INPUT_SHEETS:
        readme.write_string(r, 0, sheet, fm("title"))
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
    wb.close()


# --------------------------------------------------------------------------- output model
@dataclass
class Layout:
    """Where every column of every sheet is, so references come from one place."""

    n: int                                   # workloads
    pos: dict[str, dict[str, int]]           # sheet -> column name -> 0-based column

    def own(self, sheet: str, name: str, row: int) -> str:
        return xl_rowcol_to_cell(row, self.pos[sheet][name], col_abs=True)

    def other(self, sheet: str, name: str, row: int) -> str:
        return sheet_ref(sheet, row, self.pos[sheet][name])


def _derived_ref(layout: Layout, sheet: str, row: int, wl_row: int, column: str) -> Callable[[str], str]:
    """Reference resolver for one row of a derived sheet: own column (not ``column``
    itself), named value, Resolved or Results (at the row's workload)."""

    def ref(name: str) -> str:
        if name in layout.pos[sheet] and name != column:
            return layout.own(sheet, name, row)
        if name in sheets.NAMED_VALUES:
            return sheets.NAMED_VALUES[name][0]
        for other in ("Resolved", "Results"):
            if name in layout.pos[other]:
                return layout.other(other, name, wl_row)
        raise KeyError(name)

    return ref


def _value(x: Any, text: bool) -> Any:
    if text:
        return "" if x is None else str(x)
    x = float(x)
    return "" if math.isnan(x) else x


def _write_derived(ws, fm: Formats, layout: Layout, sheet: str, cols: tuple, frame, first_col: int,
                   wl_row_of: Callable[[int], int]) -> None:
    values = {c.name: frame[c.name].to_numpy() for c in cols}
    for c in cols:
        j = layout.pos[sheet][c.name]
        fmt = fm("calc", c.fmt)
        vals = values[c.name]
        for i in range(len(frame)):
            ref = _derived_ref(layout, sheet, i + 1, wl_row_of(i), c.name)
            formula = c.func.xl(*(ref(a) for a in c.args))
            ws.write_formula(i + 1, j, "=" + formula, fmt, _value(vals[i], c.text))


def _header(ws, fm: Formats, headers: list[str], widths: list[float]) -> None:
    for j, h in enumerate(headers):
        ws.write_string(0, j, h, fm("header"))
        ws.set_column(j, j, widths[j])
    ws.set_row(0, 30)
    ws.freeze_panes(1, 1)


def write_output(plan, path: str | Path, *, run_info: dict | None = None) -> None:
    """Write the live output workbook of ``plan`` to ``path`` (not atomic: see save_atomic)."""
    from .checks import checks_for  # local: checks need the layout defined here

    n = len(plan.results)
    wb = xlsxwriter.Workbook(str(path), WB_OPTIONS)
    fm = Formats(wb)
    ws_results = wb.add_worksheet("Results")
    ws_checks = wb.add_worksheet("Checks")
    ws_sens = wb.add_worksheet("Sensitivity_Hit")
    pos: dict[str, dict[str, int]] = {}
    p_in = plan.input
    for sheet, table in (("Workloads", p_in.workloads), ("Models", p_in.models), ("GPUs", p_in.gpus)):
        frame = {"Workloads": plan.workloads, "Models": plan.models, "GPUs": plan.gpus}[sheet]
        records = frame.to_dict("records")
        pos[sheet] = write_input_sheet(wb, fm, sheet, records, list(table.extras))
    write_settings_sheet(wb, fm, plan.settings, p_in.settings_extra)
    ws_const = wb.add_worksheet("Constants")
    ws_res = wb.add_worksheet("Resolved")
    ws_run = wb.add_worksheet("Run")

    # named ranges of the input table columns (Models/GPUs for lookups, Workloads for checks)
    counts = {"Models": len(plan.models), "GPUs": len(plan.gpus), "Workloads": n}
    for sheet in INPUT_SHEETS:
        for c in schema.columns(sheet):
            wb.define_name(range_name(sheet, c.name), "=" + col_range(sheet, pos[sheet][c.name], counts[sheet]))

    # Constants: unit conversions, PCIe defaults, schema defaults, alpha 0/1
    _header(ws_const, fm, ["name", "value", "unit", "description"], [22, 16, 10, 80])
    rows = [(c.name, c.value, c.unit, c.description, c.editable) for c in CONSTANTS]
    for key, (name, value) in sheets.NAMED_VALUES.items():
        rows.append((name, value, "fraction", f"overlap alpha for the {key.split('_')[1]}-overlap columns", False))
    for c in schema.COLUMNS:
        if c.default is not None and not (isinstance(c.default, str) and "+" in c.default):
            rows.append((c.default_name, c.default, c.unit, f"default of {c.sheet}.{c.name} when blank", True))
    for i, (name, value, unit, desc, editable) in enumerate(rows):
        ws_const.write_string(i + 1, 0, name)
        write_cell(ws_const, i + 1, 1, value, fm("input" if editable else "const"))
        ws_const.write_string(i + 1, 2, unit)
        ws_const.write_string(i + 1, 3, desc, fm("note"))
        wb.define_name(name, "=" + sheet_ref("Constants", i + 1, 1, row_abs=True))

    # Resolved: inputs with defaults applied and lookups done, row-aligned with Workloads
    pos["Resolved"] = {rc.name: j for j, rc in enumerate(sheets.RESOLVED)}
    pos["Results"] = {c.name: j for j, c in enumerate(sheets.RESULTS)}
    sens_names = ["workload", "hit"] + [c.name for c in sheets.SENSITIVITY_HIT]
    pos["Sensitivity_Hit"] = {name: j for j, name in enumerate(sens_names)}
    layout = Layout(n, pos)
    _header(ws_res, fm, [f"{rc.name} [{rc.unit}]" if rc.unit else rc.name for rc in sheets.RESOLVED],
            [_width(rc.name, rc.text) for rc in sheets.RESOLVED])
    for rc in sheets.RESOLVED:
        j = pos["Resolved"][rc.name]
        vals = plan.resolved[rc.name].to_numpy()
        fmt = fm("calc", rc.fmt)
        for i in range(n):
            row = i + 1
            f = sheets.resolved_formula(
                rc,
                ref=lambda name, row=row: layout.own("Resolved", name, row),
                wl=lambda name, row=row: layout.other("Workloads", name, row),
                table=range_name)
            ws_res.write_formula(row, j, "=" + f, fmt, _value(vals[i], rc.text))
        wb.define_name(range_name("Resolved", rc.name), "=" + col_range("Resolved", j, n))

    # Results
    _header(ws_results, fm, [c.header for c in sheets.RESULTS],
            [_width(c.header, c.text) for c in sheets.RESULTS])
    _write_derived(ws_results, fm, layout, "Results", sheets.RESULTS, plan.results, 0, lambda i: i + 1)
    for c in sheets.RESULTS:
        wb.define_name(range_name("Results", c.name), "=" + col_range("Results", pos["Results"][c.name], n))
        if c.description:
            ws_results.write_comment(0, pos["Results"][c.name], c.description, {"x_scale": 1.6})
    ws_results.autofilter(0, 0, n, len(sheets.RESULTS) - 1)

    # Sensitivity_Hit: long format, one block of grid points per workload
    k = len(plan.hit_grid)
    sens_headers = ["workload", "hit [fraction]"] + [c.header for c in sheets.SENSITIVITY_HIT]
    _header(ws_sens, fm, sens_headers, [_width(h, j == 0) for j, h in enumerate(sens_headers)])
    sens = plan.sensitivity_hit
    wnames = sens["workload"].to_numpy()
    for i in range(len(sens)):
        w_row = i // k + 1
        ws_sens.write_formula(i + 1, 0, "=" + layout.other("Resolved", "workload", w_row), None, str(wnames[i]))
        ws_sens.write_number(i + 1, 1, float(sens["hit"].iat[i]), fm("const", schema.FMT_PCT))
    _write_derived(ws_sens, fm, layout, "Sensitivity_Hit", sheets.SENSITIVITY_HIT, sens, 2,
                   lambda i: i // k + 1)
    ws_sens.autofilter(0, 0, len(sens), len(sens_headers) - 1)

    checks_for(plan, layout).write(wb, ws_checks, fm)
    _write_run(ws_run, fm, plan, run_info or {})
    wb.close()


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
