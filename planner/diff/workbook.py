"""The diff workbook (``planner diff ... -o OUT.xlsx``): Bridge, Workload_Changes, GPU_Changes,
Input_Changes and Diff_Info, each a table with its header in row 1 and nothing below it.

What is a formula and what a value: the bridge's costs and the per-workload and per-GPU
old/new numbers come from planning OLD, NEW and the intermediate states in Python
(re-planning cannot be an Excel formula), so they are values, and the sheets say so. The
deltas, the waterfall chart helpers (running total, invisible base, up and down bars) and
the bridge check (old + Σ steps − new) are live formulas over those values, each stored
with its Python value.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

import xlsxwriter

from planner.workbook.chart_text import install as names_are_text
from planner.workbook.chart_text import install as _names_are_text

_names_are_text()  # chart titles and series names stay text (planner.workbook.chart_text)

from planner.core.version import __version__

from planner.core import schema
from planner.diff.bridge import Diff, hours_per_month
from planner.workbook.styles import WB_OPTIONS, Formats, write_cell, write_header
from planner.core.refs import cell, cell_range, sheet_range
from planner.equations import tables as tb
from planner.finance.cells import Both, of, ref

FMT_MONEY = "#,##0.00"
FMT_GPUS = schema.FMT_INT
FMT_MS = schema.FMT_NUM
FMT_TPM = schema.FMT_INT
COLORS = {"base": None, "up": "#C00000", "down": "#00B050", "total": "#4472C4"}  # cost up is bad news

STEP_TEXT = {
    "old": "OLD's fleet cost per month (Σ gpus_needed · hourly_cost · hours_per_month over workloads with a demand)",
    "removed": "drop the workloads only in OLD",
    "added": "add the workloads only in NEW, with the models and GPUs they need from NEW (NEW's definitions and "
             "prices for them: they cost what they cost in NEW)",
    "demand": "take NEW's demand_tpm for the workloads in both",
    "hit": "take NEW's hit_target, hit_measured, trace and trace_block_size for the workloads in both, and NEW's "
           "Tiers; of_which_traffic: the part NEW's hit ratios and traces make at OLD's Tiers (the traffic), "
           "of_which_capacity: the rest, NEW's KV-cache capacity (0 without traces)",
    "price": "take NEW's hourly_cost for every GPU type NEW has",
    "other": "everything else (models, GPUs, tp, lengths, times, settings, latency targets...): the state is now NEW; "
             "of_which_latency: the part NEW's latency targets (ttft_slo_ms, tpot_slo_ms, slo_percentile, "
             "concurrency) make, taken first",
    "new": "NEW's fleet cost per month",
}


def unit_of(name: str, currency: str = "") -> str:
    """Unit of a diff column, printed in its header text (``gpus_old [count]``)."""
    if name.startswith("cost_per_month"):
        return f"{currency or 'currency'}/month"
    if name.startswith("gpus_") or name in ("gpus", "of_which_latency_gpus"):
        return "count"
    if name in ("of_which_latency", "of_which_traffic", "of_which_capacity"):
        return f"{currency or 'currency'}/month"
    if name.startswith("ttft_ms"):
        return "ms"
    if name.startswith("tpm_"):
        return "tokens/min"
    return ""


def _header(ws, fm: Formats, names: list[str], widths: list[float], currency: str = "") -> None:
    heads = [f"{h} [{u}]" if (u := unit_of(h, currency)) else h for h, _ in zip(names, widths)]
    write_header(ws, fm, heads, widths, freeze=(1, 0))


def _n(v: Any) -> float:
    return 0.0 if v is None else float(v)


def write_waterfall(wb, ws, fm: Formats, left: int, labels: list[str], amounts: list[tuple[str, float]],
                    totals: list[bool], *, title: str, y_title: str, num_fmt: str, at: tuple[int, int]) -> None:
    """A waterfall chart as a stacked column chart (works in every Excel and LibreOffice)
    over a helper block at column ``left``: ``label, amount, running, base, up, down, total``.

    ``amounts`` are declared cells (:class:`~planner.finance.cells.Both`); a ``totals`` row is a bar from 0 (its
    running total restarts at its amount), any other row floats on an invisible base:
    ``base = MIN(previous running, running)``, ``up = MAX(amount, 0)``, ``down = MAX(-amount, 0)``.
    """
    heads = ["chart: label", "amount", "running", "base", "up", "down", "total"]
    for j, h in enumerate(heads):
        ws.write_string(0, left + j, h, fm("header"))
        ws.set_column(left + j, left + j, 16 if j else 22)
    helper = lambda r, j, value: ref(value, cell(r, left + j))  # noqa: E731
    n = len(labels)
    running = helper(0, 2, 0.0)  # before the first row (a total, in every chart of the diff)
    for k, (label, amount, is_total) in enumerate(zip(labels, amounts, totals)):
        r = k + 1
        ws.write_string(r, left, label)
        _put(ws, r, left + 1, amount, fm("calc", num_fmt))
        step = helper(r, 1, amount.value)
        if is_total:  # a bar from 0: the running total restarts at its amount
            running = _put(ws, r, left + 2, step, fm("calc", num_fmt))
            for j in (3, 4, 5):
                ws.write_number(r, left + j, 0, fm("calc", num_fmt))
            _put(ws, r, left + 6, step, fm("calc", num_fmt))
        else:
            previous = running
            running = _put(ws, r, left + 2, of(tb.running_total, previous, step), fm("calc", num_fmt))
            _put(ws, r, left + 3, of(tb.floating_base, previous, running), fm("calc", num_fmt))
            _put(ws, r, left + 4, of(tb.rise, step), fm("calc", num_fmt))
            _put(ws, r, left + 5, of(tb.fall, step), fm("calc", num_fmt))
            ws.write_number(r, left + 6, 0, fm("calc", num_fmt))
    sheet = ws.get_name()
    cats = "=" + sheet_range(sheet, 1, left, n, left)
    chart = wb.add_chart({"type": "column", "subtype": "stacked"})
    for j, key, name in ((3, "base", "base"), (6, "total", "total"), (4, "up", "increase"),
                         (5, "down", "decrease")):
        series = {"name": name, "categories": cats,
                  "values": "=" + sheet_range(sheet, 1, left + j, n, left + j)}
        if COLORS[key] is None:
            series.update({"fill": {"none": True}, "border": {"none": True}})
        else:
            series.update({"fill": {"color": COLORS[key]}, "border": {"none": True}})
        if key == "base":
            series["gap"] = 60
        chart.add_series(series)
    chart.set_title({"name": title})
    running, lowest = 0.0, 0.0
    for amount, is_total in zip(amounts, totals):
        running = amount.value if is_total else running + amount.value
        lowest = min(lowest, running)
    y_axis = {"name": y_title, "num_format": num_fmt, "major_gridlines": {"visible": True}}
    if lowest >= 0:  # money and GPU counts from zero: the floating bars are read against 0
        y_axis["min"] = 0
    chart.set_y_axis(y_axis)
    chart.set_legend({"position": "bottom", "delete_series": [0]})
    chart.set_size({"width": 760, "height": 380})
    ws.insert_chart(at[0], at[1], chart)


def _put(ws, row: int, col: int, b: Both, style) -> Both:
    """Write a declared cell (its formula and its Python value); returns it as a reference to
    where it now is, for the cells that read it."""
    value = b.value.item() if hasattr(b.value, "item") else b.value  # a numpy scalar as a float
    ws.write_formula(row, col, b.formula, style, value)
    return ref(value, cell(row, col))


def write_bridge(wb, fm: Formats, d: Diff, currency: str) -> None:
    ws = wb.add_worksheet("Bridge")
    _header(ws, fm, ["step", "cost_per_month", "gpus", "of_which_latency", "of_which_latency_gpus",
                     "of_which_traffic", "of_which_capacity", "description"],
            [12, 18, 10, 18, 12, 18, 18, 70], currency)
    rows = d.bridge
    gpus = dict(d.gpu_bridge)
    for k, (step, value) in enumerate(rows):
        ws.write_string(k + 1, 0, step)
        ws.write_number(k + 1, 1, value, fm("calc", FMT_MONEY))
        if step in gpus:
            ws.write_number(k + 1, 2, gpus[step], fm("calc", FMT_GPUS))
        if step == "other" and d.latency:
            ws.write_number(k + 1, 3, d.latency["cost_per_month"], fm("calc", FMT_MONEY))
            ws.write_number(k + 1, 4, d.latency["gpus"], fm("calc", FMT_GPUS))
        if step == "hit" and d.hit_split:
            ws.write_number(k + 1, 5, d.hit_split["traffic"], fm("calc", FMT_MONEY))
            ws.write_number(k + 1, 6, d.hit_split["capacity"], fm("calc", FMT_MONEY))
        ws.write_string(k + 1, 7, STEP_TEXT[step], fm("note"))
    left = 9
    amounts = [ref(v, cell(k + 1, 1)) for k, (_, v) in enumerate(rows)]
    write_waterfall(wb, ws, fm, left, [s for s, _ in rows], amounts,
                    [s in ("old", "new") for s, _ in rows], title="Fleet cost per month, OLD to NEW",
                    y_title=f"{currency} per month".strip(), num_fmt="#,##0", at=(len(rows) + 3, 0))
    # the check: old + Σ steps − new (exactly 0) and the notes, right of the chart helpers
    c = left + 8
    n = len(rows)
    ws.write_string(0, c, "check: old + Σ steps − new", fm("header"))
    ws.set_column(c, c, 28)
    cost = lambda k: ref(rows[k][1], cell(k + 1, 1))  # noqa: E731
    steps = ref([v for _, v in rows[1:-1]], cell_range(2, 1, n - 1, 1))
    _put(ws, 1, c, of(tb.bridge_check, cost(0), steps, cost(n - 1)), fm("calc", FMT_MONEY))
    notes = [
        f"cost_per_month in {currency or 'the currency of hourly_cost'}: values from planning OLD, NEW and the "
        "intermediate states in Python (re-planning is not an Excel formula); chart helpers and the check are formulas.",
        "Steps are applied in this fixed order, each re-planning the whole fleet with that category of "
        "changes applied; each row is the change it makes, so old + Σ steps = new exactly.",
        "A GPU type without hourly_cost adds 0 to the cost.",
        "gpus: OLD's and NEW's fleet GPUs (Σ Results gpus_needed, as each side's Fleet Total) and the change of GPUs "
        "each step makes. of_which_latency (cost, GPUs): the part of other that NEW's latency targets make, planned "
        "on the price state (each state is sized SLO-bound, as Results). of_which_traffic / of_which_capacity: the "
        "parts of hit that NEW's hit ratios and traces make at OLD's Tiers, and then NEW's Tiers (they sum to hit).",
    ]
    if d.unpriced:
        notes.append("GPU types with GPUs but no price (counted at 0): " + ", ".join(d.unpriced))
    for k, note in enumerate(notes):
        ws.write_string(3 + k, c, note, fm("note"))


def write_workload_changes(wb, fm: Formats, d: Diff, currency: str = "") -> None:
    ws = wb.add_worksheet("Workload_Changes")
    cols = ["workload", "status", "gpus_old", "gpus_new", "cost_per_month_old", "cost_per_month_new",
            "gpus_delta", "cost_per_month_delta", "gpu_old", "gpu_new", "ttft_ms_old", "ttft_ms_new",
            "tpm_delivered_target_old", "tpm_delivered_target_new"]
    _header(ws, fm, cols, [28, 10, 11, 11, 18, 18, 11, 18, 16, 16, 12, 12, 16, 16], currency)
    fmts = {"gpus_old": FMT_GPUS, "gpus_new": FMT_GPUS, "cost_per_month_old": FMT_MONEY,
            "cost_per_month_new": FMT_MONEY, "ttft_ms_old": FMT_MS, "ttft_ms_new": FMT_MS,
            "tpm_delivered_target_old": FMT_TPM, "tpm_delivered_target_new": FMT_TPM}
    j = {c: i for i, c in enumerate(cols)}
    for k, w in enumerate(d.workloads):
        r = k + 1
        for c in cols:
            if c in ("gpus_delta", "cost_per_month_delta"):
                continue
            write_cell(ws, r, j[c], w[c], fm("calc", fmts.get(c)))
        for c, a, b, f in (("gpus_delta", "gpus_old", "gpus_new", FMT_GPUS),
                           ("cost_per_month_delta", "cost_per_month_old", "cost_per_month_new", FMT_MONEY)):
            _put(ws, r, j[c], of(tb.change, ref(_n(w[b]), cell(r, j[b])), ref(_n(w[a]), cell(r, j[a]))),
                 fm("calc", f))
    ws.autofilter(0, 0, max(len(d.workloads), 1), len(cols) - 1)
    ws.write_string(0, len(cols) + 1, "note", fm("header"))
    ws.write_string(1, len(cols) + 1, "old/new values from planning each file; deltas are formulas (blank = 0). "
                                      "status: added (only in NEW), removed (only in OLD), changed (a Workloads "
                                      "cell changed, or GPUs, cost, TTFT or TPM differ), same.", fm("note"))


def write_gpu_changes(wb, fm: Formats, d: Diff, currency: str = "") -> None:
    ws = wb.add_worksheet("GPU_Changes")
    cols = ["gpu", "gpus_old", "gpus_new", "gpus_delta", "cost_per_month_old", "cost_per_month_new",
            "cost_per_month_delta"]
    _header(ws, fm, cols, [22, 11, 11, 11, 18, 18, 18], currency)
    n = len(d.gpus)
    for k, g in enumerate(d.gpus):
        r = k + 1
        ws.write_string(r, 0, str(g["gpu"]))
        ws.write_number(r, 1, g["gpus_old"], fm("calc", FMT_GPUS))
        ws.write_number(r, 2, g["gpus_new"], fm("calc", FMT_GPUS))
        _put(ws, r, 3, of(tb.change, ref(g["gpus_new"], cell(r, 2)), ref(g["gpus_old"], cell(r, 1))),
             fm("calc", FMT_GPUS))
        ws.write_number(r, 4, g["cost_per_month_old"], fm("calc", FMT_MONEY))
        ws.write_number(r, 5, g["cost_per_month_new"], fm("calc", FMT_MONEY))
        _put(ws, r, 6, of(tb.change, ref(g["cost_per_month_new"], cell(r, 5)),
                          ref(g["cost_per_month_old"], cell(r, 4))), fm("calc", FMT_MONEY))
    left = len(cols) + 1
    column = lambda key, j: ref([g[key] for g in d.gpus], cell_range(1, j, max(n, 1), j))  # noqa: E731
    amounts = [of(tb.total, column("gpus_old", 1), value=sum(g["gpus_old"] for g in d.gpus))]
    amounts += [ref(g["gpus_new"] - g["gpus_old"], cell(k + 1, 3)) for k, g in enumerate(d.gpus)]
    amounts += [of(tb.total, column("gpus_new", 2), value=sum(g["gpus_new"] for g in d.gpus))]
    labels = ["OLD total"] + [str(g["gpu"]) for g in d.gpus] + ["NEW total"]
    write_waterfall(wb, ws, fm, left, labels, amounts, [True] + [False] * n + [True],
                    title="GPUs needed by type, OLD to NEW", y_title="GPUs", num_fmt=FMT_GPUS, at=(n + 3, 0))
    ws.write_string(0, left + 8, "note", fm("header"))
    ws.write_string(1, left + 8, "GPUs and cost per month over the workloads with a demand, from planning each "
                                 "file (values); deltas, totals and chart helpers are formulas. A type absent "
                                 "from a file counts 0 there.", fm("note"))


def write_input_changes(wb, fm: Formats, d: Diff) -> None:
    ws = wb.add_worksheet("Input_Changes")
    cols = ["sheet", "name", "column", "old", "new", "old_cell", "new_cell"]
    _header(ws, fm, cols, [14, 30, 20, 24, 24, 16, 16])
    for k, c in enumerate(d.changes):
        r = k + 1
        ws.write_string(r, 0, c.sheet)
        ws.write_string(r, 1, str(c.name))
        ws.write_string(r, 2, str(c.column))
        write_cell(ws, r, 3, c.old, None)
        write_cell(ws, r, 4, c.new, None)
        ws.write_string(r, 5, c.old_place)
        ws.write_string(r, 6, c.new_place)
    ws.autofilter(0, 0, max(len(d.changes), 1), len(cols) - 1)
    ws.write_string(0, len(cols) + 1, "note", fm("header"))
    notes = [
        "One row per changed input cell. Rows are matched by name (case and surrounding spaces ignored): "
        "Models by model, GPUs by gpu, Workloads by workload, Settings by key (values with defaults applied).",
        "A row only in NEW (added) lists each of its non-blank cells with old blank; a row only in OLD (removed) "
        "each of its non-blank cells with new blank.",
        "Optional sheets, which have no name column, are named by their identifying columns joined with ' / ': "
        "Measurements model / gpu / tp / isl / hit, Demand workload / period, Scenarios scenario / sheet / "
        "column / match, Tiers tier (a repeated name gets #2, #3); changing one of those columns removes a row and adds one.",
    ]
    for k, note in enumerate(notes):
        ws.write_string(1 + k, len(cols) + 1, note, fm("note"))


def write_info(wb, fm: Formats, d: Diff, created: _dt.datetime) -> None:
    ws = wb.add_worksheet("Diff_Info")
    _header(ws, fm, ["key", "value"], [22, 90])
    rows = [("old_file", str(d.old_path)), ("new_file", str(d.new_path)),
            ("old_sha256", d.old.input.sha256), ("new_sha256", d.new.input.sha256),
            ("old_quarter", str(d.old.settings.get("quarter") or "")),
            ("new_quarter", str(d.new.settings.get("quarter") or "")),
            ("hours_per_month_old", hours_per_month(d.old)), ("hours_per_month_new", hours_per_month(d.new)),
            ("input_changes", len(d.changes)), ("planner_version", __version__),
            ("created", created.astimezone(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"))]
    rows += [(f"new_warning_{k + 1}", w) for k, w in enumerate(d.new_warnings)]
    for k, (key, value) in enumerate(rows):
        ws.write_string(k + 1, 0, key)
        write_cell(ws, k + 1, 1, value, None)


def write_diff(d: Diff, path: str | Path, created: _dt.datetime | None = None) -> list[str]:
    """Write the diff workbook to ``path``; returns its sheet names."""
    currency = str(d.new.settings.get("currency") or d.old.settings.get("currency") or "").strip()
    names_are_text()  # chart titles and series names stay text (planner.workbook.chart_text)
    wb = xlsxwriter.Workbook(str(path), {**WB_OPTIONS, "in_memory": True})  # small: its parts zipped from memory (planner.workbook.writer.IN_MEMORY_ROWS)
    fm = Formats(wb)
    write_bridge(wb, fm, d, currency)
    write_workload_changes(wb, fm, d, currency)
    write_gpu_changes(wb, fm, d, currency)
    write_input_changes(wb, fm, d)
    write_info(wb, fm, d, created or _dt.datetime.now(_dt.timezone.utc))
    names = [ws.get_name() for ws in wb.worksheets()]
    from planner.workbook.print_setup import apply_print_setup

    quarters = [str(p.settings.get("quarter") or "") for p in (d.old, d.new)]
    apply_print_setup(wb, quarter=" to ".join(q for q in quarters if q))  # the plan's print set-up
    wb.close()
    return names
