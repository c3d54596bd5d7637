"""A demand no single workload plausibly has (issue 20, trust5): a per-day (or per-hour) demand typed
in the per-minute ``demand_tpm`` column plans silently at 1,440x (60x) the GPUs. The example's chat
workload (7.2M tokens/min, 56 GPUs) typed per day in the per-minute column planned 811,769 GPUs
with exit 0 and no message.

A workload whose demand alone needs more than :data:`GPUS_MAX` GPUs gets a located warning with the
fleet it would need if the number were per day or per hour. The bound: the largest GPU clusters
published are of the order of 100,000 GPUs for all of a company's training and inference (xAI's
Colossus: 100,000 H100 when activated in July 2024, 200,000 H100/H200 announced in October 2024;
https://www.teslarati.com/xai-supercomputer-memphis-upgraded-1-million-gpus/, 2024-12-06),
so one inference workload above a tenth of that is more likely a unit mistake than a plan; it is
planned as typed (a warning, not a refusal: such a fleet is not impossible).
"""

from __future__ import annotations

import numpy as np

from planner.core.errors import Problem
from planner.core.places import Place
from planner.equations.demand import demand_per_minute

GPUS_MAX = 10_000.0  # GPUs one workload's demand may need before it is said (see the module docstring)


def _per_gpu(plan) -> dict[str, float]:
    """Delivered tokens/min one GPU serves at the target, after target_utilization, per workload."""
    res, r = plan.resolved, plan.results
    if "tpm_per_gpu" not in r:
        return {}
    util = res["target_utilization"].to_numpy(dtype=float) if "target_utilization" in res else np.ones(len(res))
    util = np.where(np.isfinite(util) & (util > 0), util, 1.0)
    per = r["tpm_per_gpu"].to_numpy(dtype=float) * util
    return {str(w).strip().lower(): float(x) for w, x in zip(res["workload"], per)}


def huge_demand_warnings(plan) -> list[Problem]:
    """A warning at each Workloads or Demand ``demand_tpm`` cell whose demand alone needs more than
    :data:`GPUS_MAX` GPUs: ``demand / (tpm_per_gpu x target_utilization)``, the fleet's own sizing
    before rounding to whole instances."""
    per = _per_gpu(plan)
    out: list[Problem] = []

    def check(table, i: int, wl, demand: float, unit: str) -> None:
        g = per.get(str(wl).strip().lower())
        if g is None or not np.isfinite(g) or g <= 0 or not np.isfinite(demand):
            return
        gpus = demand / g
        if gpus <= GPUS_MAX:
            return
        shown = "tokens/min" if unit == "tokens/min" else f"tokens/min ({unit} typed in the row's demand_unit)"
        # a Demand row converts by its demand_unit (a header unit beside one is refused: red team 7)
        how = ("Set the row's demand_unit to tokens/day (or tokens/hour) to have it converted"
               if table is not wt else "Head the column 'demand_tpm (tokens/day)' to have it converted")
        out.append(Problem(Place.of_table(table, "demand_tpm", i),
                           f"demand_tpm {demand:,.6g} {shown} needs about {gpus:,.0f} GPUs for {wl} alone "
                           f"({g:,.0f} tokens/min a GPU at its target), more than {GPUS_MAX:,.0f} (the largest "
                           f"published clusters hold about 100,000 GPUs for a whole company): typed per day "
                           f"({gpus / 1440:,.0f} GPUs as tokens/day) or per hour ({gpus / 60:,.0f} GPUs as "
                           f"tokens/hour)? {how}; if the "
                           f"demand is right, check the row's times and tpm_measured (its other warnings)"))

    wt = plan.input.workloads
    for i, rec in enumerate(wt.records):
        if rec.get("demand_tpm") is not None:
            check(wt, i, rec.get("workload"), float(rec["demand_tpm"]), "tokens/min")
    dem = plan.input.optional.get("Demand")
    for i, rec in enumerate(dem.records if dem is not None else ()):
        if rec.get("demand_tpm") is None:
            continue
        unit = str(rec.get("demand_unit") or "tokens/min")
        check(dem, i, rec.get("workload"), float(demand_per_minute(float(rec["demand_tpm"]), unit)), unit)
    return out


# (red team 7) A Demand period's demand against the workload's own demand_tpm today: a per-day demand typed
# in a per-minute Demand row of a small workload needs fewer than GPUS_MAX GPUs and was planned silently at
# 1,440x today's (a per-minute one typed with demand_unit tokens/day at 1/1,440). A ratio within a factor
# of 2 of a day's or an hour's minutes (1,440, 60) or their inverses is said at the Demand cell; it may be
# a launch (a pilot today, production next quarter), so a warning.
SPANS = {"day": 1440.0, "hour": 60.0}
SPAN_BAND = 2.0


def period_jump_warnings(plan) -> list[Problem]:
    """A Demand ``demand_tpm`` (tokens/min after its ``demand_unit``) at about 1,440x or 60x (or 1/1,440,
    1/60) of its workload's Workloads ``demand_tpm``, unless it needs over :data:`GPUS_MAX` GPUs
    (:func:`huge_demand_warnings` says those)."""
    dem = plan.input.optional.get("Demand")
    if dem is None:
        return []
    today = {str(r.get("workload")).strip().lower(): float(r["demand_tpm"])
             for r in plan.input.workloads.records if r.get("demand_tpm") not in (None, 0)}
    per = _per_gpu(plan)
    out: list[Problem] = []
    for i, rec in enumerate(dem.records):
        w = str(rec.get("workload")).strip().lower()
        if rec.get("demand_tpm") is None or w not in today:
            continue
        unit = str(rec.get("demand_unit") or "tokens/min")
        d = float(demand_per_minute(float(rec["demand_tpm"]), unit))
        g = per.get(w)
        if d <= 0 or (g is not None and np.isfinite(g) and g > 0 and d / g > GPUS_MAX):
            continue
        ratio = d / today[w]
        for span, k in SPANS.items():
            if k / SPAN_BAND <= ratio <= k * SPAN_BAND:
                hint = (f"typed per {span} in a per-minute row? (set its demand_unit to tokens/{span}: "
                        f"{d / k:,.6g} tokens/min)" if unit == "tokens/min" else
                        f"is demand_unit {unit} right?")
            elif 1 / (k * SPAN_BAND) <= ratio <= SPAN_BAND / k:
                hint = (f"typed per minute under demand_unit {unit}? ({d * k:,.6g} tokens/min as tokens/min)"
                        if unit != "tokens/min" else f"typed per minute where the workload's is per {span}?")
            else:
                continue
            out.append(Problem(Place.of_table(dem, "demand_tpm", i),
                               f"{rec.get('workload')!r} in {rec.get('period')}: demand {d:,.6g} tokens/min is "
                               f"{ratio:,.4g}x the workload's demand_tpm today ({today[w]:,.6g} tokens/min), about "
                               f"{'1/' if ratio < 1 else ''}{k:,.0f}, the minutes of {'an' if span == 'hour' else 'a'} "
                               f"{span}: {hint} If the workload's demand does change that much, ignore this"))
            break
    return out
