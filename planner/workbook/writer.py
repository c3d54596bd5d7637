"""Write the live output workbook: :func:`write_output` lays the sheets out up front
(:class:`~planner.workbook.layout.Layout`) and calls one writer per family of sheets.

Conventions (FAST/ICAEW): inputs on their own sheets and styled as inputs (yellow fill,
blue text); units in every header (``isl [tokens]``, which the reader accepts back);
one formula down each column; no number typed into a formula (constants and defaults
are named cells of the ``Constants`` sheet); a ``Checks`` sheet with a master check.
Every cell reference comes from :mod:`planner.core.refs` (``cell``, ``cell_range``, ``sheet_ref``,
...); text from the input is always written as text, never as a formula.

Where things are: input sheets and input workbooks in :mod:`planner.workbook.input_sheets`;
styles and cell helpers in :mod:`planner.workbook.styles`; references in :mod:`planner.core.refs`;
layout and row writing in :mod:`planner.workbook.layout`; sensitivity tables and Tornado in
:mod:`planner.workbook.long_tables`; :mod:`planner.workbook.explorer`; :mod:`planner.workbook.charts`; Constants
and Run in :mod:`planner.workbook.run_sheet`; :func:`~planner.core.fileio.save_atomic` in :mod:`planner.core.fileio`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import xlsxwriter

from planner.workbook.chart_text import install as names_are_text
from planner.core.version import __version__

from planner.workbook import summary_sheet as finance_sheets

from planner.core import schema

from planner.plan import columns as sheets
from planner.workbook.calibration_sheet import resolved_overrides, write_calibration, write_filled
from planner.inputs.catalog_fill import filled_run_rows
from planner.inputs.measurement_files import run_rows as measurement_run_rows
from planner.workbook.charts import write_charts
from planner.workbook.checks_sheet import checks_for
from planner.workbook.explorer import write_explorer
from planner.workbook.input_sheets import INPUT_SHEETS, write_input_sheet, write_settings_sheet
from planner.workbook.layout import MAX_CHART_WORKLOADS, ZIP64_ROWS, Layout, write_rows
from planner.workbook.long_tables import write_long_table, write_tornado
from planner.core.refs import col_range, range_name, with_currency
from planner.workbook.print_setup import apply_print_setup
from planner.workbook.run_sheet import write_constants, write_run
from planner.workbook.xlfast import ROW, FastFormulaWorksheet, FormulaTemplate, RowBuffer
from planner.workbook.styles import WB_OPTIONS, Formats, col_width, fit_names, values_list, write_header
from planner.workbook import df_search, kv_tiers_sheets, tier_worth
from planner.plan.trust import filled_run_rows as trust_run_rows, measurements_run_rows as trust_meas_run_rows



# XlsxWriter writes every part of the package (each sheet, chart, drawing and their relations: about
# 200 for the example) to a temporary file and then zips them, unless the workbook is "in memory", a
# mode that would also turn off constant_memory's row-by-row sheets. Switched on just before close()
# (the sheets are written row by row already), the parts are assembled in memory instead: the same
# XML, with the zip's member dates 1980-01-01 instead of 1980-01-31. Measured: a temporary file costs
# 1-2 ms to make and remove here (15,726 removes took 15.2 s and 19,085 makes 11.7 s over the tests),
# so up to IN_MEMORY_ROWS output rows (about 10 KB of XML a row: 50 MB at the limit) are packed in
# memory, larger plans on disk so that memory stays flat.
IN_MEMORY_ROWS = 5_000


def output_rows(plan) -> int:
    """Rows the output workbook holds in its per-workload sheets (the progress total)."""
    n = len(plan.results)
    return 2 * n + sum(plan.sens.rows(t.sheet) for t in plan.sens.tables) + plan.sens.rows("Tornado")


SEARCH_ROW_WEIGHT = 8  # a decode-first search row's XML against a sweep row's (about 110 KB against 15 KB)


def zip64_rows(plan) -> int:
    """:func:`output_rows` with each row of a decode-first search helper sheet (DF_Search_Hit beside a
    sweep) counted :data:`SEARCH_ROW_WEIGHT` times: one such sheet passes 4 GiB at about 39,000 rows,
    long before the plan's rows in all reach ZIP64_ROWS."""
    extra = 0
    for t in plan.sens.tables:
        searched = plan.sens.searched(t.sheet)
        if searched is not None:
            extra += int(np.count_nonzero(searched)) * t.k
    return output_rows(plan) + SEARCH_ROW_WEIGHT * extra


def write_output(plan, path: str | Path, *, run_info: dict | None = None, max_rows: int | None = None,
                 progress: Callable[[int], None] | None = None, tmpdir: str | Path | None = None) -> list[str]:
    """Write the live output workbook of ``plan`` to ``path`` (not atomic: see save_atomic).

    Written in XlsxWriter's constant_memory mode: every sheet row by row (the small,
    freely laid-out sheets go through a :class:`RowBuffer`), so memory stays flat however
    many workloads there are. ``max_rows`` lowers the rows-per-sheet limit (tests of the
    continuation sheets); ``progress(rows)`` is called as rows are written; ``tmpdir``: the
    folder of XlsxWriter's constant-memory temporary files (the run's staging folder,
    :mod:`planner.cli.transaction`; default: the system's). Returns the sheet names.
    """
    with plan.sens.kept_columns():  # the sensitivity blocks read the Results and Resolved arrays once per block
        return _write(plan, path, run_info=run_info, max_rows=max_rows, progress=progress, tmpdir=tmpdir)


def _write(plan, path: str | Path, *, run_info: dict | None, max_rows: int | None,
           progress: Callable[[int], None] | None, tmpdir: str | Path | None) -> list[str]:
    """:func:`write_output`'s body."""
    tick = progress or (lambda rows: None)
    names_are_text()  # chart titles and series names stay text (planner.workbook.chart_text)
    n = len(plan.results)
    layout = Layout.of(plan, max_rows)  # every sheet's columns, before anything is written
    wb = xlsxwriter.Workbook(str(path), {**WB_OPTIONS, "constant_memory": True,
                                         **({"tmpdir": str(tmpdir)} if tmpdir else {})})
    if zip64_rows(plan) > ZIP64_ROWS:
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
    p_in = plan.input
    pos = layout.pos

    # sensitivity sheets (first in the workbook's sheet order)
    for table in plan.sens.tables:
        write_long_table(wb, fm, layout, table, plan.sens, max_rows, progress=tick)
    write_tornado(wb, fm, layout, plan.sens, layout.chunks["Tornado_Calc"])
    tick(plan.sens.rows("Tornado"))

    for sheet, table in (("Workloads", p_in.workloads), ("Models", p_in.models), ("GPUs", p_in.gpus)):
        frame = {"Workloads": plan.workloads, "Models": plan.models, "GPUs": plan.gpus}[sheet]
        fills = kv_tiers_sheets.input_fills(plan, layout, table.filled) if sheet == "Workloads" else table.filled
        write_input_sheet(wb, fm, sheet, frame.to_dict("records"), list(table.extras), filled=fills,
                          currency=plan.settings.get("currency"),
                          ref_rows={"Models": len(plan.models), "GPUs": len(plan.gpus), "Workloads": n})
    settings_rows = write_settings_sheet(wb, fm, plan.settings, p_in.settings_extra)
    for sheet, table in p_in.optional.items():  # Measurements, Demand, Scenarios: carried as inputs
        write_input_sheet(wb, fm, sheet, table.records, list(table.extras), filled=table.filled,
                          ref_rows={"Models": len(plan.models), "GPUs": len(plan.gpus), "Workloads": n})
    ws_const = RowBuffer(add("Constants"))
    ws_res = add("Resolved")
    ws_df = add(df_search.SHEET) if df_search.SHEET in pos else None  # decode-first open loop's search
    ws_run = RowBuffer(add("Run"))

    # named ranges of the input table columns (Models/GPUs for lookups, Workloads for checks)
    counts = {"Models": len(plan.models), "GPUs": len(plan.gpus), "Workloads": n}
    for sheet in INPUT_SHEETS:
        for c in schema.columns(sheet):
            wb.define_name(range_name(sheet, c.name), "=" + col_range(sheet, pos[sheet][c.name], counts[sheet]))

    write_constants(wb, ws_const, fm)
    write_calibration(wb, fm, plan)  # Calibration sheet when the input has Measurements

    # Resolved: inputs with defaults applied and lookups done, row-aligned with Workloads
    cur = plan.settings.get("currency")
    write_header(ws_res, fm, [with_currency(f"{rc.name} [{rc.unit}]", cur) if rc.unit else rc.name
                              for rc in sheets.RESOLVED],
            [col_width(rc.name, rc.text) for rc in sheets.RESOLVED])
    jobs = []
    for rc in sheets.RESOLVED:
        f = sheets.resolved_formula(rc, ref=lambda name: layout.own("Resolved", name, ROW),
                                    wl=lambda name: layout.other("Workloads", name, ROW), table=range_name)
        jobs.append((pos["Resolved"][rc.name], FormulaTemplate(f).fill, fm("calc", rc.fmt),
                     values_list(plan.resolved[rc.name].to_numpy(), rc.text)))
        wb.define_name(range_name("Resolved", rc.name), "=" + col_range("Resolved", pos["Resolved"][rc.name], n))
    filled = resolved_overrides(plan, lambda name, i: layout.other("Workloads", name, i + 1),
                                lambda name, i: layout.own("Resolved", name, i + 1))  # calibrated / estimated cells
    traced = kv_tiers_sheets.resolved_cells(plan, layout)  # hit_target, kv_gbps from a trace and the Tiers
    names, filled_rows = [rc.name for rc in sheets.RESOLVED], {i for i, _ in filled} | {i for i, _ in traced}
    for i in range(n):
        for j, f, fmt, vals in jobs:
            if i in filled_rows and (i, names[j]) in traced:
                write_filled(ws_res, fm, i + 1, j, fm("catalog", sheets.RESOLVED[j].fmt), traced[(i, names[j])])
            elif i in filled_rows and (i, names[j]) in filled:
                write_filled(ws_res, fm, i + 1, j, fmt, filled[(i, names[j])])
            else:
                ws_res.write_vetted(i + 1, j, f(i + 2, i + 2), fmt, vals[i])
    tick(n)

    # Results
    write_header(ws_results, fm, [with_currency(c.header, cur) for c in sheets.RESULTS],
                 [fit_names(col_width(c.header, c.text), plan.results[c.name]) if c.text else col_width(c.header, False)
                  for c in sheets.RESULTS])  # names that fit: two long workload names never read alike
    for c in sheets.RESULTS:
        wb.define_name(range_name("Results", c.name), "=" + col_range("Results", pos["Results"][c.name], n))
        if c.description:
            ws_results.write_comment(0, pos["Results"][c.name], c.description, {"x_scale": 1.6})
    # a plan with a decode-first row planned open loop: that row's TTFT count and TTFTs at load from DF_Search
    write_rows(ws_results, fm, 1, pos["Results"], sheets.results_columns(plan.resolved), plan.results,
               lambda name, row: layout.base(name, row))
    ws_results.autofilter(0, 0, n, len(sheets.RESULTS) - 1)
    # printed without the terms of the formulas (planner.plan.columns.sweep_terms: the last columns)
    ws_results.print_area(0, 0, n, len(sheets.without_terms(sheets.RESULTS)) - 1)
    tick(n)

    if ws_df is not None:
        df_search.write_sheet(ws_df, fm, layout, plan)
    checks_for(plan, layout).write(wb, ws_checks, fm)
    write_explorer(wb, ws_explorer, fm, layout, plan)
    if ws_charts is not None:
        write_charts(wb, ws_charts, fm, layout, plan, layout.chunks)
    write_run(ws_run, fm, plan, {**filled_run_rows(p_in), **trust_run_rows(p_in.workloads.filled),
                                 **measurement_run_rows(p_in),  # Measurements filled from load-test files
                                 **trust_meas_run_rows(p_in),   # Measurements blanks the planner filled (scheduler)
                                 **(run_info or {})})
    for buffered in (ws_checks, ws_explorer, ws_charts, ws_const, ws_run):
        if buffered is not None:
            buffered.flush()
    kv_tiers_sheets.write_sheets(wb, fm, layout, plan, settings_rows)  # Tier_Hits, Hit_Curve (traced workloads)
    tier_worth.write_sheets(wb, fm, layout, plan, settings_rows)  # Tier_Worth, Tier_Value: what a tier is worth
    finance_sheets.write_finance(wb, fm, layout, plan, fin, settings_rows)  # activates Summary
    apply_print_setup(wb, quarter=str(plan.settings.get("quarter") or ""), layout=layout)  # every sheet
    if output_rows(plan) <= IN_MEMORY_ROWS:
        wb.in_memory = True  # the package's parts in memory (see IN_MEMORY_ROWS); the sheets stay constant_memory
    wb.close()
    return [ws.get_name() for ws in wb.worksheets()]
