"""The ``Calibration`` output sheet and the Resolved cells filled by calibration/estimate.

``Calibration`` shows, per deployment, its fitted parameters (t_fixed, k_attn, k_ffn,
B_eff), every measured point beside the fitted TTFT and its error, the fitted curves at
0 hit and at the measured hit, and a chart of the points over the curves. Measured TTFTs
refer to the Measurements input sheet and fitted values are live formulas over the
parameter cells, so editing a parameter moves the curves, the errors and (through
``Resolved``) every result of the calibrated workloads.
"""

from __future__ import annotations

import math

import numpy as np

from planner.equations import fleet as fl
from planner.equations import tables as tb
from planner.equations import kvhit as m
from planner.equations import text as eq_text
from planner.equations import ttft_fit as tf
from planner.core import schema
from planner.workbook.chart_data import add_series
from planner.core import refs
from planner.core.refs import range_name, sheet_range, sheet_ref

SHEET = "Calibration"
PARAM_COLS = ("deployment", "model", "gpu", "tp", "points", "t_fixed_ms", "c_hit_ms", "k_attn_ms_per_tok2",
              "k_ffn_ms_per_tok",
              "b_eff_gbps", "b_source", "s_kv_bytes", "curve_hit", "curve_alpha", "median_abs_error", "max_abs_error",
              "tpot_per_token_ms", "status")
POINT_COLS = ("deployment", "measurements_row", "isl", "hit", "alpha", "measured_ttft_ms", "fitted_ttft_ms",
              "error", "abs_error")
CURVE_COLS = ("deployment", "isl", "fitted_ttft_hit0_ms", "fitted_ttft_hit_ms")
CURVE_STEPS = 24
PARAM_TOP = 3  # header row of the parameter table
FMT_K = "[=0]0;0.000E+00"  # a zero reads 0, not 0.000E+00 (4 significant figures otherwise)
# units of the columns, printed in the header text (comments do not print)
UNITS = {"tp": "count", "points": "count", "t_fixed_ms": "ms", "c_hit_ms": "ms", "k_attn_ms_per_tok2": "ms/token²",
         "k_ffn_ms_per_tok": "ms/token", "b_eff_gbps": "GB/s", "s_kv_bytes": "B/token", "curve_hit": "fraction",
         "curve_alpha": "fraction", "median_abs_error": "fraction", "max_abs_error": "fraction",
         "tpot_per_token_ms": "ms/token", "measurements_row": "row", "isl": "tokens", "hit": "fraction",
         "alpha": "fraction", "measured_ttft_ms": "ms", "fitted_ttft_ms": "ms", "error": "fraction",
         "abs_error": "fraction", "fitted_ttft_hit0_ms": "ms", "fitted_ttft_hit_ms": "ms"}
STATUS_WIDTH = 44  # characters: the status text wraps in it, its row grows to hold it


def header_text(name: str) -> str:
    return f"{name} [{UNITS[name]}]" if name in UNITS else name


TITLE = "Calibration"
SUBTITLE = "prefill times fitted to the measured load tests (Measurements sheet)"
DESCRIPTION = (f"Fit per deployment of {eq_text.CALIBRATION_FIT}; relative error minimised, parameters >= 0. "
               "c_hit: the per-request hit cost, 0 unless the points call for it. "
               "Calibrated workloads take t_attn0 = k_attn*isl^2, t_ffn0 = k_ffn*isl, t_fixed (+ c_hit "
               "with hits), B_eff (Resolved refers to these cells). The fit itself is redone when the planner "
               "runs: after editing Measurements, run it again.")


def title_block_end(widths: list[float]) -> int:
    """The last column (0-based) of the merged title and description cells: the columns from B
    whose printed width, with column A's, fits the narrowest page the print set-up may choose
    (:data:`planner.workbook.print_setup.PAGE_W_PX` at ``MAX_SCALE``): a sheet printed across in
    column groups breaks no earlier, so these cells print whole on its first page."""
    from planner.workbook.print_setup import MAX_SCALE, PAGE_W_PX

    avail = PAGE_W_PX * 100 / MAX_SCALE
    px = [int(w * 7 + 0.5) + 5 for w in widths]  # XlsxWriter's column pixels (7 px a character + 5)
    used, end = px[0], 0
    for j in range(1, len(px)):
        if used + px[j] > avail:
            break
        used, end = used + px[j], j
    return max(end, 1)


def column_widths(labels=()) -> list[int]:
    """Widths [characters] of the Calibration columns: each of the three tables' headers fits
    word by word (the longest word and some room), the deployment names (``labels``, up to 44
    characters: column A is repeated on every page) and the status more."""
    n = max(len(PARAM_COLS), len(POINT_COLS), len(CURVE_COLS))
    out = []
    for j in range(n):
        heads = [t[j] for t in (PARAM_COLS, POINT_COLS, CURVE_COLS) if j < len(t)]
        words = [w for h in heads for w in header_text(h).split()]
        out.append(max(11, max(len(w) for w in words) + 2))
    out[0] = max(34, min(max((len(str(x)) for x in labels), default=0) + 2, 44))
    out[PARAM_COLS.index("b_source")] = 24
    out[PARAM_COLS.index("status")] = STATUS_WIDTH
    return out
MAX_CHARTS = 20


class CalibrationLayout:
    """Where each part of the Calibration sheet lies (0-based rows), from the plan alone."""

    def __init__(self, calib):
        self.fits = calib.fits
        self.param_row = {k: PARAM_TOP + 1 + k for k in range(len(self.fits))}
        self.points_top = PARAM_TOP + len(self.fits) + 3
        r = self.points_top + 1
        self.point_rows: dict[int, tuple[int, int]] = {}
        for k, f in enumerate(self.fits):
            self.point_rows[k] = (r, r + len(f.points) - 1)
            r += len(f.points)
        self.curves_top = r + 2
        r = self.curves_top + 1
        self.curve_rows: dict[int, tuple[int, int]] = {}
        for k, f in enumerate(self.fits):
            if f.ok:
                self.curve_rows[k] = (r, r + CURVE_STEPS)
                r += CURVE_STEPS + 1

    def param(self, k: int, name: str) -> str:
        """Absolute cross-sheet reference of fit ``k``'s parameter ``name``."""
        return sheet_ref(SHEET, self.param_row[k], PARAM_COLS.index(name), row_abs=True, col_abs=True)


def _order(f) -> np.ndarray:
    """Points in the table: 0-hit points by length, then hit points by hit and length."""
    p = f.points
    return np.lexsort((p["isl"].to_numpy(), p["hit"].to_numpy(), (p["hit"] > 0).to_numpy()))


def _curve_hit(f) -> float:
    h = f.points["hit"].to_numpy(dtype=float)
    nz = h[h > 0]
    if not len(nz):
        return 0.0
    vals, counts = np.unique(nz, return_counts=True)
    return float(vals[np.argmax(counts)])


def _ttft_formula(lay: CalibrationLayout, k: int, isl: str, hit: str, alpha: str) -> str:
    """The fitted law at one point: t_fixed plus the per-request hit cost c_hit on a request with hits
    (0 when the fit did not select it: planner.plan.calib_extra.select_hit_cost), compute, load."""
    p = lambda name: lay.param(k, name)
    comp = tf.fitted_compute_ms.xl(isl, hit, p("k_attn_ms_per_tok2"), p("k_ffn_ms_per_tok"))
    load = m.kv_load_ms.xl(hit, isl, p("s_kv_bytes"), p("b_eff_gbps"))
    return m.ttft_ms.xl(_fixed_with_hit_cost(lay, k, hit), load, comp, alpha)


def _fixed_with_hit_cost(lay: CalibrationLayout, k: int, hit: str) -> str:
    """``t_fixed + c_hit x (hit > 0)`` of fit ``k`` at the hit ratio ``hit`` (a cell or a number)."""
    return tf.fixed_with_hit_cost.xl(lay.param(k, "t_fixed_ms"), lay.param(k, "c_hit_ms"), hit)


# --------------------------------------------------------------------------- Resolved cells
def resolved_overrides(plan, wl_cell, res_cell) -> dict[tuple[int, str], tuple[str | None, object, str]]:
    """Resolved cells of filled rows: ``(i, column) -> (formula or None, value, provenance)``.

    Calibrated cells are live formulas (a typed Workloads value still wins, else the
    Calibration sheet's parameter); estimated cells are values. ``wl_cell(name, i)`` and
    ``res_cell(name, i)`` give row i's Workloads / Resolved cell."""
    calib = plan.calibration
    if calib is None:
        return {}
    from planner.equations.roofline import estimate_formulas

    lay = CalibrationLayout(calib)
    out = {}
    est_cols = ("t_attn0_ms", "t_ffn0_ms", "t_fixed_ms", "t_decode_ms")
    for (i, col), prov in calib.filled.items():
        value = float(plan.resolved[col].iat[i])
        k = calib.fit_index[i]
        if col == "alpha":
            out[(i, col)] = (None, value, prov)  # the fitted alpha: a value (issue 20)
        elif calib.source[i] == "calibrated" and k is not None and not (
                col == "t_decode_ms" and str(prov).startswith("estimated by roofline")):
            # (a calibrated row whose Measurements have no tpot_ms takes its decode from the roofline:
            # that cell is the estimate's, below; Calibration's tpot_per_token_ms is blank)
            x = wl_cell(col, i)
            expr = {"tpm_measured": None, "hit_measured": None, "t_decode_batch": None, "pass_fixed_ms": None,
                    "t_attn0_ms": tf.attn0_ms.xl(lay.param(k, "k_attn_ms_per_tok2"), res_cell("isl", i)),
                    "t_ffn0_ms": tf.ffn0_ms.xl(lay.param(k, "k_ffn_ms_per_tok"), res_cell("isl", i)),
                    "t_fixed_ms": (_fixed_with_hit_cost(lay, k, res_cell("hit_target", i)) if calib.fits[k].c_hit_ms
                                   else lay.param(k, "t_fixed_ms")),
                    "kv_gbps": lay.param(k, "b_eff_gbps"),
                    "t_decode_ms": tf.decode_ms.xl(res_cell("osl", i), lay.param(k, "tpot_per_token_ms"))}[col]
            out[(i, col)] = (tb.typed_or.xl(x, expr), value, prov) if expr else (None, value, prov)
        elif col in est_cols and str(prov).startswith("estimated by roofline") \
                and (live := _live_estimate(plan, i)) is not None and \
                abs(live[0][col] - value) <= 1e-9 * max(1.0, abs(value)):  # live over Settings and GPUs
            x = wl_cell(col, i)
            out[(i, col)] = (tb.typed_or.xl(x, estimate_formulas(_row_ref(res_cell, i), *live[1:])[col]), value, prov)
        else:
            out[(i, col)] = (None, value, prov)
    for i, src in enumerate(calib.source):
        if src != "input":
            f = tb.both_typed_or.xl(wl_cell("t_attn0_ms", i), wl_cell("t_ffn0_ms", i), f'"{src}"')
            out[(i, "breakdown_source")] = (f, src, "")
    return out


def _live_estimate(plan, i: int):
    """:func:`planner.equations.roofline.live_estimate` of Resolved row i at the plan's Settings."""
    from planner.catalog.lookup import catalog_raw
    from planner.equations.roofline import live_estimate

    res = plan.resolved.iloc[i]
    model = next((r for r in plan.input.models.records if str(r.get("model")) == str(res["model"])), None)
    gpu = next((r for r in plan.input.gpus.records if str(r.get("gpu")) == str(res["gpu"])), None)
    if model is None or gpu is None:
        return None
    wl = {k: res[k] for k in ("tp", "isl", "osl", "batch")}
    return live_estimate(wl, model, gpu, float(plan.results["kv_bytes_per_token_gpu"].iat[i]),
                         float(plan.settings["prefill_mfu"]), float(plan.settings["decode_mbu"]), catalog_raw(model),
                         plan.settings)


def _row_ref(res_cell, i: int):
    """``r(sheet, name)`` of Resolved row i for :func:`planner.equations.roofline.estimate_formulas`."""
    def r(sheet: str, name: str) -> str:
        if sheet == "Resolved":
            return res_cell(name, i)
        if sheet == "Results":
            return tb.at_row.xl(range_name("Results", name), i + 1)
        row = res_cell("model_row" if sheet == "Models" else "gpu_row", i)
        return tb.at_row.xl(range_name(sheet, name), row)
    return r


# --------------------------------------------------------------------------- the sheet
def write_calibration(wb, fm, plan) -> None:
    """Write the Calibration sheet (only when the input has Measurements)."""
    calib = plan.calibration
    if calib is None or not calib.fits:
        return
    from planner.workbook.xlfast import RowBuffer

    lay = CalibrationLayout(calib)
    ws_real = wb.add_worksheet(SHEET)
    ws = RowBuffer(ws_real)
    meas_cols = [c.name for c in schema.columns("Measurements")]
    from planner.workbook.checks_sheet import wrapped_lines
    from planner.workbook.styles import header_lines

    widths = column_widths([f.label for f in calib.fits])
    for j, w in enumerate(widths):
        ws_real.set_column(j, j, w)
    # Column A is the print-title column repeated on every page printed across (the deployments),
    # where LibreOffice cuts a cell's text at the column's edge: it holds only what fits it. The
    # rest of the title and the description are wrapped in merged cells from column B to the last
    # column the first page always holds (title_block_end), so they print whole on the first page.
    end = title_block_end(widths)
    block = sum(widths[1:end + 1])
    ws.write_string(0, 0, TITLE, fm("title"))
    ws.merge_range(0, 1, 0, end, SUBTITLE, fm("title_wrap"))
    ws.merge_range(1, 1, 1, end, DESCRIPTION, fm("side_note"))
    # 13 pt bold: 11/13 of the width's 11 pt characters a line, 18 pt a line; the note 15 pt a line
    ws_real.set_row(0, 18 * header_lines(SUBTITLE, block * 11 / 13))
    ws_real.set_row(1, 15 * header_lines(DESCRIPTION, block))
    for top in (PARAM_TOP, lay.points_top, lay.curves_top):
        ws_real.set_row(top, 45)  # headers of up to three lines, never cut
    for j, h in enumerate(PARAM_COLS):
        ws.write_string(PARAM_TOP, j, header_text(h), fm("header"))
    fmts = {"t_fixed_ms": "#,##0.00", "c_hit_ms": "#,##0.00", "k_attn_ms_per_tok2": FMT_K, "k_ffn_ms_per_tok": FMT_K,
            "b_eff_gbps": "#,##0.00", "s_kv_bytes": "#,##0", "curve_hit": "0.0%", "curve_alpha": "0.0%", "median_abs_error": "0.0%",
            "max_abs_error": "0.0%", "tpot_per_token_ms": "#,##0.000"}
    pt_col = {c: j for j, c in enumerate(POINT_COLS)}
    row_h: dict[int, int] = {}
    for k, f in enumerate(calib.fits):
        r = lay.param_row[k]
        lo, hi = lay.point_rows[k]
        abs_rng = refs.cell_range(lo, pt_col["abs_error"], hi, pt_col["abs_error"])
        vals = {"deployment": f.label, "model": f.model, "gpu": f.gpu, "tp": f.tp, "points": len(f.points),
                "t_fixed_ms": f.t_fixed, "c_hit_ms": f.c_hit_ms, "k_attn_ms_per_tok2": f.k_attn, "k_ffn_ms_per_tok": f.k_ffn,
                "b_eff_gbps": f.b_gbps, "s_kv_bytes": f.s_kv, "curve_hit": _curve_hit(f),
                "curve_alpha": float(f.points["alpha"].max()),
                "b_source": ("fitted (B_eff)" + (", at search edge" if f.b_at_bound else "")) if f.b_fitted
                else ("GPU pcie_gbps (assumed: all hit points at one hit ratio)" if (f.points["hit"] > 0).any()
                      else "GPU pcie_gbps (no point with hit > 0)"),
                "tpot_per_token_ms": f.tpot_per_token_ms,
                "status": "ok" + ("; " + "; ".join(f.warnings) if f.warnings else "") if f.ok
                else "not fitted: " + "; ".join(f.warnings)}
        for j, name in enumerate(PARAM_COLS):
            v = vals.get(name)
            if name in ("median_abs_error", "max_abs_error"):
                if f.ok:
                    twin = tf.median_abs_error if name.startswith("median") else tf.max_abs_error
                    v = f.median_abs_error if twin is tf.median_abs_error else f.max_abs_error
                    ws.write_formula(r, j, "=" + twin.xl(abs_rng), fm("calc", fmts[name]), v)
                continue
            if isinstance(v, str):
                wrap = name in ("status", "b_source", "deployment")
                ws.write_string(r, j, v, fm("wrap") if wrap else None)
                if wrap:
                    lines = wrapped_lines(v, widths[j])
                    if lines > 1:
                        row_h[r] = max(row_h.get(r, 15), 15 * lines)
            elif v is None or (isinstance(v, float) and math.isnan(v)) or (not f.ok and name in fmts):
                ws.write_blank(r, j, None)
            else:
                ws.write_number(r, j, float(v), fm("const", fmts.get(name)))
    for r, h in row_h.items():
        ws_real.set_row(r, h)
    # points
    for j, h in enumerate(POINT_COLS):
        ws.write_string(lay.points_top, j, header_text(h), fm("header"))
    for k, f in enumerate(calib.fits):
        lo, _hi = lay.point_rows[k]
        pts = f.points.iloc[_order(f)]
        for q, (_, p) in enumerate(pts.iterrows()):
            r = lo + q
            src_row = int(p["record"]) + 1  # the Measurements sheet of the output: records from row 2
            ref = lambda name: sheet_ref("Measurements", src_row, meas_cols.index(name))
            ws.write_string(r, 0, f.label)
            ws.write_number(r, 1, int(p["row"]))
            ws.write_formula(r, 2, f"={ref('isl')}", fm("calc", "#,##0"), float(p["isl"]))
            ws.write_formula(r, 3, f"={ref('hit')}", fm("calc", "0.0%"), float(p["hit"]))
            if f.alpha_fit:  # alpha fitted (blank on every point): the fitted value, live from curve_alpha
                ws.write_formula(r, 4, "=" + fl.given_or.xl(ref("alpha"), lay.param(k, "curve_alpha")),
                                 fm("calc", "0.0%"), float(p["alpha"]))
            else:
                ws.write_formula(r, 4, "=" + fl.given_or.xl(ref("alpha"), "0"), fm("calc", "0.0%"), float(p["alpha"]))
            fac = float(p.get("load_factor", 1.0))  # a load test at concurrency > 1: request-alone equivalent
            # P = (ttft - taken) / factor (planner.plan.load_tests.prefill_given_fixed; taken_ms from the
            # calibration), so the cell is P (red team 5: the formula divided by the factor alone, 1.6% off P on
            # a published c = 4 point); a rounding residue of a point read whole is no part taken
            off = float(p["taken_ms"])
            off = 0.0 if abs(off) <= 1e-12 * max(1.0, abs(fac * float(p["ttft_ms"]) + off)) else off
            ws.write_formula(r, 5, "=" + (tf.request_alone_ms.xl(ref("ttft_ms"), repr(fac), repr(off) if off else None)
                                          if fac != 1.0 or off else ref("ttft_ms")), fm("calc", "#,##0.00"),
                             float(p["ttft_ms"]))
            if not f.ok:
                continue
            c = lambda name: refs.cell(r, pt_col[name], col_abs=True)
            ws.write_formula(r, 6, "=" + _ttft_formula(lay, k, c("isl"), c("hit"), c("alpha")),
                             fm("calc", "#,##0.00"), float(p["fitted_ms"]))
            ws.write_formula(r, 7, "=" + tf.relative_error.xl(c("fitted_ttft_ms"), c("measured_ttft_ms")), fm("calc", "0.0%"),
                             float(p["error"]))
            ws.write_formula(r, 8, "=" + tf.abs_error.xl(c("error")), fm("calc", "0.0%"), abs(float(p["error"])))
    # fitted curves
    for j, h in enumerate(CURVE_COLS):
        ws.write_string(lay.curves_top, j, header_text(h), fm("header"))
    alpha_of = {k: float(f.points["alpha"].max()) for k, f in enumerate(calib.fits)}
    for k, (lo, hi) in lay.curve_rows.items():
        f = calib.fits[k]
        top = f.points["isl"].max() * 1.05
        for q in range(CURVE_STEPS + 1):
            r = lo + q
            isl = float(np.round(top * q / CURVE_STEPS))
            ws.write_string(r, 0, f.label)
            ws.write_number(r, 1, isl, fm("const", "#,##0"))
            cell = refs.cell(r, 1, col_abs=True)
            h = lay.param(k, "curve_hit")
            alpha_txt = lay.param(k, "curve_alpha")
            ws.write_formula(r, 2, "=" + _ttft_formula(lay, k, cell, "0", alpha_txt), fm("calc", "#,##0.00"),
                             float(f.predict(isl, 0.0, alpha_of[k])))
            ws.write_formula(r, 3, "=" + _ttft_formula(lay, k, cell, h, alpha_txt), fm("calc", "#,##0.00"),
                             float(f.predict(isl, _curve_hit(f), alpha_of[k])))
    ws.flush()
    # charts: measured points over the fitted curves
    for n_chart, (k, (clo, chi)) in enumerate(list(lay.curve_rows.items())[:MAX_CHARTS]):
        f = calib.fits[k]
        lo, hi = lay.point_rows[k]
        n0 = int((f.points["hit"] == 0).sum())
        ch = wb.add_chart({"type": "scatter"})
        rng = lambda r0, r1, col: "=" + sheet_range(SHEET, r0, col, r1, col)
        pts = f.points.iloc[_order(f)]  # as the point rows are written (0 hit first)
        isl_p, ttft_p = pts["isl"].to_numpy(dtype=float), pts["ttft_ms"].to_numpy(dtype=float)
        top = f.points["isl"].max() * 1.05
        isl_c = [float(np.round(top * q / CURVE_STEPS)) for q in range(CURVE_STEPS + 1)]  # as the curve rows
        if n0:
            add_series(ch, {"name": "measured, 0 hit", "categories": rng(lo, lo + n0 - 1, 2),
                            "values": rng(lo, lo + n0 - 1, 5), "marker": {"type": "circle", "size": 7}},
                       isl_p[:n0], ttft_p[:n0])
        if n0 < len(f.points):
            add_series(ch, {"name": "measured, hit > 0", "categories": rng(lo + n0, hi, 2),
                            "values": rng(lo + n0, hi, 5), "marker": {"type": "diamond", "size": 8}},
                       isl_p[n0:], ttft_p[n0:])
        add_series(ch, {"name": "fitted, 0 hit", "categories": rng(clo, chi, 1), "values": rng(clo, chi, 2),
                        "line": {"width": 1.5}, "marker": {"type": "none"}},
                   isl_c, [float(f.predict(x, 0.0, alpha_of[k])) for x in isl_c])
        if _curve_hit(f) > 0:
            add_series(ch, {"name": f"fitted, hit {_curve_hit(f):.0%}", "categories": rng(clo, chi, 1),
                            "values": rng(clo, chi, 3), "line": {"width": 1.5, "dash_type": "dash"},
                            "marker": {"type": "none"}},
                       isl_c, [float(f.predict(x, _curve_hit(f), alpha_of[k])) for x in isl_c])
        ch.set_title({"name": f"{f.label}: TTFT measured vs fitted"})
        ch.set_x_axis({"name": "input length [tokens]", "min": 0})
        ch.set_y_axis({"name": "TTFT [ms]", "min": 0})
        ch.set_size({"width": 620, "height": 340})
        ws_real.insert_chart(PARAM_TOP + 1 + 18 * n_chart, len(PARAM_COLS) + 1, ch)


def write_filled(ws, fm, row: int, col: int, fmt, spec) -> None:
    """One Resolved cell filled by calibration (a live formula) or estimate (a value),
    with its provenance as a cell note."""
    formula, value, prov = spec
    if formula is None:
        ws.write_number(row, col, float(value), fmt)
    else:
        ws.write_formula(row, col, "=" + formula, fmt, value)
    if prov:
        ws.write_comment(row, col, prov, {"x_scale": 1.8})
