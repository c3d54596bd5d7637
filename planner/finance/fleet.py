"""The finance view in numbers: fleet totals per GPU type (demand by period in
:mod:`planner.finance.demand`, scenarios in :mod:`planner.finance.scenarios`). The tables here
are the Python values the finance sheets (:mod:`planner.workbook.fleet_sheets`,
:mod:`planner.workbook.summary_sheet`) store beside their live formulas:

- :func:`fleet_table`: the ``Fleet`` sheet, one row per GPU type in GPUs order, then ``Total``.
- :func:`totals` / :func:`plan_fleet`: the fleet totals of a plan (cached on the plan).

A GPU type without ``hourly_cost`` has a blank cost; the ``Total`` cost is the total of the
priced types only, and :func:`fleet_table` reports the GPUs left uncosted, which the sheets
and the memo say beside the total (a blank price never reads as a complete total).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import pandas as pd

from planner.equations.fleet import per_month, per_year
from planner.equations import tables as tb
from planner.finance.aggregations import Agg, to_floats, group_table

# The Fleet sheet, declared once: each column's Python value and Excel formula (planner.finance.aggregations)
FLEET: tuple[Agg, ...] = (
    Agg("gpu", total=None),
    Agg("instances", sum_of=("Results", "instances_needed")),
    Agg("gpus_needed", sum_of=("Results", "gpus_needed")),
    Agg("cost_per_hour", sum_of=("Results", "cost_per_hour"), priced=True, total="priced"),
    Agg("cost_per_month", twin=per_month, args=("cost_per_hour", "@hours_per_month"), total="priced"),
    Agg("cost_per_year", twin=per_year, args=("cost_per_month",), total="priced"),
    Agg("tpm_capacity", sum_of=("Results", "tpm_capacity")),
    Agg("tpm_demand", sum_of=("Resolved", "demand_tpm")),
    # what the latency targets add over throughput alone (issue 16; planner.equations.sizing)
    Agg("instances_throughput", sum_of=("Results", "instances_throughput")),
    Agg("gpus_throughput", sum_of=("Results", "gpus_throughput")),
    Agg("gpus_for_latency", sum_of=("Results", "gpus_for_latency")),
    Agg("cost_per_month_for_latency", sum_of=("Results", "cost_per_hour_for_latency"), priced=True,
        scale="@hours_per_month", total="priced"),
)
FLEET_COLS = tuple(a.name for a in FLEET)
TOTAL = "Total"


# --------------------------------------------------------------------------- Fleet


def fleet_table(plan) -> pd.DataFrame:
    """The ``Fleet`` sheet's values: per GPU type (GPUs order) over the workloads with a
    demand, then ``Total``; also ``uncosted_gpus`` (GPUs of types without a price).

    Per type ``g``: ``instances = Σ instances_needed``, ``gpus_needed = Σ gpus_needed``,
    ``cost_per_hour = Σ gpus_needed · hourly_cost`` (NaN without a price),
    ``cost_per_month = cost_per_hour · hours_per_month``, ``cost_per_year = 12 · cost_per_month``,
    ``tpm_capacity = Σ instances_needed · tpm_delivered_target``, ``tpm_demand = Σ demand_tpm``;
    ``instances_throughput``, ``gpus_throughput``, ``gpus_for_latency`` the sums of those Results columns
    (the count on throughput alone and the GPUs the latency targets add), ``cost_per_month_for_latency =
    Σ cost_per_hour_for_latency · hours_per_month`` (NaN without a price).
    ``Total`` sums the types; its costs sum the priced types only (NaN when none is priced).
    """
    frames = {"Results": plan.results, "Resolved": plan.resolved}
    types = plan.gpus["gpu"].tolist()
    cols = group_table(FLEET, frames, plan.settings, {"gpu": types}, to_floats(plan.gpus["hourly_cost"]))
    frame = pd.DataFrame({c: list(cols[c]) for c in FLEET_COLS}, columns=list(FLEET_COLS))
    total = {"gpu": TOTAL}
    for a in FLEET[1:]:
        total[a.name] = a.total_value(frame[a.name].to_numpy(dtype=float))
    frame = pd.concat([frame, pd.DataFrame([total])], ignore_index=True)
    frame = frame[list(FLEET_COLS)]
    t = frame.iloc[:-1]
    frame.attrs["uncosted_gpus"] = float(tb.uncosted(to_floats(t["gpus_needed"]), to_floats(t["cost_per_hour"])))
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
    gpus_for_latency: float = 0.0           # GPUs the latency targets add over throughput alone
    cost_per_month_for_latency: float = float("nan")  # their cost, priced types only


def totals(plan) -> Totals:
    """Fleet totals: ``Fleet``'s Total row and the same demand at the baseline hit ratios."""
    fl = plan_fleet(plan)
    t = fl.iloc[-1]
    hours = float(plan.settings["hours_per_month"])
    # the Summary's baseline cells, the same twins (planner.workbook.summary_sheet)
    cost_h = to_floats(plan.results["cost_per_hour_baseline"])
    return Totals(float(t["gpus_needed"]), float(t["instances"]), float(t["cost_per_hour"]),
                  float(t["cost_per_month"]), fl.attrs["uncosted_gpus"], float(t["tpm_capacity"]),
                  float(t["tpm_demand"]), tb.total(to_floats(plan.results["gpus_baseline"])), tb.priced_total(cost_h),
                  tb.priced_total_per_month(cost_h, hours),
                  float(t["gpus_for_latency"]), float(t["cost_per_month_for_latency"]))


_FLEET_CACHE: dict[int, tuple[weakref.ref, pd.DataFrame]] = {}


def plan_fleet(plan) -> pd.DataFrame:
    """``fleet_table(plan)``, computed once per plan (kept beside the plan, not on it: a
    :class:`~planner.plan.build.Plan` is not changed after it is built)."""
    hit = _FLEET_CACHE.get(id(plan))
    if hit is not None and hit[0]() is plan:
        return hit[1]
    table = fleet_table(plan)
    key = id(plan)
    try:
        ref = weakref.ref(plan, lambda _r, key=key: _FLEET_CACHE.pop(key, None))
    except TypeError:  # an object without weak references (a test's stand-in): no cache
        return table
    _FLEET_CACHE[key] = (ref, table)
    return table
