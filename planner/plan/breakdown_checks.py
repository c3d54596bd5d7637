"""A prefill breakdown typed in part (issue 20, trust5): ``t_attn0_ms`` typed and ``t_ffn0_ms`` blank (or
the other way round) plans with the blank one filled from the Measurements' fit or the roofline, beside
a typed time of another source, and said nowhere but in the Resolved cell's style: the example's
chat row with its measured t_ffn0_ms 143 ms cleared took the roofline's 199.6 ms at exit 0 with no
message. A breakdown is one measurement of one deployment, so the mix is said at the blank cell."""

from __future__ import annotations

import numpy as np

from planner.core.errors import Problem
from planner.core.places import Place

PREFILL = ("t_attn0_ms", "t_ffn0_ms")


def partial_breakdown_warnings(plan) -> list[Problem]:
    """A warning at each blank of :data:`PREFILL` whose partner is typed, with the value filled."""
    wt, res = plan.input.workloads, plan.resolved
    src = res["breakdown_source"].tolist() if "breakdown_source" in res else [""] * len(res)
    out: list[Problem] = []
    for i, rec in enumerate(wt.records):
        typed = [c for c in PREFILL if rec.get(c) is not None]
        if len(typed) != 1 or i >= len(res):
            continue
        blank = next(c for c in PREFILL if c not in typed)
        v = float(res[blank].iat[i]) if blank in res else float("nan")
        got = f"{v:,.4g} ms" if np.isfinite(v) else "a value"
        out.append(Problem(Place.of_table(wt, blank, i),
                           f"{blank} is blank while {typed[0]} {float(rec[typed[0]]):,.4g} ms is typed: {blank} is "
                           f"{src[i] or 'filled'} ({got}) and planned beside the typed time; a breakdown is one "
                           f"measurement: type both times, or leave both blank to take both from the same source"))
    return out
