"""What a KV tier is worth (issue 19, item 4): a sweep of one tier's capacity per traced workload.

The swept tier is the first tier below HBM in the nest (the DRAM tier of a typical
deployment). Its capacity goes over :data:`MULTIPLIERS` x the declared capacity (0: the
deployment without that tier); every other tier stays as declared. At each point the tier
hits come from the trace's curve (:mod:`planner.inputs.kv_tiers`), then the Results chain of
``docs/model.md`` recomputed: load (HBM hits load nothing), compute, TTFT at the row's alpha,
chip time, delivered TPM (re-hit corrected from tpm_measured when given, against the planned
measured chip time), instances and GPUs for the demand, GPU cost per month
(``gpus x hourly_cost x hours_per_month``), tiers' cost per month and their sum.

``Tier_Value`` (one row per swept workload) reads the sweep: hit and GPUs without and with the
declared tier, GPUs saved, the GPU cost saved, the tier's cost, the net saving, the
**break-even price** ``gpu_cost_saved / (capacity_gib x units)`` per GiB-month at which the
declared tier stops paying for itself (units: instances, nodes or 1 by scope), and the
cost-optimal capacity of the sweep (the lowest total cost per month).

Python values and the workbook's formulas are built side by side below from the same model
functions (their ``.xl`` twins), so the sheet recalculates to the stored numbers.
"""

from __future__ import annotations

import numpy as np

from planner.equations import fleet as fl
from planner.equations import kvhit as m
from planner.core import schema
from planner.equations import tables as tb
from planner.equations import tiers
from planner.inputs.kv_tiers import TierPlan, WorkloadTiers, hits_at
from planner.workbook.kv_tiers_sheets import TIER_HITS, interp_xl, tier_cols, tier_cost_per_month, columns as th_columns
from planner.workbook.layout import sheet_columns
from planner.core import refs
from planner.core.refs import cell_range, setting_name, sheet_range, sheet_ref, whole_column
from planner.workbook.styles import write_header

TIER_WORTH, TIER_VALUE = "Tier_Worth", "Tier_Value"
MULTIPLIERS = (0.0, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0, 8.0, 16.0)
DECLARED = MULTIPLIERS.index(1.0)
HOURS_NAME = setting_name("hours_per_month")  # defined name of Settings hours_per_month (planner.workbook.fleet_sheets)


def swept_index(tp: TierPlan) -> int | None:
    """The first tier below HBM (None: only HBM is declared)."""
    return next((k for k, t in enumerate(tp.tiers) if t.kind != "hbm"), None)


units_of = tiers.units_of  # units bought of a tier (planner.equations.tiers, with its twin)
units_xl = tiers.units_of.xl


def sweep(plan, w: WorkloadTiers, tp: TierPlan, gpus_per_node: float, hours: float) -> dict[str, np.ndarray]:
    """The sweep's values for one workload (one entry per multiplier)."""
    s = swept_index(tp)
    rs, rr, i = plan.resolved, plan.results, w.i
    g = lambda name: float(rs[name].iat[i]) if name in rs else float(rr[name].iat[i])
    declared = float(w.capacity_gib[s])
    base = declared if declared > 0 else float(w.grid_gib[-1])
    caps = np.tile(w.capacity_gib, (len(MULTIPLIERS), 1))
    caps[:, s] = np.array(MULTIPLIERS) * base
    hits = np.array([hits_at(w, c) for c in caps])
    hit = hits.sum(axis=1)
    loaded = ~np.isnan(w.bandwidth_gbps)
    lp = (hits[:, loaded] / w.bandwidth_gbps[loaded]).sum(axis=1) if loaded.any() else np.zeros(len(hit))
    bw = tiers.effective_kv_gbps(hit, lp, w.base_kv_gbps)
    load = m.kv_load_ms(hit, g("isl"), g("kv_bytes_per_token_gpu"), bw)
    comp = m.compute_ms(hit, g("t_attn0_ms"), g("t_ffn0_ms"), g("t_other0_ms"), rs["other_scaling"].iat[i])
    ttft = m.ttft_ms(g("t_fixed_ms"), load, comp, g("alpha"))
    chip = m.chip_ms(ttft, g("t_decode_ms"))
    tpm_model = m.tpm_delivered(g("isl"), g("osl"), chip)
    tpm = m.tpm_delivered_target(g("tpm_measured"), g("chip_ms_measured"), chip, tpm_model)
    inst = m.instances_needed(g("demand_tpm"), tpm, g("target_utilization"))
    gpus = m.gpus_needed(inst, g("tp"))
    gpu_cost = fl.gpu_cost_per_month(gpus, g("hourly_cost"), hours)
    tier_cost = tiers.tiers_cost(*(tiers.tier_cost(caps[:, k], t.cost_per_gib_month,
                                                   units_of(t.scope, inst, gpus, gpus_per_node))
                                   for k, t in enumerate(tp.tiers) if t.row is not None))
    tier_cost = np.asarray(tier_cost, dtype=float) + np.zeros(len(hit))
    out = {"multiplier": np.array(MULTIPLIERS), "capacity_gib": caps[:, s]}
    for k in range(len(tp.tiers)):
        out[f"t{k + 1}_hit_upto"] = hits[:, :k + 1].sum(axis=1)
        out[f"t{k + 1}_hit"] = hits[:, k]
    out.update(hit=hit, load_per_gbps=lp, kv_gbps_eff=bw, load_ms=load, compute_ms=comp, ttft_ms=ttft,
               chip_ms=chip, tpm_delivered_model=tpm_model, tpm_delivered_target=tpm, instances=inst, gpus=gpus,
               swept_units=units_of(tp.tiers[s].scope, inst, gpus, gpus_per_node),
               gpu_cost_per_month=gpu_cost, tier_cost_per_month=tier_cost,
               total_cost_per_month=tiers.total_cost(gpu_cost, tier_cost))
    return out


def worth_columns(tp: TierPlan) -> list[str]:
    cols = ["workload", "tier", "multiplier", "capacity_gib"]
    for k in range(len(tp.tiers)):
        cols += [f"t{k + 1}_hit_upto", f"t{k + 1}_hit"]
    return cols + ["hit", "load_per_gbps", "kv_gbps_eff", "load_ms", "compute_ms", "ttft_ms", "chip_ms",
                   "tpm_delivered_model", "tpm_delivered_target", "instances", "gpus", "swept_units",
                   "gpu_cost_per_month", "tier_cost_per_month", "total_cost_per_month"]


VALUE_COLS = ("workload", "tier", "capacity_gib", "hit_without", "hit_with", "gpus_without", "gpus_with",
              "gpus_saved", "gpu_cost_saved_per_month", "tier_cost_per_month", "net_saving_per_month",
              "break_even_cost_per_gib_month", "cost_optimal_capacity_gib", "cost_optimal_total_per_month")


def value_row(sw: dict[str, np.ndarray], tier_price: float) -> dict[str, float]:
    """Tier_Value of one workload from its sweep."""
    d = DECLARED
    saved = float(tiers.saved_or_zero(sw["gpu_cost_per_month"][0], sw["gpu_cost_per_month"][d]))
    swept_cost = float(tiers.tier_cost(sw["capacity_gib"][d], tier_price, sw["swept_units"][d]))
    denom = sw["capacity_gib"][d] * sw["swept_units"][d]
    best = int(np.argmin(sw["total_cost_per_month"]))
    return {"capacity_gib": sw["capacity_gib"][d], "hit_without": sw["hit"][0], "hit_with": sw["hit"][d],
            "gpus_without": sw["gpus"][0], "gpus_with": sw["gpus"][d],
            "gpus_saved": float(tiers.saved_or_zero(sw["gpus"][0], sw["gpus"][d])), "gpu_cost_saved_per_month": saved,
            "tier_cost_per_month": swept_cost, "net_saving_per_month": float(tiers.net_saving(saved, swept_cost)),
            "break_even_cost_per_gib_month": saved / denom if denom > 0 else np.nan,
            "cost_optimal_capacity_gib": sw["capacity_gib"][best],
            "cost_optimal_total_per_month": sw["total_cost_per_month"][best]}


def worth_of(plan) -> list[tuple[WorkloadTiers, dict, dict]]:
    """(workload, sweep, value row) of every swept workload (traced, hit not typed, a tier below HBM)."""
    tp: TierPlan | None = plan.input.kv_tiers
    if tp is None or swept_index(tp) is None:
        return []
    gpn = float(plan.settings.get("gpus_per_node", 8.0))
    hours = float(plan.settings.get("hours_per_month", 730.0))
    s = swept_index(tp)
    out = []
    for w in tp.workloads:
        if w.typed_hit:
            continue
        sw = sweep(plan, w, tp, gpn, hours)
        out.append((w, sw, value_row(sw, tp.tiers[s].cost_per_gib_month)))
    return out


def write_sheets(wb, fm, layout, plan, settings_rows: dict[str, int]) -> None:
    """Tier_Worth (the sweep, live) and Tier_Value (its reading, live), with a chart per workload."""
    rows = worth_of(plan)
    if not rows:
        return
    tp: TierPlan = plan.input.kv_tiers
    s = swept_index(tp)
    swept = tp.tiers[s]
    gpn = sheet_ref(schema.SETTINGS, settings_rows["gpus_per_node"], 1, True, True)
    tiers_table = plan.input.optional.get(schema.TIERS)
    tpos = sheet_columns(schema.TIERS, list(tiers_table.extras) if tiers_table is not None else [])
    th = {c: j for j, c in enumerate(th_columns(tp))}
    cols = worth_columns(tp)
    pos = {c: j for j, c in enumerate(cols)}
    ws = wb.add_worksheet(TIER_WORTH)
    write_header(ws, fm, cols, [16, 12] + [12] * (len(cols) - 2))
    wv = wb.add_worksheet(TIER_VALUE)
    write_header(wv, fm, list(VALUE_COLS), [16, 12] + [14] * (len(VALUE_COLS) - 2))
    fmts = {"multiplier": "0.0###", "capacity_gib": "#,##0.00", "load_per_gbps": "0.000000", "kv_gbps_eff": "#,##0.00",
            "instances": "#,##0", "gpus": "#,##0", "swept_units": "#,##0", "tpm_delivered_model": "#,##0",
            "tpm_delivered_target": "#,##0"}
    fmt_of = lambda c: fmts.get(c, "0.00%" if "hit" in c else "#,##0.00")
    k_pts = len(MULTIPLIERS)
    tw_index = {w.workload: j for j, w in enumerate(tp.workloads)}
    for b, (w, sw, val) in enumerate(rows):
        th_row = tw_index[w.workload] + 1
        T = lambda name: sheet_ref(TIER_HITS, th_row, th[name], row_abs=True)
        rsv = lambda name: layout.other("Resolved", name, w.i + 1)
        res = lambda name: layout.other("Results", name, w.i + 1)
        first_curve, count = int(w_curve_first(w, tp)), len(w.grid)
        swept_cap = sheet_ref(schema.TIERS, swept.row + 1, tpos["capacity_gib"], row_abs=True, col_abs=True)
        base_cap = tiers.declared_or_ceiling.xl(swept_cap, tiers.curve_last.xl(
            whole_column("Hit_Curve", 2), T("curve_first_row"), T("curve_points")))
        for p in range(k_pts):
            r = 1 + b * k_pts + p
            C = lambda name: refs.cell(r, pos[name], col_abs=True)
            f: dict[str, str] = {}
            f["capacity_gib"] = tb.times.xl(C("multiplier"), base_cap)
            caps = []
            for k, t in enumerate(tp.tiers):
                caps.append(tiers.whole_blocks_gib.xl(C("capacity_gib") if k == s else T(tier_cols(k)[0]),
                                                      T("block_size"), T("kv_bytes_per_token_instance")))
                f[f"t{k + 1}_hit_upto"] = interp_xl(tiers.hits_upto_capacity.xl(*caps), first_curve, count)
                prev = C(f"t{k}_hit_upto") if k else 0
                f[f"t{k + 1}_hit"] = tiers.served_by.xl(C(f"t{k + 1}_hit_upto"), prev)
            f["hit"] = tiers.total_hit.xl(*(C(f"t{k + 1}_hit") for k in range(len(tp.tiers))))
            loaded = [k for k, t in enumerate(tp.tiers) if t.kind != "hbm"]
            f["load_per_gbps"] = tiers.load_per_gbps.xl([C(f"t{k + 1}_hit") for k in loaded],
                                                        [T(tier_cols(k)[3]) for k in loaded])
            f["kv_gbps_eff"] = tiers.effective_kv_gbps.xl(C("hit"), C("load_per_gbps"), T("base_kv_gbps"))
            f["load_ms"] = m.kv_load_ms.xl(C("hit"), rsv("isl"), res("kv_bytes_per_token_gpu"), C("kv_gbps_eff"))
            f["compute_ms"] = m.compute_ms.xl(C("hit"), rsv("t_attn0_ms"), rsv("t_ffn0_ms"), rsv("t_other0_ms"),
                                              rsv("other_scaling"))
            f["ttft_ms"] = m.ttft_ms.xl(rsv("t_fixed_ms"), C("load_ms"), C("compute_ms"), rsv("alpha"))
            f["chip_ms"] = m.chip_ms.xl(C("ttft_ms"), rsv("t_decode_ms"))
            f["tpm_delivered_model"] = m.tpm_delivered.xl(rsv("isl"), rsv("osl"), C("chip_ms"))
            f["tpm_delivered_target"] = m.tpm_delivered_target.xl(rsv("tpm_measured"), res("chip_ms_measured"),
                                                                  C("chip_ms"), C("tpm_delivered_model"))
            f["instances"] = m.instances_needed.xl(rsv("demand_tpm"), C("tpm_delivered_target"),
                                                   rsv("target_utilization"))
            f["gpus"] = m.gpus_needed.xl(C("instances"), rsv("tp"))
            f["swept_units"] = units_xl(swept.scope, C("instances"), C("gpus"), gpn)
            f["gpu_cost_per_month"] = fl.gpu_cost_per_month.xl(C("gpus"), rsv("hourly_cost"), HOURS_NAME)
            terms = []
            for k, t in enumerate(tp.tiers):
                if t.row is None:
                    continue
                price = tb.typed_or.xl(sheet_ref(schema.TIERS, t.row + 1, tpos['cost_per_gib_month']), 0)
                cap = C("capacity_gib") if k == s else T(tier_cols(k)[0])
                terms.append(tiers.tier_cost.xl(cap, price, units_xl(t.scope, C("instances"), C("gpus"), gpn)))
            f["tier_cost_per_month"] = tiers.tiers_cost.xl(*terms)
            f["total_cost_per_month"] = tiers.total_cost.xl(C("gpu_cost_per_month"), C("tier_cost_per_month"))
            for c in cols:
                j = pos[c]
                if c == "workload":
                    ws.write_string(r, j, w.workload)
                elif c == "tier":
                    ws.write_string(r, j, swept.name)
                elif c == "multiplier":
                    ws.write_number(r, j, MULTIPLIERS[p], fm("input", fmt_of(c)))
                else:
                    v = float(sw[c][p])
                    ws.write_formula(r, j, "=" + f[c], fm("calc", fmt_of(c)), "" if np.isnan(v) else v)
        # Tier_Value: live reading of the sweep rows
        r0, r1 = 1 + b * k_pts, 1 + b * k_pts + DECLARED
        W = lambda name, r: sheet_ref(TIER_WORTH, r, pos[name], row_abs=True)
        rng = lambda name: sheet_range(TIER_WORTH, r0, pos[name], r0 + k_pts - 1, pos[name])
        price = tb.typed_or.xl(sheet_ref(schema.TIERS, swept.row + 1, tpos['cost_per_gib_month']), 0)
        vr = b + 1
        V = lambda name: refs.cell(vr, VALUE_COLS.index(name), col_abs=True)
        vf = {"capacity_gib": W("capacity_gib", r1), "hit_without": W("hit", r0), "hit_with": W("hit", r1),
              "gpus_without": W("gpus", r0), "gpus_with": W("gpus", r1),
              "gpus_saved": tiers.saved_or_zero.xl(W("gpus", r0), W("gpus", r1)),
              "gpu_cost_saved_per_month": tiers.saved_or_zero.xl(W("gpu_cost_per_month", r0),
                                                                 W("gpu_cost_per_month", r1)),
              "tier_cost_per_month": tiers.tier_cost.xl(W("capacity_gib", r1), price, W("swept_units", r1)),
              "net_saving_per_month": tiers.net_saving.xl(V("gpu_cost_saved_per_month"), V("tier_cost_per_month")),
              "break_even_cost_per_gib_month": tiers.break_even_price.xl(V("gpu_cost_saved_per_month"),
                                                                         W("capacity_gib", r1), W("swept_units", r1)),
              "cost_optimal_capacity_gib": tiers.at_minimum.xl(rng("capacity_gib"), rng("total_cost_per_month")),
              "cost_optimal_total_per_month": tiers.minimum.xl(rng("total_cost_per_month"))}
        for j, c in enumerate(VALUE_COLS):
            if c == "workload":
                wv.write_string(vr, j, w.workload)
            elif c == "tier":
                wv.write_string(vr, j, swept.name)
            else:
                v = float(val[c])
                wv.write_formula(vr, j, "=" + vf[c], fm("calc", "0.00%" if "hit" in c else "#,##0.00"),
                                 "" if np.isnan(v) else v)
        if b < 10:  # a chart per workload: capacity on a log axis (the 0 point left out)
            _chart(wb, ws, b, w.workload, swept.name, pos, r0, k_pts, len(cols), tp)
    # the fleet: the traced workloads together (sums; break-even over their summed capacity bought)
    fr = len(rows) + 1
    tot = {c: float(np.nansum([v[c] for _w, _s, v in rows])) for c in
           ("gpus_without", "gpus_with", "gpus_saved", "gpu_cost_saved_per_month", "tier_cost_per_month",
            "net_saving_per_month")}
    pool = swept.scope == "pool"  # bought once for the fleet: each row charges all of it, the total once
    if pool:
        tot["tier_cost_per_month"] = tiers.pool_once([v["tier_cost_per_month"] for _w, _s, v in rows])
        tot["net_saving_per_month"] = float(tb.saved(tot["gpu_cost_saved_per_month"], tot["tier_cost_per_month"]))
    once = rows[:1] if pool else rows
    bought = float(sum(v["capacity_gib"] * sw["swept_units"][DECLARED] for _w, sw, v in once))
    tot["break_even_cost_per_gib_month"] = tot["gpu_cost_saved_per_month"] / bought if bought > 0 else np.nan
    wv.write_string(fr, 0, "Total (traced workloads)", fm("header"))
    wv.write_string(fr, 1, swept.name)
    col = lambda c: VALUE_COLS.index(c)
    span = lambda c: cell_range(1, col(c), fr - 1, col(c))
    for c, v in tot.items():
        if c == "break_even_cost_per_gib_month":
            units = tiers.bought_gib.xl(
                [sheet_ref(TIER_WORTH, 1 + b * k_pts + DECLARED, pos["capacity_gib"], row_abs=True) for b in range(len(once))],
                [sheet_ref(TIER_WORTH, 1 + b * k_pts + DECLARED, pos["swept_units"], row_abs=True) for b in range(len(once))])
            f = tiers.per_unit_bought.xl(refs.cell(fr, col("gpu_cost_saved_per_month"), col_abs=True), units)
        elif pool and c == "tier_cost_per_month":
            f = tiers.pool_once.xl(span(c))
        elif pool and c == "net_saving_per_month":
            f = tb.saved.xl(refs.cell(fr, col("gpu_cost_saved_per_month"), col_abs=True),
                            refs.cell(fr, col("tier_cost_per_month"), col_abs=True))
        else:
            f = tb.total.xl(span(c))
        wv.write_formula(fr, col(c), "=" + f, fm("calc", "#,##0.00"), "" if np.isnan(v) else v)
    last = 2 + len(rows) * k_pts
    ws.write_string(last, 0, f"Sweep of the {swept.name} tier's capacity ({swept.kind}, scope {swept.scope}): multiplier x "
                    f"its declared capacity in Tiers (0: without it); the other tiers as declared. Live formulas: edit "
                    f"Tiers or a multiplier and the row recalculates. GPU cost = gpus x hourly_cost x "
                    f"hours_per_month.", fm("note"))
    wv.write_string(len(rows) + 3, 0, "break_even_cost_per_gib_month: the price per GiB-month at which the declared "
                    "tier's GPU savings equal its cost (gpu_cost_saved / (capacity_gib x units bought)); "
                    "cost_optimal_*: the lowest total cost per month of the sweep (Tier_Worth).", fm("note"))


def w_curve_first(w: WorkloadTiers, tp: TierPlan) -> int:
    """1-based Hit_Curve row of the workload's first curve point (the layout of kv_tiers_sheets)."""
    first = 2
    for x in tp.workloads:
        if x is w:
            return first
        first += len(x.grid)
    raise KeyError(w.workload)


def _chart(wb, ws, b, workload, tier, pos, r0, k, ncols, tp) -> None:
    sheet = TIER_WORTH
    cat = [sheet, r0 + 1, pos["capacity_gib"], r0 + k - 1, pos["capacity_gib"]]
    ch = wb.add_chart({"type": "scatter", "subtype": "straight_with_markers"})
    for name in ["hit"] + [f"t{j + 1}_hit" for j in range(len(tp.tiers))]:
        ch.add_series({"name": [sheet, 0, pos[name]], "categories": cat,
                       "values": [sheet, r0 + 1, pos[name], r0 + k - 1, pos[name]]})
    ch.set_title({"name": f"{workload}: hit ratio by tier vs {tier} capacity"})
    ch.set_x_axis({"name": f"{tier} capacity [GiB], log scale", "log_base": 2})
    ch.set_y_axis({"name": "hit ratio", "num_format": "0%"})
    cost = wb.add_chart({"type": "scatter", "subtype": "straight_with_markers"})
    for name in ("gpu_cost_per_month", "tier_cost_per_month", "total_cost_per_month"):
        cost.add_series({"name": [sheet, 0, pos[name]], "categories": cat,
                         "values": [sheet, r0 + 1, pos[name], r0 + k - 1, pos[name]]})
    cost.set_title({"name": f"{workload}: cost per month vs {tier} capacity"})
    cost.set_x_axis({"name": f"{tier} capacity [GiB], log scale", "log_base": 2})
    cost.set_y_axis({"name": "cost per month"})
    ws.insert_chart(1 + b * 32, ncols + 1, ch, {"x_scale": 1.3, "y_scale": 1.1})
    ws.insert_chart(17 + b * 32, ncols + 1, cost, {"x_scale": 1.3, "y_scale": 1.1})


# --------------------------------------------------------------------------- Summary and memo
def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _money(x: float) -> str:
    """Whole money units; a value that rounds to zero is ``0``, never ``-0``."""
    v = round(float(x))
    return f"{v + 0:,.0f}" if v != 0 else "0"


def _gib(x: float) -> str:
    """A capacity in GiB: whole GiB from 10 up, else three significant figures (0.5, not 0)."""
    x = float(x)
    return f"{x:,.0f}" if abs(x) >= 10 else f"{x:.3g}"


def summary_lines(wb, ws, fm, plan, r: int) -> int:
    """Summary rows: per swept workload, the tier's effect read live from Tier_Value. Returns the next row."""
    rows = worth_of(plan)
    if not rows:
        return r
    cur = str(plan.settings.get("currency") or "USD")
    tp: TierPlan = plan.input.kv_tiers
    t = tp.tiers[swept_index(tp)]
    ws.write_string(r, 0, f"KV tiers: what the {t.name} tier is worth (Tier_Value, Tier_Worth)", fm("title"))
    heads = ("workload", "hit without / with", "GPUs saved", f"net saving per month [{cur}]",
             f"break-even [{cur}/GiB-month]", f"tiers bought per month [{cur}]")
    cost_col = th_columns(tp).index("tier_cost_per_month")
    gpn = float(plan.settings.get("gpus_per_node", 8.0))
    for j, h in enumerate(heads):
        ws.write_string(r + 1, j, h, fm("header"))
    for b, (w, _sw, val) in enumerate(rows):
        rr = r + 2 + b
        V = lambda c: sheet_ref(TIER_VALUE, b + 1, VALUE_COLS.index(c), row_abs=True)
        ws.write_string(rr, 0, w.workload)
        ws.write_formula(rr, 1, "=" + tiers.hits_text.xl(V("hit_without"), V("hit_with")), fm("calc"),
                         tiers.hits_text(val["hit_without"], val["hit_with"]))
        ws.write_formula(rr, 2, f"={V('gpus_saved')}", fm("calc", "#,##0"), float(np.nan_to_num(val["gpus_saved"])))
        ws.write_formula(rr, 3, f"={V('net_saving_per_month')}", fm("calc", "#,##0"), float(val["net_saving_per_month"]))
        be = val["break_even_cost_per_gib_month"]
        ws.write_formula(rr, 4, f"={V('break_even_cost_per_gib_month')}", fm("calc", "#,##0.00"),
                         "" if np.isnan(be) else float(be))
        # what the plan buys in its tiers (every priced tier, at the declared capacities): not in the fleet's GPU
        # cost above, which a finance reader would otherwise take for the whole (red team 6)
        hit_row = tp.workloads.index(w) + 1
        ws.write_formula(rr, 5, "=" + sheet_ref(TIER_HITS, hit_row, cost_col, row_abs=True), fm("calc", "#,##0"),
                         tier_cost_per_month(w, tp, plan.results, gpn))
    ws.write_string(r + 2 + len(rows), 0, "Tiers bought per month: every priced tier at its declared capacity "
                    "(Tier_Hits), not in the cost of the fleet above, which is GPUs only; a pool tier shared by "
                    "several workloads is one purchase, counted in each of their rows.", fm("note"))
    return r + 2 + len(rows) + 2


def memo_findings(plan) -> list[dict[str, str]]:
    """One finding per swept workload: what the tier does to its hit ratio, GPUs and cost."""
    rows = worth_of(plan)
    if not rows:
        return []
    cur = str(plan.settings.get("currency") or "USD")
    tp: TierPlan = plan.input.kv_tiers
    t = tp.tiers[swept_index(tp)]
    per = {"instance": "per instance", "node": "per node", "pool": "in the pool"}[t.scope]
    out = []
    for w, sw, val in rows:
        saved = float(np.nan_to_num(val["gpus_saved"]))
        be = val["break_even_cost_per_gib_month"]
        # the split of the sweep's row read as "with the tier" (its declared capacity, or the curve's ceiling when
        # it declares 0): w.hits is the plan's, which has no such tier then (red team 6: "a 294 GiB dram tier ...
        # raises the hit ratio from 16% to 93% (hbm 16%, dram 0%)")
        split = ", ".join(f"{x.name} {_pct(sw[f't{k + 1}_hit'][DECLARED])}" for k, x in enumerate(tp.tiers))
        declared = float(w.capacity_gib[swept_index(tp)])
        verb = "raises" if declared > 0 else "would raise"
        what = (f"a {_gib(val['capacity_gib'])} GiB {t.name} tier {per}" if declared > 0 else
                f"a {t.name} tier {per} of {_gib(val['capacity_gib'])} GiB (the trace's every distinct block; Tiers "
                f"declares 0 GiB, so the plan has none)")
        text = (f"{w.workload}: from its trace {w.trace}, {what} "
                f"{verb} the hit ratio from {_pct(val['hit_without'])} to {_pct(val['hit_with'])} "
                f"({split}) and {'saves' if declared > 0 else 'would save'} {saved:,.0f} GPU{'' if saved == 1 else 's'}, {cur} {_money(val['net_saving_per_month'])} per month net "
                f"of the tier's {cur} {_money(val['tier_cost_per_month'])}.")
        if not np.isnan(be):
            text += f" It pays for itself up to {cur} {be:,.2f} per GiB-month"
            text += f" (priced at {cur} {t.cost_per_gib_month:,.2f})." if t.cost_per_gib_month else "."
        text += (f" Cheapest capacity of the sweep: {_gib(val['cost_optimal_capacity_gib'])} GiB "
                 f"({cur} {_money(val['cost_optimal_total_per_month'])} per month, Tier_Worth).")
        out.append({"kind": "kv-tier", "title": f"What the {t.name} tier is worth", "text": text})
    return out
