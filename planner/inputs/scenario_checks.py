"""Scenarios, the input side: the rows of the Scenarios sheet checked into :class:`Override`
records, every problem at its cell (re-planning each scenario is :mod:`planner.finance.scenarios`).

- :func:`check_optional`: located problems of the Demand and Scenarios sheets (called by the reader).
- :func:`overrides`: the checked overrides of the Scenarios sheet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


from planner.core import schema
from planner.inputs.demand_checks import check_demand, table_place
from planner.core.errors import Problem
BASE = "base"


SCENARIO_SHEETS = (schema.M, schema.G, schema.W, schema.TIERS, schema.SETTINGS)  # Tiers: a capacity override


@dataclass
class Override:
    row: int          # Excel row on the Scenarios sheet
    scenario: str
    sheet: str        # canonical sheet name
    column: str       # canonical column (or Settings key)
    match: str | None  # canonical row name, None: every row
    op: str
    value: Any


def key_of(sheet: str) -> str:
    return {schema.M: "model", schema.G: "gpu", schema.W: "workload", schema.TIERS: "tier"}[sheet]


def setting_column(s: schema.Setting) -> schema.Column:
    return schema.Column(schema.SETTINGS, s.key, "", s.kind, s.description, minimum=s.minimum,
                         maximum=s.maximum, min_open=s.min_open)


def _apply(op: str, old: Any, value: Any) -> Any:
    if op == "set":
        return value
    return old + value if op == "add" else old * value


def check_optional(optional: dict, tables: dict, settings: dict, problems: list[Problem],
                   notes: list[str] | None = None) -> None:
    """Cross-checks of the Demand and Scenarios sheets (called by the reader, so every
    problem is listed at once). ``tables`` maps Models/GPUs/Workloads to their Table (or None)."""
    # references are checked against Models/GPUs/Workloads that read without a problem: a
    # duplicate, renamed or missing column there would only echo here as unknown names
    base_ok = all(tables.get(s) is not None for s in schema.SHEETS) and not any(
        p.place.is_on(schema.SHEETS) for p in problems)
    w = tables.get(schema.W)
    dem = optional.get(schema.DEM)
    if dem is not None:
        from planner.inputs.period_labels import parse_periods

        sp = parse_periods(settings.get("periods"))[0]
        check_demand(dem, w if base_ok else None, problems, frozenset(sp), notes, tuple(sp))
    scn = optional.get(schema.SCN)
    if scn is not None and base_ok:
        overrides(scn, {**tables, schema.TIERS: optional.get(schema.TIERS)}, settings, problems)


def overrides(scn, tables: dict, settings: dict, problems: list[Problem]) -> list[Override]:
    """The Scenarios rows checked against the inputs: sheet, column, row, op and value named
    correctly, and every overridden value within the schema's own range (the value is
    applied to the input and parsed again with :func:`planner.inputs.cells.parse_value`)."""
    from planner.inputs.cells import parse_value

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
            problems.append(Problem(table_place(scn, "scenario", i), f"scenario name {name!r} is taken by the base plan"))
            continue
        sheet = sheet_of.get(str(sheet_raw).strip().lower())
        if sheet is None:
            problems.append(Problem(table_place(scn, "sheet", i), f"sheet {sheet_raw!r} is not one of "
                                                             f"{', '.join(SCENARIO_SHEETS)}"))
            continue
        col_name = str(col_raw).strip().lower()
        if sheet == schema.SETTINGS:
            s = setting_of.get(col_name)
            if s is None or s.kind == schema.NUMBERS:
                problems.append(Problem(table_place(scn, "column", i), f"column {col_raw!r} is not a Settings key "
                                        f"a scenario can change ({', '.join(k for k, v in setting_of.items() if v.kind != schema.NUMBERS)})"))
                continue
            col = setting_column(s)
        else:
            cols = {c.name: c for c in schema.columns(sheet) if not c.key}
            col = cols.get(col_name)
            if col is None:
                problems.append(Problem(table_place(scn, "column", i), f"column {col_raw!r} is not a column of {sheet} "
                                                                  f"a scenario can change"))
                continue
        if op in ("add", "multiply"):
            if col.kind not in (schema.INT, schema.NUMBER, schema.FRACTION):
                problems.append(Problem(table_place(scn, "op", i), f"op {op!r} needs a number column; "
                                                              f"{sheet}.{col.name} is {col.kind}"))
                continue
            if not isinstance(value, float):
                problems.append(Problem(table_place(scn, "value", i), f"value {value!r} is not a number (op {op})"))
                continue
        key = str(name)
        st = state.setdefault(key, {})
        if sheet == schema.SETTINGS:
            if match is not None:
                problems.append(Problem(table_place(scn, "match", i), "a Settings override names no row: leave match blank"))
                continue
            old = st.get((sheet, "", col.name), settings.get(col.name))
            new, err = new_value(parse_value, col, op, old, value)
            if err:
                problems.append(Problem(table_place(scn, "value", i), f"scenario {key!r}: Settings {col.name}: {err}"))
                continue
            st[(sheet, "", col.name)] = new
            out.append(Override(scn.rows[i], key, sheet, col.name, None, op, value))
            continue
        t = tables.get(sheet)
        if t is None:  # a Tiers override without a Tiers sheet
            problems.append(Problem(table_place(scn, "sheet", i), f"the input has no {sheet} sheet to override"))
            continue
        keycol = key_of(sheet)
        names = [str(x) for x in t.column(keycol)]
        if match is None:
            targets = list(range(len(names)))
        else:
            folded = str(match).strip().lower()
            targets = [j for j, x in enumerate(names) if x.strip().lower() == folded]
            if not targets:
                problems.append(Problem(table_place(scn, "match", i), f"row {match!r} is not in {sheet}"))
                continue
        if col.ref is not None:
            refs = {str(x).strip().lower(): str(x) for x in tables[col.ref].column(key_of(col.ref))}
            if str(value).strip().lower() not in refs:
                problems.append(Problem(table_place(scn, "value", i), f"{col.name} {value!r} is not in {col.ref}"))
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
                    problems.append(Problem(table_place(scn, "value", i), f"scenario {key!r}: {sheet} row "
                                            f"{names[j]!r} has no {col.name} to {op}"))
                    bad = True
                    break
            new, err = new_value(parse_value, col, op, old, value)
            if err:
                problems.append(Problem(table_place(scn, "value", i), f"scenario {key!r} makes {table_place(t, col.name, j)} "
                                                                 f"({names[j]}) {err}"))
                bad = True
                break
            st[(sheet, j, col.name)] = new
        if not bad:
            out.append(Override(scn.rows[i], key, sheet, col.name,
                                None if match is None else names[targets[0]], op, value))
    return out


def new_value(parse_value, col: schema.Column, op: str, old: Any, value: Any):
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
