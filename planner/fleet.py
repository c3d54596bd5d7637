"""The finance view in numbers: fleet totals per GPU type (demand by period in
:mod:`planner.demand`, scenarios in :mod:`planner.scenarios`).

Each per-workload quantity is a small vectorised function with its Excel twin right
below (as in :mod:`planner.model`); the Results sheet declares the helper columns built
from them (:data:`planner.sheets.RESULTS`). The tables here are the Python values the
finance sheets (:mod:`planner.finance_sheets`) store beside their live formulas:

- :func:`fleet_table`: the ``Fleet`` sheet, one row per GPU type in GPUs order, then ``Total``.
- :func:`totals` / :func:`plan_fleet`: the fleet totals of a plan (cached on the plan).

A GPU type without ``hourly_cost`` has a blank cost; the ``Total`` cost is the total of the
priced types only, and :func:`fleet_table` reports the GPUs left uncosted, which the sheets
and the memo say beside the total (a blank price never reads as a complete total).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .constants import C, N
from .model import excel_twin

FLEET_COLS = ("gpu", "instances", "gpus_needed", "cost_per_hour", "cost_per_month", "cost_per_year",
              "tpm_capacity", "tpm_demand")
TOTAL = "Total"


# --------------------------------------------------------------------------- per-workload helpers
def given_or(given, fallback):
    """``given`` where it is a number, else ``fallback`` (e.g. a measured TPM, else the model's).

    Parameters
    ----------
    given : numeric, NaN when blank [any unit]
    fallback : numeric [same unit]

    Returns
    -------
    numeric [same unit]
    """
    given = np.asarray(given, dtype=float)
    return np.where(np.isnan(given), np.asarray(fallback, dtype=float), given)


@excel_twin(given_or)
def _(given, fallback):
    return f"IF(ISNUMBER({given}),{given},{fallback})"


def cost_per_hour(gpus, hourly_cost):
    r"""Cost of a workload's GPUs per hour, NaN without demand or price.

    .. math:: cost_h = gpus\_needed \cdot hourly\_cost

    Parameters
    ----------
    gpus : numeric, GPUs of the workload, NaN without demand [count]
    hourly_cost : numeric, price of one GPU-hour, NaN when blank [currency/h]

    Returns
    -------
    numeric [currency/h]
    """
    return np.asarray(gpus, dtype=float) * np.asarray(hourly_cost, dtype=float)


@excel_twin(cost_per_hour)
def _(gpus, hourly_cost):
    return f'IF(AND(ISNUMBER({gpus}),ISNUMBER({hourly_cost})),{gpus}*{hourly_cost},"")'


def capacity_tpm(instances, tpm):
    r"""Delivered tokens/min of the sized instances at full speed, NaN without demand.

    .. math:: capacity = instances\_needed \cdot TPM_{del}(h_t)

    Parameters
    ----------
    instances : numeric, serving instances, NaN without demand [count]
    tpm : numeric, delivered TPM of one instance [tokens/min]

    Returns
    -------
    numeric [tokens/min]
    """
    return np.asarray(instances, dtype=float) * np.asarray(tpm, dtype=float)


@excel_twin(capacity_tpm)
def _(instances, tpm):
    return f'IF(ISNUMBER({instances}),{instances}*{tpm},"")'


def per_month(per_hour, hours_per_month):
    r"""A cost per hour over a month, NaN stays NaN.

    Parameters
    ----------
    per_hour : numeric [currency/h]
    hours_per_month : numeric [h/month]

    Returns
    -------
    numeric [currency/month]
    """
    return np.asarray(per_hour, dtype=float) * hours_per_month


@excel_twin(per_month)
def _(per_hour, hours_per_month):
    return f'IF(ISNUMBER({per_hour}),{per_hour}*{hours_per_month},"")'


def per_year(per_month_, months_per_year=C.MONTHS_PER_YEAR):
    """A cost per month over a year [currency/year], NaN stays NaN."""
    return np.asarray(per_month_, dtype=float) * months_per_year


@excel_twin(per_year)
def _(per_month_, months_per_year=N.MONTHS_PER_YEAR):
    return f'IF(ISNUMBER({per_month_}),{per_month_}*{months_per_year},"")'


# --------------------------------------------------------------------------- Fleet
def _f(x) -> np.ndarray:
    return pd.to_numeric(pd.Series(x, dtype=object), errors="coerce").to_numpy(dtype=float)


def _nansum(x: np.ndarray) -> float:
    return float(np.nansum(x)) if len(x) else 0.0


def _priced_sum(x: np.ndarray) -> float:
    """Sum of the priced entries; NaN when none is priced (a blank, not a 0)."""
    x = np.asarray(x, dtype=float)
    return float(np.nansum(x)) if np.any(~np.isnan(x)) else float("nan")


def fleet_table(plan) -> pd.DataFrame:
    """The ``Fleet`` sheet's values: per GPU type (GPUs order) over the workloads with a
    demand, then ``Total``; also ``uncosted_gpus`` (GPUs of types without a price).

    Per type ``g``: ``instances = Σ instances_needed``, ``gpus_needed = Σ gpus_needed``,
    ``cost_per_hour = Σ gpus_needed · hourly_cost`` (NaN without a price),
    ``cost_per_month = cost_per_hour · hours_per_month``, ``cost_per_year = 12 · cost_per_month``,
    ``tpm_capacity = Σ instances_needed · tpm_delivered_target``, ``tpm_demand = Σ demand_tpm``.
    ``Total`` sums the types; its costs sum the priced types only (NaN when none is priced).
    """
    r, res = plan.results, plan.resolved
    hours = float(plan.settings["hours_per_month"])
    wl_gpu = res["gpu"].to_numpy()
    cols = {"instances": _f(r["instances_needed"]), "gpus_needed": _f(r["gpus_needed"]),
            "cost_per_hour": _f(r["cost_per_hour"]), "tpm_capacity": _f(r["tpm_capacity"]),
            "tpm_demand": _f(res["demand_tpm"])}
    rows = []
    for g, price in zip(plan.gpus["gpu"].tolist(), _f(plan.gpus["hourly_cost"])):
        on = wl_gpu == g
        row = {"gpu": g, **{k: _nansum(v[on]) for k, v in cols.items()}}
        if np.isnan(price):
            row["cost_per_hour"] = float("nan")
        row["cost_per_month"] = float(per_month(row["cost_per_hour"], hours))
        row["cost_per_year"] = float(per_year(row["cost_per_month"]))
        rows.append(row)
    frame = pd.DataFrame(rows, columns=list(FLEET_COLS))
    total = {"gpu": TOTAL}
    for k in FLEET_COLS[1:]:
        total[k] = _priced_sum(frame[k]) if k.startswith("cost") else float(frame[k].sum())
    frame = pd.concat([frame, pd.DataFrame([total])], ignore_index=True)
    frame = frame[list(FLEET_COLS)]
    types = frame.iloc[:-1]
    frame.attrs["uncosted_gpus"] = float(types.loc[types["cost_per_hour"].isna(), "gpus_needed"].sum())
    return frame


@dataclass
class Totals:
    """Fleet totals at the target and at the baseline hit ratios (the memo and the Summary)."""

    gpus: float
    instances: float
    cost_per_hour: float          # priced types only; NaN when nothing is priced
    cost_per_month: float
    uncosted_gpus: float
    tpm_capacity: float
    tpm_demand: float
    gpus_baseline: float          # the same demand at hit_baseline (blank: hit_measured)
    cost_per_hour_baseline: float
    cost_per_month_baseline: float


def totals(plan) -> Totals:
    """Fleet totals: ``Fleet``'s Total row and the same demand at the baseline hit ratios."""
    fl = plan_fleet(plan)
    t = fl.iloc[-1]
    hours = float(plan.settings["hours_per_month"])
    gm = _f(plan.results["gpus_baseline"])
    cm = _priced_sum(_f(plan.results["cost_per_hour_baseline"])) if np.any(
        ~np.isnan(_f(plan.resolved["hourly_cost"])) & ~np.isnan(gm)) else float("nan")
    return Totals(float(t["gpus_needed"]), float(t["instances"]), float(t["cost_per_hour"]),
                  float(t["cost_per_month"]), fl.attrs["uncosted_gpus"], float(t["tpm_capacity"]),
                  float(t["tpm_demand"]), _nansum(gm), cm, float(per_month(cm, hours)))


def plan_fleet(plan) -> pd.DataFrame:
    """``fleet_table(plan)``, computed once per plan."""
    cached = getattr(plan, "_fleet", None)
    if cached is None:
        cached = fleet_table(plan)
        plan._fleet = cached
    return cached
