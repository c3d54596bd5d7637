"""The plan by period as finance states it: demand per period typed (Demand sheet, in tokens per
minute, hour or day) or grown by a rate from today's demand (Settings ``periods`` and
``demand_growth``), the hit ratio by period (Demand ``hit_target``), and the savings of the hit
target per period against the planning baseline (Workloads ``hit_baseline``).

One row of ``Demand_Calc`` per (workload, period):

- every Demand row, in its order (a blank ``demand_tpm`` takes the grown demand when the period
  is one of Settings ``periods``, else the row needs no GPUs);
- then, for each period of Settings ``periods`` (index ``k`` = 0, 1, ...) and each workload with a
  ``demand_tpm`` (Workloads order) that has no Demand row in that period, a grown row:
  ``demand = demand_tpm · (1 + demand_growth)^k`` (the first period carries today's demand).

Each row is sized as Results sizes its workload, at the row's hit ratio: chip time
``C(h_p) = TTFT(h_p, α) + t_decode_ms``, delivered TPM re-hit corrected from ``tpm_measured``
(``TPM(h_m) · C(h_m) / C(h_p)``) or the model's ``(isl + osl) · 60000 / C(h_p)``, then
``instances_throughput = ceil(demand / (TPM · target_utilization))``; ``instances`` is the SLO-bound count
of :mod:`planner.equations.sizing` (the chain Results uses: throughput, the TTFT and TPOT targets, the
HBM fit at load, a fixed concurrency), at the row's demand and its request-alone ``ttft_ms``, so a
period sized at today's demand and hit ratio gets Results' count. The baseline columns size the same
demand at ``hit_baseline`` (Results ``tpm_delivered_baseline``); ``saved = baseline - target``.

Each formula is a numpy function with its Excel twin below (:mod:`planner.equations.kvhit` style); the
sheets are written by :mod:`planner.workbook.periods_sheet`.
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from planner.equations import kvhit as m
from planner.equations import sizing as sz
from planner.core import schema
from planner.finance.aggregations import Agg
from planner.finance.fleet import _f
from planner.equations.fleet import cost_per_hour
from planner.equations.kvhit import excel_twin
from planner.inputs.period_labels import _QUARTER, parse_periods  # noqa: F401 (the Settings periods, read at the boundary)

# minutes per unit of the Demand sheet's demand_unit
MINUTES_PER = {"tokens/min": 1.0, "tokens/hour": 60.0, "tokens/day": 1440.0}

CALC_COLS = ("workload", "period", "period_index", "demand_input", "demand_unit", "demand_tpm", "res_row",
             "gpu", "tp", "hit_target", "load_ms", "compute_ms", "ttft_ms", "chip_ms", "tpm_delivered_model",
             "tpm_delivered_target", "target_utilization", "hourly_cost", "instances", "gpus_needed",
             "cost_per_hour", "tpm_delivered_baseline", "instances_baseline", "gpus_baseline",
             "cost_per_hour_baseline") + (
    # the workload's shape and targets the sizing chain reads, copied from Resolved/Results (short
    # references keep the long closed-form formulas within the length a spreadsheet accepts)
    "isl", "osl", "concurrency", "t_decode_ms", "decode_step_ms", "step_weights_ms", "step_kv_ms", "ttft_slo_ms",
    "tpot_slo_ms", "slo_q", "pass_fixed_ms", "max_num_batched_tokens", "max_batch_fit") + tuple(  # the SLO-bound sizing steps (planner.equations.sizing)
    c for c in sz.NAMES if c not in ("instances_needed", "gpus_needed")) + tuple(
    # the same chain at the baseline hit ratio (planner.equations.sizing.BASELINE_STEPS), for instances_baseline
    c for c in sz.BASELINE_NAMES if c != "instances_baseline")
# Demand_Calc's names for two of the sizing steps (the columns the sheet had before issue 16)
SIZING_AS = {"instances_needed": "instances", "gpus_needed": "gpus_needed"}
# per-workload inputs of the sizing chain: from Results (the rest from Resolved)
FROM_RESULTS = ("decode_step_ms", "step_weights_ms", "step_kv_ms", "slo_q", "max_batch_fit", "ttft_ms_baseline")
COPIED = CALC_COLS[CALC_COLS.index("isl"):CALC_COLS.index("max_batch_fit") + 1]  # copied per row

def span_label(periods: list[str]) -> str:
    """``2027-Q1–Q4`` (quarters of one year), ``2027-Q3–2028-Q2``, ``first–last``, or the one period.

    >>> span_label(["2027-Q1", "2027-Q2", "2027-Q3", "2027-Q4"])
    '2027-Q1–Q4'
    >>> span_label(["2027-Q3", "2028-Q2"])
    '2027-Q3–2028-Q2'
    """
    if not periods:
        return ""
    a, b = periods[0], periods[-1]
    if a == b:
        return a
    qa, qb = _QUARTER.match(a), _QUARTER.match(b)
    if qa and qb and qa.group(1) == qb.group(1):
        return f"{a}–Q{qb.group(2)}"
    return f"{a}–{b}"


# --------------------------------------------------------------------------- formulas
def demand_per_minute(value, unit):
    r"""A demand typed in tokens per minute, hour or day, in tokens per minute.

    .. math:: D_{min} = D / u, \quad u = 1, 60, 1440 \text{ for min, hour, day}

    Parameters
    ----------
    value : numeric, NaN when blank [tokens/unit]
    unit : str or array of str, ``tokens/min``, ``tokens/hour`` or ``tokens/day``

    Returns
    -------
    numeric [tokens/min]
    """
    u = np.vectorize(lambda x: MINUTES_PER.get(str(x), 1.0), otypes=[float])(np.asarray(unit, dtype=object))
    return np.asarray(value, dtype=float) / u


@excel_twin(demand_per_minute)
def _(value, unit):
    return (f'IF(ISNUMBER({value}),{value}/IF({unit}="tokens/day",1440,IF({unit}="tokens/hour",60,1)),"")')


def grown_demand(typed, base, growth, k):
    r"""The period's demand: typed when given, else today's demand grown ``k`` periods.

    .. math:: D_k = D_0 \cdot (1 + g)^k

    Parameters
    ----------
    typed : numeric, the Demand row's demand, NaN when blank [tokens/min]
    base : numeric, Workloads demand_tpm, NaN when blank [tokens/min]
    growth : numeric, demand_growth per period [fraction/period]
    k : numeric, index of the period in Settings periods, NaN when not one of them [count]

    Returns
    -------
    numeric, NaN when neither is given [tokens/min]
    """
    typed, k = np.asarray(typed, dtype=float), np.asarray(k, dtype=float)
    grown = np.asarray(base, dtype=float) * (1.0 + np.asarray(growth, dtype=float)) ** k
    grown = np.where(np.isnan(k), np.nan, grown)  # 1 ** NaN is 1 in numpy: not one of the periods
    return np.where(np.isnan(typed), grown, typed)


@excel_twin(grown_demand)
def _(typed, base, growth, k):
    return (f'IF(ISNUMBER({typed}),{typed},IF(AND(ISNUMBER({base}),ISNUMBER({k})),'
            f'{base}*(1+{growth})^{k},""))')


def saved(baseline, target):
    r"""What the target saves against the baseline (blank when either is blank).

    .. math:: saved = baseline - target

    Parameters
    ----------
    baseline, target : numeric, NaN when blank [count or currency/month]

    Returns
    -------
    numeric [same unit]
    """
    return np.asarray(baseline, dtype=float) - np.asarray(target, dtype=float)


@excel_twin(saved)
def _(baseline, target):
    return f'IF(AND(ISNUMBER({baseline}),ISNUMBER({target})),{baseline}-{target},"")'


# The Fleet_By_Period sheet, declared once (planner.finance.aggregations): per period and GPU
# type, sums of the Demand_Calc rows; each column's Python value (by_period) and formula
# (planner.workbook.periods_sheet). The period is the row's key, written as text.
BY_PERIOD: tuple[Agg, ...] = (
    Agg("period", total=None),
    Agg("gpu", total=None),
    Agg("instances", sum_of=("Demand_Calc", "instances")),
    Agg("gpus_needed", sum_of=("Demand_Calc", "gpus_needed")),
    Agg("cost_per_month", sum_of=("Demand_Calc", "cost_per_hour"), priced=True, scale="@hours_per_month",
        total="priced"),
    Agg("gpus_baseline", sum_of=("Demand_Calc", "gpus_baseline")),
    Agg("cost_per_month_baseline", sum_of=("Demand_Calc", "cost_per_hour_baseline"), priced=True,
        scale="@hours_per_month", total="priced"),
    Agg("cost_saved_per_month", twin=saved, args=("cost_per_month_baseline", "cost_per_month"), total="priced"),
    # what the latency targets add over throughput alone (issue 16; planner.equations.sizing)
    Agg("instances_throughput", sum_of=("Demand_Calc", "instances_throughput")),
    Agg("gpus_throughput", sum_of=("Demand_Calc", "gpus_throughput")),
    Agg("gpus_for_latency", sum_of=("Demand_Calc", "gpus_for_latency")),
    Agg("cost_per_month_for_latency", sum_of=("Demand_Calc", "cost_per_hour_for_latency"), priced=True,
        scale="@hours_per_month", total="priced"),
)
PERIOD_COLS = tuple(a.name for a in BY_PERIOD)


# --------------------------------------------------------------------------- the rows
def settings_periods(plan) -> list[str]:
    return parse_periods(plan.settings.get("periods"))[0]


def demand_records(plan) -> list[dict]:
    t = plan.input.optional.get(schema.DEM)
    return list(t.records) if t is not None else []


def plan_periods(plan) -> list[str]:
    """Settings periods first, then the Demand sheet's other periods in first-seen order."""
    out = list(settings_periods(plan))
    for rec in demand_records(plan):
        p = str(rec.get("period"))
        if p not in out:
            out.append(p)
    return out


def _layout(plan) -> list[dict]:
    """The (workload, period) rows: Demand rows (``dem`` = record index), then grown rows."""
    res = plan.resolved
    sp = settings_periods(plan)
    k_of = {p: k for k, p in enumerate(sp)}
    rows, have = [], set()
    for i, rec in enumerate(demand_records(plan)):
        p = str(rec.get("period"))
        rows.append({"workload": str(rec["workload"]), "period": p, "k": k_of.get(p), "dem": i})
        have.add((str(rec["workload"]).strip().lower(), p))
    if sp:
        demand = _f(res["demand_tpm"])
        for k, p in enumerate(sp):
            for w, d in zip(res["workload"].tolist(), demand):
                if not np.isnan(d) and (str(w).strip().lower(), p) not in have:
                    rows.append({"workload": str(w), "period": p, "k": k, "dem": None})
    return rows


def period_calc(plan) -> pd.DataFrame:
    """``Demand_Calc``: one row per (workload, period), columns :data:`CALC_COLS` (``res_row``
    1-based in Resolved) plus ``dem`` (the Demand record index, None for a grown row)."""
    lay = _layout(plan)
    res, r = plan.resolved, plan.results
    recs = demand_records(plan)
    idx_of = {str(w).strip().lower(): i for i, w in enumerate(res["workload"])}
    idx = np.array([idx_of[x["workload"].strip().lower()] for x in lay], dtype=int)
    n = len(lay)
    rec_of = lambda x: recs[x["dem"]] if x["dem"] is not None else {}  # noqa: E731
    typed = np.array([np.nan if rec_of(x).get("demand_tpm") is None else float(rec_of(x)["demand_tpm"]) for x in lay])
    unit = np.array([rec_of(x).get("demand_unit") or "tokens/min" for x in lay], dtype=object)
    k = np.array([np.nan if x["k"] is None else float(x["k"]) for x in lay])
    col = lambda frame, c: _f(frame[c])[idx] if n else np.zeros(0)  # noqa: E731
    typed_min = demand_per_minute(typed, unit) if n else np.zeros(0)
    demand = grown_demand(typed_min, col(res, "demand_tpm"), col(res, "demand_growth"), k)
    hit_row = np.array([np.nan if rec_of(x).get("hit_target") is None else float(rec_of(x)["hit_target"])
                        for x in lay])
    hit = np.where(np.isnan(hit_row), col(res, "hit_target"), hit_row)
    load = m.kv_load_ms(hit, col(res, "isl"), col(r, "kv_bytes_per_token_gpu"), col(res, "kv_gbps"))
    scaling = res["other_scaling"].to_numpy(dtype=object)[idx] if n else np.zeros(0, dtype=object)
    comp = m.compute_ms(hit, col(res, "t_attn0_ms"), col(res, "t_ffn0_ms"), col(res, "t_other0_ms"), scaling)
    ttft = m.ttft_ms(col(res, "t_fixed_ms"), load, comp, col(res, "alpha"))
    chip = m.chip_ms(ttft, col(res, "t_decode_ms"))
    tpm_model = m.tpm_delivered(col(res, "isl"), col(res, "osl"), chip)
    tpm = m.tpm_delivered_target(col(res, "tpm_measured"), col(r, "chip_ms_measured"), chip, tpm_model)
    util, price, tp = col(res, "target_utilization"), col(res, "hourly_cost"), col(res, "tp")
    row_in = {"demand_tpm": demand, "tpm_delivered_target": tpm, "target_utilization": util, "ttft_ms": ttft,
              "hit_target": hit}
    inputs = {name: row_in[name] if name in row_in else col(r if name in FROM_RESULTS else res, name)
              for name in sz.INPUTS}
    steps = sz.size(inputs) if n else {name: np.zeros(0) for name in sz.NAMES}
    inst, gpus = steps["instances_needed"], steps["gpus_needed"]
    tpm_b = col(r, "tpm_delivered_baseline")
    # the baseline through the same chain, at this row's demand and the workload's hit_baseline
    base_in = {**inputs, "tpm_delivered_baseline": tpm_b, "ttft_ms_baseline": col(r, "ttft_ms_baseline"),
               "hit_baseline": col(res, "hit_baseline")}
    base = sz.size_baseline(base_in, steps) if n else {name: np.zeros(0) for name in sz.BASELINE_NAMES}
    inst_b = base["instances_baseline"]
    gpus_b = m.gpus_needed(inst_b, tp)
    frame = pd.DataFrame({
        "workload": res["workload"].to_numpy()[idx] if n else [], "period": [x["period"] for x in lay],
        "period_index": k, "demand_input": typed, "demand_unit": unit, "demand_tpm": demand,
        "res_row": idx + 1, "gpu": res["gpu"].to_numpy()[idx] if n else [], "tp": tp, "hit_target": hit,
        "load_ms": load, "compute_ms": comp, "ttft_ms": ttft, "chip_ms": chip, "tpm_delivered_model": tpm_model,
        "tpm_delivered_target": tpm, "target_utilization": util, "hourly_cost": price, "instances": inst,
        "gpus_needed": gpus, "cost_per_hour": cost_per_hour(gpus, price), "tpm_delivered_baseline": tpm_b,
        "instances_baseline": inst_b, "gpus_baseline": gpus_b,
        "cost_per_hour_baseline": cost_per_hour(gpus_b, price),
        **{c: inputs[c] for c in COPIED}, **{c: steps[c] for c in sz.NAMES if c not in SIZING_AS},
        **{c: base[c] for c in sz.BASELINE_NAMES if c != "instances_baseline"}},
        columns=list(CALC_COLS))
    frame["dem"] = [x["dem"] for x in lay]
    return frame


def by_period(plan, calc: pd.DataFrame | None = None) -> pd.DataFrame:
    """``Fleet_By_Period``: per period (:func:`plan_periods` order) and GPU type (GPUs order),
    sums of the Demand_Calc rows; costs NaN for a type without a price."""
    calc = period_calc(plan) if calc is None else calc
    rows = []
    per, gpu = calc["period"].to_numpy(), calc["gpu"].to_numpy()
    frames = {"Demand_Calc": calc}
    for p in plan_periods(plan):
        for g, price in zip(plan.gpus["gpu"].tolist(), _f(plan.gpus["hourly_cost"])):
            on = (per == p) & (gpu == g)
            row = {"period": p, "gpu": g}
            for a in BY_PERIOD[2:]:
                row[a.name] = a.value(frames, plan.settings, on, price, row)
            rows.append(row)
    return pd.DataFrame(rows, columns=list(PERIOD_COLS))


def period_totals(plan) -> pd.DataFrame:
    """Per period: ``gpus_needed, cost_per_month, gpus_baseline, cost_per_month_baseline,
    cost_saved_per_month`` over the GPU types (costs over the priced types; NaN when none)."""
    bp = by_period(plan)
    out = []
    for p in plan_periods(plan):
        on = bp[bp["period"] == p]
        row = {"period": p}
        for c in ("gpus_needed", "gpus_baseline"):
            row[c] = float(on[c].sum())
        for c in ("cost_per_month", "cost_per_month_baseline", "cost_saved_per_month"):
            x = on[c].to_numpy(dtype=float)
            row[c] = float(np.nansum(x)) if np.any(~np.isnan(x)) else float("nan")
        out.append(row)
    return pd.DataFrame(out, columns=["period", "gpus_needed", "cost_per_month", "gpus_baseline",
                                      "cost_per_month_baseline", "cost_saved_per_month"])
