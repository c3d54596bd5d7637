"""Scenarios: the rows of the Scenarios sheet checked into overrides, a copy of the inputs
with one scenario's overrides applied, and ``Scenario_Compare`` (each scenario re-planned
in Python at run time).

- :func:`check_optional`: located problems of the Demand and Scenarios sheets (called by the reader).
- :func:`scenario_compare`: ``Scenario_Compare``.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from . import schema
from .demand import _check_demand, _place
from .errors import Problem
from .fleet import fleet_table, plan_fleet

SCENARIO_COLS = ("scenario", "gpus_needed", "cost_per_month", "tpm_capacity")
BASE = "base"


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
    from .scenario_checks import cached_totals

    if scn is not None and (checked := cached_totals(plan.input)) is not None:
        rows += checked  # re-planned and checked by the reader (planner.scenario_checks)
    elif scn is not None:
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
