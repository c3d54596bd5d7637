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

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from planner.equations import kvhit as m
from planner.equations import sizing as sz
from planner.equations import tables as tb
from planner.core import schema
from planner.finance.aggregations import Agg, group_table
from planner.finance.fleet import to_floats
from planner.equations.fleet import cost_per_hour
from planner.equations.demand import DEFAULT_UNIT, MINUTES_PER, demand_per_minute, grown_demand, saved  # noqa: F401 (importable from here)
from planner.inputs.period_labels import QUARTER, parse_periods  # noqa: F401 (the Settings periods, read at the boundary)


CALC_COLS = ("workload", "period", "period_index", "demand_input", "demand_unit", "demand_tpm", "res_row",
             "gpu", "tp", "hit_target", "load_ms", "compute_ms", "ttft_ms", "chip_ms", "tpm_delivered_model",
             "tpm_delivered_target", "target_utilization", "hourly_cost", "instances", "gpus_needed",
             "cost_per_hour", "tpm_delivered_baseline", "instances_baseline", "gpus_baseline",
             "cost_per_hour_baseline") + (
    # the workload's shape and targets the sizing chain reads, copied from Resolved/Results (short
    # references keep the long closed-form formulas within the length a spreadsheet accepts)
    "isl", "osl", "concurrency", "t_decode_ms", "decode_step_ms", "step_weights_ms", "step_kv_ms", "ttft_slo_ms",
    "tpot_slo_ms", "slo_q", "pass_fixed_ms", "max_num_batched_tokens", "scheduler", "max_batch_fit") + tuple(  # the SLO-bound sizing steps (planner.equations.sizing)
    c for c in sz.NAMES if c not in ("instances_needed", "gpus_needed")) + tuple(
    # the same chain at the baseline hit ratio (planner.equations.sizing.BASELINE_STEPS), for instances_baseline
    c for c in sz.BASELINE_NAMES if c != "instances_baseline")
# Demand_Calc's names for two of the sizing steps (the columns the sheet had before issue 16)
SIZING_AS = {"instances_needed": "instances", "gpus_needed": "gpus_needed"}
# per-workload inputs of the sizing chain: from Results (the rest from Resolved)
FROM_RESULTS = ("decode_step_ms", "step_weights_ms", "step_kv_ms", "slo_q", "max_batch_fit", "ttft_ms_baseline")
COPIED = CALC_COLS[CALC_COLS.index("isl"):CALC_COLS.index("max_batch_fit") + 1]  # copied per row

# --------------------------------------------------------------------------- Demand_Calc, declared once
@dataclass(frozen=True)
class Col:
    """One Demand_Calc column declared once: ``twin`` (an equation with an Excel twin) applied to
    ``args``, each the name of one of the row's own columns, ``R.name`` / ``Q.name`` the value of
    Resolved's / Results' column ``name`` at the row's workload (Excel: ``INDEX`` at the row's
    ``res_row``), or a nested ``(twin, *args)``. The Python value (:func:`period_calc`) is the
    numpy function over the columns, the formula (:mod:`planner.workbook.periods_sheet`) its
    twin over the cells."""

    name: str
    twin: Callable
    args: tuple


_TEXT_COPIED = ("scheduler",)  # the copied inputs that are text
SIZING = "sizing"  # the place of the SLO-bound sizing chain (planner.equations.sizing) among the columns
# the place of the same chain at the baseline hit ratio (planner.equations.sizing.BASELINE_STEPS): it
# reads the target's steps (the demand rates) and hit_baseline, ttft_ms_baseline, tpm_delivered_baseline
BASELINE = "baseline sizing"

# in the order they are computed (each reads only columns before it); the layout columns
# (workload, period, period_index, demand_input, demand_unit, res_row, hit_target) come from the rows
ROW_EQUATIONS: tuple = (
    Col("demand_tpm", grown_demand, ((demand_per_minute, "demand_input", "demand_unit"), "R.demand_tpm",
                                     "R.demand_growth", "period_index")),
    Col("gpu", tb.same, ("R.gpu",)),
    Col("tp", tb.same, ("R.tp",)),
    Col("load_ms", m.kv_load_ms, ("hit_target", "R.isl", "Q.kv_bytes_per_token_gpu", "R.kv_gbps")),
    Col("compute_ms", m.compute_ms, ("hit_target", "R.t_attn0_ms", "R.t_ffn0_ms", "R.t_other0_ms", "R.other_scaling")),
    Col("ttft_ms", m.ttft_ms, ("R.t_fixed_ms", "load_ms", "compute_ms", "R.alpha")),
    Col("chip_ms", m.chip_ms, ("ttft_ms", "R.t_decode_ms")),
    Col("tpm_delivered_model", m.tpm_delivered, ("R.isl", "R.osl", "chip_ms")),
    Col("tpm_delivered_target", m.tpm_delivered_target, ("R.tpm_measured", "Q.chip_ms_measured", "chip_ms",
                                                         "tpm_delivered_model")),
    Col("target_utilization", tb.same, ("R.target_utilization",)),
    Col("hourly_cost", tb.same, ("R.hourly_cost",)),
    Col("tpm_delivered_baseline", tb.same, ("Q.tpm_delivered_baseline",)),
    # the workload's shape and targets, copied (a blank stays blank)
    *(Col(c, tb.number_or_blank, (("Q." if c in FROM_RESULTS else "R.") + c,)) for c in COPIED),
    SIZING,
    Col("cost_per_hour", cost_per_hour, ("gpus_needed", "hourly_cost")),
    BASELINE,  # instances_baseline and its steps: the same chain at the workload's hit_baseline
    Col("gpus_baseline", m.gpus_needed, ("instances_baseline", "tp")),
    Col("cost_per_hour_baseline", cost_per_hour, ("gpus_baseline", "hourly_cost")),
)
_TEXT = ("gpu", "workload", "other_scaling")  # Resolved columns read as objects, not numbers
# A plan with a decode_first workload copies the scheduler as text (as a number it reads blank, so such a workload
# at a fixed concurrency was sized here as a prefill-first burst while Results read the steady loop, and one
# planned open loop could not be told apart); a plan without one keeps the number copy, whose blank reads
# prefill first as every scheduler of that plan does (so its Demand_Calc is unchanged)
ROW_EQUATIONS_DF: tuple = tuple(Col(c.name, tb.same, c.args) if isinstance(c, Col) and c.name in _TEXT_COPIED else c
                                for c in ROW_EQUATIONS)


def has_decode_first(resolved) -> bool:
    """Whether a workload of the plan names the scheduler ``decode_first`` (Demand_Calc then copies it as text)."""
    return bool((resolved["scheduler"].to_numpy(dtype=object) == "decode_first").any()) if len(resolved) else False


def row_equations(resolved) -> tuple:
    """Demand_Calc's declarations for a plan: :data:`ROW_EQUATIONS_DF` with a decode_first workload, else
    :data:`ROW_EQUATIONS`."""
    return ROW_EQUATIONS_DF if has_decode_first(resolved) else ROW_EQUATIONS


def sizing_input(name: str) -> str:
    """The argument an input of the sizing chain is: the row's own column, else the workload's."""
    name = SIZING_AS.get(name, name)
    if name in CALC_COLS:
        return name
    return ("Q." if name in FROM_RESULTS else "R.") + name


def evaluate(cols, own: dict, at: Callable[[str, str], object]) -> None:
    """The Python values of declared columns, into ``own`` in order: ``at(sheet, name)`` gives a
    Resolved (``R``) or Results (``Q``) column at the rows' workloads."""
    def arg(a):
        if isinstance(a, tuple):
            return a[0](*(arg(x) for x in a[1:]))
        if a[:2] in ("R.", "Q."):
            return at(a[0], a[2:])
        return own[a]

    steps: dict = {}
    for c in cols:
        if c == SIZING:
            # a decode_first row planned open loop: its TTFT count by the search (DF_Search_Periods), as Results
            steps = sz.size({name: arg(sizing_input(name)) for name in sz.INPUTS}, override=sz.DF_OVERRIDE)
            own.update({SIZING_AS.get(k, k): v for k, v in steps.items()})
        elif c == BASELINE:
            names = (*sz.INPUTS, *sz.BASELINE_INPUTS.values())
            own.update(sz.size_baseline({name: arg(sizing_input(name)) for name in names}, steps,
                                        override=sz.DF_OVERRIDE_BASELINE))
        else:
            own[c.name] = c.twin(*(arg(a) for a in c.args))


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
    qa, qb = QUARTER.match(a), QUARTER.match(b)
    if qa and qb and qa.group(1) == qb.group(1):
        return f"{a}–Q{qb.group(2)}"
    return f"{a}–{b}"


# --------------------------------------------------------------------------- formulas
# The period equations (demand per minute, grown demand, saved) are in planner.equations.demand,
# with their Excel twins; their names stay importable from here.


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
        demand = to_floats(res["demand_tpm"])
        for k, p in enumerate(sp):
            for w, d in zip(res["workload"].tolist(), demand):
                if not np.isnan(d) and (str(w).strip().lower(), p) not in have:
                    rows.append({"workload": str(w), "period": p, "k": k, "dem": None})
    return rows


def period_calc(plan) -> pd.DataFrame:
    """``Demand_Calc``: one row per (workload, period), columns :data:`CALC_COLS` (``res_row``
    1-based in Resolved) plus ``dem`` (the Demand record index, None for a grown row). The
    layout columns come from the rows; every other column is :data:`ROW_EQUATIONS` evaluated."""
    lay = _layout(plan)
    res, r = plan.resolved, plan.results
    recs = demand_records(plan)
    n = len(lay)
    rec_of = lambda x: recs[x["dem"]] if x["dem"] is not None else {}  # noqa: E731
    typed = np.array([np.nan if rec_of(x).get("demand_tpm") is None else float(rec_of(x)["demand_tpm"]) for x in lay])
    hit_row = np.array([np.nan if rec_of(x).get("hit_target") is None else float(rec_of(x)["hit_target"])
                        for x in lay])
    own: dict[str, object] = {
        "workload": np.array([x["workload"] for x in lay], dtype=object), "period": [x["period"] for x in lay],
        "period_index": np.array([np.nan if x["k"] is None else float(x["k"]) for x in lay]),
        "demand_input": typed,
        "demand_unit": np.array([rec_of(x).get("demand_unit") or DEFAULT_UNIT for x in lay], dtype=object)}
    own["res_row"] = tb.position(res["workload"].to_numpy(), own["workload"]) if n else np.zeros(0, dtype=int)
    idx = own["res_row"] - 1
    own["workload"] = res["workload"].to_numpy()[idx] if n else []  # the workload's name as Resolved has it

    text_copy = has_decode_first(res)

    def at(sheet: str, name: str):
        frame = res if sheet == "R" else r
        if name in _TEXT or (name in _TEXT_COPIED and text_copy):
            return frame[name].to_numpy(dtype=object)[idx] if n else np.zeros(0, dtype=object)
        return to_floats(frame[name])[idx] if n else np.zeros(0)

    own["hit_target"] = np.where(np.isnan(hit_row), at("R", "hit_target"), hit_row)  # the Demand row's, else R's
    if n:
        evaluate(row_equations(res), own, at)
    else:
        own.update({c.name: np.zeros(0) for c in ROW_EQUATIONS if isinstance(c, Col)})
        own.update({SIZING_AS.get(k, k): np.zeros(0) for k in sz.NAMES})
        own.update({k: np.zeros(0) for k in sz.BASELINE_NAMES})
    frame = pd.DataFrame({c: own[c] for c in CALC_COLS}, columns=list(CALC_COLS))
    frame["dem"] = [x["dem"] for x in lay]
    return frame


def by_period(plan, calc: pd.DataFrame | None = None) -> pd.DataFrame:
    """``Fleet_By_Period``: per period (:func:`plan_periods` order) and GPU type (GPUs order),
    sums of the Demand_Calc rows; costs NaN for a type without a price."""
    calc = period_calc(plan) if calc is None else calc
    periods, types = plan_periods(plan), plan.gpus["gpu"].tolist()
    keys = {"period": [p for p in periods for _g in types], "gpu": [g for _p in periods for g in types]}
    price = np.tile(to_floats(plan.gpus["hourly_cost"]), len(periods))
    cols = group_table(BY_PERIOD, {"Demand_Calc": calc}, plan.settings, keys, price)
    return pd.DataFrame({c: list(cols[c]) for c in PERIOD_COLS}, columns=list(PERIOD_COLS))


def period_totals(plan) -> pd.DataFrame:
    """Per period: ``gpus_needed, cost_per_month, gpus_baseline, cost_per_month_baseline,
    cost_saved_per_month`` over the GPU types (costs over the priced types; NaN when none)."""
    bp = by_period(plan)
    out = []
    for p in plan_periods(plan):
        row = {"period": p}  # the Summary's SUMIFS over Fleet_By_Period, the same twins
        for c in ("gpus_needed", "gpus_baseline"):
            row[c] = float(tb.sum_where(to_floats(bp[c]), bp["period"].to_numpy(dtype=object), p))
        for c in ("cost_per_month", "cost_per_month_baseline", "cost_saved_per_month"):
            row[c] = float(tb.priced_sum_where(to_floats(bp[c]), bp["period"].to_numpy(dtype=object), p))
        out.append(row)
    return pd.DataFrame(out, columns=["period", "gpus_needed", "cost_per_month", "gpus_baseline",
                                      "cost_per_month_baseline", "cost_saved_per_month"])
