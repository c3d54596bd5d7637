"""Numbers a finance reader can trust (issue 20, items 1-3): every default that changes a result
is visible, an absent demand is a warning, and implausible inputs are warned about at their cell.

* :func:`planner_filled`: the Workloads cells left blank whose value the planner chose (``batch``
  1, ``alpha`` 0, ``max_seq_len`` isl + osl, ``kv_gbps`` the GPU's link or the calibrated B_eff,
  ``t_decode_ms`` calibrated or estimated, the calibrated/estimated breakdown). They are written
  as the catalog's filled cells are (green italic, a comment saying the value and where it came
  from; the cell itself stays blank so the output's formulas keep their defaults live), counted on
  the Run sheet and listed in one note per column by ``planner validate`` and ``planner run``.
* :func:`demand_warnings`: no demand, or some workloads without one (0 GPUs, USD 0 is not a plan).
* :func:`plausibility_warnings`: a measured TTFT (or a typed prefill) faster than the roofline at
  100% of the GPU's peak (a time typed in seconds), a TPOT or decode faster than HBM bandwidth
  allows, a measured TTFT or TPOT far slower than either floor (typed in microseconds: both sides of a
  Measurements row in one pass, :func:`measurement_bounds`), a fitted KV bandwidth outside [1/10, 1.2] of the GPU's host link, a hit ratio of exactly 1
  typed as a plain number (1% meant?).
* :func:`h_star_message`: what is true at the row's own alpha (the hit ratio beyond which its TTFT
  rises, if any), instead of the first-order h* of the alpha = 1 model.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from planner.core.names import and_more
from planner.equations import kvhit as m
from planner.core.places import Place
from planner.core.errors import Problem

# plausibility bounds
B_LOW, B_HIGH = 0.1, 1.2   # fitted B_eff outside [B_LOW, B_HIGH] x the GPU's host link: warned


def _f(x) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return float("nan")
    return v


def _cell(table, col: str, i: int) -> Place:
    return Place.of_table(table, col, i)


# --------------------------------------------------------------------------- item 1: filled blanks
def planner_filled(plan) -> list[dict[str, str]]:
    """Per Workloads record, the blank cells whose value the planner chose: column -> comment text
    (the value used and why)."""
    wt, res = plan.input.workloads, plan.resolved
    calib = plan.calibration
    out: list[dict[str, str]] = [dict() for _ in wt.records]
    for i, rec in enumerate(wt.records):
        came = out[i]
        if rec.get("batch") is None:
            why = ("the workload's concurrency" if rec.get("concurrency") is not None else
                   f"the full-length requests whose KV fits in HBM beside the weights "
                   f"({_f(plan.results['max_batch_fit'].iat[i]):,.0f}), at most 256 (vLLM's default max_num_seqs)")
            came["batch"] = (f"blank: the planner uses batch {_f(res['batch'].iat[i]):,.0f}, {why}, for the peak KV "
                             f"and, when t_decode_ms is estimated, as the decode concurrency")
        if rec.get("alpha") is None and not (calib and (i, "alpha") in calib.filled):
            came["alpha"] = "blank: the planner uses alpha 0 (no overlap of KV load and compute, the conservative case)"
        if rec.get("max_seq_len") is None:
            came["max_seq_len"] = (f"blank: the planner uses isl + osl = {_f(res['max_seq_len'].iat[i]):,.0f} tokens "
                                   f"for the peak KV")
        if rec.get("kv_gbps") is None and not (calib and (i, "kv_gbps") in calib.filled):
            came["kv_gbps"] = (f"blank: the planner loads KV at the GPU's host link, "
                               f"{_f(res['kv_gbps'].iat[i]):,.4g} GB/s (GPUs pcie_gbps or pcie_gen)")
        if rec.get("t_decode_ms") is None and not (calib and (i, "t_decode_ms") in calib.filled):
            came["t_decode_ms"] = "blank: the planner uses 0 ms of decode (osl 0: no output tokens)"
        if rec.get("scheduler") is None and rec.get("concurrency") is not None:
            # the latency at a fixed concurrency depends on the engine's scheduler (issue 16): a blank is a choice
            came["scheduler"] = ("blank: the planner reads the TTFT at this concurrency with prefill_first (each cycle "
                                 "a burst, as SGLang schedules); type decode_first for a vLLM V1 server")
    if calib is not None:
        for (i, col), prov in calib.filled.items():
            if col in ("t_attn0_ms", "t_ffn0_ms", "t_fixed_ms", "t_decode_ms", "kv_gbps", "alpha", "t_decode_batch"):
                out[i][col] = f"blank: the planner uses {_f(res[col].iat[i]):,.4g} ({prov})"
            elif col == "tpm_measured":  # from a load test of the row's own shape (issue 16)
                out[i][col] = f"blank: the planner uses {_f(res[col].iat[i]):,.0f} tokens/min ({prov})"
            elif col == "hit_measured":
                out[i][col] = f"blank: the planner uses {_f(res[col].iat[i]):.4g} ({prov})"
    return out


PLANNER_FILL = "blank: the planner"   # how a planner-filled cell's comment starts (not a load-test file's)


def measurements_filled(plan) -> list[dict[str, str]] | None:
    """Per Measurements record, the blank cells whose value the planner chose: today ``scheduler`` on a
    row at concurrency > 1 run over several waves (``num_requests`` > ``concurrency``), read
    ``prefill_first`` (issue 16: the two schedulers read such a test differently; one wave is the
    same under both). None without a Measurements sheet."""
    from planner.core import schema
    t = plan.input.optional.get(schema.MEAS)
    if t is None:
        return None
    out: list[dict[str, str]] = []
    for rec in t.records:
        came: dict[str, str] = {}
        c, n = _f(rec.get("concurrency")), _f(rec.get("num_requests"))
        if rec.get("scheduler") is None and c > 1 and n > c:
            came["scheduler"] = (f"{PLANNER_FILL} reads this load test with prefill_first (each wave of {c:,.0f} "
                                 f"prefills, then decodes together, as SGLang schedules); type decode_first for a vLLM "
                                 f"V1 server, whose steady loop queues differently")
        out.append(came)
    return out


def _planner_cells(table) -> dict[str, list[str]]:
    per: dict[str, list[str]] = {}
    for i, came in enumerate(table.filled):
        for col, prov in came.items():
            if str(prov).startswith(PLANNER_FILL):
                per.setdefault(col, []).append(_cell(table, col, i))
    return per


def measurements_filled_note(p_in) -> str | None:
    """The note of the Measurements cells the planner filled (``planner validate`` and ``run`` print it)."""
    from planner.core import schema
    t = p_in.optional.get(schema.MEAS)
    per = _planner_cells(t) if t is not None else {}
    if not per:
        return None
    parts = [f"{col} {len(cells)} ({', '.join(cells[:3])}{and_more(len(cells), 3, brackets=False)})"
             for col, cells in per.items()]
    return (f"Measurements: {sum(len(c) for c in per.values())} blank cell(s) filled by the planner (each is green "
            f"italic in the output's Measurements sheet, with a comment giving the value used): " + "; ".join(parts))


def measurements_run_rows(p_in) -> dict[str, str]:
    """The Run sheet's line on the planner-filled Measurements cells."""
    from planner.core import schema
    t = p_in.optional.get(schema.MEAS)
    per = _planner_cells(t) if t is not None else {}
    if not per:
        return {}
    return {"Measurements cells filled by the planner": f"{sum(len(c) for c in per.values())} "
                                                        f"({', '.join(f'{c} {len(v)}' for c, v in per.items())}): "
                                                        f"green italic blank cells, each with a comment giving the "
                                                        f"value used"}


def filled_note(plan, filled: list[dict[str, str]]) -> str | None:
    """One note listing the planner-filled cells per column (``planner validate`` prints it)."""
    per: dict[str, list[str]] = {}
    for i, came in enumerate(filled):
        for col in came:
            per.setdefault(col, []).append(_cell(plan.input.workloads, col, i))
    if not per:
        return None
    parts = []
    for col, cells in per.items():
        more = and_more(len(cells), 3, brackets=False)
        parts.append(f"{col} {len(cells)} ({', '.join(cells[:3])}{more})")
    total = sum(len(c) for c in per.values())
    return (f"Workloads: {total} blank cell(s) filled by the planner (each is green italic in the output's Workloads "
            f"sheet, with a comment giving the value used): " + "; ".join(parts))


def filled_run_rows(filled: list[dict[str, str]]) -> dict[str, str]:
    """The Run sheet's line on the planner-filled Workloads cells."""
    per: dict[str, int] = {}
    for came in filled:
        for col in came:
            per[col] = per.get(col, 0) + 1
    if not per:
        return {}
    total = sum(per.values())
    return {"Workloads cells filled by the planner": f"{total} ({', '.join(f'{c} {n}' for c, n in per.items())}): "
                                                     f"green italic blank cells, each with a comment giving the "
                                                     f"value used and its source"}


# --------------------------------------------------------------------------- item 2: demand
def demand_warnings(plan) -> list[Problem]:
    """No demand_tpm at all (the fleet is 0 GPUs), or workloads left without one."""
    wt = plan.input.workloads
    blank = [i for i, r in enumerate(wt.records) if r.get("demand_tpm") is None]
    if not blank:
        return []
    if len(blank) == len(wt.records):
        return [Problem("Workloads", "no workload has a demand_tpm: the fleet is sized for nothing (0 GPUs, no cost); "
                                     "type each workload's demand in tokens per minute (or a header such as "
                                     "'demand_tpm (tokens/day)' to type it per day)")]
    names = [str(wt.records[i].get("workload")) for i in blank]
    more = and_more(len(names), 5, brackets=False)
    return [Problem("Workloads", f"{len(blank)} of {len(wt.records)} workloads have no demand_tpm and are left out of "
                                 f"the fleet (0 GPUs for them): {', '.join(names[:5])}{more}")]


# --------------------------------------------------------------------------- item 3: plausibility
def roofline_floor_ms(model_rec: dict, gpu_rec: dict, tp: float, isl, hit=0.0) -> np.ndarray | None:
    """The fastest a prefill of ``isl`` tokens at ``hit`` can be: its FLOPs (:mod:`planner.equations.roofline`,
    embedding and LM head left out) at 100% of the GPU's dense peak on ``tp`` GPUs, no load time [ms].
    None when the model or GPU lacks the sizes."""
    from planner.catalog.lookup import catalog_raw
    from planner.equations import roofline as estimate

    parts = estimate.roofline_parts(model_rec, gpu_rec, catalog_raw(model_rec))
    if parts is None:
        return None
    n, h = np.asarray(isl, dtype=float), np.asarray(hit, dtype=float)
    flops = (estimate.flops_linear(parts["linear_params_b"], n) * (1 - h)
             + estimate.flops_attention(parts["layers"], parts["heads"], parts["width"], n) * (1 - h**2))
    return estimate.flops_ms(flops, tp, parts["peak_tflops"], 1.0)


def decode_floor_ms(model_rec: dict, gpu_rec: dict, tp: float, batch: float) -> float | None:
    """The fastest one decode step can be: the weights each GPU reads (at most ``batch`` x active
    parameters distinct) at 100% of HBM bandwidth, KV left out [ms per output token]."""
    params, hbm = _f(model_rec.get("params_b")), _f(gpu_rec.get("hbm_tbps"))
    if np.isnan(params) or np.isnan(hbm):
        return None
    active = _f(model_rec.get("active_params_b"))
    active = params if np.isnan(active) else active
    wbytes = _f(model_rec.get("weight_bytes"))
    wbytes = 2.0 if np.isnan(wbytes) else wbytes
    read = min(params, batch * active) * 1e9 * wbytes / tp
    return read / (hbm * 1e12) * 1e3


# A prefill at concurrency 1 runs at 20-90% of peak plus a fixed cost (tests/data/published_prefill.csv:
# 0.5-2x the roofline at prefill_mfu); 1,000x the floor at 100% of peak is no prefill but a TTFT typed
# in microseconds (or a queue). A decode step at batch 1 reads the weights at 60-90% of HBM bandwidth
# (Settings decode_mbu 0.6); 300x the floor is far beyond any batch's slow-down.
SLOW_TTFT = 1000.0
SLOW_TPOT = 300.0


# a load test's prompt is longer than this many tokens: 8 for 8,000 is thousands (red team 7: a Measurements
# isl typed in k tokens made every point 2,000x the roofline, said as "typed in microseconds?")
ISL_THOUSANDS_BELOW = 100


def _isl_in_thousands(meas, i: int, isl: float) -> str:
    """The other reading of a TTFT far slower than the roofline of a very short prompt ('' if none)."""
    if isl >= ISL_THOUSANDS_BELOW:
        return ""
    where = _cell(meas, "isl", i)
    return (f" Or is {where}'s isl {isl:,.6g} in thousands of tokens ({isl * 1000:,.0f} tokens; head the column "
            f"'isl (k tokens)' to have it converted)?")


def measurement_bounds(meas, models: dict, gpus: dict) -> list[Problem]:
    """Located warnings for Measurements rows outside what a GPU can produce, both sides in one pass,
    each row's two floors computed once: its TTFT against the prefill's roofline at 100% of peak
    (:func:`roofline_floor_ms`) and its TPOT against one decode step's HBM floor (:func:`decode_floor_ms`).

    * faster than a floor: typed in seconds (TTFT), or in seconds / per request amortised (TPOT);
    * slower than :data:`SLOW_TTFT` x the prefill floor at concurrency 1 (no ``concurrency`` above 1,
      no ``request_rate``: a queue may wait any time) or :data:`SLOW_TPOT` x the step floor: typed in
      microseconds (or, for a TPOT, a whole request's decode time);
    * a plain 1 in ``hit`` (read as 100%)."""
    out: list[Problem] = []
    for i, r in enumerate(meas.records):
        mod, gpu = models.get(r.get("model")), gpus.get(r.get("gpu"))
        if mod is None or gpu is None:
            continue
        tp = float(r["tp"])
        if r.get("ttft_ms") is not None:
            ttft = float(r["ttft_ms"])
            floor = roofline_floor_ms(mod, gpu, tp, float(r["isl"]), float(r["hit"]))
            floor = None if floor is None else float(floor)
            closed_one = (r.get("concurrency") in (None, 1)) and r.get("request_rate") is None
            if floor is not None and ttft < floor:
                out.append(Problem(_cell(meas, "ttft_ms", i),
                                   f"ttft_ms {ttft:,.4g} is faster than the roofline at 100% of the "
                                   f"GPU's peak ({floor:,.4g} ms for {float(r['isl']):,.0f} tokens at hit "
                                   f"{float(r['hit']):.0%} on {tp:g}x {r['gpu']}): was it typed in seconds "
                                   f"({ttft * 1000:,.4g} ms)?"))
            elif floor is not None and floor > 0 and closed_one and ttft > SLOW_TTFT * floor:
                out.append(Problem(_cell(meas, "ttft_ms", i),
                                   f"ttft_ms {ttft:,.6g} is {ttft / floor:,.0f}x "
                                   f"the roofline at 100% of the GPU's peak ({floor:,.4g} ms for "
                                   f"{float(r['isl']):,.0f} tokens at hit {float(r['hit']):.0%} on {tp:g}x {r['gpu']}) "
                                   f"at concurrency 1: was it typed in microseconds ({ttft / 1000:,.4g} ms)?"
                                   + _isl_in_thousands(meas, i, float(r["isl"]))))
        if r.get("tpot_ms") is not None:
            tpot = float(r["tpot_ms"])
            # batch 1 on purpose: at any concurrency every token of a step may route to the same
            # experts, so one token's active parameters are the least a step can read (a floor)
            step = decode_floor_ms(mod, gpu, tp, 1.0)
            if step is not None and tpot < step:
                out.append(Problem(_cell(meas, "tpot_ms", i),
                                   f"tpot_ms {tpot:,.4g} is faster than HBM bandwidth allows: each "
                                   f"step reads at least {step:,.4g} ms of weights per GPU at 100% of "
                                   f"{gpu.get('hbm_tbps'):g} TB/s: typed in seconds, or per request amortised?"))
            elif step is not None and step > 0 and tpot > SLOW_TPOT * step:
                out.append(Problem(_cell(meas, "tpot_ms", i),
                                   f"tpot_ms {tpot:,.6g} is {tpot / step:,.0f}x the "
                                   f"fastest decode step ({step:,.4g} ms: the weights each GPU reads at 100% of "
                                   f"{gpu.get('hbm_tbps'):g} TB/s): was it typed in microseconds "
                                   f"({tpot / 1000:,.4g} ms), or is it a whole request's decode "
                                   f"time rather than the time per output token?"))
        if ("hit", i) in getattr(meas, "plain_ones", ()):
            out.append(_one_message(meas, "hit", i))
    return out


def plausibility_warnings(plan) -> list[Problem]:
    """Located warnings for inputs no GPU can produce, and fits no link can explain."""
    p_in = plan.input
    models = {r["model"]: r for r in p_in.models.records}
    gpus = {r["gpu"]: r for r in p_in.gpus.records}
    out: list[Problem] = []
    meas = p_in.optional.get("Measurements")
    if meas is not None:
        out += measurement_bounds(meas, models, gpus)
    wt = p_in.workloads
    for i, r in enumerate(wt.records):
        mod, gpu = models.get(r.get("model")), gpus.get(r.get("gpu"))
        if mod is None or gpu is None:
            continue
        tp = float(r["tp"])
        if r.get("t_attn0_ms") is not None and r.get("t_ffn0_ms") is not None:
            typed = float(r["t_attn0_ms"]) + float(r["t_ffn0_ms"])
            floor = roofline_floor_ms(mod, gpu, tp, float(r["isl"]))
            if floor is not None and typed < float(floor):
                out.append(Problem(_cell(wt, "t_ffn0_ms", i),
                                   f"t_attn0_ms + t_ffn0_ms = {typed:,.4g} ms is faster than the roofline at 100% of "
                                   f"the GPU's peak ({float(floor):,.4g} ms for {float(r['isl']):,.0f} tokens on "
                                   f"{tp:g}x {r['gpu']}): typed in seconds?"))
        if r.get("t_decode_ms") is not None and float(r["t_decode_ms"]) > 0 and float(r["osl"]) > 0:
            b = float(plan.resolved["t_decode_batch"].iat[i])  # the batch t_decode_ms holds at (typed or batch)
            step = decode_floor_ms(mod, gpu, tp, b)
            if step is not None and float(r["t_decode_ms"]) < float(r["osl"]) * step / b:
                out.append(Problem(_cell(wt, "t_decode_ms", i),
                                   f"t_decode_ms {float(r['t_decode_ms']):,.4g} is faster than HBM bandwidth allows: "
                                   f"{float(r['osl']):,.0f} steps reading at least {step:,.4g} ms of weights each, "
                                   f"shared by batch {b:g}, take {float(r['osl']) * step / b:,.4g} ms per request"))
        for col in ("hit_target", "hit_measured"):
            if (col, i) in getattr(wt, "plain_ones", ()):
                out.append(_one_message(wt, col, i))
    calib = plan.calibration
    if calib is not None:
        for f in calib.fits:
            if not (f.ok and f.b_fitted):
                continue
            link = _link_gbps(gpus.get(f.gpu, {}))
            if not (B_LOW * link <= f.b_gbps <= B_HIGH * link):
                rows = f.points["row"].tolist()
                where = Place.at_rows("Measurements", rows[0], rows[-1], f.label)
                if f.b_gbps < B_LOW * link:
                    why = ("below a tenth of it: either the hits were not loaded over that link (then the hit "
                           "column is wrong), or the stack overlaps loading with compute and alpha is wrong (leave "
                           "alpha blank on the points to have it fitted)")
                else:
                    why = ("above what the link carries: the hits were most likely served from GPU memory (a GPU "
                           "prefix cache), not loaded over the link")
                out.append(Problem(where, f"fitted B_eff {f.b_gbps:,.3g} GB/s is outside [{B_LOW:g}, {B_HIGH:g}] x "
                                          f"the GPU's host link ({link:,.3g} GB/s), {why}; the fit is used, check it"))
    return out


def _link_gbps(gpu_rec: dict) -> float:
    from planner.plan.calibrate import gpu_pcie_gbps

    return gpu_pcie_gbps(gpu_rec) if gpu_rec else float("nan")


def _one_message(table, col: str, i: int) -> Problem:
    return Problem(_cell(table, col, i), f"{col} 1 is read as 100% (every input token cached): if 1% was meant, "
                                         f"type 0.01 or 1%; type 100% in a percent cell to say a full hit is meant")


# --------------------------------------------------------------------------- item 3: h* at the row's alpha
def ttft_curve(resolved, results, i: int, grid: np.ndarray) -> np.ndarray:
    """TTFT of Resolved row ``i`` at each hit of ``grid`` and the row's alpha [ms] (docs/model.md §1)."""
    def v(c):
        return _f(resolved[c].iat[i])

    load = m.kv_load_ms(grid, v("isl"), _f(results["kv_bytes_per_token_gpu"].iat[i]), v("kv_gbps"))
    comp = m.compute_ms(grid, v("t_attn0_ms"), v("t_ffn0_ms"), v("t_other0_ms"), resolved["other_scaling"].iat[i])
    return m.ttft_ms(v("t_fixed_ms"), load, comp, v("alpha"))


def h_star_message(plan, i: int) -> tuple[bool, str]:
    """``(warning, text)`` for a row whose hit_target is beyond the first-order h*: a warning when
    the row's own TTFT (at its alpha) rises before the target, else information."""
    res, r = plan.resolved, plan.results
    h_t, h_s, a = _f(res["hit_target"].iat[i]), _f(r["h_star"].iat[i]), _f(res["alpha"].iat[i])
    grid = np.linspace(0.0, 1.0, 1001)
    curve = ttft_curve(res, r, i, grid)
    k = int(np.argmin(curve))
    h_min, t_min = float(grid[k]), float(curve[k])
    if 0 < k < len(grid) - 1:  # refined between the grid's neighbours (TTFT is piecewise smooth in h)
        from planner.equations.ttft_fit import golden_section_min

        f = lambda h: float(ttft_curve(res, r, i, np.array([h]))[0])  # noqa: E731
        h_ref = golden_section_min(f, float(grid[k - 1]), float(grid[k + 1]), iters=60)
        if f(h_ref) <= t_min:
            h_min, t_min = h_ref, f(h_ref)
    at_t = float(ttft_curve(res, r, i, np.array([h_t]))[0])
    if h_min < h_t and at_t > t_min * (1 + 1e-9):
        return True, (f"hit_target {h_t:.1%} is beyond {h_min:.1%}, the hit ratio at which this row's TTFT is lowest "
                      f"at its alpha {a:g} ({t_min:,.4g} ms): more hits make its prefill slower here ("
                      f"{at_t:,.4g} ms at the target; the first-order h* is {h_s:.1%})")
    return False, (f"information: hit_target {h_t:.1%} is beyond the first-order break-even h* {h_s:.1%} (where the "
                   f"full KV load equals the remaining compute, the fully overlapped model), but at this row's alpha "
                   f"{a:g} its TTFT still falls up to the target ({float(curve[0]):,.4g} ms at 0 hit, {at_t:,.4g} ms "
                   f"at the target)")


# --------------------------------------------------------------------------- wiring
def apply_to_plan(plan):
    """A copy of ``plan`` with the planner-filled Workloads cells marked (``Table.filled``, written
    green italic with a comment), their note, and the demand and plausibility warnings added to
    the plan's warnings (the plan given is not changed)."""
    filled = planner_filled(plan)
    optional = dict(plan.input.optional)
    meas = measurements_filled(plan)
    if meas and any(meas):                             # merged with the cells filled from load-test files
        from planner.core import schema
        t = optional[schema.MEAS]
        old = t.filled if len(t.filled) == len(t.records) else [{} for _ in t.records]
        optional[schema.MEAS] = dataclasses.replace(t, filled=[{**o, **n} for o, n in zip(old, meas)])
    p_in = dataclasses.replace(plan.input, workloads=dataclasses.replace(plan.input.workloads, filled=filled),
                               optional=optional)
    notes = [x for x in (filled_note(plan, filled), measurements_filled_note(p_in)) if x]
    return dataclasses.replace(plan, input=p_in,
                               # printed by planner run and validate ("planner: filled: ...")
                               filled_note=" ".join(notes) or None,
                               warnings=list(plan.warnings) + demand_warnings(plan) + plausibility_warnings(plan))
