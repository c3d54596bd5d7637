"""Input sheets (Models, GPUs, Workloads, the optional sheets), Settings, and the input
workbooks (template, example) built from them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import xlsxwriter

from planner.core import schema
from planner.core.schema import CHOICE, FRACTION, INT, NUMBER, TEXT, Column

from planner.workbook.layout import sheet_columns
from planner.core.refs import sheet_range, with_currency
from planner.workbook.styles import WB_OPTIONS, Formats, col_width, write_cell

INPUT_SHEETS = ("Models", "GPUs", "Workloads")


def _column_comment(c: Column) -> str:
    parts = [c.description]
    if c.range_text():
        parts.append(f"Allowed: {c.range_text()}")
    if c.default is not None:
        parts.append(f"Default when blank: {c.default}")
    req = {True: "required", False: "optional", "gqa": "required for gqa models",
           "mla": "required for mla models", "pcie": "give pcie_gbps or pcie_gen",
           "catalog": "required unless the row names a catalog entry (planner catalog)"}[c.required]
    parts.append(req.capitalize())
    return "\n".join(parts)


def _validation(c: Column) -> dict | None:
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


VALIDATE_ROWS = 500  # data validation (dropdowns, ranges) reaches at least this sheet row


def _ref_validation(c: Column, rows: int) -> dict:
    """A dropdown of the names of the sheet ``c`` refers to (Workloads.model -> Models.model):
    a range reference to that sheet's name column, sheet rows 2..``rows`` + 1 (room for added rows).
    Warning style: a name not (yet) in the list is flagged, not refused."""
    key = next(k for k in schema.columns(c.ref) if k.key)
    col = sheet_columns(c.ref)[key.name]
    return {"validate": "list", "source": "=" + sheet_range(c.ref, 1, col, rows, col),
            "error_type": "warning", "error_title": f"not a {key.name} of {c.ref}",
            "error_message": f"{c.name} should name a row of the {c.ref} sheet"}


def write_input_sheet(wb, fm: Formats, sheet: str, records: list[dict], extras: list[str],
                      validate_rows: int | None = None, currency: str | None = None,
                      ref_rows: dict[str, int] | None = None,
                      filled: list[dict[str, str]] | None = None,
                      ref_dropdowns: bool = True) -> dict[str, int]:
    """An input sheet: headers with units and notes, styled input cells, data validation.
    ``currency`` (Settings) replaces the unit placeholder ``currency`` in headers. Validation
    (choice lists, ranges, and dropdowns of the Models/GPUs/Workloads names for the columns
    that refer to them) covers rows 2..``validate_rows`` (default :data:`VALIDATE_ROWS`) or the
    data, whichever is longer; a name list reaches row ``ref_rows[sheet] + VALIDATE_ROWS`` of the
    sheet it lists, at least :data:`VALIDATE_ROWS`. ``filled[i]`` (column -> provenance) marks
    record i's cells that were not typed: styled ``catalog`` with a comment saying where the
    value came from. ``ref_dropdowns=False`` leaves out the name dropdowns (a workbook without the
    sheets they list, such as ``planner measurements`` output). Returns the 0-based column of every
    column name."""
    ws = wb.add_worksheet(sheet)
    cols = schema.columns(sheet)
    pos = sheet_columns(sheet, extras)
    for j, c in enumerate(cols):
        ws.write_string(0, j, with_currency(c.header, currency), fm("header"))
        ws.write_comment(0, j, _column_comment(c), {"x_scale": 2, "y_scale": 1.6})
        ws.set_column(j, j, col_width(c.header, c.kind == TEXT), fm("input", c.fmt))
    for k, head in enumerate(extras):
        j = len(cols) + k
        ws.write_string(0, j, head, fm("header"))
        ws.set_column(j, j, 30 if head.lower() in ("source", "note", "notes") else 14)
    for i, rec in enumerate(records):
        came = filled[i] if filled and i < len(filled) else {}
        for c in cols:
            write_cell(ws, i + 1, pos[c.name], rec.get(c.name), fm("catalog" if c.name in came else "input", c.fmt),
                       fm)
            if c.name in came:
                ws.write_comment(i + 1, pos[c.name], came[c.name], {"x_scale": 2.5, "y_scale": 1.5})
        for head in extras:
            write_cell(ws, i + 1, pos[head], rec.get(head), None, fm)
    last = max(len(records), VALIDATE_ROWS if validate_rows is None else validate_rows)
    for c in cols:
        v = _validation(c)
        if v is None and c.ref is not None and ref_dropdowns:
            v = _ref_validation(c, max(VALIDATE_ROWS, (ref_rows or {}).get(c.ref, 0) + VALIDATE_ROWS))
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
        write_cell(ws, r, 1, value, fm("input", schema.FMT_PCT if s.kind == FRACTION else None), fm)
        ws.write_string(r, 2, s.description, fm("note"))
        where[s.key] = r
        r += 1
    for k, v in extra:
        write_cell(ws, r, 0, k, None, fm)
        write_cell(ws, r, 1, v, fm("input"), fm)
        r += 1
    return where


def write_input_workbook(path: str | Path, models: list[dict], gpus: list[dict], workloads: list[dict],
                         settings: dict, *, validate_rows: int = 500, title: str = "",
                         optional: dict[str, list[dict]] | None = None) -> None:
    """An input workbook (the template or the example): README, Models, GPUs, Workloads, Settings,
    then the optional sheets given in ``optional`` (sheet name -> records)."""
    wb = xlsxwriter.Workbook(str(path), {**WB_OPTIONS, "in_memory": True})  # small: its parts zipped from memory (planner.workbook.writer.IN_MEMORY_ROWS)
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
            for j, v in enumerate((c.name, with_currency(c.unit, settings.get("currency")), c.kind, c.range_text(),
                                   "" if c.default is None else str(c.default), c.description + req)):
                readme.write_string(r, j, v)
            r += 1
        r += 1
    for sheet, recs in (("Models", models), ("GPUs", gpus), ("Workloads", workloads)):
        extras = []
        for rec in recs:
            extras += [k for k in rec if k not in extras and k not in {c.name for c in schema.columns(sheet)}]
        write_input_sheet(wb, fm, sheet, recs, extras, validate_rows, currency=settings.get("currency"))
    write_settings_sheet(wb, fm, settings)
    for sheet in schema.OPTIONAL_SHEETS:
        if optional and sheet in optional:
            recs = optional[sheet]
            extras = []
            for rec in recs:
                extras += [k for k in rec if k not in extras and k not in {c.name for c in schema.columns(sheet)}]
            write_input_sheet(wb, fm, sheet, recs, extras, validate_rows)
    wb.close()
