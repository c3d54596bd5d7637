"""The finance view in numbers: fleet totals per GPU type, demand by period, scenarios.

Each per-workload quantity is a small vectorised function with its Excel twin right
below (as in :mod:`planner.model`); the Results sheet declares the helper columns built
from them (:data:`planner.sheets.RESULTS`). The tables here are the Python values the
finance sheets (:mod:`planner.finance_sheets`) store beside their live formulas:

- :func:`fleet_table`: the ``Fleet`` sheet, one row per GPU type in GPUs order, then ``Total``.
- :func:`demand_calc` / :func:`fleet_by_period`: ``Demand_Calc`` and ``Fleet_By_Period``.
- :func:`scenario_compare`: ``Scenario_Compare`` (scenarios re-planned in Python at run time).
- :func:`check_optional`: located problems of the Demand and Scenarios sheets (called by the reader).

A GPU type without ``hourly_cost`` has a blank cost; the ``Total`` cost is the total of the
priced types only, and :func:`fleet_table` reports the GPUs left uncosted, which the sheets
and the memo say beside the total (a blank price never reads as a complete total).
"""

from __future__ import annotations

import copy
import dataclasses
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from . import model as m
from . import schema
from .constants import C, N
from .errors import Problem
from .model import excel_twin

FLEET_COLS = ("gpu", "instances", "gpus_needed", "cost_per_hour", "cost_per_month", "cost_per_year",
              "tpm_capacity", "tpm_demand")
PERIOD_COLS = ("period", "gpu", "instances", "gpus_needed", "cost_per_month")
SCENARIO_COLS = ("scenario", "gpus_needed", "cost_per_month", "tpm_capacity")
TOTAL = "Total"
BASE = "base"


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
    """Fleet totals at the target and at the measured hit ratios (the memo and the Summary)."""

    gpus: float
    instances: float
    cost_per_hour: float          # priced types only; NaN when nothing is priced
    cost_per_month: float
    uncosted_gpus: float
    tpm_capacity: float
    tpm_demand: float
    gpus_measured: float
    cost_per_hour_measured: float
    cost_per_month_measured: float


def totals(plan) -> Totals:
    """Fleet totals: ``Fleet``'s Total row and the same demand at the measured hit ratios."""
    fl = plan_fleet(plan)
    t = fl.iloc[-1]
    hours = float(plan.settings["hours_per_month"])
    gm = _f(plan.results["gpus_measured"])
    cm = _priced_sum(_f(plan.results["cost_per_hour_measured"])) if np.any(
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


# --------------------------------------------------------------------------- Demand by period
def demand_records(plan) -> list[dict]:
    t = plan.input.optional.get(schema.DEM)
    return list(t.records) if t is not None else []


def periods(records: list[dict]) -> list[str]:
    """Periods in first-seen order."""
    out: list[str] = []
    for rec in records:
        p = str(rec.get("period"))
        if p not in out:
            out.append(p)
    return out


def demand_calc(plan) -> pd.DataFrame:
    """One row per Demand row: the workload sized as in Results with that period's demand.

    Columns ``workload, period, demand_tpm, res_row`` (1-based row in Results), ``gpu, tp,
    tpm_delivered_target, target_utilization, hourly_cost, instances, gpus_needed,
    cost_per_hour``.
    """
    recs = demand_records(plan)
    res, r = plan.resolved, plan.results
    idx_of = {str(w).strip().lower(): i for i, w in enumerate(res["workload"])}
    idx = np.array([idx_of[str(rec["workload"]).strip().lower()] for rec in recs], dtype=int)
    demand = np.array([np.nan if rec.get("demand_tpm") is None else float(rec["demand_tpm"]) for rec in recs])
    tp = _f(res["tp"])[idx]
    tpm = _f(r["tpm_delivered_target"])[idx]
    util = _f(res["target_utilization"])[idx]
    price = _f(res["hourly_cost"])[idx]
    inst = m.instances_needed(demand, tpm, util)
    gpus = m.gpus_needed(inst, tp)
    return pd.DataFrame({
        "workload": res["workload"].to_numpy()[idx] if len(idx) else [], "period": [str(x.get("period")) for x in recs],
        "demand_tpm": demand, "res_row": idx + 1, "gpu": res["gpu"].to_numpy()[idx] if len(idx) else [],
        "tp": tp, "tpm_delivered_target": tpm, "target_utilization": util, "hourly_cost": price,
        "instances": inst, "gpus_needed": gpus, "cost_per_hour": cost_per_hour(gpus, price)})


def fleet_by_period(plan, calc: pd.DataFrame | None = None) -> pd.DataFrame:
    """``Fleet_By_Period``: per period (first-seen order) and GPU type (GPUs order), sums of the
    Demand_Calc rows; ``cost_per_month`` NaN for a type without a price."""
    calc = demand_calc(plan) if calc is None else calc
    hours = float(plan.settings["hours_per_month"])
    rows = []
    for p in periods(demand_records(plan)):
        for g, price in zip(plan.gpus["gpu"].tolist(), _f(plan.gpus["hourly_cost"])):
            on = (calc["period"].to_numpy() == p) & (calc["gpu"].to_numpy() == g)
            cost = float("nan") if np.isnan(price) else _nansum(calc["cost_per_hour"].to_numpy()[on])
            rows.append({"period": p, "gpu": g, "instances": _nansum(calc["instances"].to_numpy()[on]),
                         "gpus_needed": _nansum(calc["gpus_needed"].to_numpy()[on]),
                         "cost_per_month": float(per_month(cost, hours))})
    return pd.DataFrame(rows, columns=list(PERIOD_COLS))


# --------------------------------------------------------------------------- Scenarios
SCENARIO_SHEETS = (schema.M, schema.G, schema.W, schema.SETTINGS)


@dataclass
class Override:
    row: int          # Excel row on the Scenarios sheet
    scenario: str
    sheet: str        # canonical sheet name
    column: str       # canonical column (or Settings key)
    match: str | None  # canonical row name, None: every row
    op: str
    value: Any


def _key_of(sheet: str) -> str:
    return {schema.M: "model", schema.G: "gpu", schema.W: "workload"}[sheet]


def _place(t, col: str, i: int) -> str:
    from openpyxl.utils import get_column_letter

    j = t.positions.get(col)
    return f"{t.sheet}!{get_column_letter(j + 1)}{t.rows[i]}" if j is not None else f"{t.sheet} row {t.rows[i]}"


def _setting_column(s: schema.Setting) -> schema.Column:
    return schema.Column(schema.SETTINGS, s.key, "", s.kind, s.description, minimum=s.minimum,
                         maximum=s.maximum, min_open=s.min_open)


def _apply(op: str, old: Any, value: Any) -> Any:
    if op == "set":
        return value
    return old + value if op == "add" else old * value


def check_optional(optional: dict, tables: dict, settings: dict, problems: list[Problem]) -> None:
    """Cross-checks of the Demand and Scenarios sheets (called by the reader, so every
    problem is listed at once). ``tables`` maps Models/GPUs/Workloads to their Table (or None)."""
    # references are checked against Models/GPUs/Workloads that read without a problem: a
    # duplicate, renamed or missing column there would only echo here as unknown names
    base_ok = all(tables.get(s) is not None for s in schema.SHEETS) and not any(
        re.match(r"(models|gpus|workloads)( row |!|$)", p.place.strip().lower()) for p in problems)
    w = tables.get(schema.W)
    dem = optional.get(schema.DEM)
    if dem is not None:
        _check_demand(dem, w if base_ok else None, problems)
    scn = optional.get(schema.SCN)
    if scn is not None and base_ok:
        overrides(scn, tables, settings, problems)


def _check_demand(dem, w, problems: list[Problem]) -> None:
    """Unknown workloads (when ``w`` is given), duplicate (workload, period), empty periods."""
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
        if all(dem.records[i].get("demand_tpm") is None for i in rows):
            problems.append(Problem(_place(dem, "period", rows[0]),
                                    f"period {period!r} has no demand rows: every demand_tpm of it is blank "
                                    f"(give the demands, or delete the period's rows)"))


def overrides(scn, tables: dict, settings: dict, problems: list[Problem]) -> list[Override]:
    """The Scenarios rows checked against the inputs: sheet, column, row, op and value named
    correctly, and every overridden value within the schema's own range (the value is
    applied to the input and parsed again with :func:`planner.cells.parse_value`)."""
    from .cells import parse_value

    out: list[Override] = []
    sheet_of = {s.lower(): s for s in SCENARIO_SHEETS}
    setting_of = {s.key: s for s in schema.SETTING_KEYS}
    # values as the scenarios change them, so several rows of one scenario compose
    state: dict[str, dict] = {}
    for i, rec in enumerate(scn.records):
        name, sheet_raw, col_raw = rec.get("scenario"), rec.get("sheet"), rec.get("column")
        match, op, value = rec.get("match"), rec.get("op"), rec.get("value")
        if None in (name, sheet_raw, col_raw, op, value):
            continue  # the reader already reported the blank required cell or the bad op
        if str(name).strip().lower() == BASE:
            problems.append(Problem(_place(scn, "scenario", i), f"scenario name {name!r} is taken by the base plan"))
            continue
        sheet = sheet_of.get(str(sheet_raw).strip().lower())
        if sheet is None:
            problems.append(Problem(_place(scn, "sheet", i), f"sheet {sheet_raw!r} is not one of "
                                                             f"{', '.join(SCENARIO_SHEETS)}"))
            continue
        col_name = str(col_raw).strip().lower()
        if sheet == schema.SETTINGS:
            s = setting_of.get(col_name)
            if s is None or s.kind == schema.NUMBERS:
                problems.append(Problem(_place(scn, "column", i), f"column {col_raw!r} is not a Settings key "
                                        f"a scenario can change ({', '.join(k for k, v in setting_of.items() if v.kind != schema.NUMBERS)})"))
                continue
            col = _setting_column(s)
        else:
            cols = {c.name: c for c in schema.columns(sheet) if not c.key}
            col = cols.get(col_name)
            if col is None:
                problems.append(Problem(_place(scn, "column", i), f"column {col_raw!r} is not a column of {sheet} "
                                                                  f"a scenario can change"))
                continue
        if op in ("add", "multiply"):
            if col.kind not in (schema.INT, schema.NUMBER, schema.FRACTION):
                problems.append(Problem(_place(scn, "op", i), f"op {op!r} needs a number column; "
                                                              f"{sheet}.{col.name} is {col.kind}"))
                continue
            if not isinstance(value, float):
                problems.append(Problem(_place(scn, "value", i), f"value {value!r} is not a number (op {op})"))
                continue
        key = str(name)
        st = state.setdefault(key, {})
        if sheet == schema.SETTINGS:
            if match is not None:
                problems.append(Problem(_place(scn, "match", i), "a Settings override names no row: leave match blank"))
                continue
            old = st.get((sheet, "", col.name), settings.get(col.name))
            new, err = _new_value(parse_value, col, op, old, value)
            if err:
                problems.append(Problem(_place(scn, "value", i), f"scenario {key!r}: Settings {col.name}: {err}"))
                continue
            st[(sheet, "", col.name)] = new
            out.append(Override(scn.rows[i], key, sheet, col.name, None, op, value))
            continue
        t = tables[sheet]
        keycol = _key_of(sheet)
        names = [str(x) for x in t.column(keycol)]
        if match is None:
            targets = list(range(len(names)))
        else:
            folded = str(match).strip().lower()
            targets = [j for j, x in enumerate(names) if x.strip().lower() == folded]
            if not targets:
                problems.append(Problem(_place(scn, "match", i), f"row {match!r} is not in {sheet}"))
                continue
        if col.ref is not None:
            refs = {str(x).strip().lower(): str(x) for x in tables[col.ref].column(_key_of(col.ref))}
            if str(value).strip().lower() not in refs:
                problems.append(Problem(_place(scn, "value", i), f"{col.name} {value!r} is not in {col.ref}"))
                continue
            value = refs[str(value).strip().lower()]
        bad = False
        for j in targets:
            old = st.get((sheet, j, col.name), t.records[j].get(col.name))
            if old is None and op != "set":
                old = col.default if isinstance(col.default, (int, float)) else None
                if old is None and match is None:
                    continue  # every row: a blank without a default stays blank (no demand stays none)
                if old is None:
                    problems.append(Problem(_place(scn, "value", i), f"scenario {key!r}: {sheet} row "
                                            f"{names[j]!r} has no {col.name} to {op}"))
                    bad = True
                    break
            new, err = _new_value(parse_value, col, op, old, value)
            if err:
                problems.append(Problem(_place(scn, "value", i), f"scenario {key!r} makes {_place(t, col.name, j)} "
                                                                 f"({names[j]}) {err}"))
                bad = True
                break
            st[(sheet, j, col.name)] = new
        if not bad:
            out.append(Override(scn.rows[i], key, sheet, col.name,
                                None if match is None else names[targets[0]], op, value))
    return out


def _new_value(parse_value, col: schema.Column, op: str, old: Any, value: Any):
    try:
        raw = _apply(op, old, value)
    except TypeError:
        return None, f"{col.name} {old!r} cannot be changed by {op} {value!r}"
    if isinstance(raw, float) and col.kind == schema.INT and raw.is_integer():
        raw = int(raw)
    v, err = parse_value(col, raw, None)
    if err is None and v is None and col.required is True:
        err = f"{col.name} is required"
    return v, err


def scenario_input(p_in, name: str, ovs: list[Override]):
    """A copy of ``p_in`` with scenario ``name``'s overrides applied (no Scenarios sheet)."""
    from .cells import parse_value

    tables = {s: dataclasses.replace(p_in.table(s), records=copy.deepcopy(p_in.table(s).records))
              for s in schema.SHEETS}
    settings = dict(p_in.settings)
    for o in (o for o in ovs if o.scenario == name):
        if o.sheet == schema.SETTINGS:
            col = _setting_column(next(s for s in schema.SETTING_KEYS if s.key == o.column))
            settings[o.column], _err = _new_value(parse_value, col, o.op, settings.get(o.column), o.value)
            continue
        t = tables[o.sheet]
        col = schema.column(o.sheet, o.column)
        keycol = _key_of(o.sheet)
        for rec in t.records:
            if o.match is None or str(rec.get(keycol)) == o.match:
                old = rec.get(o.column)
                if old is None and o.op != "set":
                    old = col.default if isinstance(col.default, (int, float)) else None
                    if old is None:
                        continue  # blank stays blank (checked in overrides)
                rec[o.column], _err = _new_value(parse_value, col, o.op, old, o.value)
    optional = {k: v for k, v in p_in.optional.items() if k != schema.SCN}
    return dataclasses.replace(p_in, models=tables[schema.M], gpus=tables[schema.G], workloads=tables[schema.W],
                               settings=settings, optional=optional)


def _quick_plan(p_in):
    """Resolved and Results of an input (no sensitivity tables): enough for the fleet totals."""
    from .plan import evaluate_input

    _models, gpus, _workloads, resolved, results, _calib = evaluate_input(p_in)
    return _Lite(p_in, gpus, resolved, results)


@dataclass
class _Lite:
    input: Any
    gpus: pd.DataFrame
    resolved: pd.DataFrame
    results: pd.DataFrame

    @property
    def settings(self) -> dict:
        return self.input.settings


def scenario_compare(plan) -> pd.DataFrame:
    """``Scenario_Compare``: fleet totals of ``base`` then each scenario (first-seen order),
    each scenario re-planned from a copy of the inputs with its overrides (run time, not live)."""
    rows = []
    base = plan_fleet(plan).iloc[-1]
    rows.append({"scenario": BASE, "gpus_needed": float(base["gpus_needed"]),
                 "cost_per_month": float(base["cost_per_month"]), "tpm_capacity": float(base["tpm_capacity"])})
    scn = plan.input.optional.get(schema.SCN)
    if scn is not None:
        tables = {s: plan.input.table(s) for s in schema.SHEETS}
        problems: list[Problem] = []
        ovs = overrides(scn, tables, plan.input.settings, problems)
        names: list[str] = []
        for o in ovs:
            if o.scenario not in names:
                names.append(o.scenario)
        for name in names:
            t = fleet_table(_quick_plan(scenario_input(plan.input, name, ovs))).iloc[-1]
            rows.append({"scenario": name, "gpus_needed": float(t["gpus_needed"]),
                         "cost_per_month": float(t["cost_per_month"]), "tpm_capacity": float(t["tpm_capacity"])})
    return pd.DataFrame(rows, columns=list(SCENARIO_COLS))


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
    if demand_records(plan):
        bp = fleet_by_period(plan)
        parts = []
        for p in periods(demand_records(plan)):
            on = bp[bp["period"] == p]
            cost = _priced_sum(on["cost_per_month"])
            money = "" if np.isnan(cost) else f" ({currency} {cost:,.0f} per month)"
            parts.append(f"{p} {on['gpus_needed'].sum():,.0f} GPUs{money}")
        out += " By period (Demand sheet): " + "; ".join(parts) + "."
    return out
