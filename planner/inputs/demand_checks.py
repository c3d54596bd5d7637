"""The Demand sheet's checks: unknown workloads, a (workload, period) twice, periods whose
demands are all blank; each problem at its cell.
"""

from __future__ import annotations


from planner.core.errors import Problem
from planner.inputs.places import cell_place


def _place(t, col: str, i: int) -> str:
    return cell_place(t, col, i)


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
