"""The DF_Search sheet (issue 16, "under load"): the decode-first open loop's TTFT target count, held live.

Written only when the plan has a workload with ``scheduler`` ``decode_first`` planned open loop (no
Workloads ``concurrency``; :func:`planner.plan.columns.has_open_df`), so a plan without one is unchanged.
Its rows are those workloads' Results rows (row ``i + 2`` is the workload of Results row ``i + 2``; the other
rows are left empty, and Results read the sheet only where its ``df_workload`` is filled), its columns
declared once in :data:`planner.plan.columns.DF_SEARCH` for both Python and Excel: the row's inputs copied
(short references keep each formula well within the 8,192 characters a spreadsheet formula may hold), the
closed-form lower bound ``n_lo``, :data:`planner.equations.decode_first_slo.SEARCH_BITS` steps of the bit
descent (the batch at the candidate count, a prompt's time beside it, the TTFT statistic, the count known to
miss), the count (Results ``instances_ttft`` of such a row refers to it), and the decode batch and TTFTs at the
row's load (Results ``ttft_load_ms`` and ``ttft_load_p90_ms``), then the same search at ``hit_baseline``
(Results ``instances_ttft_baseline``, hence ``instances_baseline``).
"""

from __future__ import annotations

from planner.plan import columns as sheets
from planner.plan.frames import column_arrays
from planner.workbook.layout import write_rows
from planner.workbook.styles import col_width, write_header

SHEET = sheets.DF_SEARCH_SHEET
COLUMNS = sheets.DF_SEARCH


def frame(plan):
    """The sheet's values, from the plan's Resolved and Results (the same functions the Results read)."""
    return sheets.evaluate(COLUMNS, column_arrays(plan.resolved, plan.results), len(plan.results))


def write_sheet(ws, fm, layout, plan) -> None:
    """Write DF_Search into ``ws`` (added by the writer when the plan has a decode-first open-loop row)."""
    write_header(ws, fm, [c.header for c in COLUMNS], [col_width(c.header, c.text) for c in COLUMNS])
    for c in COLUMNS:
        if c.description:
            ws.write_comment(0, layout.pos[SHEET][c.name], c.description, {"x_scale": 1.6})
    # only the rows searched (df_workload filled): a plan of many workloads with one such row writes one row
    # of about 200 formulas, not one per workload; the other rows stay empty (Results read the closed form there)
    values = frame(plan)
    rows = [i for i, w in enumerate(values["df_workload"]) if w not in ("", None)]
    write_rows(ws, fm, 1, layout.pos[SHEET], COLUMNS, values.iloc[rows].reset_index(drop=True),
               lambda name, row: layout.base(name, row), wl_rows=[i + 1 for i in rows], sheet_rows=rows)
