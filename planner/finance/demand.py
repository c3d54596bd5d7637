"""Demand by period: the ``Demand_Calc`` and ``Fleet_By_Period`` values, and the fleet by
GPU type and period in words (the memo's headline); the Demand sheet's checks are in
:mod:`planner.inputs.demand_checks`.

- :func:`demand_calc` / :func:`fleet_by_period`: ``Demand_Calc`` and ``Fleet_By_Period``.
- :func:`fleet_sentences`: the fleet by GPU type and by period in words.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.equations import kvhit as m
from planner.core import schema
from planner.finance.fleet import _f, _nansum, _priced_sum, plan_fleet
from planner.equations.fleet import cost_per_hour, per_month

PERIOD_COLS = ("period", "gpu", "instances", "gpus_needed", "cost_per_month")


# --------------------------------------------------------------------------- Demand by period
def demand_records(plan) -> list[dict]:
    t = plan.input.optional.get(schema.DEM)
    return list(t.records) if t is not None else []


def periods(records: list[dict]) -> list[str]:
    """Periods in first-seen order."""
    out: list[str] = []
    for rec in records:
        p = str(rec.get("period"))
        if p not in out:
            out.append(p)
    return out


def demand_calc(plan) -> pd.DataFrame:
    """One row per Demand row: the workload sized as in Results with that period's demand.

    Columns ``workload, period, demand_tpm, res_row`` (1-based row in Results), ``gpu, tp,
    tpm_delivered_target, target_utilization, hourly_cost, instances, gpus_needed,
    cost_per_hour``.
    """
    recs = demand_records(plan)
    res, r = plan.resolved, plan.results
    idx_of = {str(w).strip().lower(): i for i, w in enumerate(res["workload"])}
    idx = np.array([idx_of[str(rec["workload"]).strip().lower()] for rec in recs], dtype=int)
    demand = np.array([np.nan if rec.get("demand_tpm") is None else float(rec["demand_tpm"]) for rec in recs])
    tp = _f(res["tp"])[idx]
    tpm = _f(r["tpm_delivered_target"])[idx]
    util = _f(res["target_utilization"])[idx]
    price = _f(res["hourly_cost"])[idx]
    inst = m.instances_needed(demand, tpm, util)
    gpus = m.gpus_needed(inst, tp)
    return pd.DataFrame({
        "workload": res["workload"].to_numpy()[idx] if len(idx) else [], "period": [str(x.get("period")) for x in recs],
        "demand_tpm": demand, "res_row": idx + 1, "gpu": res["gpu"].to_numpy()[idx] if len(idx) else [],
        "tp": tp, "tpm_delivered_target": tpm, "target_utilization": util, "hourly_cost": price,
        "instances": inst, "gpus_needed": gpus, "cost_per_hour": cost_per_hour(gpus, price)})


def fleet_by_period(plan, calc: pd.DataFrame | None = None) -> pd.DataFrame:
    """``Fleet_By_Period``: per period (first-seen order) and GPU type (GPUs order), sums of the
    Demand_Calc rows; ``cost_per_month`` NaN for a type without a price."""
    calc = demand_calc(plan) if calc is None else calc
    hours = float(plan.settings["hours_per_month"])
    rows = []
    for p in periods(demand_records(plan)):
        for g, price in zip(plan.gpus["gpu"].tolist(), _f(plan.gpus["hourly_cost"])):
            on = (calc["period"].to_numpy() == p) & (calc["gpu"].to_numpy() == g)
            cost = float("nan") if np.isnan(price) else _nansum(calc["cost_per_hour"].to_numpy()[on])
            rows.append({"period": p, "gpu": g, "instances": _nansum(calc["instances"].to_numpy()[on]),
                         "gpus_needed": _nansum(calc["gpus_needed"].to_numpy()[on]),
                         "cost_per_month": float(per_month(cost, hours))})
    return pd.DataFrame(rows, columns=list(PERIOD_COLS))


# --------------------------------------------------------------------------- words (the memo)
def fleet_sentences(plan, currency: str) -> str:
    """The fleet by GPU type and by period in words, for the memo's headline (leading space)."""
    fr = plan_fleet(plan)
    types = fr.iloc[:-1]
    used = types[types["gpus_needed"] > 0]
    if used.empty:
        return ""
    out = " By GPU type: " + ", ".join(f"{r.gpus_needed:,.0f} {r.gpu}" for r in used.itertuples()) + "."
    u = fr.attrs.get("uncosted_gpus", 0.0)
    if u > 0:
        out += f" The cost leaves out {u:,.0f} GPUs of types without an hourly_cost."
    if demand_records(plan):
        bp = fleet_by_period(plan)
        parts = []
        for p in periods(demand_records(plan)):
            on = bp[bp["period"] == p]
            cost = _priced_sum(on["cost_per_month"])
            money = "" if np.isnan(cost) else f" ({currency} {cost:,.0f} per month)"
            parts.append(f"{p} {on['gpus_needed'].sum():,.0f} GPUs{money}")
        out += " By period (Demand sheet): " + "; ".join(parts) + "."
    return out
