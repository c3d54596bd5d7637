"""Print set-up of every sheet of the output workbook, applied once, just before it is closed.

XlsxWriter writes page set-up (orientation, paper, margins, print titles, print area, page
breaks, header and footer) when the workbook is closed, so it may be set after the cells
were written, even in constant_memory mode. :func:`apply_print_setup` gives every sheet:

- A4 landscape, narrow margins, printed gridlines on table sheets;
- a page header with the plan's quarter (Settings ``quarter``) and the sheet name (``&A``),
  a footer with ``Page &P of &N``;
- print titles: the header row repeated on every page, and on wide tables the name column
  (workload, model, GPU) repeated on the left;
- a readable scale: a sheet that fits one page wide at 70% or more is printed one page wide;
  a wider table is cut into its *logical column groups* (declared below for ``Results``; one
  group per column for any other sheet), packed onto pages with vertical page breaks between
  groups at the scale from :data:`MIN_SCALE` to :data:`MAX_SCALE` percent that cuts no group
  and needs the fewest pages across, instead of being shrunk onto one page;
- the long tables (``Sensitivity_*``, ``Tornado_Calc``, ``Tornado``, ``Resolved`` and their
  continuation sheets) are out of the default print range: their print area is one page, the
  header and the first :data:`LONG_HEAD_ROWS` rows of the columns that fit, and their page
  header says so and that the full table is not printed by default (clear the print area to
  print it all). They are calculation sheets; the
  people-facing numbers are on Results, Checks, Explorer and Charts.

A sheet gets all this by default; a sheet whose layout needs more declares a :class:`PrintSpec`
in :data:`SPECS` (or with :func:`declare`) under its name: its column groups, the rows and
columns to repeat, a fixed print area, bands of rows that must not be split across pages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# A4 landscape: 297 x 210 mm = 11.69 x 8.27 in; XlsxWriter/Excel column width w (characters of
# the default 11 pt Calibri) is int(w * 7 + 5) pixels at 96 dpi.
PAPER_A4 = 9
MARGIN_LR, MARGIN_TOP, MARGIN_BOTTOM, MARGIN_HF = 0.4, 0.65, 0.6, 0.25  # inches
# Printable width and height at 100% in XlsxWriter column/row pixels. Excel would fit
# (11.69 - 0.8) in x 96 = 1045 px across, but LibreOffice without Calibri (it substitutes
# DejaVu Sans, whose characters are wider) prints the same column widths about a third wider:
# measured with columns of 4, 10 and 20 characters, 760-790 px fit across a page; rows: 33
# default rows (660 px) a page. The smaller figures are used, so no group is cut in either.
PAGE_W_PX = 760
PAGE_H_PX = 640
MIN_SCALE = 70        # below this a page is hard to read: wider sheets break into column groups
MAX_SCALE = 85        # largest scale tried for a sheet printed in column groups
LONG_HEAD_ROWS = 30   # data rows of a long table inside its (default) print area
DEFAULT_ROW_PX = 20   # default row height (15 pt) [px]

LONG_PREFIXES = ("Sensitivity_", "Tornado", "Resolved", "DF_Search_Hit")  # the long calculation tables


@dataclass(frozen=True)
class PrintSpec:
    """How one sheet prints. Every field has a default that suits a table with its header in row 0.

    header_rows : rows repeated at the top of every page (0-based, inclusive), or None
    title_cols : columns repeated at the left of every page when the sheet is printed in column
        groups (0-based, inclusive), or None
    groups : logical column groups, each named by its first column: ((label, column name or
        0-based column), ...), names looked up in the sheet's layout (``Layout.pos[sheet]``);
        unknown names are skipped. Empty: every column is a group of its own.
    area : fixed print area (first_row, first_col, last_row, last_col), else the used range
    row_bands : (first row, rows per band): bands of rows kept on one page (chart bands)
    long : a long calculation table (only its head is in the print area)
    gridlines : print the cell gridlines
    """

    header_rows: tuple[int, int] | None = (0, 0)
    title_cols: tuple[int, int] | None = (0, 0)
    groups: tuple[tuple[str, str | int], ...] = ()
    area: tuple[int, int, int, int] | None = None
    row_bands: tuple[int, int] | None = None
    long: bool = False
    gridlines: bool = True
    fit_pages: tuple[int, int] | None = None  # (wide, tall) pages the print area is fitted to (0: any)


# Results: its columns in the groups a reader looks at together (the first column of each).
RESULTS_GROUPS = (
    ("identity", "workload"),
    ("memory", "kv_bytes_per_token_gpu"),
    ("prefill times", "load_ms"),
    ("regime and break-even", "regime"),
    ("chip time and the model's TPM", "chip_ms_measured"),
    ("TPM at the target", "tpm_delivered_target"),
    ("fleet and cost", "instances_needed"),
    ("intermediate steps", "t0_ms"),
    ("source of the times", "breakdown_source"),
    ("fleet detail", "cost_per_hour"),
    ("times at the baseline hit", "load_ms_baseline"),
    ("fleet at the baseline hit", "tpm_delivered_model_baseline"),
    ("decode-step law", "instances_throughput"),
    ("SLO-bound sizing", "demand_rps"),
    ("steps of the TTFT count", "ttft_log_x"),
    ("SLO-bound counts", "instances_ttft"),
    ("latency at load", "concurrency_rps"),
    ("TTFT at the planned load", "ttft_steady_ms"),
    ("decode batch at load", "tpot_load_ms"),
    ("what the latency targets add", "gpus_throughput"),
    ("sizing chain at the baseline hit", "instances_throughput_baseline"),
    ("TTFT target at the baseline hit", "ttft_burst_slo_ms_baseline"),
    ("baseline latency counts", "instances_ttft_baseline"),
    ("baseline concurrency and binding", "instances_concurrency_baseline"),
)

SPECS: dict[str, PrintSpec] = {
    "Results": PrintSpec(groups=RESULTS_GROUPS),
    "Checks": PrintSpec(header_rows=(4, 4), title_cols=None, gridlines=False),
    # the name/value block, the tables, the charts (the Explorer's columns: see explorer.py)
    "Explorer": PrintSpec(header_rows=(0, 3), title_cols=None, gridlines=False,
                          groups=(("name/value block", 0), ("hit sweep and tornado", 3), ("charts", "charts"))),
    # two of the four charts of a workload side by side (charts start every 8 columns), whole bands
    "Charts": PrintSpec(header_rows=None, title_cols=None, groups=(("TTFT, load", 0), ("TPM, tornado", 16)),
                        row_bands=(1, 18), gridlines=False),
    # the finance reader's sheets: the Summary on one page, the fleet tables one page wide
    "Summary": PrintSpec(header_rows=None, title_cols=None, gridlines=False, fit_pages=(1, 1)),
    "Fleet": PrintSpec(fit_pages=(1, 0)),
    "Fleet_By_Period": PrintSpec(fit_pages=(1, 0)),
    "Scenario_Compare": PrintSpec(fit_pages=(1, 0)),
    # the diff workbook (planner diff): the bridge and its waterfall on one page, GPUs one page wide
    "Bridge": PrintSpec(fit_pages=(1, 1)),
    "GPU_Changes": PrintSpec(fit_pages=(1, 0)),
    "Demand_Calc": PrintSpec(long=True),
    "DF_Search": PrintSpec(long=True),   # the decode-first open loop's search (planner.workbook.df_search)
    "DF_Search_Periods": PrintSpec(long=True),   # the same for Demand_Calc's rows (planner.workbook.periods_sheet)
    "Settings": PrintSpec(title_cols=None),
    "Constants": PrintSpec(title_cols=None),
    "Run": PrintSpec(title_cols=None, gridlines=False),
}


def declare(sheet: str, spec: PrintSpec) -> None:
    """Declare how ``sheet`` prints (for sheets whose defaults do not suit)."""
    SPECS[sheet] = spec


def spec_for(sheet: str) -> PrintSpec:
    if sheet in SPECS:
        return SPECS[sheet]
    if sheet.startswith(LONG_PREFIXES):
        return PrintSpec(long=True)
    return PrintSpec()


def column_widths(ws, last_col: int) -> list[int]:
    """Printed width [px] of columns 0..last_col of an XlsxWriter worksheet (hidden: 0), by
    XlsxWriter's own column sizing (the one that places charts)."""
    return [int(ws._size_col(j)) for j in range(last_col + 1)]


def pack_groups(starts: list[int], widths: list[int], first: int, title_px: int,
                avail: float) -> tuple[list[int], int]:
    """Vertical page breaks (0-based columns that start a new page) packing the column groups
    that start at ``starts`` (columns ``first``.. onward) onto pages ``avail`` pixels wide,
    ``title_px`` of which the repeated title columns take. Returns (breaks, groups cut): a
    group wider than a page is cut between columns."""
    bounds = sorted(set(s for s in starts if s > first)) + [len(widths)]
    breaks, used, cur, cut = [], title_px, first, 0
    for end in bounds:
        w = sum(widths[cur:end])
        if used + w > avail and used > title_px:  # the group starts a new page
            breaks.append(cur)
            used = title_px
        if used + w <= avail:
            used += w
        else:  # wider than a page: cut it between columns
            cut += 1
            for j in range(cur, end):
                if used + widths[j] > avail and used > title_px:
                    breaks.append(j)
                    used = title_px
                used += widths[j]
        cur = end
    return breaks, cut


def best_scale(starts: list[int], widths: list[int], first: int, title_px: int) -> tuple[int, list[int]]:
    """The scale (MIN_SCALE..MAX_SCALE percent) and page breaks that cut the fewest groups, then
    print on the fewest pages across, then at the largest scale."""
    best = None
    for scale in range(MAX_SCALE, MIN_SCALE - 1, -1):
        breaks, cut = pack_groups(starts, widths, first, title_px, PAGE_W_PX * 100 / scale)
        key = (cut, len(breaks), -scale)
        if best is None or key < best[0]:
            best = (key, scale, breaks)
    return best[1], best[2]


def header_text(quarter: str, note: str = "") -> str:
    """Page header: the plan, its quarter and the sheet name (&A, bold) on the left, ``note`` in
    small type on the right. Ampersands in the text are doubled (Excel's escape)."""
    esc = lambda s: str(s).replace("&", "&&")
    left = "KV-hit capacity plan" + (f" {esc(quarter)}" if quarter else "")
    text = f"&L{left}: &\"-,Bold\"&A" + (f"&R&8{esc(note)}" if note else "")
    return text[:255]


FOOTER = "&L&F&CPage &P of &N"


def apply(ws, spec: PrintSpec, *, quarter: str = "", layout_pos: dict[str, int] | None = None) -> dict:
    """Set up one worksheet for print; returns what was decided (scale, breaks, area) for tests
    and reports."""
    ws.set_landscape()
    ws.set_paper(PAPER_A4)
    ws.set_margins(left=MARGIN_LR, right=MARGIN_LR, top=MARGIN_TOP, bottom=MARGIN_BOTTOM)
    if not spec.gridlines:
        ws.hide_gridlines(1)
    else:
        ws.hide_gridlines(0)  # shown on screen and printed
    last_row = ws.dim_rowmax if ws.dim_rowmax is not None else 0
    last_col = ws.dim_colmax if ws.dim_colmax is not None else 0
    area = spec.area
    first_row, first_col = 0, 0
    if area is None and ws.print_area_range:  # the sheet's writer set one (Explorer, Charts): keep it
        area = _parse_area(ws.print_area_range)
    note = ""
    if spec.long:  # one page: the first rows and the columns that fit at MIN_SCALE
        rows = last_row  # data rows (header in row 0)
        head = min(rows, LONG_HEAD_ROWS)
        widths = column_widths(ws, last_col)
        fit, used = 0, 0
        while fit <= last_col and used + widths[fit] <= PAGE_W_PX * 100 / MIN_SCALE:
            used += widths[fit]
            fit += 1
        cols = max(fit, 1)
        area = (0, 0, head, cols - 1)
        if rows > head or cols <= last_col:
            shown = f"first {head:,} of {rows:,} rows" + (f", {cols} of {last_col + 1} columns"
                                                           if cols <= last_col else "")
            note = f"{shown}; the full table is not printed by default (clear the print area to print it)"
    if area is None:  # the used range, so that long notes do not spill onto pages of their own (whole
        area = (0, 0, last_row, last_col)  # columns, "$A:$V", would upset openpyxl's reader)
    boxes = [] if spec.long else chart_boxes(ws)
    if boxes:  # every chart inside the print area: it prints whole, not cut at the area's edge
        area = (area[0], area[1], max(area[2], max(b[2] for b in boxes)), max(area[3], max(b[3] for b in boxes)))
    first_row, first_col, last_row, last_col = area
    ws.print_area(*area)
    if spec.header_rows is not None and last_row >= spec.header_rows[1]:
        ws.repeat_rows(*spec.header_rows)
    ws.set_header(header_text(quarter, note), margin=MARGIN_HF)
    ws.set_footer(FOOTER, margin=MARGIN_HF)

    widths = column_widths(ws, last_col)
    total = sum(widths[first_col:])
    decided = {"scale": 100, "vbreaks": [], "hbreaks": [], "area": area}
    if spec.fit_pages is not None:  # a page to read as a whole: fitted, not cut
        ws.fit_to_pages(*spec.fit_pages)
        decided["fit"] = spec.fit_pages
        return decided
    if total <= PAGE_W_PX:
        scale = 100
    elif total * MIN_SCALE / 100 <= PAGE_W_PX:
        scale = int(math.floor(PAGE_W_PX / total * 100))
    else:
        pos = layout_pos or {}
        starts = [name if isinstance(name, int) else pos[name] for _label, name in spec.groups
                  if isinstance(name, int) or name in pos] or list(range(first_col, last_col + 1))
        title_px = 0
        if spec.title_cols is not None:
            ws.repeat_columns(*spec.title_cols)
            title_px = sum(widths[spec.title_cols[0]:spec.title_cols[1] + 1])
        start = first_col if spec.title_cols is None else spec.title_cols[1] + 1
        # no page break inside a chart's columns
        starts = [c for c in starts if not any(b[1] < c <= b[3] for b in boxes)] or [first_col]
        scale, breaks = best_scale(starts, widths, start, title_px)
        ws.set_v_pagebreaks(breaks)
        ws.print_across()  # left to right, then down: a row band of the table reads in order
        decided["vbreaks"] = breaks
    ws.set_print_scale(scale)
    decided["scale"] = scale
    if spec.row_bands is not None:
        top, band = spec.row_bands
        per_page = max(1, int((PAGE_H_PX * 100 / scale) // (band * DEFAULT_ROW_PX)))
        hb = list(range(top + per_page * band, last_row + 1, per_page * band))
        if hb:
            ws.set_h_pagebreaks(hb)
        decided["hbreaks"] = hb
    elif boxes:
        hb = chart_row_breaks(ws, boxes, first_row, last_row, scale, spec.header_rows)
        if hb:
            ws.set_h_pagebreaks(hb)
        decided["hbreaks"] = hb
    return decided


def chart_boxes(ws) -> list[tuple[int, int, int, int]]:
    """Cells (first row, first column, last row, last column; 0-based, inclusive) each chart
    inserted in ``ws`` covers, by XlsxWriter's own row and column sizing (the one that places it)."""
    out = []
    for row, col, chart, x_off, y_off, x_scale, y_scale, *_rest in ws.charts:
        w = chart.width * x_scale + x_off
        h = chart.height * y_scale + y_off
        c = col
        while w > ws._size_col(c) or ws._size_col(c) == 0:
            w -= ws._size_col(c)
            c += 1
        r = row
        while h > ws._size_row(r) or ws._size_row(r) == 0:
            h -= ws._size_row(r)
            r += 1
        out.append((row, col, r, c))
    return out


def chart_row_breaks(ws, boxes, first_row: int, last_row: int, scale: int, header_rows) -> list[int]:
    """Horizontal page breaks so that no chart is split between two pages: rows are packed onto
    pages of :data:`PAGE_H_PX` (at ``scale``, less the repeated header rows), and a chart that
    would cross a page's end starts the next page instead."""
    avail = PAGE_H_PX * 100 / scale
    if header_rows is not None:
        avail -= sum(ws._size_row(r) for r in range(header_rows[0], header_rows[1] + 1))
    tops = {}
    for b in boxes:
        tops[b[0]] = max(tops.get(b[0], b[0]), b[2])
    breaks, used, r = [], 0.0, first_row
    while r <= last_row:
        if r in tops and r > first_row:
            need = sum(ws._size_row(x) for x in range(r, tops[r] + 1))
            if used + need > avail and used > 0 and need <= avail:
                breaks.append(r)
                used = 0.0
        h = ws._size_row(r)
        if used + h > avail:
            used = 0.0  # an automatic break
        used += h
        r += 1
    return breaks


def _parse_area(text: str) -> tuple[int, int, int, int]:
    from xlsxwriter.utility import xl_cell_to_rowcol

    rng = text.split("!")[-1].replace("$", "")
    a, _, b = rng.partition(":")
    r0, c0 = xl_cell_to_rowcol(a)
    r1, c1 = xl_cell_to_rowcol(b or a)
    return r0, c0, r1, c1


def apply_print_setup(wb, *, quarter: str = "", layout=None) -> dict[str, dict]:
    """Print set-up of every worksheet of ``wb`` (call after every sheet is written, before
    close). ``layout`` (a :class:`~planner.workbook.layout.Layout`) names the columns of the groups."""
    out = {}
    pos = layout.pos if layout is not None else {}
    for ws in wb.worksheets():
        name = ws.get_name()
        out[name] = apply(ws, spec_for(name), quarter=quarter, layout_pos=pos.get(name))
    return out
