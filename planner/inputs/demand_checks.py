"""The Demand sheet's checks: unknown workloads, a (workload, period) twice, periods whose
demands are all blank; each problem at its cell.
"""

from __future__ import annotations


from planner.core.errors import Problem
from planner.core.names import and_more, canonical_names, fold_name
from planner.inputs.checks import respell
from planner.inputs.places import cell_place


def table_place(t, col: str, i: int) -> str:
    return cell_place(t, col, i)


def check_demand(dem, w, problems: list[Problem], grown: frozenset = frozenset(),
                  notes: list[str] | None = None, order: tuple = ()) -> None:
    """Unknown workloads (when ``w`` is given), duplicate (workload, period), empty periods (a
    period of Settings ``periods``, in ``grown``, takes the grown demand where it is blank).

    Each ``period`` is first read as :func:`~planner.inputs.period_labels.period_label` reads it (a
    quarter in any spelling or a date as ``YYYY-Qn``, said in ``notes``) and spelt as the first
    label naming the same period (Settings ``periods``, in ``order``, first), so ``2027-q1`` and
    ``2027 Q1`` are one period, and the same workload in both is a duplicate."""
    from planner.inputs.period_labels import fold, period_label, quarter_problem

    spelling = {fold(p): p for p in reversed(order)}
    read: list[str] = []
    spelt: dict[int, dict[str, str]] = {}  # record -> the period label and the workload as Workloads spells it
    for i, rec in enumerate(dem.records):
        if rec.get("period") is None:
            continue
        if (why := quarter_problem(rec["period"])) is not None:  # 2027-Q0: quarters counted from 0
            problems.append(Problem(table_place(dem, "period", i), f"period {why}"))
            continue
        label, how = period_label(rec["period"], getattr(dem, "date1904", False))
        label = spelling.setdefault(fold(label), label)
        if how is not None:
            read.append(f"{table_place(dem, 'period', i)} {how}")
        elif label != rec["period"]:
            read.append(f"{table_place(dem, 'period', i)} {rec['period']!r} is period {label!r}")
        spelt[i] = {"period": label}
    respell(dem, spelt)  # new records: the ones read keep the period as typed
    _odd_periods(dem, order)
    if read and notes is not None:
        more = and_more(len(read), 3)
        notes.append(f"Demand: {len(read)} period(s) read as the period they name: {'; '.join(read[:3])}{more}")
    names = canonical_names(str(x) for x in w.column("workload") if x is not None) if w is not None else None
    seen: dict[tuple[str, str], int] = {}
    by_period: dict[str, list[int]] = {}
    spelt = {}
    for i, rec in enumerate(dem.records):
        wl, period = rec.get("workload"), rec.get("period")
        if wl is not None and names is not None and fold_name(wl) not in names:
            problems.append(Problem(table_place(dem, "workload", i), f"workload {wl!r} is not in Workloads"))
        elif wl is not None and names is not None:
            spelt[i] = {"workload": names[fold_name(wl)]}  # matched as the Workloads sheet spells it
        if wl is None or period is None:
            continue
        key = (fold_name(wl), str(period))
        if key in seen:
            problems.append(Problem(table_place(dem, "period", i), f"workload {wl!r} has period {period!r} twice "
                                                              f"(also row {seen[key]})"))
        else:
            seen[key] = dem.rows[i]
        by_period.setdefault(str(period), []).append(i)
    respell(dem, spelt)
    for period, rows in by_period.items():
        if period not in grown and all(dem.records[i].get("demand_tpm") is None for i in rows):
            hint = ""
            if order:  # red team 7: 'Q2' (no year) beside Settings periods 2027-Q1..2027-Q4
                hint = (f"; it is not one of Settings periods ({order[0]} .. {order[-1]}), where a blank demand_tpm "
                        f"takes the grown demand: if it is one of them, type it as {order[0]} is typed")
            elif any(dem.records[i].get("hit_target") is not None for i in rows):  # a hit typed, the demand to grow
                hint = ("; a blank demand_tpm takes the grown demand only in the periods of Settings periods, which "
                        "is blank: type them there (2027-Q1..2027-Q4) to grow today's demand into them")
            problems.append(Problem(table_place(dem, "period", rows[0]),
                                    f"period {period!r} has no demand rows: every demand_tpm of it is blank "
                                    f"(give the demands, or delete the period's rows){hint}"))


def _odd_periods(dem, order: tuple) -> None:
    """A Demand period that is no calendar quarter among periods that are (``total``, ``FY27``, ``3``
    or ``2027`` beside ``2027-Q1 .. 2027-Q4``) is planned as a period of its own, first, with only its
    rows, and its rows are missing from the quarter they belong to: a located warning in
    ``dem.warnings`` (the plan's warnings). With Settings ``periods`` typed, the plan's own check says
    it (:func:`planner.plan.typed_checks.typed_warnings`: a period that is not one of them)."""
    from planner.inputs.period_labels import QUARTER, fold

    if order:
        return
    first: dict[str, int] = {}
    for i, rec in enumerate(dem.records):
        if rec.get("period") is not None:
            first.setdefault(str(rec["period"]), i)
    quarters = sorted(p for p in first if QUARTER.match(p))
    if len(quarters) < 2:
        return
    for p, i in first.items():
        if QUARTER.match(p):
            continue
        dem.warnings.append((table_place(dem, "period", i),
                             f"period {p!r} is no calendar quarter, where the sheet's other periods are "
                             f"({quarters[0]} .. {quarters[-1]}): it is planned as a period of its own, with "
                             f"only its rows, and they are not in any quarter; if it is a total or a note, "
                             f"delete its rows; if it is a quarter, type it as {quarters[0]} is typed"))
