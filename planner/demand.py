"""Demand by period: the ``Demand_Calc`` and ``Fleet_By_Period`` values, the checks of the
Demand sheet, and the fleet by GPU type and period in words (the memo's headline).

- :func:`demand_calc` / :func:`fleet_by_period`: ``Demand_Calc`` and ``Fleet_By_Period``.
- :func:`fleet_sentences`: the fleet by GPU type and by period in words.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import periods as pr
from . import schema
from .errors import Problem
from .fleet import _priced_sum, plan_fleet

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


def demand_calc(plan) -> pd.DataFrame:
    """One row per workload and period (:func:`planner.periods.period_calc`)."""
    return pr.period_calc(plan)


def fleet_by_period(plan, calc: pd.DataFrame | None = None) -> pd.DataFrame:
    """``Fleet_By_Period`` (:func:`planner.periods.by_period`)."""
    return pr.by_period(plan, calc)


def _place(t, col: str, i: int) -> str:
    from openpyxl.utils import get_column_letter

    j = t.positions.get(col)
    return f"{t.sheet}!{get_column_letter(j + 1)}{t.rows[i]}" if j is not None else f"{t.sheet} row {t.rows[i]}"


def _check_demand(dem, w, problems: list[Problem], grown: frozenset = frozenset()) -> None:
    """Unknown workloads (when ``w`` is given), duplicate (workload, period), empty periods (a
    period of Settings ``periods``, in ``grown``, takes the grown demand where it is blank)."""
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
        if period not in grown and all(dem.records[i].get("demand_tpm") is None for i in rows):
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
