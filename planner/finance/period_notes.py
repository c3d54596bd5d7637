"""A period of Demand_Calc whose decode-first TTFT count is beyond the search (red team 8).

The closed form's ``unreachable`` does not depend on the demand (a target below a request alone), so the
Results' warnings cover every period; the decode-first search's does (a count of at least ``n_lo +
16,777,215``, :func:`planner.equations.decode_first_slo.search_count`): a period of far more demand than
today's can leave its target out and need fewer instances than today. Here, above the plan (Demand_Calc is
:func:`planner.finance.periods.period_calc`), added to the plan's warnings by ``planner run`` and
``planner validate`` (:func:`with_period_notes`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from planner.core.errors import Problem
from planner.core.places import Place
from planner.equations import decode_first_slo as dslo
from planner.finance import periods as pr
from planner.plan.columns import has_open_df
from planner.plan.decode_first_note import beyond_rows


def _f(frame, name) -> np.ndarray:
    return np.asarray(frame[name].to_numpy(), dtype=float)


def period_beyond_warnings(plan) -> list[Problem]:
    """A period (Demand_Calc) where a decode-first workload planned open loop has its TTFT count beyond the
    search (:func:`planner.plan.decode_first_note.beyond_search`) while at today's demand it has one: its count there leaves the target out
    (``binding`` ``unreachable: ttft_slo``), so that period's fleet can be smaller than a period of far less
    demand; said, not silent (red team 8). Only plans with such a row compute the periods here."""

    if not has_open_df(plan.resolved):
        return []
    calc = pr.period_calc(plan)
    if calc is None or len(calc) == 0 or "instances_ttft" not in calc:
        return []
    c = calc
    slo = _f(c, "ttft_slo_ms")
    pick = beyond_rows(c, c)  # Demand_Calc holds the Results and Resolved columns the test reads
    today = plan.results.set_index("workload")["instances_ttft"]
    wl_rows = {w: i for i, w in enumerate(plan.results["workload"])}
    rows = plan.input.workloads.rows
    out = []
    for i in np.flatnonzero(pick):
        w = c["workload"].iat[i]
        if w not in wl_rows or not np.isfinite(float(today.get(w, np.nan))):
            continue          # beyond at today's demand too: the Results row's warning says it
        out.append(Problem(Place.at_row("Workloads", rows[wl_rows[w]], w),
                           f"in {c['period'].iat[i]} (demand_tpm {float(c['demand_tpm'].iat[i]):,.6g}) the TTFT "
                           f"target {slo[i]:,.6g} ms needs at least {dslo.SEARCH_SPAN:,} instances above the "
                           "search's lower bound under decode first (beyond the DF_Search_Periods sheet's search): "
                           "that period's count leaves the target out (binding unreachable: ttft_slo; Demand_Calc "
                           f"instances {float(c['instances'].iat[i]):,.0f}), though today's demand gets "
                           f"{float(today[w]):,.0f} for it"))
    return out


def with_period_notes(plan):
    """``plan`` with :func:`period_beyond_warnings` added to its warnings (the plan itself if none)."""
    extra = period_beyond_warnings(plan)
    return dataclasses.replace(plan, warnings=list(plan.warnings) + extra) if extra else plan
