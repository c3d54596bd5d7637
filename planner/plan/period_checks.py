"""A Demand hit ratio that holds for one period only (red team 4, issue 20's finance workbook).

A Demand row's ``hit_target`` is the workload's hit ratio *in that period*; a period without one
(no Demand row, or its ``hit_target`` blank) takes the Workloads ``hit_target`` (README "Periods").
An analyst who types "60% from Q3, with the offload tier" in the Q3 row only gets 60% in Q3 and
the workload's 30% again in Q4: the Q4 fleet silently sized at the old hit ratio. It may be meant
(a tier taken out again), so it is a located warning at the Demand cell, not an error.
"""

from __future__ import annotations

from planner.core.names import fold_name
from planner.core.errors import Problem
from planner.core.places import Place


def _key(v) -> str:
    return fold_name(v if v is not None else "")


def hit_fallback_warnings(plan) -> list[Problem]:
    """One warning per Demand ``hit_target`` that differs from the workload's and is followed, in
    Settings ``periods``, by a period where the workload has demand but no Demand ``hit_target``."""
    from planner.inputs.period_labels import fold, parse_periods

    p_in = plan.input
    dem = p_in.optional.get("Demand")
    periods = parse_periods(p_in.settings.get("periods"))[0]
    if dem is None or len(periods) < 2:
        return []
    order = {fold(p): k for k, p in enumerate(periods)}
    wl = {_key(r.get("workload")): (i, r) for i, r in enumerate(p_in.workloads.records)}
    hits, rows_with_demand = {}, {}
    for i, rec in enumerate(dem.records):
        w, p = _key(rec.get("workload")), fold(rec.get("period"))
        if p not in order:
            continue
        if rec.get("hit_target") is not None:
            hits[(w, order[p])] = (i, float(rec["hit_target"]))
        if rec.get("demand_tpm") is not None:
            rows_with_demand.setdefault(w, set()).add(order[p])
    out = []
    for (w, k), (i, h) in sorted(hits.items(), key=lambda kv: kv[1][0]):
        if w not in wl or k + 1 >= len(periods) or (w, k + 1) in hits:
            continue
        j, rec = wl[w]
        own = float(plan.resolved["hit_target"].iat[j])
        has_demand = rec.get("demand_tpm") is not None or (k + 1) in rows_with_demand.get(w, set())
        if not has_demand or abs(own - h) < 1e-12:
            continue
        nxt = periods[k + 1]
        out.append(Problem(Place.of_table(dem, "hit_target", i),
                           f"{rec['workload']!r} has hit_target {h:.1%} in {periods[k]} only: {nxt} goes back to "
                           f"the workload's {own:.1%} (Workloads hit_target; a period without a Demand hit_target "
                           f"takes it), and is sized at it; if {h:.1%} holds from {periods[k]} on, type it in the "
                           f"Demand rows of the later periods too"))
    return out
