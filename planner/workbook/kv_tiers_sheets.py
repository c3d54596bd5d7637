"""The output sheets of the traced workloads (issue 19): ``Tier_Hits`` (live) and ``Hit_Curve``
(a stored table), and the Resolved cells that take their hit ratio and KV bandwidth from them.

``Hit_Curve`` (header row 1: ``workload, capacity_blocks, capacity_gib, hit, filled_in_warmup``)
holds, per traced workload, the LRU hit ratio computed from its trace at 0 and then 8
capacities per doubling up to every distinct block (the ceiling). The hits are stored values
(the trace is not in the workbook); ``capacity_gib`` is live
(``capacity_blocks x block_size x KV bytes per token of the instance / 2^30``), and every
lookup into the table is a live formula, so an edit of a tier's capacity, a model's KV size or
the GPU's memory recalculates the tier hits, the TTFT, the GPUs and the costs.

``Tier_Hits``, one row per traced workload: the instance's KV bytes per token and free HBM,
then per tier (fastest first) its capacity, the hit of all tiers up to it (linear interpolation
in Hit_Curve), its own hit and its read bandwidth; then the total hit, the HBM hit, the load
per unit bandwidth ``sum h_t / B_t``, the effective bandwidth the Resolved sheet uses, and the
tiers' cost per month.
"""

from __future__ import annotations

import numpy as np

from planner.core import schema
from planner.equations import fleet as fl
from planner.equations import tables as tb
from planner.equations import tiers
from planner.inputs.kv_tiers import TierPlan, WorkloadTiers
from planner.workbook.layout import sheet_columns
from planner.core import refs
from planner.core.refs import cell, sheet_range, sheet_ref
from planner.workbook.styles import write_header

HIT_CURVE, TIER_HITS = "Hit_Curve", "Tier_Hits"
CURVE_COLS = ("workload", "capacity_blocks", "capacity_gib", "hit", "filled_in_warmup")
STORED_NOTE = ("Stored table: each traced workload's LRU hit ratio, computed by the planner from its trace "
               "(one pass over the stack distances; warm-up and block size as in Tier_Hits). The hits are "
               "values, not formulas: re-run the planner after changing the trace. capacity_gib and every "
               "lookup into this table (Tier_Hits) are live.")
LEAD = ("workload", "trace", "block_size", "warmup", "kv_bytes_per_token_instance", "hbm_free_gib",
        "curve_first_row", "curve_points", "base_kv_gbps")
TAIL = ("hit", "hit_hbm", "load_per_gbps", "kv_gbps_eff", "tier_cost_per_month")


def tier_cols(k: int) -> tuple[str, ...]:
    return (f"t{k + 1}_capacity_gib", f"t{k + 1}_hit_upto", f"t{k + 1}_hit", f"t{k + 1}_read_gbps")


def columns(tp: TierPlan) -> list[str]:
    cols = list(LEAD)
    for k in range(len(tp.tiers)):
        cols += tier_cols(k)
    return cols + list(TAIL)


def units(w: WorkloadTiers, results, scope: str, gpus_per_node: float) -> float:
    """Units of a tier bought: instances (instance), nodes (node), 1 (pool); 0 without demand."""
    inst = results["instances_needed"].iat[w.i]
    gpus = results["gpus_needed"].iat[w.i]
    inst = 0.0 if inst is None or np.isnan(inst) else float(inst)
    gpus = 0.0 if gpus is None or np.isnan(gpus) else float(gpus)
    return {"instance": inst, "node": float(np.ceil(gpus / gpus_per_node - 1e-12)) if gpus else 0.0,
            "pool": 1.0}[scope]


def tier_cost_per_month(w: WorkloadTiers, tp: TierPlan, results, gpus_per_node: float) -> float:
    """``sum_t capacity_gib_t x cost_per_gib_month_t x units_t`` [currency/month]."""
    return float(sum(c * t.cost_per_gib_month * units(w, results, t.scope, gpus_per_node)
                     for c, t in zip(w.capacity_gib, tp.tiers)))


def interp_xl(x: str, first: int, count: int) -> str:
    """Linear interpolation at ``x`` in Hit_Curve rows ``first..first+count-1`` (1-based): the twin
    of :func:`planner.equations.tiers.curve_hit`."""
    c = sheet_range(HIT_CURVE, first - 1, 2, first + count - 2, 2)
    h = sheet_range(HIT_CURVE, first - 1, 3, first + count - 2, 3)
    return tiers.curve_hit.xl(x, c, h, count)


def resolved_cells(plan, layout) -> dict[tuple[int, str], tuple[str, float, str]]:
    """Resolved ``hit_target`` and ``kv_gbps`` of the traced rows: ``(i, col) -> (formula, value, note)``."""
    tp: TierPlan | None = plan.input.kv_tiers
    if tp is None:
        return {}
    cols = {c: j for j, c in enumerate(columns(tp))}
    out = {}
    for k, w in enumerate(tp.workloads):
        if w.typed_hit:
            continue
        row = k + 1
        wl_hit = layout.other("Workloads", "hit_target", w.i + 1)
        wl_bw = layout.other("Workloads", "kv_gbps", w.i + 1)
        hit = sheet_ref(TIER_HITS, row, cols["hit"])
        bw = sheet_ref(TIER_HITS, row, cols["kv_gbps_eff"])
        pcie = layout.other("Resolved", "pcie_gbps", w.i + 1)
        src = (f"from the trace {w.trace} and the tiers (Tier_Hits row {row + 1}, Hit_Curve); a typed "
               f"Workloads value wins")
        out[(w.i, "hit_target")] = (fl.given_or.xl(wl_hit, hit),
                                    float(plan.resolved["hit_target"].iat[w.i]), "hit_target " + src)
        out[(w.i, "kv_gbps")] = (tiers.kv_gbps_of_trace.xl(wl_hit, wl_bw, pcie, bw),
                                 float(plan.resolved["kv_gbps"].iat[w.i]),
                                 "effective KV bandwidth of a hit, hit / sum_t(h_t / read_gbps_t) (HBM hits load "
                                 "nothing) " + src)
    return out


def input_fills(plan, layout, filled: list[dict[str, str]]) -> list[dict[str, str]]:
    """The Workloads input sheet's ``filled`` (row -> column -> provenance, as catalog fills) with
    the blank ``hit_target`` of every traced row added: the cell stays blank (a typed value would
    win over the trace) but is styled and commented like a catalog-filled cell, saying where the
    planned value comes from."""
    tp: TierPlan | None = plan.input.kv_tiers
    out = [dict(x) for x in filled]
    if tp is None:
        return out
    for k, w in enumerate(tp.workloads):
        if w.typed_hit:
            continue
        while len(out) <= w.i:
            out.append({})
        out[w.i]["hit_target"] = (
            f"hit_target left blank: the plan takes {float(plan.resolved['hit_target'].iat[w.i]):.4g} from the "
            f"trace {w.trace} and the Tiers ({layout.other('Resolved', 'hit_target', w.i + 1)}, from "
            f"{TIER_HITS} row {k + 2} and {HIT_CURVE}); type a value here to override it")
    return out


def write_sheets(wb, fm, layout, plan, settings_rows: dict[str, int]) -> None:
    """Tier_Hits and Hit_Curve, when a workload has a trace."""
    tp: TierPlan | None = plan.input.kv_tiers
    if tp is None:
        return
    gpn = float(plan.settings.get("gpus_per_node", 8.0))
    gpn_cell = sheet_ref(schema.SETTINGS, settings_rows["gpus_per_node"], 1, True, True)
    tiers_table = plan.input.optional.get(schema.TIERS)
    tpos = sheet_columns(schema.TIERS, list(tiers_table.extras) if tiers_table is not None else [])
    cols = columns(tp)
    cpos = {c: j for j, c in enumerate(cols)}
    ws = wb.add_worksheet(TIER_HITS)
    write_header(ws, fm, cols, [14] * len(cols))
    wc = wb.add_worksheet(HIT_CURVE)
    write_header(wc, fm, list(CURVE_COLS), [22, 14, 14, 10, 14])
    wc.write_string(0, len(CURVE_COLS) + 1, STORED_NOTE, fm("note"))
    wc.write_comment(0, 3, STORED_NOTE, {"x_scale": 2.5, "y_scale": 2})
    curve_row = 1  # 0-based sheet row of the next Hit_Curve row
    for k, w in enumerate(tp.workloads):
        r = k + 1
        R = lambda name: refs.cell(r, cpos[name], col_abs=True)
        res = lambda name: layout.other("Results", name, w.i + 1)
        rsv = lambda name: layout.other("Resolved", name, w.i + 1)
        first, count = curve_row + 1, len(w.grid)
        ws.write_string(r, cpos["workload"], w.workload)
        ws.write_string(r, cpos["trace"], w.trace)
        ws.write_number(r, cpos["block_size"], w.block_size, fm("calc", "#,##0"))
        ws.write_number(r, cpos["warmup"], tp.warmup, fm("calc", "0.0%"))
        ws.write_formula(r, cpos["kv_bytes_per_token_instance"],
                         "=" + tb.times.xl(res("kv_bytes_per_token_gpu"), rsv("tp")),
                         fm("calc", "#,##0"), w.kv_bytes_instance)
        ws.write_formula(r, cpos["hbm_free_gib"], "=" + tiers.hbm_free_gib.xl(res("hbm_headroom_gib"), rsv("tp")),
                         fm("calc", "#,##0.00"), w.hbm_free_gib)
        ws.write_number(r, cpos["curve_first_row"], first, fm("calc", "#,##0"))
        ws.write_number(r, cpos["curve_points"], count, fm("calc", "#,##0"))
        wl_bw = layout.other("Workloads", "kv_gbps", w.i + 1)
        ws.write_formula(r, cpos["base_kv_gbps"], "=" + fl.given_or.xl(wl_bw, rsv("pcie_gbps")),
                         fm("calc", "#,##0.00"), w.base_kv_gbps)
        upto = np.cumsum(w.hits)
        caps_refs, loaded_hits, loaded_gbps = [], [], []
        for t_i, t in enumerate(tp.tiers):
            cap_c, upto_c, hit_c, bw_c = tier_cols(t_i)
            trow = (t.row + 1) if t.row is not None else None
            tcell = lambda name: sheet_ref(schema.TIERS, trow, tpos[name])
            if t.kind == "hbm":
                cap_f = R("hbm_free_gib") if trow is None else \
                    fl.given_or.xl(tcell("capacity_gib"), R("hbm_free_gib"))
                bw_f = None
            else:
                cap_f = tcell("capacity_gib")
                bw_f = fl.given_or.xl(tcell("read_gbps"), R("base_kv_gbps"))
            ws.write_formula(r, cpos[cap_c], "=" + cap_f, fm("calc", "#,##0.00"), float(w.capacity_gib[t_i]))
            caps_refs.append(tiers.whole_blocks_gib.xl(R(cap_c), R("block_size"), R("kv_bytes_per_token_instance")))
            ws.write_formula(r, cpos[upto_c], "=" + interp_xl(tiers.hits_upto_capacity.xl(*caps_refs), first, count),
                             fm("calc", "0.00%"), float(upto[t_i]))
            prev = R(tier_cols(t_i - 1)[1]) if t_i else 0
            ws.write_formula(r, cpos[hit_c], "=" + tiers.served_by.xl(R(upto_c), prev), fm("calc", "0.00%"),
                             float(w.hits[t_i]))
            if bw_f is None:
                ws.write_string(r, cpos[bw_c], "no load")
            else:
                ws.write_formula(r, cpos[bw_c], "=" + bw_f, fm("calc", "#,##0.00"), float(w.bandwidth_gbps[t_i]))
                loaded_hits.append(R(hit_c))
                loaded_gbps.append(R(bw_c))
        hbm = [R(tier_cols(t_i)[2]) for t_i, t in enumerate(tp.tiers) if t.kind == "hbm"]
        ws.write_formula(r, cpos["hit"], "=" + tiers.total_hit.xl(*(R(tier_cols(t_i)[2]) for t_i in range(len(tp.tiers)))),
                         fm("calc", "0.00%"), w.hit)
        ws.write_formula(r, cpos["hit_hbm"], "=" + tiers.total_hit.xl(*hbm), fm("calc", "0.00%"), w.hit_hbm)
        ws.write_formula(r, cpos["load_per_gbps"], "=" + tiers.load_per_gbps.xl(loaded_hits, loaded_gbps),
                         fm("calc", "0.000000"), w.load_per_gbps)
        ws.write_formula(r, cpos["kv_gbps_eff"],
                         "=" + tiers.effective_kv_gbps.xl(R("hit"), R("load_per_gbps"), R("base_kv_gbps")),
                         fm("calc", "#,##0.00"), w.kv_gbps_eff)
        terms = []
        for t_i, t in enumerate(tp.tiers):
            if t.row is None:
                continue  # the implicit HBM tier is not bought
            price = tb.typed_or.xl(sheet_ref(schema.TIERS, t.row + 1, tpos['cost_per_gib_month']), 0)
            unit = tiers.units_of.xl(t.scope, res("instances_needed"), res("gpus_needed"), gpn_cell)
            terms.append(tiers.tier_cost.xl(R(tier_cols(t_i)[0]), price, unit))
        ws.write_formula(r, cpos["tier_cost_per_month"], "=" + tiers.tiers_cost.xl(*terms),
                         fm("calc", "#,##0.00"), tier_cost_per_month(w, tp, plan.results, gpn))
        # the curve rows of this workload
        filled = w.grid <= w.reuse.warmup_blocks
        tcell_s = sheet_ref(TIER_HITS, r, cpos["kv_bytes_per_token_instance"], row_abs=True)
        tcell_b = sheet_ref(TIER_HITS, r, cpos["block_size"], row_abs=True)
        for g, (blocks, gib, hit, f) in enumerate(zip(w.grid, w.grid_gib, w.grid_hit, filled)):
            row = curve_row + g
            wc.write_string(row, 0, w.workload)
            wc.write_number(row, 1, float(blocks), fm("calc", "#,##0"))
            wc.write_formula(row, 2, "=" + tiers.curve_gib.xl(cell(row, 1), tcell_b, tcell_s), fm("calc", "#,##0.000"),
                             float(gib))
            wc.write_number(row, 3, float(hit), fm("calc", "0.0000%"))
            wc.write_number(row, 4, int(f), fm("calc", "0"))
        curve_row += count
    descr = [f"t{k + 1} = {t.name} ({t.kind}, scope {t.scope})" for k, t in enumerate(tp.tiers)]
    ws.write_string(len(tp.workloads) + 2, 0, "Tiers, fastest first: " + "; ".join(descr) + ". Their order (kind) "
                    "and what one capacity is bought for (scope) are as when the planner ran: re-run it after "
                    "changing a kind or a scope in Tiers (capacity_gib, read_gbps and cost_per_gib_month are live)",
                    fm("note"))
    ws.write_string(len(tp.workloads) + 3, 0, "t<k>_hit_upto: hit ratio of tiers 1..k together, interpolated in "
                    "Hit_Curve at their summed capacity; t<k>_hit: served by tier k. KV load = hit N S / kv_gbps_eff "
                    "= N S sum_k t<k>_hit / t<k>_read_gbps (HBM: no load).", fm("note"))
    ws.freeze_panes(1, 1)
    wc.freeze_panes(1, 1)


__all__ = ["write_sheets", "resolved_cells", "tier_cost_per_month", "STORED_NOTE"]
