"""Demand by period: the ``Demand_Calc`` and ``Fleet_By_Period`` values, and the fleet by
GPU type and period in words (the memo's headline); the Demand sheet's checks are in
:mod:`planner.inputs.demand_checks`.

- :func:`fleet_by_period`: ``Fleet_By_Period`` (``Demand_Calc`` is :func:`planner.finance.periods.period_calc`).
- :func:`fleet_sentences`: the fleet by GPU type and by period in words.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.finance.fleet import plan_fleet
from planner.finance import periods as pr

PERIOD_COLS = pr.PERIOD_COLS


# --------------------------------------------------------------------------- Demand by period
def demand_records(plan) -> list[dict]:
    return pr.demand_records(plan)


def periods(records: list[dict]) -> list[str]:
    """Periods in first-seen order."""
    out: list[str] = []
    for rec in records:
        p = str(rec.get("period"))
        if p not in out:
            out.append(p)
    return out


def fleet_by_period(plan, calc: pd.DataFrame | None = None) -> pd.DataFrame:
    """``Fleet_By_Period`` (:func:`planner.finance.periods.by_period`)."""
    return pr.by_period(plan, calc)


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
    if pr.plan_periods(plan):
        parts = []
        for t in pr.period_totals(plan).itertuples():
            money = "" if np.isnan(t.cost_per_month) else f" ({currency} {t.cost_per_month:,.0f} per month"
            if money and not np.isnan(t.cost_saved_per_month) and t.cost_saved_per_month != 0:
                verb = "saves" if t.cost_saved_per_month > 0 else "costs"
                money += f"; the hit target {verb} {currency} {abs(t.cost_saved_per_month):,.0f} against the baseline"
            parts.append(f"{t.period} {t.gpus_needed:,.0f} GPUs{money}{')' if money else ''}")
        out += " By period: " + "; ".join(parts) + "."
    return out
