"""Scenarios, the finance side: a copy of the inputs with one scenario's overrides applied
(:func:`scenario_input`) and ``Scenario_Compare`` (:func:`scenario_compare`: each scenario
re-planned in Python at run time). The overrides are checked in :mod:`planner.inputs.scenario_checks`.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any

import pandas as pd

from planner.core import schema
from planner.core.errors import Problem
from planner.finance.fleet import fleet_table, plan_fleet
from planner.inputs.scenario_checks import BASE, Override, _key_of, _new_value, _setting_column, overrides

SCENARIO_COLS = ("scenario", "gpus_needed", "cost_per_month", "tpm_capacity")


def scenario_input(p_in, name: str, ovs: list[Override]):
    """A copy of ``p_in`` with scenario ``name``'s overrides applied (no Scenarios sheet)."""
    from planner.inputs.cells import parse_value

    tables = {s: dataclasses.replace(p_in.table(s), records=copy.deepcopy(p_in.table(s).records))
              for s in schema.SHEETS + (schema.TIERS,) if p_in.table(s) is not None}
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
    if schema.TIERS in tables:
        optional[schema.TIERS] = tables[schema.TIERS]
    return dataclasses.replace(p_in, models=tables[schema.M], gpus=tables[schema.G], workloads=tables[schema.W],
                               settings=settings, optional=optional)


def _quick_plan(p_in):
    """Resolved and Results of an input (no sensitivity tables): enough for the fleet totals."""
    from planner.plan.build import evaluate_input

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
    from planner.finance.scenario_states import cached_totals

    if scn is not None and (checked := cached_totals(plan.input)) is not None:
        rows += checked  # re-planned and checked before anything was written (planner.finance.scenario_states)
    elif scn is not None:
        tables = {s: plan.input.table(s) for s in schema.SHEETS + (schema.TIERS,)}
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
