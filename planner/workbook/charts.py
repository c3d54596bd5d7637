"""Native Excel charts: the four charts of a workload, their marker lines, and the Charts
sheet (one band per workload)."""

from __future__ import annotations

import numpy as np

from planner.equations import tables as tb
from planner.core import schema
from planner.workbook.layout import Layout
from planner.workbook.styles import Formats
from planner.workbook.chart_data import add_series
from planner.core import refs
from planner.core.refs import sheet_range

FMT_INT_ = schema.FMT_INT


def write_markers(ws, fm: Formats, top: int, left: int, ttft_range: str, h_star: str, target: str,
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
                ws.write_formula(r, left + 2, "=" + tb.largest.xl(ttft_range), fm("calc", "#,##0.0"), y_top_v)


def charts_for(wb, sheet: str, own: dict, hit_rows: tuple[int, int], mk_top: int, mk_left: int,
                sorted_block: tuple[int, int, int], label: str, data_sheet: str | None = None,
                mk_sheet: str | None = None, cache: dict | None = None) -> list:
    """The four charts of one workload: TTFT vs hit (α=0/1, h* and target marked), load vs
    compute, delivered vs physical TPM vs hit, tornado bars.

    ``cache`` (:func:`chart_cache`): the values the ranges hold, stored as each series' cache."""
    cache = cache or {}
    sens = cache.get("sens")
    cv = lambda name: None if sens is None else sens[name].to_numpy()  # noqa: E731
    data_sheet = data_sheet or sheet
    mk_sheet = mk_sheet or sheet
    r0, r1 = hit_rows
    x = [data_sheet, r0, own["hit"], r1, own["hit"]]
    col = lambda name: [data_sheet, r0, own[name], r1, own[name]]
    title = f"{label}"

    def line_chart(name: str, series: list[tuple[str, str, str]], ytitle: str):
        ch = wb.add_chart({"type": "scatter", "subtype": "straight"})
        for sname, cname, color in series:
            add_series(ch, {"name": sname, "categories": x, "values": col(cname),
                            "line": {"color": color, "width": 2}}, cv("hit"), cv(cname))
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
        mk = cache.get("markers")  # ((x, x), (0, y_top)) of h* and of the target
        add_series(ttft, {"name": name, "categories": [mk_sheet, rr, mk_left + 1, rr + 1, mk_left + 1],
                          "values": [mk_sheet, rr, mk_left + 2, rr + 1, mk_left + 2],
                          "line": {"color": color, "width": 1.5, "dash_type": "dash"}, "marker": {"type": "none"}},
                   None if mk is None else mk[i][0], None if mk is None else mk[i][1])
    load = line_chart("Load vs compute", [("KV load [ms]", "load_ms", "#ED7D31"),
                                          ("compute [ms]", "compute_ms", "#4472C4")], "ms")
    tpm = line_chart("TPM vs hit", [("delivered [tokens/min]", "tpm_delivered", "#2F5597"),
                                    ("physical [tokens/min]", "tpm_physical", "#70AD47")], "tokens/min")
    t0, t1, tl = sorted_block
    bars = wb.add_chart({"type": "bar"})
    for j, (name, color) in enumerate((("driver low", "#C00000"), ("driver high", "#2F5597"))):
        tor = cache.get("tornado")  # (drivers, low - base, high - base) in rank order
        add_series(bars, {"name": name, "categories": [mk_sheet, t0, tl + 1, t1, tl + 1],
                          "values": [mk_sheet, t0, tl + 2 + j, t1, tl + 2 + j], "fill": {"color": color},
                          "gap": 40, "overlap": 100},
                   None if tor is None else tor[0], None if tor is None else tor[1 + j], text_categories=True)
    bars.set_title({"name": f"Tornado: delivered TPM change, {title}", "name_font": {"size": 10}})
    bars.set_y_axis({"reverse": True, "label_position": "low"})
    bars.set_x_axis({"num_format": "#,##0", "name": "tokens/min vs plan"})
    bars.set_legend({"position": "bottom"})
    bars.set_size({"width": 520, "height": 320})
    return [ttft, load, tpm, bars]


def write_charts(wb, ws, fm: Formats, layout: Layout, plan, chunks: dict) -> None:
    """Per-workload charts (up to MAX_CHART_WORKLOADS workloads), data helpers beside them."""
    from planner.plan.sensitivity import DRIVERS

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
        ttft_rng = sheet_range(sheet, row, own["ttft_alpha0_ms"], row + k - 1, own["ttft_alpha0_ms"])
        write_markers(ws, fm, band, helper_left, ttft_rng, layout.base("h_star", w + 1),
                 layout.base("hit_target", w + 1), float(plan.results["h_star"].iat[w]),
                 float(plan.resolved["hit_target"].iat[w]), float(np.nanmax(frame["ttft_alpha0_ms"].to_numpy(dtype=float))))
        summary = plan.sens.tornado.iloc[w * kd:(w + 1) * kd].reset_index(drop=True)
        t_own = layout.pos["Tornado"]
        sorted_block = tornado_sorted_from_sheet(ws, fm, band, helper_left + 4, summary, w, t_own)
        charts = charts_for(wb, "Charts", own, (row, row + k - 1), band, helper_left, sorted_block, str(name),
                             data_sheet=sheet, mk_sheet="Charts",
                             cache=chart_cache(frame, summary, float(plan.results["h_star"].iat[w]),
                                               float(plan.resolved["hit_target"].iat[w])))
        for j, ch in enumerate(charts):
            ch.set_size({"width": 470, "height": 300})
            ws.insert_chart(band, j * 8, ch)
    ws.print_area(0, 0, 2 + layout.n * 18, 31)


def chart_cache(frame, summary, h_star: float, target: float) -> dict:
    """The values behind :func:`charts_for`'s ranges, as the cells store them: the workload's
    Sensitivity_Hit rows, the marker lines (x twice; y 0 and the top of the TTFT curve, as
    :func:`write_markers`) and the sorted tornado (:data:`SORTED_TORNADO`'s values)."""
    y_top = float(np.nanmax(frame["ttft_alpha0_ms"].to_numpy(dtype=float)))
    order = np.argsort(summary["rank"].to_numpy())
    rows = [summary.iloc[int(i)] for i in order]
    value = {h: v for h, _f, _fmt, v in SORTED_TORNADO}
    return {"sens": frame, "markers": (((h_star, h_star), (0.0, y_top)), ((target, target), (0.0, y_top))),
            "tornado": ([value["driver"](t) for t in rows], [value["low"](t) for t in rows],
                        [value["high"](t) for t in rows])}


# the rows of a sorted tornado, declared once: header, formula over the driver-order ranges
# (``R``: name -> absolute range, ``m``: the MATCH of the row's rank, ``base``: base TPM of
# that driver), and the stored value from the Tornado frame's row ``t``
SORTED_TORNADO = (
    ("driver", lambda R, m, base: tb.at_row.xl(R["driver"], m), None, lambda t: str(t["driver"])),
    ("low", lambda R, m, base: tb.change.xl(tb.at_row.xl(R["tpm_low"], m), base(m)), FMT_INT_,
     lambda t: float(t["tpm_low"]) - float(t["tpm_base"])),
    ("high", lambda R, m, base: tb.change.xl(tb.at_row.xl(R["tpm_high"], m), base(m)), FMT_INT_,
     lambda t: float(t["tpm_high"]) - float(t["tpm_base"])),
    ("swing", lambda R, m, base: tb.at_row.xl(R["swing"], m), FMT_INT_, lambda t: float(t["swing"])),
)


def write_sorted_tornado(ws, fm: Formats, top: int, left: int, summary, ranges: dict, base,
                         columns: int = len(SORTED_TORNADO)) -> tuple[int, int, int]:
    """Drivers in rank order (widest bar first) from row ``top + 1``: the rank, then the first
    ``columns`` of :data:`SORTED_TORNADO`, each found by MATCH of the rank in ``ranges["rank"]``.
    ``base(match)`` is the formula of the base TPM. Returns (first row, last row, first column)."""
    k = len(summary)
    order = np.argsort(summary["rank"].to_numpy())
    for p in range(k):
        r = top + 1 + p
        t = summary.iloc[int(order[p])]
        ws.write_number(r, left, p + 1, fm("const", "0"))
        match = tb.row_of.xl(ranges["rank"], refs.cell(r, left, col_abs=True))
        for j, (_h, formula, fmt, value) in enumerate(SORTED_TORNADO[:columns]):
            ws.write_formula(r, left + 1 + j, "=" + formula(ranges, match, base),
                             None if fmt is None else fm("calc", fmt), value(t))
    return top + 1, top + k, left


def tornado_sorted_from_sheet(ws, fm: Formats, top: int, left: int, summary, w: int, t_own: dict):
    """Drivers of workload w in rank order, read from the Tornado sheet by rank."""
    k = len(summary)
    rows = (1 + w * k, (w + 1) * k)
    rng = {name: sheet_range("Tornado", rows[0], t_own[name], rows[1], t_own[name])
           for name in ("rank", "driver", "tpm_low", "tpm_high", "tpm_base", "swing")}
    for j, h in enumerate(("rank", "driver", "low - base", "high - base")):
        ws.write_string(top, left + j, h, fm("header"))
    return write_sorted_tornado(ws, fm, top, left, summary, rng, lambda m: tb.at_row.xl(rng["tpm_base"], m), 3)
