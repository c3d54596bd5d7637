"""Scenarios, the finance side: a copy of the inputs with one scenario's overrides applied
(:func:`scenario_input`) and ``Scenario_Compare`` (:func:`scenario_compare`: each scenario
re-planned in Python at run time). The overrides are checked in :mod:`planner.inputs.scenario_checks`.


Each scenario's state is also checked like an input before anything is written
(:func:`check_scenarios`, called through :func:`planner.finance.validation.read_checked`):
:func:`planner.inputs.scenario_checks.overrides` checks each Scenarios row on its own; a
scenario is more than its rows (every prefill time 0, ``attention`` ``mla`` on a model without
``mla_kv_dim``), so its state gets the *same* row checks the reader runs on the sheets, then is
re-planned, and every number finite in the base plan must stay finite. The re-planned totals are
kept (:func:`cached_totals`): ``Scenario_Compare`` is written from the numbers that were checked.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from planner.core.names import and_more, canonical_names
from planner.core.arrays import coerced_floats
from planner.core import schema
from planner.core.errors import InputError, Problem
from planner.finance.fleet import fleet_table, plan_fleet
from planner.inputs.scenario_checks import BASE, Override, key_of, new_value, setting_column, overrides

SCENARIO_COLS = ("scenario", "gpus_needed", "cost_per_month", "tpm_capacity",
                 # issue 16: each scenario is sized by Results' SLO-bound chain (planner.equations.sizing);
                 # these say what its latency targets add over throughput alone
                 "gpus_throughput", "gpus_for_latency", "cost_per_month_for_latency")


def _row(name: str, total) -> dict:
    """A Scenario_Compare row from the Total row of a plan's Fleet table."""
    return {"scenario": name, **{c: float(total[c]) for c in SCENARIO_COLS[1:]}}


def scenario_input(p_in, name: str, ovs: list[Override]):
    """A copy of ``p_in`` with scenario ``name``'s overrides applied (no Scenarios sheet)."""
    from planner.inputs.cells import parse_value

    tables = {s: dataclasses.replace(p_in.table(s), records=copy.deepcopy(p_in.table(s).records))
              for s in schema.SHEETS + (schema.TIERS,) if p_in.table(s) is not None}
    settings = dict(p_in.settings)
    for o in (o for o in ovs if o.scenario == name):
        if o.sheet == schema.SETTINGS:
            col = setting_column(next(s for s in schema.SETTING_KEYS if s.key == o.column))
            settings[o.column], _err = new_value(parse_value, col, o.op, settings.get(o.column), o.value)
            continue
        t = tables[o.sheet]
        col = schema.column(o.sheet, o.column)
        keycol = key_of(o.sheet)
        for rec in t.records:
            if o.match is None or str(rec.get(keycol)) == o.match:
                old = rec.get(o.column)
                if old is None and o.op != "set":
                    old = col.default if isinstance(col.default, (int, float)) else None
                    if old is None:
                        continue  # blank stays blank (checked in overrides)
                rec[o.column], _err = new_value(parse_value, col, o.op, old, o.value)
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
    rows.append(_row(BASE, base))
    scn = plan.input.optional.get(schema.SCN)
    if scn is not None and (checked := cached_totals(plan.input)) is not None:
        rows += checked  # re-planned and checked before anything was written (check_scenarios)
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
            rows.append(_row(name, t))
    return pd.DataFrame(rows, columns=list(SCENARIO_COLS))


def _scenario_place(scn, name: str) -> str:
    from planner.inputs.demand_checks import table_place

    i = next(i for i, r in enumerate(scn.records) if str(r.get("scenario")) == name)
    return table_place(scn, "scenario", i)


def row_problems(s_in) -> list[Problem]:
    from planner.inputs.checks import check_gpus, check_models, check_workloads

    probs: list[Problem] = []
    m, g, w = s_in.models, s_in.gpus, s_in.workloads
    check_models(m, m.positions, probs)
    check_gpus(g, g.positions, probs)
    canon = {"Models": canonical_names(r["model"] for r in m.records if r.get("model")),
             "GPUs": canonical_names(r["gpu"] for r in g.records if r.get("gpu"))}
    check_workloads(w, w.positions, canon, probs, [])
    return probs


def _non_finite(base: pd.DataFrame, got: pd.DataFrame, names) -> list[str]:
    """``row 'chat': ttft_ms`` for each number finite in the base plan and not in the scenario.

    The SLO-bound sizing chain of a row whose ``binding`` (``binding_baseline`` for the baseline's chain)
    is ``unreachable`` is left out: a target no instance count meets is planned as the base plans it (left
    out of the count, said), not refused (red team 6: a scenario "ttft_slo_ms 300" below the baseline's
    request-alone TTFT was refused as "cannot be planned: ... ttft_log_x_baseline ... would not be a finite
    number")."""
    from planner.equations import sizing as sz
    from planner.plan.columns import TERMS  # the chain's term columns (the Lambert W's among them)

    def unreachable(col: str) -> np.ndarray:
        in_base = col in sz.BASELINE_NAMES or (col in TERMS and col.endswith("_baseline"))
        which = "binding_baseline" if in_base else "binding" if col in sz.NAMES or col in TERMS else None
        if which is None or which not in got.columns:
            return np.zeros(len(got), dtype=bool)
        return got[which].astype(str).str.startswith("unreachable").to_numpy()

    out = []
    for col in base.columns:
        b = coerced_floats(base[col])
        if col not in got.columns or not np.isfinite(b).any():
            continue
        s = coerced_floats(got[col])
        bad = np.isfinite(b) & ~np.isfinite(s) & ~unreachable(col)
        out += [f"Workloads {names[i]!r}: {col}" for i in np.flatnonzero(bad)]
    return out


def check_scenarios(p_in) -> list[Problem]:
    """The problems of every scenario's re-planned state (empty: all plan); the fleet totals
    are kept for :func:`cached_totals`."""
    scn = p_in.optional.get(schema.SCN)
    if scn is None:
        return []
    # Tiers too (red team 6: without it every Tiers override was refused by the command line, "the input
    # has no Tiers sheet to override", while scenario_compare and the reader took it)
    tables = {s: p_in.table(s) for s in schema.SHEETS + (schema.TIERS,)}
    problems: list[Problem] = []
    ovs = overrides(scn, tables, p_in.settings, problems)
    if problems:  # the reader has reported these already
        return problems
    names = list(dict.fromkeys(o.scenario for o in ovs))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            base = _quick_plan(p_in).results
        except InputError:
            return []  # the base input's own problems: build_plan reports them, at their cells
    totals: dict[str, dict] = {}
    for name in names:
        where = _scenario_place(scn, name)
        s_in = scenario_input(p_in, name, ovs)
        rows = row_problems(s_in)
        if rows:
            problems += [Problem(where, f"scenario {name!r} makes {p.place}: {p.message}") for p in rows]
            continue
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                lite = _quick_plan(s_in)
            except InputError as err:  # a calibration the scenario breaks
                problems += [Problem(where, f"scenario {name!r}: {p}") for p in err.problems]
                continue
            bad = _non_finite(base, lite.results, [str(x) for x in s_in.workloads.column("workload")])
            if bad:
                more = and_more(len(bad), 3)
                problems.append(Problem(where, f"scenario {name!r} cannot be planned: {'; '.join(bad[:3])}{more} "
                                               f"would not be a finite number"))
                continue
            t = fleet_table(lite).iloc[-1]
        totals[name] = _row(name, t)
    assert BASE not in totals
    if not problems:  # kept beside the input (not on it): the last few inputs checked
        _TOTALS[_fingerprint(p_in)] = [totals[n] for n in names]
        while len(_TOTALS) > 8:
            _TOTALS.pop(next(iter(_TOTALS)))
    return problems


_TOTALS: dict[tuple, list[dict]] = {}


def _fingerprint(p_in) -> tuple:
    """The input's tables by their records (a copy that only marks filled cells keeps them) and
    its Settings: what the scenario totals depend on."""
    scn = p_in.optional.get(schema.SCN)
    return (id(p_in.models.records), id(p_in.gpus.records), id(p_in.workloads.records),
            id(scn.records) if scn is not None else None, repr(sorted(p_in.settings.items(), key=lambda kv: kv[0])))


def cached_totals(p_in) -> list[dict] | None:
    """The scenario rows :func:`check_scenarios` computed for exactly this input (None: not
    checked, or the input was changed since)."""
    return _TOTALS.get(_fingerprint(p_in))
