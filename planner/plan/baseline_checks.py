"""A planning baseline above the hit target (red team 7, issue 20's finance view).

The Summary's "What the hit-ratio target saves" and Fleet_By_Period's ``cost_saved_per_month`` are
``baseline - target``, each workload sized at Workloads ``hit_baseline`` (blank: ``hit_measured``)
and at its ``hit_target``. A baseline above the target makes that workload's "saving" negative: the
target needs more GPUs than today. It can be meant (a plan that gives hits up: a smaller cache, a
new traffic mix), so it plans, but the column says "saved" and the total of the fleet can hide one
workload's cost under the others' savings. So it is a located warning (stderr, Checks, memo), with
what it costs:

* Workloads: effective ``hit_baseline`` > ``hit_target``, at the ``hit_baseline`` cell (a blank cell
  names the ``hit_measured`` it took: the load test's hit ratio read as today's);
* Demand: a period's typed ``hit_target`` below the workload's baseline, at that Demand cell (the
  Workloads target at or above the baseline, so the period's own target is the cause).

The cost (Workloads; a Demand row names its Fleet_By_Period row, which planner.finance sizes) is the sizing the Summary and Fleet_By_Period show: ``(cost_per_hour_baseline -
cost_per_hour) x hours_per_month`` (negative: a cost) and ``gpus_baseline - gpus_needed``.
"""

from __future__ import annotations

import numpy as np

from planner.core.errors import Problem
from planner.core.names import fold_name
from planner.core.places import Place

# a baseline this close to the target is the same ratio typed rounded
EPS = 1e-9


def _money(saved_per_hour: float, gpus_b: float, gpus_t: float, hours: float, currency: str) -> str:
    """What the 'saving' is, from the two sizings (blank sizes: no demand)."""
    if np.isnan(gpus_t) or np.isnan(gpus_b):
        return "the workload has no demand here, so nothing is sized yet; with one, its \"saving\" is a cost"
    more = gpus_t - gpus_b
    if np.isnan(saved_per_hour):
        gp = f"{more:,.0f} GPUs more" if more > 0 else "no GPU fewer"
        return f"the target needs {gp} than the baseline ({gpus_t:,.0f} against {gpus_b:,.0f}; the GPU has no price)"
    per_month = -saved_per_hour * hours
    if per_month > 0:
        return (f"the \"savings\" are a cost of {currency} {per_month:,.0f}/month ({more:,.0f} GPUs more at the "
                f"target: {gpus_t:,.0f} against {gpus_b:,.0f} at the baseline)")
    return (f"the target saves nothing against it ({gpus_t:,.0f} GPUs at both; a higher demand would make it a "
            f"cost)")


def baseline_warnings(plan) -> list[Problem]:
    """The warnings of the module docstring, each at its cell."""
    wt, res, out_ = plan.input.workloads, plan.resolved, plan.results
    if "hit_baseline" not in res or "hit_target" not in res:
        return []
    currency = str(plan.settings.get("currency") or "USD")
    hours = float(plan.settings.get("hours_per_month", 730.0))
    base = res["hit_baseline"].to_numpy(dtype=float)
    target = res["hit_target"].to_numpy(dtype=float)

    def col(name: str) -> np.ndarray:
        return (out_[name].to_numpy(dtype=float) if name in out_ else np.full(len(out_), np.nan))

    c_b, c_t = col("cost_per_hour_baseline"), col("cost_per_hour")
    g_b, g_t = col("gpus_baseline"), col("gpus_needed")
    out: list[Problem] = []
    for i, rec in enumerate(wt.records):
        if i >= len(base) or np.isnan(base[i]) or np.isnan(target[i]) or base[i] <= target[i] + EPS:
            continue
        what = (f"hit_baseline {base[i]:.1%} is above hit_target {target[i]:.1%}" if rec.get("hit_baseline") is not None
                else f"hit_baseline is blank, so the baseline is hit_measured {base[i]:.1%} (the load test's hit "
                     f"ratio), above hit_target {target[i]:.1%}")
        fix = ("; if today's hit ratio is lower, type it in hit_baseline" if rec.get("hit_baseline") is None
               else "; if the two columns are swapped, swap them back")
        out.append(Problem(Place.of_table(wt, "hit_baseline", i),
                           f"{rec['workload']!r}: {what}: "
                           f"{_money(c_b[i] - c_t[i], g_b[i], g_t[i], hours, currency)}, shown as a negative saving "
                           f"on the Summary and Fleet_By_Period{fix}"))
    out += _period_warnings(plan, base, target)
    return out


def _period_warnings(plan, base: np.ndarray, target: np.ndarray) -> list[Problem]:
    """A Demand ``hit_target`` below its workload's baseline (the Workloads target not)."""
    dem = plan.input.optional.get("Demand")
    if dem is None:
        return []
    wl = {fold_name(str(r.get("workload") or "")): i for i, r in enumerate(plan.input.workloads.records)}
    out = []
    for k, rec in enumerate(dem.records):
        i = wl.get(fold_name(str(rec.get("workload") or "")))
        h = rec.get("hit_target")
        if i is None or h is None or i >= len(base) or np.isnan(base[i]):
            continue
        if float(h) < base[i] - EPS and not base[i] > target[i] + EPS:  # else said once at the Workloads row
            # the amount is the period's row of Fleet_By_Period (planner.finance.periods sizes it; the plan
            # layer sits below finance and does not import it)
            out.append(Problem(Place.of_table(dem, "hit_target", k),
                               f"{rec['workload']!r} in {rec.get('period')}: hit_target {float(h):.1%} is below the "
                               f"workload's baseline hit ratio {base[i]:.1%} (Workloads hit_baseline, blank: "
                               f"hit_measured): in that period the target needs at least as many GPUs as the "
                               f"baseline, so its \"saving\" is a cost, shown as a negative cost_saved_per_month on "
                               f"Fleet_By_Period (that row gives the amount)"))
    return out
