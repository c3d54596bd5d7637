"""Demand by period: the ``Demand_Calc`` and ``Fleet_By_Period`` values, the checks of the
Demand sheet, and the fleet by GPU type and period in words (the memo's headline).

- :func:`demand_calc` / :func:`fleet_by_period`: ``Demand_Calc`` and ``Fleet_By_Period``.
- :func:`fleet_sentences`: the fleet by GPU type and by period in words.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import model as m
from . import schema
from .errors import Problem
from .fleet import _f, _nansum, _priced_sum, cost_per_hour, per_month, plan_fleet

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


def _place(t, col: str, i: int) -> str:
    from openpyxl.utils import get_column_letter

    j = t.positions.get(col)
    return f"{t.sheet}!{get_column_letter(j + 1)}{t.rows[i]}" if j is not None else f"{t.sheet} row {t.rows[i]}"


def _check_demand(dem, w, problems: list[Problem]) -> None:
    """Unknown workloads (when ``w`` is given), duplicate (workload, period), empty periods."""
    names = {str(x).strip().lower(): str(x) for x in w.column("workload") if x is not None} if w is not None else None
    seen: dict[tuple[str, str], int] = {}
    by_period: dict[str, list[int]] = {}
    for i, rec in enumerate(dem.records):
        wl, period = rec.get("workload"), rec.get("period")
        if wl is not None and names is not None and str(wl).strip().lower() not in names:
            problems.append(Problem(_place(dem, "workload", i), f"workload {wl!r} is not in Workloads"))
        elif wl is not None and names is not None:
            rec["workload"] = names[str(wl).strip().lower()]  # matched as the Workloads sheet spells it
        if wl is None or period is None:
            continue
        key = (str(wl).strip().lower(), str(period))
        if key in seen:
            problems.append(Problem(_place(dem, "period", i), f"workload {wl!r} has period {period!r} twice "
                                                              f"(also row {seen[key]})"))
        else:
            seen[key] = dem.rows[i]
        by_period.setdefault(str(period), []).append(i)
    for period, rows in by_period.items():
        if all(dem.records[i].get("demand_tpm") is None for i in rows):
            problems.append(Problem(_place(dem, "period", rows[0]),
                                    f"period {period!r} has no demand rows: every demand_tpm of it is blank "
                                    f"(give the demands, or delete the period's rows)"))


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
