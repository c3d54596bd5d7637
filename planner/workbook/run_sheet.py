"""The Constants sheet (named constant cells) and the Run sheet (provenance of the run)."""

from __future__ import annotations

import platform

import numpy as np
import xlsxwriter

from planner.core.version import __version__

from planner.core import schema

from planner.plan import columns as sheets
from planner.equations.constants import CONSTANTS
from planner.core.refs import sheet_ref
from planner.workbook.styles import Formats, write_header, write_cell


def write_constants(wb, ws, fm: Formats) -> None:
    """Unit conversions, PCIe defaults, schema defaults and sweep constants as named cells."""
    write_header(ws, fm, ["name", "value", "unit", "description"], [22, 16, 12, 80])
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


def write_run(ws, fm: Formats, plan, info: dict) -> None:
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
    write_header(ws, fm, ["key", "value"], [20, 70])
    for i, (k, v) in enumerate(rows):
        ws.write_string(i + 1, 0, k)
        write_cell(ws, i + 1, 1, v, None)
    for j, note in enumerate(p_in.notes):
        ws.write_string(len(rows) + 2 + j, 0, "note", fm("note"))
        ws.write_string(len(rows) + 2 + j, 1, note, fm("note"))
